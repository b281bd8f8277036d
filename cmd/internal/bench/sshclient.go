package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// sshClient runs the OpenSSH client against one host.
type sshClient struct {
	bin  string
	dest string // ssh://user@host:port
	opts []string
}

func (c *sshClient) command(ctx context.Context, args ...string) *exec.Cmd {
	argv := append(append([]string{}, c.opts...), args[:len(args)-1]...)
	argv = append(argv, c.dest, args[len(args)-1])
	return exec.CommandContext(ctx, c.bin, argv...)
}

// run runs `ssh [opts] DEST command` (the last of args is the remote
// command, the others are options).
func (c *sshClient) run(ctx context.Context, args ...string) error {
	cmd := c.command(ctx, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %v: %s", c.bin, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// sshMaster is an OpenSSH ControlMaster, started by the bench and stopped
// by it (asked to exit, then killed by PID if it does not).
type sshMaster struct {
	c      *sshClient
	dir    string
	sock   string
	cmd    *exec.Cmd
	exited chan error // Wait's result; the goroutine that waits owns cmd
}

// control runs `ssh -S SOCKET -O op DEST`.
func (m *sshMaster) control(ctx context.Context, op string) error {
	argv := append(append([]string{}, m.c.opts...), "-S", m.sock, "-O", op, m.c.dest)
	return exec.CommandContext(ctx, m.c.bin, argv...).Run()
}

// openMaster starts `ssh -M -N -S SOCKET DEST` and waits (bounded) until
// it answers `-O check`. Its close stops it and joins the goroutine that
// waits for it.
func (c *sshClient) openMaster(ctx context.Context) (*sshMaster, error) {
	// A short directory: a socket path is at most 108 bytes.
	dir, err := os.MkdirTemp("", "rbssh")
	if err != nil {
		return nil, err
	}
	m := &sshMaster{c: c, dir: dir, sock: filepath.Join(dir, "master"), exited: make(chan error, 1)}
	argv := append(append([]string{}, c.opts...), "-M", "-N", "-S", m.sock, "-o", "ControlPersist=no", c.dest)
	m.cmd = exec.Command(c.bin, argv...)
	var stderr strings.Builder
	m.cmd.Stderr = &stderr
	if err := m.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start an ssh ControlMaster: %w", err)
	}
	go func() { m.exited <- m.cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for m.control(ctx, "check") != nil {
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case err := <-m.exited:
			t.Stop()
			os.RemoveAll(dir)
			return nil, fmt.Errorf("the ssh ControlMaster exited: %v: %s", err, strings.TrimSpace(stderr.String()))
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		if ctx.Err() != nil || time.Now().After(deadline) {
			m.close()
			return nil, fmt.Errorf("the ssh ControlMaster does not answer on %s", m.sock)
		}
	}
	return m, nil
}

// close asks the master to exit, kills it if it has not within a few
// seconds, and removes its directory.
func (m *sshMaster) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m.control(ctx, "exit")
	select {
	case <-m.exited:
	case <-ctx.Done():
		m.cmd.Process.Kill()
		<-m.exited
	}
	os.RemoveAll(m.dir)
}
