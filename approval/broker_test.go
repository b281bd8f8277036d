package approval

import (
	"context"
	"errors"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// gatePrompter answers once it is released, and counts prompts.
type gatePrompter struct {
	mu      sync.Mutex
	calls   int
	release chan Answer
	asked   chan Pending
}

func (p *gatePrompter) Prompt(ctx context.Context, pd Pending) (Answer, error) {
	p.mu.Lock()
	p.calls++
	p.mu.Unlock()
	p.asked <- pd
	select {
	case a := <-p.release:
		return a, nil
	case <-ctx.Done():
		return Answer{}, ctx.Err()
	}
}

// TestBroker_CoalescesIdentical: two identical concurrent requests get one
// prompt and the same answer.
func TestBroker_CoalescesIdentical(t *testing.T) {
	p := &gatePrompter{release: make(chan Answer), asked: make(chan Pending, 2)}
	b := NewBroker(BrokerOptions{Prompter: p})
	defer b.Close()
	pr := Prompt{Command: "git push --force", SessionKey: "s"}
	var wg sync.WaitGroup
	answers := make([]Answer, 2)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], _ = b.Ask(t.Context(), pr)
		}()
	}
	pd := <-p.asked
	// Wait until both askers are attached to the one pending entry.
	deadline := time.After(5 * time.Second)
	for b.waiting(pd.ID) != 2 {
		select {
		case <-deadline:
			t.Fatal("the second asker never joined the pending request")
		default:
			runtime.Gosched()
		}
	}
	p.release <- Answer{Kind: AnswerSession}
	wg.Wait()
	if p.calls != 1 {
		t.Errorf("prompts = %d; want 1", p.calls)
	}
	for i, a := range answers {
		if a.Kind != AnswerSession {
			t.Errorf("answer %d = %v; want session", i, a.Kind)
		}
	}
}

// TestBroker_AnswerByID: without a prompter, answers come through the API
// (as from runbox serve), by id or all at once.
func TestBroker_AnswerByID(t *testing.T) {
	seen := make(chan Pending, 3)
	b := NewBroker(BrokerOptions{Notify: func(p Pending) { seen <- p }})
	defer b.Close()
	results := make(chan Answer, 3)
	for _, cmd := range []string{"a", "b", "c"} {
		go func() {
			a, _ := b.Ask(t.Context(), Prompt{Command: cmd})
			results <- a
		}()
	}
	first := <-seen
	<-seen
	<-seen
	if err := b.Answer(first.ID, Answer{Kind: AnswerDeny, Reason: "no"}); err != nil {
		t.Fatalf("Answer(%s) = %v", first.ID, err)
	}
	if got := <-results; got.Kind != AnswerDeny || got.Reason != "no" {
		t.Errorf("answered request got %+v; want deny with reason", got)
	}
	if err := b.Answer(first.ID, Answer{Kind: AnswerOnce}); !errors.Is(err, ErrNoPending) {
		t.Errorf("second Answer = %v; want ErrNoPending", err)
	}
	if n := b.ApproveAllPending(AnswerOnce); n != 2 {
		t.Errorf("ApproveAllPending = %d; want 2", n)
	}
	for range 2 {
		if got := <-results; got.Kind != AnswerOnce {
			t.Errorf("approved request got %v; want once", got.Kind)
		}
	}
}

// TestBroker_TimeoutDenies: no answer in time is a denial.
func TestBroker_TimeoutDenies(t *testing.T) {
	b := NewBroker(BrokerOptions{Timeout: 20 * time.Millisecond})
	defer b.Close()
	a, err := b.Ask(t.Context(), Prompt{Command: "x"})
	if err != nil || a.Kind != AnswerDeny || !strings.Contains(a.Reason, "no answer") {
		t.Errorf("Ask = %+v, %v; want a timeout denial", a, err)
	}
}

// TestBroker_CloseDeniesAndStops: Close settles waiting requests and stops
// the prompters it started (goleak in TestMain checks the goroutines).
func TestBroker_CloseDeniesAndStops(t *testing.T) {
	p := &gatePrompter{release: make(chan Answer), asked: make(chan Pending, 1)}
	b := NewBroker(BrokerOptions{Prompter: p})
	done := make(chan Answer)
	go func() {
		a, _ := b.Ask(context.Background(), Prompt{Command: "x"})
		done <- a
	}()
	<-p.asked
	b.Close()
	if a := <-done; a.Kind != AnswerDeny {
		t.Errorf("after Close got %v; want deny", a.Kind)
	}
	if _, err := b.Ask(t.Context(), Prompt{Command: "y"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Ask after Close = %v; want ErrClosed", err)
	}
}

// TestTerminalPrompter_Answers: the letters a user types map to answers,
// and the end of input denies.
func TestTerminalPrompter_Answers(t *testing.T) {
	var out strings.Builder
	tp := NewTerminalPrompter(strings.NewReader("y\ns\nA\nn because it is prod\n\n"), &out)
	defer tp.Close()
	want := []Answer{{Kind: AnswerOnce}, {Kind: AnswerSession}, {Kind: AnswerAlways}, {Kind: AnswerDeny, Reason: "it is prod"}, {Kind: AnswerDeny}, {Kind: AnswerDeny, Reason: "no answer (end of input)"}}
	for i, w := range want {
		got, err := tp.Prompt(t.Context(), Pending{Prompt: Prompt{Command: "git push --force", Reasons: []string{"git force push"}}})
		if err != nil || got != w {
			t.Errorf("prompt %d = %+v, %v; want %+v", i, got, err, w)
		}
	}
	if !strings.Contains(out.String(), "git push --force") || !strings.Contains(out.String(), "git force push") {
		t.Errorf("prompt text %q lacks the command or the reason", out.String())
	}
}

// TestTerminalPrompter_WithBrokerAndGate: the CLI's path end to end.
func TestTerminalPrompter_WithBrokerAndGate(t *testing.T) {
	pr, pw := io.Pipe()
	tp := NewTerminalPrompter(pr, io.Discard)
	b := NewBroker(BrokerOptions{Prompter: tp})
	t.Cleanup(func() {
		b.Close()
		tp.Close()
		pw.Close()
	})
	g := newTestGate(t)
	go pw.Write([]byte("y\n"))
	if err := g.Decide(t.Context(), Request{Command: "git push --force"}, b); err != nil {
		t.Errorf("Decide with a yes = %v; want nil", err)
	}
}
