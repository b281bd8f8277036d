package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/ssh"
)

// sshCases measure a command through the ssh backend (the agent on the
// far side, over the open connection) against the OpenSSH client in the
// same run, on the same host, with the same keys and known_hosts: `ssh
// HOST true` (a new connection each time: what a tool that shells out to
// ssh pays), and `ssh -S SOCKET HOST true` through a ControlMaster opened
// beforehand (OpenSSH's own connection reuse).
func sshCases(h Host, t SSHTarget) []caseDef {
	return []caseDef{
		{
			name: "ssh-true", backend: "ssh", baseline: "ssh HOST true", n: 20,
			setup: func(ctx context.Context, _ params) (op, base func(context.Context) error, cleanup func(), err error) {
				env, client, err := sshOpen(ctx, h, t)
				if err != nil {
					return nil, nil, nil, err
				}
				base = func(ctx context.Context) error { return client.run(ctx, "true") }
				return trueIn(env), base, func() { env.Close(context.Background()) }, nil
			},
		},
		{
			name: "ssh-true-vs-controlmaster", backend: "ssh", baseline: "ssh -S SOCKET HOST true (ControlMaster open)", n: 20,
			setup: func(ctx context.Context, _ params) (op, base func(context.Context) error, cleanup func(), err error) {
				env, client, err := sshOpen(ctx, h, t)
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
				return trueIn(env), base, func() { master.close(); env.Close(context.Background()) }, nil
			},
		},
		{
			// What an agent that shells out to runbox pays per command:
			// a runbox process that connects, finds its agent on the host
			// (uploaded once, by content), runs the command and exits.
			name: "ssh.oneshot", backend: "ssh", baseline: "ssh HOST true", n: 10,
			setup: func(ctx context.Context, _ params) (op, base func(context.Context) error, cleanup func(), err error) {
				env, client, err := sshOpen(ctx, h, t)
				if err != nil {
					return nil, nil, nil, err
				}
				env.Close(context.Background()) // the agent is on the host now
				op, err = sshOneShot(h, t)
				if err != nil {
					return nil, nil, nil, err
				}
				base = func(ctx context.Context) error { return client.run(ctx, "true") }
				return op, base, func() {}, nil
			},
		},
	}
}

// trueIn is `true` in env, as an operation to time.
func trueIn(env envs.Environment) func(context.Context) error {
	return func(ctx context.Context) error { return runTrue(ctx, env) }
}

// spec is the ssh backend's spec for t: the host, and the settings that
// service.SSHOptions reads the key and the host-key policy from (the ones
// runbox run's --identity and --accept-new-host-key set).
func (t SSHTarget) spec() envs.Spec {
	spec := envs.Spec{Host: t.Host}
	if t.Identity == "" && !t.AcceptNewHostKey {
		return spec
	}
	spec.Settings = map[string]string{}
	if t.Identity != "" {
		spec.Settings["identity"] = t.Identity
	}
	if t.AcceptNewHostKey {
		spec.Settings["accept_new_host_key"] = "true"
	}
	return spec
}

// runArgs are the flags of `runbox run` that reach t.
func (t SSHTarget) runArgs() []string {
	var args []string
	if t.Host != "" {
		args = append(args, "--host", t.Host)
	}
	if t.Identity != "" {
		args = append(args, "--identity", t.Identity)
	}
	if t.AcceptNewHostKey {
		args = append(args, "--accept-new-host-key")
	}
	return args
}

// sshOneShot is `runbox run --backend ssh -- true` in a process of its
// own (this executable), with the bench's host, key and environment.
func sshOneShot(h Host, t SSHTarget) (func(context.Context) error, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this executable: %w", err)
	}
	args := append(append([]string{"run", "--backend", "ssh"}, t.runArgs()...), "--", "true")
	// What this runbox reads from its environment, the one it starts
	// reads too (they differ from the process's own only when runbox
	// runs inside another program).
	env := os.Environ()
	for _, k := range []string{"HOME", "RUNBOX_CONFIG", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "SSH_AUTH_SOCK"} {
		env = append(env, k+"="+h.Service.Getenv(k))
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

// sshOpen connects the ssh backend to the bench host and prepares the
// OpenSSH client with the same host, keys and known_hosts.
func sshOpen(ctx context.Context, h Host, t SSHTarget) (envs.Environment, *sshClient, error) {
	spec := t.spec()
	o := h.Service.SSHOptions(spec)
	if o.Host == "" {
		return nil, nil, errors.New("no ssh host: give --ssh-host [user@]host[:port] (or ssh.host) to measure the ssh backend")
	}
	bin, err := exec.LookPath("ssh")
	if err != nil {
		return nil, nil, fmt.Errorf("no OpenSSH client for the baseline (apt-get install openssh-client): %w", err)
	}
	env, host, err := openSSHAgent(ctx, h, spec)
	if err != nil {
		return nil, nil, err
	}
	return env, newSSHClient(h, bin, host, o), nil
}

// openSSHAgent opens the ssh backend for spec through the provider table
// and returns it with the host it reached (user@host:port), refusing a
// connection whose agent fell back to native exec: what is measured is
// the agent.
func openSSHAgent(ctx context.Context, h Host, spec envs.Spec) (envs.Environment, string, error) {
	env, err := h.Service.Providers().Open(ctx, "ssh", spec)
	if err != nil {
		return nil, "", err
	}
	e, ok := env.(*ssh.Env)
	if !ok {
		env.Close(context.WithoutCancel(ctx))
		return nil, "", fmt.Errorf("bench: the ssh row opened a %T", env)
	}
	if fb := e.Fallback(); fb != "" {
		env.Close(context.WithoutCancel(ctx))
		return nil, "", fmt.Errorf("bench: the runbox agent does not run on %s: %s", e.Host(), fb)
	}
	return env, e.Host(), nil
}

// newSSHClient is the OpenSSH client bin pointed at host with what the
// ssh backend was given in o: the same known_hosts (strictly: the
// baseline never records a key), ssh_config, keys, and agent or none.
func newSSHClient(h Host, bin, host string, o ssh.Options) *sshClient {
	known := o.KnownHosts
	if known == "" {
		known = filepath.Join(h.Service.Getenv("HOME"), ".ssh", "known_hosts")
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
	if o.NoAgentAuth || h.Service.Getenv("SSH_AUTH_SOCK") == "" {
		c.opts = append(c.opts, "-o", "IdentityAgent=none")
	}
	return c
}
