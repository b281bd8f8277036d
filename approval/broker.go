package approval

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultTimeout is how long a [Broker] waits for an answer when
// [BrokerOptions.Timeout] is zero. No answer in time is a denial.
const DefaultTimeout = 300 * time.Second

// AnswerKind is a human's answer to a prompt. The zero value denies.
type AnswerKind int

const (
	// AnswerDeny refuses the command.
	AnswerDeny AnswerKind = iota
	// AnswerOnce allows this one run.
	AnswerOnce
	// AnswerSession allows the matched rules for the rest of the session.
	AnswerSession
	// AnswerAlways allows this command from now on and saves that.
	AnswerAlways
)

// String returns "deny", "once", "session" or "always".
func (k AnswerKind) String() string {
	switch k {
	case AnswerDeny:
		return "deny"
	case AnswerOnce:
		return "once"
	case AnswerSession:
		return "session"
	case AnswerAlways:
		return "always"
	}
	return "invalid"
}

// Answer is what the approver said, with an optional reason for a denial.
type Answer struct {
	Kind   AnswerKind
	Reason string
}

// Prompt is a question for a human: may this command run?
type Prompt struct {
	Command    string
	SessionKey string
	Backend    string
	Reasons    []string // rule descriptions
	Rules      []string // rule ids
}

// Pending is a prompt waiting for an answer.
type Pending struct {
	ID      string
	Prompt  Prompt
	Created time.Time
}

// Prompter asks a human and returns the answer. It must return when ctx
// is done.
type Prompter interface {
	Prompt(ctx context.Context, p Pending) (Answer, error)
}

// ErrClosed is returned by a closed [Broker].
var ErrClosed = errors.New("approval: broker closed")

// ErrNoPending is returned by [Broker.Answer] for an unknown or settled id.
var ErrNoPending = errors.New("approval: no such pending request")

// BrokerOptions configure a [Broker].
type BrokerOptions struct {
	// Timeout is how long a request waits for an answer before it is
	// denied. Zero means [DefaultTimeout].
	Timeout time.Duration
	// Prompter, when set, is asked once for each new pending request, in
	// a goroutine the Broker owns. Nil means answers come only through
	// [Broker.Answer] and [Broker.ApproveAllPending] (a server's API).
	Prompter Prompter
	// Notify, when set, is called with each new pending request, in the
	// goroutine of the request's first [Broker.Ask]. It must not block.
	Notify func(Pending)
}

// Broker holds approval requests until someone answers them. Identical
// concurrent requests (same session key and command) share one pending
// entry, and so one prompt and one answer. Close it when done.
type Broker struct {
	opts   BrokerOptions
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	nextID  uint64
	pending map[string]*request // by id
	byKey   map[string]*request
}

type request struct {
	Pending
	key     string
	waiters int // askers attached, for tests
	done    chan struct{}
	answer  Answer
	timer   *time.Timer
	cancel  context.CancelFunc // stops the prompter for this request
}

// NewBroker returns a Broker; call [Broker.Close] to stop it.
func NewBroker(opts BrokerOptions) *Broker {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Broker{
		opts: opts, ctx: ctx, cancel: cancel,
		pending: make(map[string]*request),
		byKey:   make(map[string]*request),
	}
}

// Ask registers p (or joins an identical pending request) and waits for
// the answer, the timeout (a denial), ctx, or Close. When ctx ends first,
// Ask returns a denial and ctx's error; the request stays pending for
// other askers.
func (b *Broker) Ask(ctx context.Context, p Prompt) (Answer, error) {
	key := p.SessionKey + "\x00" + p.Command
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return Answer{Kind: AnswerDeny, Reason: "broker closed"}, ErrClosed
	}
	r := b.byKey[key]
	fresh := r == nil
	if fresh {
		b.nextID++
		r = &request{
			Pending: Pending{ID: "req-" + strconv.FormatUint(b.nextID, 10), Prompt: p, Created: time.Now()},
			key:     key,
			done:    make(chan struct{}),
		}
		b.pending[r.ID] = r
		b.byKey[key] = r
		timeout := b.opts.Timeout
		r.timer = time.AfterFunc(timeout, func() {
			b.settle(r, Answer{Kind: AnswerDeny, Reason: fmt.Sprintf("no answer within %s", timeout)})
		})
		if b.opts.Prompter != nil {
			pctx, cancel := context.WithCancel(b.ctx)
			r.cancel = cancel
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				ans, err := b.opts.Prompter.Prompt(pctx, r.Pending)
				if err != nil {
					ans = Answer{Kind: AnswerDeny, Reason: err.Error()}
				}
				b.settle(r, ans)
			}()
		}
	}
	r.waiters++
	b.mu.Unlock()
	if fresh && b.opts.Notify != nil {
		b.opts.Notify(r.Pending)
	}
	select {
	case <-r.done:
		return r.answer, nil
	case <-ctx.Done():
		return Answer{Kind: AnswerDeny, Reason: "cancelled"}, ctx.Err()
	}
}

