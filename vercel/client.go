package vercel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Sentinels for the API's refusals, matched by [APIError.Is].
var (
	// ErrAuth: the API refused the credentials (401, 403).
	ErrAuth = errors.New("vercel: credentials refused")
	// ErrRateLimited: too many requests (429).
	ErrRateLimited = errors.New("vercel: rate limited")
	// ErrNotFound: no such sandbox, session, command or file (404).
	ErrNotFound = errors.New("vercel: not found")
)

// APIError is a response of Vercel's API that is not a success: its
// status, and the code and message of its {"error": {...}} body.
type APIError struct {
	Op      string // what runbox was doing ("create sandbox")
	Status  int
	Code    string
	Message string
	// Source names where the refused credentials came from (401/403).
	Source string
}

func (e *APIError) Error() string {
	what := fmt.Sprintf("vercel: %s: ", e.Op)
	switch {
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden:
		what += fmt.Sprintf("the API refused the token from %s for this team and project (%d)", e.Source, e.Status)
	case e.Status == http.StatusNotFound:
		what += "not found (404)"
	case e.Status == http.StatusTooManyRequests:
		what += "rate limited by the API (429); try again later"
	case e.Status >= 500:
		what += fmt.Sprintf("Vercel's API failed (%d); try again later", e.Status)
	default:
		what += fmt.Sprintf("status %d", e.Status)
	}
	if e.Message != "" {
		what += ": " + e.Message
	}
	return what
}

// Is matches the sentinel of the status.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrAuth:
		return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
	case ErrRateLimited:
		return e.Status == http.StatusTooManyRequests
	case ErrNotFound:
		return e.Status == http.StatusNotFound
	}
	return false
}

// client speaks Vercel Sandbox's REST API. The token goes in the
// Authorization header and nowhere else.
type client struct {
	creds Credentials
	http  *http.Client
}

func newClient(creds Credentials) *client {
	// No overall timeout: a command's log stream lasts as long as the
	// command; contexts bound every call.
	return &client{creds: creds, http: &http.Client{}}
}

// request sends one call. body is JSON-encoded unless it is an io.Reader
// (sent as is, its Content-Type in hdr).
func (c *client) request(ctx context.Context, op, method, path string, query url.Values, body any, hdr http.Header) (*http.Response, error) {
	u := c.creds.url() + path
	q := url.Values{"teamId": {c.creds.TeamID}}
	for k, v := range query {
		q[k] = v
	}
	u += "?" + q.Encode()
	var rd io.Reader
	contentType := hdr.Get("Content-Type")
	switch b := body.(type) {
	case nil:
	case io.Reader:
		rd = b
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("vercel: %s: encode request: %w", op, err)
		}
		rd, contentType = bytes.NewReader(data), "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("vercel: %s: %w", op, err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+c.creds.Token)
	req.Header.Set("User-Agent", "runbox")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("vercel: %s: %w", op, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, c.apiError(op, resp)
	}
	return resp, nil
}

// apiError reads the API's error body.
func (c *client) apiError(op string, resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	e := &APIError{Op: op, Status: resp.StatusCode, Source: c.creds.Source}
	if json.Unmarshal(data, &body) == nil {
		e.Code, e.Message = body.Error.Code, body.Error.Message
	} else {
		e.Message = strings.TrimSpace(string(data))
		if len(e.Message) > 200 {
			e.Message = e.Message[:200] + "…"
		}
	}
	return e
}

// call sends one call and decodes its JSON answer into out (nil: drop it).
func (c *client) call(ctx context.Context, op, method, path string, query url.Values, body, out any) error {
	resp, err := c.request(ctx, op, method, path, query, body, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
	} else {
		err = json.NewDecoder(resp.Body).Decode(out)
	}
	if err != nil {
		return fmt.Errorf("vercel: %s: read answer: %w", op, err)
	}
	return nil
}

// The API's objects, as far as runbox reads them.
type (
	apiSandbox struct {
		Name             string            `json:"name"`
		Persistent       bool              `json:"persistent"`
		Status           string            `json:"status"`
		CurrentSessionID string            `json:"currentSessionId"`
		Tags             map[string]string `json:"tags,omitempty"`
	}
	apiSession struct {
		ID      string `json:"id"`
		Status  string `json:"status"`
		Cwd     string `json:"cwd"`
		Timeout int64  `json:"timeout"`
		VCPUs   int    `json:"vcpus"`
	}
	apiCommand struct {
		ID       string `json:"id"`
		ExitCode *int   `json:"exitCode"`
	}
	sandboxAndSession struct {
		Sandbox apiSandbox `json:"sandbox"`
		Session apiSession `json:"session"`
	}
)

// Session states in which a sandbox takes commands; the others mean it
// has stopped or is stopping.
func running(status string) bool { return status == "running" || status == "pending" }

