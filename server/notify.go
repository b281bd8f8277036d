package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/runbox/runbox/procregistry"
	"github.com/runbox/runbox/service"
	"github.com/runbox/runbox/undo"
)

// Notice is a job event as the client gets it, in the events resource
// ([JobEvents]) or as the data of a log message: a readable message (a
// line such as "[background job 3f2a completed: exit 0]", then the tail
// of the output) and the event itself.
type Notice struct {
	Message string             `json:"message"`
	Event   procregistry.Event `json:"event"`
	// Changes is what a completed job changed in the workspace, when the
	// session records changes.
	Changes *undo.Record `json:"changes,omitempty"`
}

// errNotListening: the HTTP client has no stream open to be notified on.
var errNotListening = errors.New("the client has no stream open")

// notifyLogger names runbox's notifications among a client's logs.
const notifyLogger = "runbox.jobs"

// defaultLevel is the log level a session starts at, so that a client
// that never sends logging/setLevel receives every job event.
const defaultLevel mcp.LoggingLevel = "info"

// notify passes one job event on to the session's client (the pump's
// deliver function). An error means it was not passed on: the event then
// stays queued in the registry.
//
// A client subscribed to the events resource gets it there: it is held
// for the client's read, and announced (postLocked). Any other client is
// sent it as a log message. An event below that client's log level is
// not sent, and not lost either: the session holds it (acknowledged in
// the registry) until a lower level lets it through, or a process list or
// poll returns it.
func (s *session) notify(ctx context.Context, ev procregistry.Event) error {
	s.noticeMu.Lock()
	defer s.noticeMu.Unlock()
	if s.subscribed {
		return s.postLocked(ctx, ev)
	}
	if err := s.releaseLocked(ctx); err != nil {
		return err
	}
	if !s.passesLocked(ev) {
		s.holdLocked(ev)
		return nil
	}
	return s.send(ctx, ev)
}

// postLocked holds ev for a subscribed client's read of the events
// resource, once the client has been told there is something to read.
// One announcement covers every event until the client reads (the read
// takes them all); the first event after a read is announced again. An
// event that cannot be announced is not held, so it stays queued in the
// registry for the next read, list or poll, or the redelivery once the
// client can be notified.
func (s *session) postLocked(ctx context.Context, ev procregistry.Event) error {
	if err := s.announceLocked(ctx); err != nil {
		return err
	}
	s.holdLocked(ev)
	return nil
}

// announceLocked sends notifications/resources/updated for the events
// resource, unless the client has one it has not answered with a read.
func (s *session) announceLocked(ctx context.Context) error {
	if s.announced {
		return nil
	}
	if err := s.reachable(); err != nil {
		return err
	}
	if err := s.srv.resourceUpdated(ctx, s.mcp, EventsURI); err != nil {
		return fmt.Errorf("runbox: session %s: announcing its job events: %w", s.id, err)
	}
	s.announced = true
	return nil
}

// subscribe makes the events resource the session's channel: from now
// on events wait there for the client's read, whatever its log level.
// Events held already (below the level) are announced at once.
func (s *session) subscribe() {
	s.noticeMu.Lock()
	s.subscribed = true
	s.noticeMu.Unlock()
	s.later(func() {
		if s.subscribed && len(s.held) > 0 {
			s.announceLocked(s.pumpCtx) // if it fails, the next event's announcement covers them
		}
	})
}

// unsubscribe returns the session to log messages: later events are
// sent as such, and so are the held ones the client's level lets
// through (it was told of them, but has not read them).
func (s *session) unsubscribe() {
	s.noticeMu.Lock()
	s.subscribed, s.announced = false, false
	s.noticeMu.Unlock()
	s.later(func() { s.releaseLocked(s.pumpCtx) })
}

// later runs f with noticeMu held in a goroutine of the session's own,
// which close waits for; not once the session is closed. It lets a
// request (logging/setLevel, resources/subscribe) be answered before the
// notices it releases are sent.
func (s *session) later(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.wg.Go(func() {
		s.noticeMu.Lock()
		defer s.noticeMu.Unlock()
		f()
	})
}

// releaseLocked sends the held events the client's level now lets
// through, oldest first; on a failure the unsent ones stay held. A
// subscribed client reads them instead.
func (s *session) releaseLocked(ctx context.Context) error {
	if s.subscribed {
		return nil
	}
	kept := s.held[:0:0]
	var err error
	for _, ev := range s.held {
		if err == nil && s.passesLocked(ev) {
			if err = s.send(ctx, ev); err == nil {
				continue
			}
		}
		kept = append(kept, ev)
	}
	s.held = kept
	return err
}

