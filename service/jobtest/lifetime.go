package jobtest

import (
	"testing"

	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/procregistry"
)

// lifeJob is one job of the Lifetimes check.
type lifeJob struct {
	name  string
	start procregistry.Lifetime // its class at the start
	set   string                // a class given while it runs ("": none)
	want  procregistry.Lifetime // its class then
	ends  bool                  // the session's end kills it
	id    string
	mark  string
}

// testLifetimes: at the session's end its session jobs are killed, and
// its detached and keep-awake jobs are not: they run on where the
// sandbox outlives the session, and end with it where it is released
// then (Backend.ReleasedAtEnd). A class given while the job runs is the
// one that counts; List shows each job's class; KeepsAwake sees the
// keep-awake job. What would break: a session end that kills every job
// of the owner (or none), a SetLifetime that the registry records but
// the end ignores, a backend whose daemon dies with the session's
// connection (detached jobs taken along on a host that stays), or one
// whose released sandbox leaves jobs running where nobody can reach them.
func testLifetimes(t *testing.T, x *session) {
	c := bounded(t)
	jobs := []*lifeJob{
		{name: "session (the default)", start: procregistry.LifetimeSession, want: procregistry.LifetimeSession, ends: true},
		{name: "detached", start: procregistry.LifetimeDetached, want: procregistry.LifetimeDetached},
		{name: "keep-awake", start: procregistry.LifetimeKeepAwake, want: procregistry.LifetimeKeepAwake},
		{name: "session made detached", start: procregistry.LifetimeSession, set: "detached", want: procregistry.LifetimeDetached},
		{name: "detached made the session's", start: procregistry.LifetimeDetached, set: "session", want: procregistry.LifetimeSession, ends: true},
	}
	for _, j := range jobs {
		j.mark = marker()
		j.id = x.start(t, procregistry.StartRequest{Shell: "sleep 300; : " + j.mark, Lifetime: j.start}).ID
	}
	for _, j := range jobs {
		if j.set == "" {
			continue
		}
		l, err := procregistry.ParseLifetime(j.set)
		if err != nil {
			t.Fatal(err)
		}
		if in, err := x.Jobs.SetLifetime(c, j.id, l); err != nil || in.Lifetime != j.want {
			t.Fatalf("%s: SetLifetime(%s) = %q, %v; want %q", j.name, j.set, in.Lifetime, err, j.want)
		}
	}
	list, err := x.Jobs.List(c)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, j := range jobs {
		found := false
		for _, in := range list {
			if in.ID == j.id {
				found = true
				if in.Lifetime != j.want || in.Status != procregistry.StatusRunning {
					t.Errorf("%s: listed as %s, %s; want running, %s", j.name, in.Status, in.Lifetime, j.want)
				}
			}
		}
		if !found {
			t.Errorf("%s: job %s not listed", j.name, j.id)
		}
	}
	if awake, err := x.Jobs.KeepsAwake(c); err != nil || !awake {
		t.Errorf("KeepsAwake with a keep-awake job running = %v, %v; want true", awake, err)
	}
	// The control: every job is seen from outside before the end.
	for _, j := range jobs {
		testwait.Within(t, hang, j.name+" running before the session's end", func() bool { return x.running(t, j.mark) })
	}

	if err := x.end(c); err != nil {
		t.Fatalf("ending the session: %v", err)
	}
	for _, j := range jobs {
		if j.ends || x.released != "" {
			testwait.Within(t, hang, j.name+" ended with the session", func() bool { return !x.running(t, j.mark) })
		}
	}
	if x.released != "" {
		t.Logf("the session's sandbox is released at its end (%s): its detached and keep-awake jobs ended with it", x.released)
		return
	}
	// Looked at once the session's jobs are gone, so the end had time
	// to take these too, had it wrongly meant to.
	for _, j := range jobs {
		if !j.ends && !x.running(t, j.mark) {
			t.Errorf("%s: ended with the session; want it to run on", j.name)
		}
	}
}