// createSandbox makes a sandbox; with a runtime it goes to the v2 route,
// else to v3, as the official client does.
func (c *client) createSandbox(ctx context.Context, o Options) (sandboxAndSession, error) {
	body := map[string]any{"projectId": c.creds.ProjectID, "tags": o.tags()}
	path := "/v3/sandboxes"
	if o.Runtime != "" {
		body["runtime"], path = o.Runtime, "/v2/sandboxes"
	}
	if n := o.name(); n != "" {
		body["name"] = n
	}
	if o.Persistent {
		body["persistent"] = true
	}
	if o.Timeout > 0 {
		body["timeout"] = o.Timeout.Milliseconds()
	}
	if o.VCPUs > 0 {
		body["resources"] = map[string]int{"vcpus": o.VCPUs}
	}
	if len(o.Ports) > 0 {
		body["ports"] = o.Ports
	}
	if np := o.networkPolicy(); np != nil {
		body["networkPolicy"] = np
	}
	var out sandboxAndSession
	err := c.call(ctx, "create sandbox", http.MethodPost, path, nil, body, &out)
	return out, err
}

// getSandbox reads a named sandbox; resume starts a new session of a
// stopped one (from its snapshot when it is persistent).
func (c *client) getSandbox(ctx context.Context, name string, resume bool) (sandboxAndSession, error) {
	q := url.Values{"projectId": {c.creds.ProjectID}}
	if resume {
		q.Set("resume", "true")
	}
	var out sandboxAndSession
	err := c.call(ctx, "get sandbox "+name, http.MethodGet, "/v2/sandboxes/"+url.PathEscape(name), q, nil, &out)
	return out, err
}

func (c *client) deleteSandbox(ctx context.Context, name string) error {
	q := url.Values{"projectId": {c.creds.ProjectID}}
	return c.call(ctx, "delete sandbox "+name, http.MethodDelete, "/v2/sandboxes/"+url.PathEscape(name), q, nil, nil)
}

func sessionPath(id string) string { return "/v2/sandboxes/sessions/" + url.PathEscape(id) }

func (c *client) getSession(ctx context.Context, id string) (apiSession, error) {
	var out struct {
		Session apiSession `json:"session"`
	}
	err := c.call(ctx, "get session "+id, http.MethodGet, sessionPath(id), nil, nil, &out)
	return out.Session, err
}

func (c *client) stopSession(ctx context.Context, id string) error {
	return c.call(ctx, "stop session "+id, http.MethodPost, sessionPath(id)+"/stop", nil, nil, nil)
}

// writeTar sends a gzipped tar whose entries are extracted under dir.
func (c *client) writeTar(ctx context.Context, id, dir string, tgz io.Reader) error {
	op := "write files in session " + id
	hdr := http.Header{"Content-Type": {"application/gzip"}, "X-Cwd": {dir}}
	resp, err := c.request(ctx, op, http.MethodPost, sessionPath(id)+"/fs/write", nil, tgz, hdr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// readFile returns a file's content; a missing file is ErrNotFound.
func (c *client) readFile(ctx context.Context, id, path string) (io.ReadCloser, error) {
	resp, err := c.request(ctx, "read "+path+" in session "+id, http.MethodPost, sessionPath(id)+"/fs/read", nil, map[string]string{"path": path}, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// logLine is one line of a command's NDJSON stream: output, an error
// (data is then {code, message}), or, on the run route, the command.
type logLine struct {
	Stream  string          `json:"stream"`
	Data    json.RawMessage `json:"data"`
	Command *apiCommand     `json:"command"`
}

// StreamError is an error line of a command's log stream: the sandbox
// stopped under the command, typically.
type StreamError struct {
	Code, Message string
}

func (e *StreamError) Error() string {
	return fmt.Sprintf("vercel: command stream: %s: %s", e.Code, e.Message)
}

// runWait runs argv to its end through the run route's NDJSON stream and
// returns its exit code and its output (stdout and stderr in arrival
// order, up to limit bytes).
func (c *client) runWait(ctx context.Context, id string, argv []string, limit int) (int, []byte, error) {
	op := "run " + argv[0] + " in session " + id
	body := map[string]any{"command": argv[0], "args": argv[1:], "wait": true}
	resp, err := c.request(ctx, op, http.MethodPost, sessionPath(id)+"/cmd", nil, body, nil)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		return 0, nil, fmt.Errorf("vercel: %s: answer is %q, not a stream of command data", op, ct)
	}
	var out []byte
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	first := true
	for sc.Scan() {
		var l logLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return 0, out, fmt.Errorf("vercel: %s: bad stream line: %w", op, err)
		}
		switch {
		case l.Command != nil && first:
			first = false
		case l.Command != nil:
			if l.Command.ExitCode == nil {
				return 0, out, fmt.Errorf("vercel: %s: finished without an exit code", op)
			}
			return *l.Command.ExitCode, out, nil
		case l.Stream == "error":
			var se StreamError
			json.Unmarshal(l.Data, &se)
			return 0, out, fmt.Errorf("vercel: %s: %w", op, &se)
		default:
			var s string
			json.Unmarshal(l.Data, &s)
			if len(out) < limit {
				out = append(out, s[:min(len(s), limit-len(out))]...)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, out, fmt.Errorf("vercel: %s: %w", op, err)
	}
	return 0, out, fmt.Errorf("vercel: %s: the stream ended before the command finished", op)
}

// interactive opens a PTY session: the websocket URL and its token.
func (c *client) interactive(ctx context.Context, id string) (wsURL, token string, err error) {
	var out struct {
		URL   string `json:"url"`
		Token string `json:"token"`
	}
	err = c.call(ctx, "open interactive session in "+id, http.MethodPost, sessionPath(id)+"/interactive", nil, map[string]any{}, &out)
	return out.URL, out.Token, err
}
