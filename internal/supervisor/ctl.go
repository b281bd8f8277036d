package supervisor

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"path/filepath"

	"github.com/creack/pty"
	"github.com/runbox/runbox/internal/jobdir"
)

// listen opens the control socket. The job directory is private (0700),
// so only its owner can reach the socket.
func (s *supervisor) listen() (net.Listener, error) {
	path := filepath.Join(s.dir, jobdir.FileCtl)
	os.Remove(path)
	return net.Listen("unix", path)
}

func (s *supervisor) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s.conns.Add(1)
		go func() {
			defer s.conns.Done()
			defer c.Close()
			s.handle(c)
		}()
	}
}

func (s *supervisor) handle(c net.Conn) {
	// Only the registry calls here. A sandboxed command that reaches the
	// socket (a pathname unix socket is not a file the sandbox's deny list
	// stops a connect to) gets nothing: writing to the stdin of another
	// job would run commands in that job's confinement, not its own.
	if err := jobdir.CheckUnconfinedPeer(c); err != nil {
		s.logf("control connection refused: %v", err)
		return
	}
	var req jobdir.CtlRequest
	if err := json.NewDecoder(bufio.NewReader(c)).Decode(&req); err != nil {
		return
	}
	resp := jobdir.CtlResponse{OK: true}
	switch req.Op {
	case jobdir.OpWait:
		<-s.exited
		s.mu.Lock()
		resp.Exit = s.exit
		s.mu.Unlock()
	case jobdir.OpWrite, jobdir.OpClose:
		s.mu.Lock()
		switch {
		case s.closed:
			resp = jobdir.CtlResponse{Error: "stdin is closed"}
		case req.Op == jobdir.OpWrite:
			s.mu.Unlock() // a blocked pipe must not block close or wait
			_, err := s.stdin.Write(req.Data)
			s.mu.Lock()
			if err != nil {
				resp = jobdir.CtlResponse{Error: err.Error()}
			}
		case s.ptmx != nil:
			// A terminal has no EOF of its own: send the EOF character
			// (^D), which ends input for a reader in canonical mode.
			if _, err := s.ptmx.Write([]byte{4}); err != nil {
				resp = jobdir.CtlResponse{Error: err.Error()}
			}
		default:
			s.closed = true
			if err := s.stdin.Close(); err != nil {
				resp = jobdir.CtlResponse{Error: err.Error()}
			}
		}
		s.mu.Unlock()
	case jobdir.OpResize:
		if s.ptmx == nil {
			resp = jobdir.CtlResponse{Error: "not a terminal"}
			break
		}
		if err := pty.Setsize(s.ptmx, &pty.Winsize{Rows: req.Rows, Cols: req.Cols}); err != nil {
			resp = jobdir.CtlResponse{Error: err.Error()}
		}
	default:
		resp = jobdir.CtlResponse{Error: "unknown op " + string(req.Op)}
	}
	json.NewEncoder(c).Encode(resp)
}
