package ssh

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/runbox/runbox/envs"
	gossh "golang.org/x/crypto/ssh"
)

// shellCommand is the command line for argv, quoted for the remote
// user's login shell (which sshd runs it with): each word in single
// quotes, which keep every byte but the quote itself as it is.
func shellCommand(argv ...string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// script is the command line that runs a POSIX sh script, whatever the
// user's login shell is.
func script(s string) string { return shellCommand("/bin/sh", "-c", s) }

// output runs cmd in a session of its own with stdin, and returns its
// stdout. A non-zero exit is an error that carries stderr. ctx's end
// closes the session.
func (c *conn) output(ctx context.Context, cmd string, stdin io.Reader) ([]byte, error) {
	sess, err := c.client.NewSession()
	if err != nil {
		return nil, c.sessionErr(err)
	}
	defer sess.Close()
	stop := context.AfterFunc(ctx, func() { sess.Close() })
	defer stop()
	var out bytes.Buffer
	errb := envs.NewTail(4096)
	sess.Stdin, sess.Stdout, sess.Stderr = stdin, &out, errb
	err = sess.Run(cmd)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		var ee *gossh.ExitError
		if errors.As(err, &ee) {
			return out.Bytes(), fmt.Errorf("exit status %d: %s", ee.ExitStatus(), errb.String())
		}
		return nil, c.sessionErr(err)
	}
	return out.Bytes(), nil
}

// sessionErr is err, marked as a lost connection when it is one.
func (c *conn) sessionErr(err error) error {
	if cerr := c.Err(); cerr != nil {
		return fmt.Errorf("%w (%v)", cerr, err)
	}
	return fmt.Errorf("ssh: session on %s: %w", c.t, err)
}

// stream is a process's stdin and stdout over a session channel.
type stream struct {
	sess   *gossh.Session
	stdin  io.WriteCloser
	stdout io.Reader
	stderr *envs.Tail
}

// attach starts cmd in a new session and joins a stream to it.
func (c *conn) attach(cmd string) (*stream, error) {
	sess, err := c.client.NewSession()
	if err != nil {
		return nil, c.sessionErr(err)
	}
	s := &stream{sess: sess, stderr: envs.NewTail(4096)}
	sess.Stderr = s.stderr
	if s.stdin, err = sess.StdinPipe(); err == nil {
		s.stdout, err = sess.StdoutPipe()
	}
	if err == nil {
		err = sess.Start(cmd)
	}
	if err != nil {
		sess.Close()
		return nil, c.sessionErr(err)
	}
	return s, nil
}

func (s *stream) Read(p []byte) (int, error)  { return s.stdout.Read(p) }
func (s *stream) Write(p []byte) (int, error) { return s.stdin.Write(p) }

// Close closes the process's stdin and the channel.
func (s *stream) Close() error {
	s.stdin.Close()
	return s.sess.Close()
}

// Stderr is the end of what the process wrote to its stderr.
func (s *stream) Stderr() string { return s.stderr.String() }