// waiting returns how many askers wait on the pending request with id.
func (b *Broker) waiting(id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r := b.pending[id]; r != nil {
		return r.waiters
	}
	return 0
}

// settle records the first answer for r and wakes its askers.
func (b *Broker) settle(r *request, a Answer) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.pending[r.ID] != r {
		return false
	}
	delete(b.pending, r.ID)
	delete(b.byKey, r.key)
	r.timer.Stop()
	if r.cancel != nil {
		r.cancel()
	}
	r.answer = a
	close(r.done)
	return true
}

// Pending lists the requests waiting for an answer, oldest first.
func (b *Broker) Pending() []Pending {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Pending, 0, len(b.pending))
	for _, r := range b.pending {
		out = append(out, r.Pending)
	}
	// Ids grow with time; sort by their number.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && idNum(out[j].ID) < idNum(out[j-1].ID); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func idNum(id string) uint64 {
	n, _ := strconv.ParseUint(strings.TrimPrefix(id, "req-"), 10, 64)
	return n
}

// Answer settles the pending request id.
func (b *Broker) Answer(id string, a Answer) error {
	b.mu.Lock()
	r := b.pending[id]
	b.mu.Unlock()
	if r == nil || !b.settle(r, a) {
		return fmt.Errorf("%w: %q", ErrNoPending, id)
	}
	return nil
}

// ApproveAllPending answers every pending request with kind and returns
// how many it settled.
func (b *Broker) ApproveAllPending(kind AnswerKind) int {
	n := 0
	for _, p := range b.Pending() {
		if b.Answer(p.ID, Answer{Kind: kind}) == nil {
			n++
		}
	}
	return n
}

// Close denies every pending request, stops the prompters the Broker
// started and waits for them. Later Asks fail with [ErrClosed].
func (b *Broker) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	for _, p := range b.Pending() {
		_ = b.Answer(p.ID, Answer{Kind: AnswerDeny, Reason: "broker closed"})
	}
	b.cancel()
	b.wg.Wait()
	return nil
}

// TerminalPrompter asks on a terminal: it writes the prompt ([Question])
// to Out and reads one line from In. "y" allows once, "s" for the session, "a"
// always; anything else, or the end of input, denies ("n because …" gives
// a reason). Prompts are asked one at a time.
//
// In is read by one goroutine the prompter owns, started on the first
// prompt; it ends when In reports the end of input or an error, or, if it
// is not blocked in a Read, when Close is called. Close In (or let it
// reach its end) to release a goroutine blocked reading it.
type TerminalPrompter struct {
	in    io.Reader
	out   io.Writer
	mu    sync.Mutex // one prompt at a time
	start sync.Once
	lines chan string
	stop  chan struct{}
	once  sync.Once
}

// NewTerminalPrompter returns a prompter reading answers from in and
// writing prompts to out.
func NewTerminalPrompter(in io.Reader, out io.Writer) *TerminalPrompter {
	return &TerminalPrompter{in: in, out: out, lines: make(chan string), stop: make(chan struct{})}
}

func (t *TerminalPrompter) read() {
	defer close(t.lines)
	sc := bufio.NewScanner(t.in)
	for sc.Scan() {
		select {
		case t.lines <- sc.Text():
		case <-t.stop:
			return
		}
	}
}

// Prompt implements [Prompter].
func (t *TerminalPrompter) Prompt(ctx context.Context, p Pending) (Answer, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.start.Do(func() { go t.read() })
	// The command is shown through Question, escaped: it must not be
	// able to write on the terminal or pass for runbox's words.
	q := Question(p.Prompt) + "Allow? [y] once, [s] this session, [a] always, [N] no: "
	if _, err := io.WriteString(t.out, q); err != nil {
		return Answer{}, fmt.Errorf("approval: writing prompt: %w", err)
	}
	select {
	case l, ok := <-t.lines:
		if !ok {
			io.WriteString(t.out, "\n")
			return Answer{Kind: AnswerDeny, Reason: "no answer (end of input)"}, nil
		}
		return parseAnswer(l), nil
	case <-ctx.Done():
		io.WriteString(t.out, "\n")
		return Answer{Kind: AnswerDeny, Reason: "no answer"}, ctx.Err()
	}
}

// Close stops the reader goroutine unless it is blocked reading In.
func (t *TerminalPrompter) Close() error {
	t.once.Do(func() { close(t.stop) })
	return nil
}

func parseAnswer(l string) Answer {
	l = strings.TrimSpace(l)
	word, reason, _ := strings.Cut(l, " ")
	switch strings.ToLower(word) {
	case "y", "yes", "o", "once":
		return Answer{Kind: AnswerOnce}
	case "s", "session":
		return Answer{Kind: AnswerSession}
	case "a", "always":
		return Answer{Kind: AnswerAlways}
	}
	reason = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(reason), "because"))
	return Answer{Kind: AnswerDeny, Reason: strings.TrimSpace(reason)}
}
