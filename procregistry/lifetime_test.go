package procregistry

import (
	"errors"
	"testing"

	"github.com/runbox/runbox/envs"
)

// TestParseLifetime: every class by its name, "session" and "" alike,
// and an unknown name refused as a bad command.
func TestParseLifetime(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Lifetime
		bad  bool
	}{
		{"", LifetimeSession, false},
		{"session", LifetimeSession, false},
		{"command", LifetimeCommand, false},
		{"detached", LifetimeDetached, false},
		{"keep-awake", LifetimeKeepAwake, false},
		{"Detached", "", true},
		{"forever", "", true},
	} {
		got, err := ParseLifetime(c.in)
		if c.bad {
			if !errors.Is(err, envs.ErrBadCommand) {
				t.Errorf("ParseLifetime(%q) = %q, %v; want ErrBadCommand", c.in, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseLifetime(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
		if back, _ := ParseLifetime(got.String()); back != got {
			t.Errorf("%q: String() %q does not read back", c.in, got.String())
		}
	}
}

// TestLifetime_EndSessionByClass: a session's end kills its session and
// command jobs and leaves detached and keep-awake ones running; a class
// changed while the job runs is the one that counts, and is kept in the
// job's record (a registry that recovers reads it).
func TestLifetime_EndSessionByClass(t *testing.T) {
	r := newTestRegistry(t, "", nil)
	ids := map[string]string{}
	for _, l := range []Lifetime{LifetimeSession, LifetimeCommand, LifetimeDetached, LifetimeKeepAwake} {
		ids[l.String()] = start(t, r, StartRequest{Shell: "sleep 600", Lifetime: l}).ID
	}
	ids["made detached"] = start(t, r, StartRequest{Shell: "sleep 600"}).ID
	ids["made session's"] = start(t, r, StartRequest{Shell: "sleep 600", Lifetime: LifetimeDetached}).ID
	if in, err := r.SetLifetime(ids["made detached"], LifetimeDetached); err != nil || in.Lifetime != LifetimeDetached {
		t.Fatalf("SetLifetime = %+v, %v", in, err)
	}
	if _, err := r.SetLifetime(ids["made session's"], "session"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.SetLifetime(ids["detached"], "sometimes"); !errors.Is(err, envs.ErrBadCommand) {
		t.Errorf("SetLifetime to an unknown class: %v; want ErrBadCommand", err)
	}
	if _, err := r.Start(t.Context(), StartRequest{Shell: "true", Owner: "agent", Lifetime: "forever"}); !errors.Is(err, envs.ErrBadCommand) {
		t.Errorf("Start with an unknown class: %v; want ErrBadCommand", err)
	}
	if _, err := r.EndSession(t.Context(), "agent"); err != nil {
		t.Fatal(err)
	}
	killed := map[string]bool{"session": true, "command": true, "made session's": true}
	for name, id := range ids {
		in, err := r.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if got := in.KilledBy == "session-end"; got != killed[name] {
			t.Errorf("%s: %s killed by %q; want killed %v", name, in.Status, in.KilledBy, killed[name])
		}
		if !killed[name] {
			r.Kill(t.Context(), id)
		}
	}
	if _, err := r.SetLifetime(ids["session"], LifetimeDetached); !errors.Is(err, envs.ErrBadCommand) {
		t.Errorf("SetLifetime of a finished job: %v; want ErrBadCommand", err)
	}
}
