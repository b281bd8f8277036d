package server

import (
	"context"
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Path is where the streamable HTTP transport is served.
const Path = "/mcp"

// DefaultSessionIdle is how long an HTTP session may go with no request
// of its client open (no call, no standalone stream) before it is closed
// and torn down, when HTTPOptions.SessionIdle is zero: its client is gone
// (a client that ends without DELETE leaves nothing open). A client that
// keeps its GET stream open is never idle. Over stdio a session ends with
// the connection instead.
const DefaultSessionIdle = 2 * time.Minute

// HTTPOptions configure [Server.HTTPHandler].
type HTTPOptions struct {
	// Token, when set, must be presented on every request as
	// "Authorization: Bearer <token>". Empty means no token is checked:
	// only for a transport that already admits only this user (a Unix
	// socket with peer credentials checked, see [ListenUnix]).
	Token string
	// Hosts are the Host names accepted besides localhost, 127.0.0.1 and
	// ::1 (the name or address a non-loopback listener is reached by).
	// Requests naming any other host are refused: a DNS-rebinding page
	// reaches a loopback server under a name of its own.
	Hosts []string
	// AnyHost accepts every Host header. Only for transports a browser
	// cannot reach (a Unix socket).
	AnyHost bool
	// Origins are the exact Origin values accepted besides the origins of
	// accepted hosts. A request from any other origin (a web page) is
	// refused. Requests without an Origin (not from a browser) pass.
	Origins []string
	// SessionIdle closes a session after this long with no request of
	// its client open (its standalone stream included). Zero means
	// DefaultSessionIdle; negative means never.
	SessionIdle time.Duration
}

// HTTPHandler serves the streamable HTTP transport at [Path], behind the
// Host, Origin and bearer-token checks of opts. Streams are resumable:
// every SSE event carries an id, the stream starts with a retry: hint,
// and a client that reconnects with Last-Event-ID is sent what it missed.
func (s *Server) HTTPHandler(opts HTTPOptions) http.Handler {
	idle := opts.SessionIdle
	switch {
	case idle == 0:
		idle = DefaultSessionIdle
	case idle < 0:
		idle = 0
	}
	tracker := newIdleTracker(idle, s.expire)
	context.AfterFunc(s.ctx, tracker.stop)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		// Idle sessions are runbox's to close (idleTracker): the SDK's
		// timer, paused only by sessionInfo.startPOST (streamable.go), does
		// not count an open GET stream as activity.
		SessionTimeout: 0,
		EventStore:     mcp.NewMemoryEventStore(nil),
		Logger:         s.log,
	})
	mux := http.NewServeMux()
	mux.Handle(Path, guard(opts, s.endOnDelete(s.protocol(tracker, h))))
	return mux
}

// endOnDelete tears the client's runbox session down as soon as its
// DELETE arrives, before the SDK handles it. The SDK closes a session
// only once the calls it is running have returned
// (StreamableHTTPHandler.serveStatefulDELETE in streamable.go calls
// ServerSession.Close, whose jsonrpc2 Connection.Close waits for the
// requests in flight and does not cancel them), and a foreground
// command can run for hours: without this, the DELETE would wait for
// them and everything the session started would keep running meanwhile.
// Its environment closed, a running command is killed with its tree and
// its call returns; then the SDK ends the session.
func (s *Server) endOnDelete(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("Mcp-Session-Id"); r.Method == http.MethodDelete && id != "" {
			s.endByID(id)
		}
		next.ServeHTTP(w, r)
	})
}

// guard refuses requests from foreign hosts and origins (403) and
// requests without the token (401), before next sees them. The SDK's own
// check in StreamableHTTPHandler.ServeHTTP (streamable.go, on unless
// DisableLocalhostProtection) refuses only a non-loopback Host on a
// loopback listener, checks no Origin unless CrossOriginProtection is set,
// and checks no token: runbox's listeners beyond loopback and its
// browser-reachable ones need all three.
func guard(opts HTTPOptions, next http.Handler) http.Handler {
	hosts := append([]string{"localhost", "127.0.0.1", "::1"}, opts.Hosts...)
	hostOK := func(h string) bool {
		return slices.ContainsFunc(hosts, func(a string) bool { return strings.EqualFold(a, h) })
	}
	want := []byte(opts.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !opts.AnyHost && !hostOK(hostname(r.Host)) {
			http.Error(w, "runbox: forbidden: Host "+r.Host+" is not this server", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !slices.Contains(opts.Origins, o) {
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !hostOK(u.Hostname()) {
				http.Error(w, "runbox: forbidden: Origin "+o+" is not allowed", http.StatusForbidden)
				return
			}
		}
		if len(want) > 0 {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), want) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="runbox"`)
				http.Error(w, "runbox: unauthorized: a bearer token is required", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// hostname is the host part of a Host header, without port or brackets.
func hostname(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}
