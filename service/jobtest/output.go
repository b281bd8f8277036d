package jobtest

import (
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/procregistry"
)

// testOutput: a job's output is durable and addressed by byte offset: it
// can be read while the job runs and after it ended, in pieces of any
// size, each piece starting where the last one ended, with nothing lost
// or repeated; the completion notice comes exactly once, with the exit
// code and the output's tail. What would break: a backend whose job log
// is a pipe read once (a second reader, or a reader from an offset, gets
// nothing), a relay that splits or duplicates a chunk, or a pump that
// delivers a completion twice (or never acknowledges it, so a tool result
// takes it again).
func testOutput(t *testing.T, x *session) {
	c := bounded(t)
	// The job stops at `read` until its stdin ends, so its first line is
	// read while it certainly runs.
	in := x.start(t, procregistry.StartRequest{Shell: "echo one; read x; echo two; printf three; exit 3", Notify: true})
	testwait.Within(t, hang, "the running job's first line", func() bool {
		ch, err := x.Jobs.ReadLog(c, in.ID, 0, 0)
		if err != nil {
			t.Fatalf("ReadLog(%s, 0) while it runs: %v", in.ID, err)
		}
		return string(ch.Data) == "one\n"
	})
	if p, err := x.Jobs.Poll(c, in.ID); err != nil || p.Status != procregistry.StatusRunning {
		t.Fatalf("Poll while it waits on stdin = %+v, %v; want running", p, err)
	}
	if err := x.Jobs.CloseStdin(c, in.ID); err != nil {
		t.Fatalf("CloseStdin: %v", err)
	}
	end := x.wait(t, in.ID)
	const all = "one\ntwo\nthree"
	if end.Status != procregistry.StatusExited || end.Exit == nil || end.Exit.Code != 3 || end.Size != int64(len(all)) {
		t.Fatalf("the job's end = %+v; want exited with code 3 and %d bytes of output", end, len(all))
	}

	var got strings.Builder
	for off := int64(0); off < end.Size; {
		ch, err := x.Jobs.ReadLog(c, in.ID, off, 5)
		if err != nil {
			t.Fatalf("ReadLog(%d, 5): %v", off, err)
		}
		if ch.Offset != off || ch.Next <= off || ch.Next-off > 5 || !ch.Done {
			t.Fatalf("ReadLog(%d, 5) = offset %d next %d done %v; want a piece of at most 5 bytes from %d of a finished job", off, ch.Offset, ch.Next, ch.Done, off)
		}
		got.Write(ch.Data)
		off = ch.Next
	}
	if got.String() != all {
		t.Errorf("the output read in pieces = %q; want %q", got.String(), all)
	}
	if ch, err := x.Jobs.ReadLog(c, in.ID, 4, 0); err != nil || string(ch.Data) != "two\nthree" || ch.Next != end.Size {
		t.Errorf("ReadLog from offset 4 = %q next %d, %v; want %q next %d", ch.Data, ch.Next, err, "two\nthree", end.Size)
	}
	if ch, err := x.Jobs.TailLines(c, in.ID, 1); err != nil || string(ch.Data) != "three" {
		t.Errorf("TailLines(1) = %q, %v; want %q", ch.Data, err, "three")
	}

	ev := x.n.await(t, in.ID, procregistry.EventCompletion, 1)[0]
	if ev.Reason != procregistry.ReasonExited || ev.Exit == nil || ev.Exit.Code != 3 || !strings.Contains(ev.Tail, "three") {
		t.Errorf("completion = %+v; want reason exited, code 3 and the tail", ev)
	}
	x.later(t)
	if n := x.n.count(in.ID, procregistry.EventCompletion); n != 1 {
		t.Errorf("the completion was delivered %d times; want once", n)
	}
	evs, err := x.Jobs.TakeEvents(c)
	if err != nil {
		t.Fatalf("TakeEvents: %v", err)
	}
	for _, ev := range evs {
		if ev.Job == in.ID {
			t.Errorf("an event of the job still queued after its delivery: %+v", ev)
		}
	}
}

// testYield: a command still running when its yield passes comes back
// then, with a job id and its output so far, carries on as the session's
// job, and its end comes once, as a completion notice with the rest of
// its output; reading its log from where the result left off gives that
// rest. A command that ends within its yield comes back like a
// foreground one, with its output and exit code, and no notice follows.
// What would break: a backend whose registry cannot wait with a bound (the
// call blocks for the whole command), a yielded job killed when the call
// returns (it was of class command until then), or a hold on the
// completion that leaks (a quick command notified as well as returned,
// or a yielded one never notified).
func testYield(t *testing.T, x *session) {
	c := bounded(t)
	res, err := x.Jobs.StartYield(c, procregistry.StartRequest{Shell: "echo begun; sleep 3; echo done"}, time.Second, 0)
	x.pump()
	if err != nil {
		t.Fatalf("StartYield: %v", err)
	}
	id := res.Job.ID
	const whole = "begun\ndone\n"
	if id == "" || !strings.HasPrefix(res.Output, "begun") || !strings.HasPrefix(whole, res.Output) {
		t.Fatalf("StartYield of a 3 s command with a 1 s yield = %+v; want its id and begun", res)
	}
	// The yield passes after 1 s, but on a loaded machine the calls that
	// follow it (the class, the status, the output, each through the
	// sandbox's registry) can take longer than the command's last 2 s:
	// the result may then already hold its end, and the job is over.
	if res.Done {
		if res.Output != whole || res.ExitCode() != 0 {
			t.Errorf("a yield that came back after the end = %+v; want the whole output and exit 0", res)
		}
		x.later(t)
		if n := x.n.count(id, procregistry.EventCompletion); n != 0 {
			t.Errorf("the job whose end was the result was notified too (%d times)", n)
		}
	} else {
		if res.Job.Status != procregistry.StatusRunning {
			t.Errorf("a yield not done says the job is %s; want running", res.Job.Status)
		}
		if res.Job.Lifetime != procregistry.LifetimeSession {
			t.Errorf("the yielded job's class = %q; want the session's", res.Job.Lifetime)
		}
		ev := x.n.await(t, id, procregistry.EventCompletion, 1)[0]
		if ev.Exit == nil || ev.Exit.Code != 0 || !strings.Contains(ev.Tail, "done") {
			t.Errorf("completion = %+v; want exit 0 and done in the tail", ev)
		}
		more, err := x.Jobs.PollYield(c, id, res.Next, 0, 0)
		if err != nil || !more.Done || res.Output+more.Output != whole {
			t.Errorf("PollYield from %d = %+v, %v; want the rest of %q, done", res.Next, more, err, whole)
		}
	}

	quick, err := x.Jobs.StartYield(c, procregistry.StartRequest{Shell: "echo quick; exit 4"}, hang, 0)
	if err != nil {
		t.Fatalf("StartYield of a quick command: %v", err)
	}
	if !quick.Done || quick.ExitCode() != 4 || quick.Output != "quick\n" || quick.Job.ID == "" {
		t.Errorf("StartYield of a command that ends in time = %+v; want done, exit 4, its output", quick)
	}
	x.later(t)
	if n := x.n.count(id, procregistry.EventCompletion); !res.Done && n != 1 {
		t.Errorf("the yielded job's completion was delivered %d times; want once", n)
	}
	if n := x.n.count(quick.Job.ID, procregistry.EventCompletion); n != 0 {
		t.Errorf("the command that returned its end was notified too (%d times)", n)
	}
}
