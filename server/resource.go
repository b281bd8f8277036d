package server

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EventsURI names the resource of a session's job events. Reading it
// returns the events no notification, list or poll has delivered yet, and
// takes them. A client that subscribes to it is told when there is
// something to read (notifications/resources/updated) instead of being
// sent each event as a log message.
const EventsURI = "runbox://jobs/events"

// eventsMIMEType is the type of the events resource's content.
const eventsMIMEType = "application/json"

// JobEvents is the content of the events resource: the session's
// undelivered job events, oldest first, each as a log message carries it
// (its readable message and the event, the object process list and poll
// return in their events). Events is never null: nothing pending is [].
type JobEvents struct {
	Events []Notice `json:"events"`
}

// addEventsResource lists the events resource (resources/list) and
// serves its reads. With it (and SubscribeHandler set) the SDK declares
// the resources capability with subscribe (Server.capabilities,
// server.go). It declares listChanged too, harmlessly: the list never
// changes, so no list_changed notification is ever sent. Setting
// ServerOptions.Capabilities to leave it out would drop the SDK's
// default logging capability unless declared again, through a field the
// SDK marks deprecated.
func (s *Server) addEventsResource() {
	s.mcp.AddResource(&mcp.Resource{
		URI:      EventsURI,
		Name:     "job-events",
		Title:    "Background job events",
		MIMEType: eventsMIMEType,
		Description: "This session's background job events (completion, watch matches, heartbeats, quiet, waiting for input) " +
			"not yet delivered. Reading takes them: each event is returned once, by a read, a process list or poll, or a log message. " +
			"Subscribe to be told when there are events to read.",
	}, s.readEvents)
}

// readEvents serves resources/read of the events resource: the client's
// session's undelivered events, taken.
func (s *Server) readEvents(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	sess := s.sessionOf(req.Session)
	if sess == nil {
		return nil, fmt.Errorf("runbox: no session for this client (it did not initialize)")
	}
	ctx, cancel := s.callContext(ctx)
	defer cancel()
	evs, err := sess.pendingEvents(ctx)
	if err != nil {
		return nil, fmt.Errorf("runbox: session %s: reading its job events: %w", sess.id, err)
	}
	content := JobEvents{Events: make([]Notice, 0, len(evs))}
	for _, ev := range evs {
		content.Events = append(content.Events, Notice{Message: eventMessage(ev), Event: ev})
	}
	b, err := json.Marshal(content)
	if err != nil {
		return nil, fmt.Errorf("runbox: session %s: encoding its job events: %w", sess.id, err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
		{URI: EventsURI, MIMEType: eventsMIMEType, Text: string(b)},
	}}, nil
}

// subscribe serves resources/subscribe: the events resource becomes the
// session's channel for its job events. Any other URI is refused as not
// found (-32002), so the SDK records no subscription for it.
func (s *Server) subscribe(_ context.Context, req *mcp.SubscribeRequest) error {
	sess, err := s.eventsSession(req.Session, req.Params.URI)
	if err != nil {
		return err
	}
	sess.subscribe()
	return nil
}

// unsubscribe serves resources/unsubscribe: the session's later job
// events go out as log messages again.
func (s *Server) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	sess, err := s.eventsSession(req.Session, req.Params.URI)
	if err != nil {
		return err
	}
	sess.unsubscribe()
	return nil
}

// eventsSession is the runbox session whose client (un)subscribes to
// uri, which must be the events resource.
func (s *Server) eventsSession(ss *mcp.ServerSession, uri string) (*session, error) {
	if uri != EventsURI {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	sess := s.sessionOf(ss)
	if sess == nil {
		return nil, fmt.Errorf("runbox: no session for this client (it did not initialize)")
	}
	return sess, nil
}

// keepSender is a sending middleware that changes nothing: it keeps the
// handler it wraps, the SDK's own (AddSendingMiddleware applies it at
// once), for resourceUpdated.
func (s *Server) keepSender(next mcp.MethodHandler) mcp.MethodHandler {
	s.sender = next
	return next
}

// resourceUpdated sends notifications/resources/updated for uri to the
// client of one session. The SDK has no per-session form of it:
// Server.ResourceUpdated (server.go) sends to every session subscribed to
// uri, and every runbox client subscribes to the same URI while the
// resource's content is its own session's, so each event would wake every
// subscribed client. It also returns nil whatever happened (a failed send
// is only logged), where an announcement that did not go out must leave
// the event queued; and it sees a subscription only once SubscribeHandler
// has returned. The notification is sent through the SDK's sending
// handler instead, as ServerSession.Log does for log messages: the same
// message on the same connection, to this session only, with the error.
func (s *Server) resourceUpdated(ctx context.Context, ss *mcp.ServerSession, uri string) error {
	_, err := s.sender(ctx, "notifications/resources/updated", &mcp.ServerRequest[*mcp.ResourceUpdatedNotificationParams]{
		Session: ss, Params: &mcp.ResourceUpdatedNotificationParams{URI: uri},
	})
	return err
}
