package daytona

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/gorilla/websocket"

	toolbox "github.com/daytonaio/daytona/libs/toolbox-api-client-go"
)

// The SDK's GetSessionCommandLogsStream holds back the last bytes of every
// chunk until more output (or the end) arrives, so a prompt or a "ready"
// line would wait for the next write; this reader follows the same route
// with the toolbox client's URL and headers and holds back only what may
// be the start of a stream marker.

var (
	stdoutMark = []byte{1, 1, 1}
	stderrMark = []byte{2, 2, 2}
)

// dialLogs opens the follow stream of a session command's logs.
func dialLogs(ctx context.Context, tb *toolbox.APIClient, sid, cid string) (*websocket.Conn, error) {
	cfg := tb.GetConfig()
	u := strings.TrimRight(cfg.Servers[0].URL, "/")
	switch {
	case strings.HasPrefix(u, "https://"):
		u = "wss://" + strings.TrimPrefix(u, "https://")
	case strings.HasPrefix(u, "http://"):
		u = "ws://" + strings.TrimPrefix(u, "http://")
	}
	h := http.Header{}
	for k, v := range cfg.DefaultHeader {
		h.Set(k, v)
	}
	conn, resp, err := websocket.DefaultDialer.DialContext(ctx, u+"/process/session/"+sid+"/command/"+cid+"/logs?follow=true", h)
	if err != nil {
		if resp != nil {
			return nil, &httpStatusError{code: resp.StatusCode, err: err}
		}
		return nil, err
	}
	return conn, nil
}

type httpStatusError struct {
	code int
	err  error
}

func (e *httpStatusError) Error() string {
	return e.err.Error() + " (HTTP " + http.StatusText(e.code) + ")"
}
func (e *httpStatusError) Unwrap() error { return e.err }

// demux copies the stream to out and errw by its markers until the server
// closes it. A normal close is the command's end (nil).
func demux(conn *websocket.Conn, out, errw io.Writer) error {
	cur := out
	var pending []byte
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			if len(pending) > 0 {
				cur.Write(pending)
			}
			if websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway) {
				return nil
			}
			return err
		}
		buf := append(pending, msg...)
		pending = nil
		start := 0
		for i := 0; i < len(buf); {
			c := buf[i]
			if c != 1 && c != 2 {
				i++
				continue
			}
			rest := buf[i:]
			if len(rest) >= 3 && (string(rest[:3]) == string(stdoutMark) || string(rest[:3]) == string(stderrMark)) {
				if err := write(cur, buf[start:i]); err != nil {
					return err
				}
				if c == 1 {
					cur = out
				} else {
					cur = errw
				}
				i += 3
				start = i
				continue
			}
			if len(rest) < 3 && allByte(rest, c) { // maybe a marker cut by the message boundary
				if err := write(cur, buf[start:i]); err != nil {
					return err
				}
				pending = append([]byte(nil), rest...)
				start = len(buf)
				break
			}
			i++
		}
		if start < len(buf) {
			if err := write(cur, buf[start:]); err != nil {
				return err
			}
		}
	}
}

func write(w io.Writer, p []byte) error {
	if len(p) == 0 {
		return nil
	}
	_, err := w.Write(p)
	if errors.Is(err, io.ErrClosedPipe) {
		return nil // the reader went away; keep draining to the end
	}
	return err
}

func allByte(b []byte, c byte) bool {
	for _, x := range b {
		if x != c {
			return false
		}
	}
	return true
}
