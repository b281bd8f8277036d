package server

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/approval"
)

// elicitAsker is the [approval.Asker] of a client that can be asked: each
// question becomes one elicitation request to it. Questions go through an
// [approval.Broker], so identical concurrent questions (same session,
// same command) are asked once and share the answer, and a question
// nobody answers within the timeout is a refusal.
type elicitAsker struct {
	ss     *mcp.ServerSession
	broker *approval.Broker

	mu sync.Mutex
	// askers are the contexts of the tool calls waiting on each question:
	// the elicitation is sent in the context of one of them, so that on
	// the streamable HTTP transport it travels on that call's stream.
	askers map[string][]context.Context
}

func newElicitAsker(ss *mcp.ServerSession, timeout time.Duration) *elicitAsker {
	a := &elicitAsker{ss: ss, askers: map[string][]context.Context{}}
	a.broker = approval.NewBroker(approval.BrokerOptions{Timeout: timeout, Prompter: a})
	return a
}

func questionKey(p approval.Prompt) string { return p.SessionKey + "\x00" + p.Command }

// Ask implements [approval.Asker].
func (a *elicitAsker) Ask(ctx context.Context, p approval.Prompt) (approval.Answer, error) {
	key := questionKey(p)
	a.mu.Lock()
	a.askers[key] = append(a.askers[key], ctx)
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		list := slices.DeleteFunc(a.askers[key], func(c context.Context) bool { return c == ctx })
		if len(list) == 0 {
			delete(a.askers, key)
		} else {
			a.askers[key] = list
		}
	}()
	return a.broker.Ask(ctx, p)
}

// Close refuses pending questions and stops the elicitations in flight.
func (a *elicitAsker) Close() { a.broker.Close() }

// allowChoice is the one field of the question's form.
const allowChoice = "allow"

// answerSchema is the form of the question: accepting it allows the
// command, once unless the human picks a wider scope (as the terminal
// prompt's y / s / a).
var answerSchema = &jsonschema.Schema{
	Type: "object",
	Properties: map[string]*jsonschema.Schema{
		allowChoice: {
			Type:        "string",
			Title:       "Allow",
			Description: "once: run it this time; session: allow these rules for the rest of this session; always: add this command to approval.allow",
			Enum:        []any{"once", "session", "always"},
			Default:     []byte(`"once"`),
		},
	},
}

// Prompt implements [approval.Prompter]: it elicits the answer.
func (a *elicitAsker) Prompt(ctx context.Context, p approval.Pending) (approval.Answer, error) {
	a.mu.Lock()
	if list := a.askers[questionKey(p.Prompt)]; len(list) > 0 {
		ctx = withValuesOf(ctx, list[0])
	}
	a.mu.Unlock()
	res, err := a.ss.Elicit(ctx, &mcp.ElicitParams{Message: questionText(p.Prompt), RequestedSchema: answerSchema})
	if err != nil {
		return approval.Answer{Kind: approval.AnswerDeny, Reason: "the client could not ask: " + err.Error()}, nil
	}
	switch res.Action {
	case "accept":
		return approval.Answer{Kind: answerKind(res.Content[allowChoice])}, nil
	case "decline":
		return approval.Answer{Kind: approval.AnswerDeny, Reason: "declined"}, nil
	}
	return approval.Answer{Kind: approval.AnswerDeny, Reason: "the question was cancelled"}, nil
}

func answerKind(v any) approval.AnswerKind {
	switch v {
	case "session":
		return approval.AnswerSession
	case "always":
		return approval.AnswerAlways
	}
	return approval.AnswerOnce
}

// questionText is the question: [approval.Question], which shows the
// command escaped after runbox's own words, then how to answer.
func questionText(p approval.Prompt) string {
	return approval.Question(p) + "\nAllow it? Decline to refuse."
}

// valuesOf is a context with the deadline and cancellation of one and
// the values of another.
type valuesOf struct {
	context.Context
	values context.Context
}

func (v valuesOf) Value(key any) any { return v.values.Value(key) }

func withValuesOf(ctx, values context.Context) context.Context {
	return valuesOf{Context: ctx, values: values}
}
