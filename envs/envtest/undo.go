package envtest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/undo"
)

// snapshotScript prints a directory's tree as undo must restore it: each
// name with its type, permission bits and size, each link's target and
// each file's digest. It needs only find, stat, readlink and sha256sum
// (coreutils or busybox).
const snapshotScript = `cd "$1" && find . | LC_ALL=C sort | while IFS= read -r p; do
  if [ -L "$p" ]; then echo "$p link $(readlink "$p")"
  elif [ -f "$p" ]; then echo "$p file $(stat -c %a "$p") $(sha256sum < "$p" | cut -c1-64)"
  else echo "$p $(stat -c '%F %a' "$p")"; fi
done`

// testUndo: an environment that keeps a change journal inside itself
// ([envs.Journaler], runbox's agent) records what each command changed in
// a workspace and puts it back byte for byte: content, modes, links, a
// deleted tree, a rename. The journal a caller keeps on this machine
// (local) is tested where it is kept.
func testUndo(t *testing.T, env envs.Environment) {
	if st := env.Capabilities()[envs.CapUndo].State; st != envs.Active {
		t.Skipf("undo is %v here: %s", st, env.Capabilities()[envs.CapUndo].Detail)
	}
	jr, ok := env.(envs.Journaler)
	if !ok {
		t.Skip("the journal is not kept inside this environment (the caller keeps it)")
	}
	dir := strings.TrimSpace(run(t, env, sh(`d=$(mktemp -d) && cd "$d" && pwd -P`)).Output)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), hang) // t's own has ended
		defer cancel()
		env.Run(ctx, envs.Command{Args: []string{"rm", "-rf", dir}})
	})
	setup := `cd '` + dir + `' && mkdir -p tree/sub && printf 'one\n' > a.txt && printf 'two' > tree/sub/b.txt &&
printf '#!/bin/sh\n' > run.sh && chmod 755 run.sh && ln -s a.txt link && printf '\000\377' > tree/bin`
	if res := run(t, env, sh(setup)); res.Code != 0 {
		t.Fatalf("setup: %q", res.Output)
	}
	before := snapshot(t, env, dir)

	ctx, cancel := context.WithTimeout(t.Context(), hang)
	defer cancel()
	j, err := jr.Journal(ctx, dir, undo.Options{})
	if err != nil {
		t.Fatalf("Journal: %v", err)
	}
	defer j.Close()
	steps := []string{
		`printf 'changed\n' > a.txt && chmod 600 run.sh`,
		`rm -rf tree`,
		`mv a.txt renamed.txt && ln -sf renamed.txt link`,
	}
	var first int64
	for _, line := range steps {
		rec := recorded(ctx, t, env, j, dir, line)
		if rec.Step == 0 || len(rec.Changes) == 0 {
			t.Fatalf("%q: record %+v lists no change", line, rec)
		}
		if first == 0 {
			first = rec.Step
		}
	}
	if snapshot(t, env, dir) == before {
		t.Fatal("the commands changed nothing")
	}
	u, err := j.Undo(ctx, undo.UndoOptions{To: first})
	if err != nil {
		t.Fatalf("Undo: %v", err)
	}
	if len(u.Commands) != len(steps) {
		t.Errorf("undone commands = %q; want the %d commands", u.Commands, len(steps))
	}
	if after := snapshot(t, env, dir); after != before {
		t.Errorf("after undo:\n%s\nwant:\n%s", after, before)
	}
	if _, err := j.Undo(ctx, undo.UndoOptions{}); !errors.Is(err, undo.ErrNothing) {
		t.Errorf("a second undo: %v; want errors.Is undo.ErrNothing", err)
	}
}

// recorded runs line in dir as one recorded command.
func recorded(ctx context.Context, t *testing.T, env envs.Environment, j envs.ChangeJournal, dir, line string) *undo.Record {
	t.Helper()
	c, err := j.Begin(ctx, line)
	if err != nil {
		t.Fatalf("Begin(%q): %v", line, err)
	}
	if res := run(t, env, envs.Command{Shell: line, Dir: dir}); res.Code != 0 {
		t.Fatalf("%q: exit %d: %q", line, res.Code, res.Output)
	}
	rec, err := c.End(ctx)
	if err != nil {
		t.Fatalf("End(%q): %v", line, err)
	}
	return rec
}

func snapshot(t *testing.T, env envs.Environment, dir string) string {
	t.Helper()
	res := run(t, env, envs.Command{Args: []string{"sh", "-c", snapshotScript, "sh", dir}})
	if res.Code != 0 {
		t.Fatalf("snapshot of %s: exit %d: %q", dir, res.Code, res.Output)
	}
	return res.Output
}
