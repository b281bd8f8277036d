package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/runbox/runbox/envs"
)

// benchSSHTarget is the host of the ssh measurements: --ssh-host (else
// ssh.host, RUNBOX_SSH_HOST) with --identity and --accept-new-host-key.
type benchSSHTarget struct{ sshFlags }

func (s *benchSSHTarget) bind(f *pflag.FlagSet) {
	f.StringVar(&s.host, "ssh-host", "", "host of the ssh measurements, [user@]host[:port] (default ssh.host; none: they are skipped with a note)")
	f.StringVar(&s.identity, "identity", "", "private key for the ssh measurements, offered by runbox and by the ssh client alike")
	f.BoolVar(&s.acceptNew, "accept-new-host-key", false, "record the ssh host's key if known_hosts does not list it")
}

// benchSSHCases measures a command through the ssh backend (the agent
// on the far side, over the open connection) against the OpenSSH client
// in the same run, on the same host, with the same keys and known_hosts:
// `ssh HOST true` (a new connection each time: what a tool that shells
// out to ssh pays), and `ssh -S SOCKET HOST true` through a ControlMaster
// opened beforehand (OpenSSH's own connection reuse).
func benchSSHCases(a *app, t *benchSSHTarget) []benchCase {
	return []benchCase{
		{
			name: "ssh-true", backend: "ssh", baseline: "ssh HOST true", n: 20,
			setup: func(ctx context.Context, p benchParams) (op, base func(context.Context) error, cleanup func(), err error) {
				env, client, err := a.benchSSHOpen(ctx, t)
				if err != nil {
					return nil, nil, nil, err
				}
				base = func(ctx context.Context) error { return client.run(ctx, "true") }
				return benchSSHTrue(env), base, func() { env.Close(context.Background()) }, nil
			},
		},
		{
			name: "ssh-true-vs-controlmaster", backend: "ssh", baseline: "ssh -S SOCKET HOST true (ControlMaster open)", n: 20,
			setup: func(ctx context.Context, p benchParams) (op, base func(context.Context) error, cleanup func(), err error) {
				env, client, err := a.benchSSHOpen(ctx, t)
				if err != nil {
					return nil, nil, nil, err
				}
				master, err := client.openMaster(ctx)
				if err != nil {
					env.Close(context.Background())
					return nil, nil, nil, err
				}
				base = func(ctx context.Context) error {
					return client.run(ctx, "-S", master.sock, "-o", "ControlMaster=no", "true")
				}
				return benchSSHTrue(env), base, func() { master.close(); env.Close(context.Background()) }, nil
			},
		},
		{
			// What an agent that shells out to runbox pays per command:
			// a runbox process that connects, finds its agent on the host
			// (uploaded once, by content), runs the command and exits.
			name: "ssh.oneshot", backend: "ssh", baseline: "ssh HOST true", n: 10,
			setup: func(ctx context.Context, p benchParams) (op, base func(context.Context) error, cleanup func(), err error) {
				env, client, err := a.benchSSHOpen(ctx, t)
				if err != nil {
					return nil, nil, nil, err
				}
				env.Close(context.Background()) // the agent is on the host now
				op, err = a.benchSSHOneShot(t)
				if err != nil {
					return nil, nil, nil, err
				}
				base = func(ctx context.Context) error { return client.run(ctx, "true") }
				return op, base, func() {}, nil
			},
		},
	}
}

// benchSSHOneShot is `runbox run --backend ssh -- true` in a process of
// its own (this executable), with the bench's host, key and environment.
func (a *app) benchSSHOneShot(t *benchSSHTarget) (func(context.Context) error, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this executable: %w", err)
	}
	args := []string{"run", "--backend", "ssh"}
	if t.host != "" {
		args = append(args, "--host", t.host)
	}
	if t.identity != "" {
		args = append(args, "--identity", t.identity)
	}
	if t.acceptNew {
		args = append(args, "--accept-new-host-key")
	}
	args = append(args, "--", "true")
	// What this runbox reads from its environment, the one it starts
	// reads too (they differ from the process's own only when runbox
	// runs inside another program).
	env := os.Environ()
	for _, k := range []string{"HOME", "RUNBOX_CONFIG", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "SSH_AUTH_SOCK"} {
		env = append(env, k+"="+a.getenv(k))
	}
	return func(ctx context.Context) error {
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Env = env
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("runbox %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
		}
		return nil
	}, nil
}

func benchSSHTrue(env envs.Environment) func(context.Context) error {
	return func(ctx context.Context) error {
		res, err := env.Run(ctx, envs.Command{Args: []string{"true"}})
		if err == nil && res.Code != 0 {
			err = fmt.Errorf("true exited %d", res.Code)
		}
		return err
	}
}

// benchSSHOpen connects the ssh backend to the bench host and prepares
// the OpenSSH client with the same host, keys and known_hosts.
func (a *app) benchSSHOpen(ctx context.Context, t *benchSSHTarget) (envs.Environment, *sshClient, error) {
	var spec envs.Spec
	t.apply(&spec)
	o := a.svc.SSHOptions(spec)
	if o.Host == "" {
		return nil, nil, errors.New("no ssh host: give --ssh-host [user@]host[:port] (or ssh.host) to measure the ssh backend")
	}
	bin, err := exec.LookPath("ssh")
	if err != nil {
		return nil, nil, fmt.Errorf("no OpenSSH client for the baseline (apt-get install openssh-client): %w", err)
	}
	env, host, err := a.svc.OpenSSHAgent(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	known := o.KnownHosts
	if known == "" {
		known = filepath.Join(a.getenv("HOME"), ".ssh", "known_hosts")
	}
	c := &sshClient{bin: bin, dest: "ssh://" + host, opts: []string{
		"-o", "BatchMode=yes", "-o", "UserKnownHostsFile=" + known, "-o", "StrictHostKeyChecking=yes",
	}}
	if o.SSHConfig != "" {
		c.opts = append(c.opts, "-F", o.SSHConfig)
	}
	for _, id := range o.Identity {
		c.opts = append(c.opts, "-i", id)
	}
	if o.NoAgentAuth || a.getenv("SSH_AUTH_SOCK") == "" {
		c.opts = append(c.opts, "-o", "IdentityAgent=none")
	}
	return env, c, nil
}

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
// it answers `-O check`.
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
