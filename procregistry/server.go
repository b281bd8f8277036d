package procregistry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
)

// Server serves a [Registry] on a Unix socket to [Client]s of the same
// user: every connection's peer uid (SO_PEERCRED) must equal this
// process's, and the socket should live in a 0700 directory (see
// [Listen]). It is the transport only: every call maps to one Registry
// method.
type Server struct {
	Reg *Registry
}

// Listen creates the socket at path, in a directory it creates (or
// tightens) to 0700 and that must belong to this user.
func Listen(path string) (net.Listener, error) {
	dir := dirOf(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("procregistry: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("procregistry: %w", err)
	}
	if err := ownedByMe(dir); err != nil {
		return nil, err
	}
	// A socket left by a dead server: if nobody answers, replace it.
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return nil, fmt.Errorf("procregistry: %s: %w", path, ErrBusy)
	}
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("procregistry: %w", err)
	}
	return ln, nil
}

func dirOf(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			return path[:i]
		}
	}
	return "."
}

// Serve answers connections on ln until ctx ends, then closes ln and
// every connection and returns once all handlers are done.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("procregistry: accept: %w", err)
		}
		if err := checkPeer(c); err != nil {
			c.Close()
			continue
		}
		wg.Go(func() { s.handle(ctx, c) })
	}
}

func (s *Server) handle(ctx context.Context, c net.Conn) {
	defer c.Close()
	enc := json.NewEncoder(c)
	dec := json.NewDecoder(c)
	var req request
	if err := dec.Decode(&req); err != nil {
		enc.Encode(frame{Error: toWire(fmt.Errorf("procregistry: bad request: %w", err))})
		return
	}
	// A client that goes away cancels its call (a follow, a wait).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		io.Copy(io.Discard, io.MultiReader(dec.Buffered(), c))
		cancel()
	}()
	defer func() { c.Close(); <-gone }()
	res, err := s.call(ctx, &req, enc)
	f := frame{}
	if res != nil {
		b, merr := json.Marshal(res)
		if merr != nil && err == nil {
			err = merr
		}
		f.Result = b
	}
	if err != nil {
		f.Error = toWire(err)
	}
	enc.Encode(f)
}

// frameWriter sends follow output as data frames.
type frameWriter struct{ enc *json.Encoder }

func (w frameWriter) Write(p []byte) (int, error) {
	if err := w.enc.Encode(frame{Data: p}); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (s *Server) call(ctx context.Context, q *request, enc *json.Encoder) (any, error) {
	r := s.Reg
	switch q.Op {
	case "start":
		if q.Start == nil {
			return nil, errors.New("procregistry: start: no request")
		}
		return r.Start(ctx, *q.Start)
	case "list":
		return r.List(q.Owner), nil
	case "get":
		return r.Get(q.ID)
	case "poll":
		return r.Poll(q.ID)
	case "log":
		return r.ReadLog(q.ID, q.Offset, q.Limit)
	case "tail":
		return r.TailLines(q.ID, q.Lines)
	case "follow":
		next, err := r.Follow(ctx, q.ID, q.Offset, frameWriter{enc})
		return next, err
	case "wait":
		in, done, err := r.Wait(ctx, q.ID, q.Timeout)
		return waitResult{Info: in, Done: done}, err
	case "kill":
		return r.Kill(ctx, q.ID)
	case "write":
		return true, r.Write(ctx, q.ID, q.Data)
	case "submit":
		return true, r.Submit(ctx, q.ID, string(q.Data))
	case "close":
		return true, r.CloseStdin(ctx, q.ID)
	case "handoff":
		return r.Handoff(q.ID, q.Owner, q.Note)
	case "end_session":
		return r.EndSession(ctx, q.Owner)
	case "events":
		return r.Events(ctx, q.Consumer, q.Wait)
	case "ack":
		return true, r.Ack(q.Consumer, q.Seq)
	case "ping":
		return os.Getpid(), nil
	}
	return nil, fmt.Errorf("procregistry: unknown op %q", q.Op)
}

type waitResult struct {
	Info Info `json:"info"`
	Done bool `json:"done"`
}