// holdLocked keeps an event below the client's level. A job's newer
// heartbeat takes the place of one held before (counting the new bytes
// of both), so a long job's heartbeats do not pile up.
func (s *session) holdLocked(ev procregistry.Event) {
	if ev.Type == procregistry.EventHeartbeat {
		for i, h := range s.held {
			if h.Type == procregistry.EventHeartbeat && h.Job == ev.Job {
				ev.NewBytes += h.NewBytes
				s.held = append(s.held[:i], s.held[i+1:]...)
				break
			}
		}
	}
	s.held = append(s.held, ev)
}

// passesLocked reports whether the client's log level lets ev through.
// runbox judges the level itself rather than leave it to the SDK:
// ServerSession.Log (server.go) drops a message below the session's level
// and returns nil, so the event would count as delivered and be lost.
func (s *session) passesLocked(ev procregistry.Event) bool {
	return levelRank(eventLevel(ev)) >= levelRank(s.level)
}

// setLevel runs set (the SDK's logging/setLevel) and, if it succeeds,
// takes level as the client's; notices wait meanwhile, so none is judged
// by one level and sent under another. The events held that the new
// level lets through are then sent.
func (s *session) setLevel(level mcp.LoggingLevel, set func() (mcp.Result, error)) (mcp.Result, error) {
	s.noticeMu.Lock()
	res, err := set()
	if err == nil {
		s.level = level
	}
	s.noticeMu.Unlock()
	if err != nil {
		return nil, err
	}
	s.later(func() { s.releaseLocked(s.pumpCtx) })
	return res, nil
}

// takeEvents returns the events no notification has delivered, oldest
// first: those queued in the registry and those the session held, and
// no one else gets them. It is the client's read of whatever it was
// told of, so the next event is announced again.
func (s *session) takeEvents(ctx context.Context, jobs *service.OwnedJobs) ([]procregistry.Event, error) {
	// Not under noticeMu: the pump holds the registry's event lock while
	// it calls notify.
	evs, err := jobs.TakeEvents(ctx)
	if err != nil {
		return nil, err
	}
	s.noticeMu.Lock()
	held := s.held
	s.held, s.announced = nil, false
	s.noticeMu.Unlock()
	if len(held) == 0 {
		return evs, nil
	}
	evs = append(held, evs...)
	slices.SortStableFunc(evs, func(a, b procregistry.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	return evs, nil
}

// levelRank orders the protocol's log levels (RFC 5424's severities,
// least severe first); an unknown level ranks with debug.
func levelRank(l mcp.LoggingLevel) int {
	return max(0, slices.Index([]mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}, l))
}

// pendingEvents is a read of the events resource: takeEvents, for a
// session that has reached the registry (one that never did has none).
func (s *session) pendingEvents(ctx context.Context) ([]procregistry.Event, error) {
	jobs := s.existingJobs()
	if jobs == nil {
		return nil, nil
	}
	return s.takeEvents(ctx, jobs)
}

// reachable returns errNotListening when the client cannot be sent a
// notice now. Over HTTP a notice unrelated to a call goes to the
// client's standalone stream. With none open the SDK would keep it for a
// stream resumed later (Last-Event-ID), which a new stream never asks
// for: the event stays queued instead, for the next read, list or poll,
// or the redelivery once a stream is open. The SDK would also report it
// sent: streamableServerConn.Write (streamable.go) counts a message
// appended to the EventStore as delivered, so Log returns nil though no
// GET holds the stream, and the registry would drop the event.
func (s *session) reachable() error {
	if id := s.mcp.ID(); id != "" && !s.srv.listening(id) {
		return fmt.Errorf("runbox: session %s: %w", s.id, errNotListening)
	}
	return nil
}

// send sends one job event to the session's client as a log message.
func (s *session) send(ctx context.Context, ev procregistry.Event) error {
	if err := s.reachable(); err != nil {
		return err
	}
	// Log messages are the compatibility path, for the clients that do
	// not subscribe to the events resource (EventsURI): stock clients
	// show them without opting in to anything. The SDK marks logging
	// deprecated as of protocol 2026-07-28 (SEP-2577), which runbox does
	// not negotiate (sessionProtocolVersions); in the versions it speaks,
	// logging is part of the specification (docs/mcp-protocol.md).
	n := Notice{Message: eventMessage(ev), Event: ev}
	if jobs := s.existingJobs(); jobs != nil {
		n.Changes, _ = jobs.CompletionChanges(ctx, ev)
		if t := changesText(n.Changes); t != "" {
			n.Message += "\n" + t
		}
	}
	//lint:ignore SA1019 the compatibility path for clients that do not subscribe; deprecated only in a protocol version runbox refuses
	return s.mcp.Log(ctx, &mcp.LoggingMessageParams{
		Level:  eventLevel(ev),
		Logger: notifyLogger,
		Data:   n,
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
