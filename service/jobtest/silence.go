package jobtest

import (
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/procregistry"
)

// testWaitingForInput: a job blocked reading its stdin is reported once,
// with the output's tail (its question); a line written to it (judged by
// the gate first) lets it finish, and it completes once. What would
// break: a registry that cannot see the job's processes where it runs
// (the notice never comes), one that repeats the notice while the job
// goes on waiting, or a write that does not reach the job's stdin
// through the backend's relay.
func testWaitingForInput(t *testing.T, x *session) {
	c := bounded(t)
	in := x.start(t, procregistry.StartRequest{
		Shell: `echo "your name?"; read x; echo "hello $x"`, Notify: true, InputWait: time.Second,
	})
	ev := x.n.await(t, in.ID, procregistry.EventWaitingForInput, 1)[0]
	if !strings.Contains(ev.Tail, "your name?") {
		t.Errorf("waiting-for-input notice = %+v; want the question in its tail", ev)
	}
	if err := x.Jobs.Write(c, in.ID, "echo world", true); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if end := x.wait(t, in.ID); end.Exit == nil || end.Exit.Code != 0 {
		t.Fatalf("the answered job's end = %+v; want exit 0", end)
	}
	done := x.n.await(t, in.ID, procregistry.EventCompletion, 1)[0]
	if !strings.Contains(done.Tail, "hello echo world") {
		t.Errorf("completion = %+v; want the answer in its tail", done)
	}
	x.later(t)
	if w, d := x.n.count(in.ID, procregistry.EventWaitingForInput), x.n.count(in.ID, procregistry.EventCompletion); w != 1 || d != 1 {
		t.Errorf("%d waiting-for-input and %d completion notices; want one each", w, d)
	}
}

// spell is how long each silent spell of the Quiet check lasts: longer
// than the quiet time plus the registry's default gap between two
// notices of a kind (procregistry.DefaultNoticeGap), so that a notice
// repeated within a spell would arrive before the spell ends.
const spell = "8"

// testQuiet: a job silent for its quiet time is reported once per silent
// spell, with the output's tail; output starts a new spell, reported
// again. What would break: a quiet notice sent at every interval of a
// long silence (an agent woken again and again for nothing), one never
// re-armed by output, or one that fires on a job that does print.
func testQuiet(t *testing.T, x *session) {
	in := x.start(t, procregistry.StartRequest{
		Shell:  "echo spell-1; sleep " + spell + "; echo spell-2; sleep " + spell + "; echo end",
		Notify: true, QuietAfter: time.Second,
	})
	x.wait(t, in.ID)
	// Quiet notices come before the completion, in order.
	x.n.await(t, in.ID, procregistry.EventCompletion, 1)
	quiet, _ := x.n.of(in.ID, procregistry.EventQuiet)
	if len(quiet) != 2 {
		t.Fatalf("%d quiet notices for two silent spells; want one per spell: %+v", len(quiet), quiet)
	}
	if !strings.Contains(quiet[0].Tail, "spell-1") || strings.Contains(quiet[0].Tail, "spell-2") {
		t.Errorf("the first spell's notice has tail %q; want the output before it", quiet[0].Tail)
	}
	if !strings.Contains(quiet[1].Tail, "spell-2") || strings.Contains(quiet[1].Tail, "end") {
		t.Errorf("the second spell's notice has tail %q; want the output before it", quiet[1].Tail)
	}
}

// testWatch: a line matching a watch pattern is reported with the line
// and the pattern, once, and before the job's completion. What would
// break: a registry whose log follower misses lines written just before
// the job ends, or sends the completion first.
func testWatch(t *testing.T, x *session) {
	const pattern = `ERROR: .* full`
	in := x.start(t, procregistry.StartRequest{
		Shell:  "echo starting; echo 'ERROR: disk full'; echo more; echo end",
		Notify: true, Watch: []string{pattern},
	})
	done := x.n.await(t, in.ID, procregistry.EventCompletion, 1)[0]
	watch, _ := x.n.of(in.ID, procregistry.EventWatch)
	if len(watch) != 1 {
		t.Fatalf("%d watch notices for one matching line; want 1: %+v", len(watch), watch)
	}
	if w := watch[0]; w.Line != "ERROR: disk full" || w.Pattern != pattern || w.Seq >= done.Seq {
		t.Errorf("watch notice = %+v (completion at seq %d); want the line and the pattern, before the completion", w, done.Seq)
	}
}

// testNoOutputTimeout: a job silent for its no-output timeout is ended,
// its whole tree, and says so: status killed, killed by the timeout,
// its completion's reason no_output_timeout. A job that keeps printing
// runs on past the same timeout: it measures silence, not age. What
// would break: a timeout that counts the job's age (a long build that
// prints is killed), one that ends the job's shell and leaves its child,
// or one reported as an ordinary kill.
func testNoOutputTimeout(t *testing.T, x *session) {
	mark := marker()
	silent := x.start(t, procregistry.StartRequest{
		Shell: "echo before; sleep 300; : " + mark, Notify: true, NoOutputTimeout: time.Second,
	})
	// Each line comes well within the timeout, and the whole job lasts
	// longer than it.
	talker := x.start(t, procregistry.StartRequest{
		Shell: "for i in 1 2 3 4 5 6 7 8; do echo $i; sleep 0.5; done", Notify: true, NoOutputTimeout: 3 * time.Second,
	})
	end := x.wait(t, silent.ID)
	if end.Status != procregistry.StatusKilled || end.KilledBy != procregistry.KilledByNoOutput {
		t.Errorf("the silent job's end = %s, killed by %q; want killed by %q", end.Status, end.KilledBy, procregistry.KilledByNoOutput)
	}
	ev := x.n.await(t, silent.ID, procregistry.EventCompletion, 1)[0]
	if ev.Reason != procregistry.ReasonNoOutputTimeout || ev.KilledBy != procregistry.KilledByNoOutput || !strings.Contains(ev.Tail, "before") {
		t.Errorf("completion = %+v; want reason %s, killed by %s, the tail", ev, procregistry.ReasonNoOutputTimeout, procregistry.KilledByNoOutput)
	}
	testwait.Within(t, hang, "the silent job's tree gone", func() bool { return !x.running(t, mark) })
	if end := x.wait(t, talker.ID); end.Status != procregistry.StatusExited || end.Exit == nil || end.Exit.Code != 0 {
		t.Errorf("a job that kept printing for longer than its no-output timeout ended %s (%+v); want exited 0", end.Status, end.Exit)
	}
}
