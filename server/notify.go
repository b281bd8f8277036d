package server

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/procregistry"
)

// Notice is the data of a job event's log-message notification: a
// readable message (a line such as "[background job 3f2a completed:
// exit 0]", then the tail of the output) and the event itself.
type Notice struct {
	Message string             `json:"message"`
	Event   procregistry.Event `json:"event"`
}

// errNotListening: the HTTP client has no stream open to be notified on.
var errNotListening = errors.New("the client has no stream open")

// notifyLogger names runbox's notifications among a client's logs.
const notifyLogger = "runbox.jobs"

// notify sends one job event to the session's client. An error means it
// was not delivered (the event then stays queued).
func (s *session) notify(ctx context.Context, ev procregistry.Event) error {
	// Over HTTP a notice unrelated to a call goes to the client's
	// standalone stream. With none open the SDK would keep it for a
	// stream resumed later (Last-Event-ID), which a new stream never
	// asks for: it stays queued instead, for the next list or poll, or
	// the redelivery once a stream is open.
	if id := s.mcp.ID(); id != "" && !s.srv.listening(id) {
		return fmt.Errorf("runbox: session %s: %w", s.id, errNotListening)
	}
	// The SDK marks logging deprecated as of protocol 2026-07-28, which
	// runbox does not negotiate (sessionProtocolVersions); in the versions
	// it speaks, log messages are the specification's channel for what a
	// server sends on its own (docs/mcp-protocol.md).
	//lint:ignore SA1019 deprecated only in a protocol version runbox refuses
	return s.mcp.Log(ctx, &mcp.LoggingMessageParams{
		Level:  eventLevel(ev),
		Logger: notifyLogger,
		Data:   Notice{Message: eventMessage(ev), Event: ev},
	})
}

// eventLevel is the log level of an event: completions, watch matches,
// quiet and waiting-for-input notices are "notice" (a failed job
// "warning"), heartbeats "info".
func eventLevel(ev procregistry.Event) mcp.LoggingLevel {
	switch ev.Type {
	case procregistry.EventHeartbeat:
		return "info"
	case procregistry.EventCompletion:
		if ev.Reason != procregistry.ReasonExited || ev.Exit == nil || ev.Exit.Code != 0 {
			return "warning"
		}
	case procregistry.EventWatchDisabled, procregistry.EventBreakerTripped:
		return "warning"
	}
	return "notice"
}

// eventMessage is the readable form of an event: one line, then the tail
// of the output or the matching line where there is one.
func eventMessage(ev procregistry.Event) string {
	var head string
	switch ev.Type {
	case procregistry.EventCompletion:
		head = fmt.Sprintf("[background job %s %s]", ev.Job, completion(ev))
	case procregistry.EventHeartbeat:
		head = fmt.Sprintf("[background job %s still running: %d new bytes of output]", ev.Job, ev.NewBytes)
	case procregistry.EventWatch:
		head = fmt.Sprintf("[background job %s matched %q]", ev.Job, ev.Pattern)
		if ev.Suppressed > 0 {
			head += fmt.Sprintf(" (%d more matches suppressed)", ev.Suppressed)
		}
		return head + "\n" + ev.Line
	case procregistry.EventHandoff:
		head = fmt.Sprintf("[background job %s handed over to you]", ev.Job)
	case procregistry.EventWaitingForInput:
		head = fmt.Sprintf("[background job %s is waiting for input: answer with the process tool's submit or write]", ev.Job)
	case procregistry.EventQuiet:
		head = fmt.Sprintf("[background job %s is quiet]", ev.Job)
	default:
		head = fmt.Sprintf("[background jobs: %s]", strings.ReplaceAll(string(ev.Type), "_", " "))
	}
	if ev.Message != "" && ev.Type != procregistry.EventCompletion {
		head += " " + ev.Message
	}
	if ev.Tail != "" {
		return head + "\n" + ev.Tail
	}
	return head
}

// completion says how a job ended.
func completion(ev procregistry.Event) string {
	switch ev.Reason {
	case procregistry.ReasonKilled:
		if ev.Exit != nil {
			return fmt.Sprintf("killed by %s: exit %d", ev.KilledBy, ev.Exit.Code)
		}
		return "killed by " + ev.KilledBy
	case procregistry.ReasonNoOutputTimeout:
		if ev.Exit != nil {
			return fmt.Sprintf("ended by its no-output timeout (%s): exit %d", ev.Message, ev.Exit.Code)
		}
		return "ended by its no-output timeout: " + ev.Message
	case procregistry.ReasonLost:
		return "lost: " + ev.Message
	case procregistry.ReasonFailedToStart:
		return "failed to start: " + ev.Message
	}
	if ev.Exit == nil {
		return "completed"
	}
	if ev.Exit.Signal != 0 {
		return fmt.Sprintf("completed: killed by signal %d (exit %d)", ev.Exit.Signal, ev.Exit.Code)
	}
	return fmt.Sprintf("completed: exit %d", ev.Exit.Code)
}
