package procregistry

import (
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/envs"
)

// A PTY job sees a terminal, takes input through it, and its output
// (with the terminal's echo) lands in the log.
func TestSupervise_PTY(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	in := start(t, r, StartRequest{Shell: `test -t 0 && echo tty; read x; echo "got $x"`, PTY: &envs.WindowSize{Rows: 24, Cols: 80}})
	eventually(t, 10*time.Second, "tty line", func() bool { return strings.Contains(logText(t, r, in.ID), "tty") })
	if err := r.Submit(t.Context(), in.ID, "abc"); err != nil {
		t.Fatal(err)
	}
	got := waitDone(t, r, in.ID)
	if got.Exit == nil || got.Exit.Code != 0 {
		t.Fatalf("PTY job: %+v", got)
	}
	if s := logText(t, r, in.ID); !strings.Contains(s, "got abc") {
		t.Errorf("log = %q", s)
	}
}

// Writes reach a pipe job's stdin; close sends EOF; after the job ends,
// a write is refused with an error.
func TestSupervise_StdinWriteClose(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	in := start(t, r, StartRequest{Shell: "cat"})
	if err := r.Write(t.Context(), in.ID, []byte("part1 ")); err != nil {
		t.Fatal(err)
	}
	if err := r.Submit(t.Context(), in.ID, "part2"); err != nil {
		t.Fatal(err)
	}
	if err := r.CloseStdin(t.Context(), in.ID); err != nil {
		t.Fatal(err)
	}
	waitDone(t, r, in.ID)
	if s := logText(t, r, in.ID); s != "part1 part2\n" {
		t.Errorf("log = %q", s)
	}
	if err := r.Write(t.Context(), in.ID, []byte("late")); err == nil {
		t.Error("write to a finished job succeeded")
	}
}
