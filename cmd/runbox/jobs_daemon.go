package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/supervisor"
	"github.com/runbox/runbox/procregistry"
	"github.com/runbox/runbox/statedir"
)

// The per-user job daemon. Jobs started from the CLI belong to one
// registry per user, served by `runbox __daemon` on a Unix socket in a
// 0700 directory of the state dir (peer uid checked on every connection,
// by both ends). The state dir is checked before anything is written to
// it: one that another user could change is refused.
// The first jobs command that finds no daemon starts one, detached; the
// daemon's environment is the base every job's environment is built
// from (through spawn, by the local backend, which keeps runbox's own
// variables, RUNBOX_STATE_DIR among them, out of every job). The daemon
// decides who each connection acts for (procregistry's "Owners"): runbox
// serve's sessions hold tokens, a job's processes act for the job's
// owner, and this CLI in a user's shell for the owners no token holds.

// stateDir is [statedir.Default], else ~/.local/state/runbox in the
// user's home directory as the system knows it.
func (a *app) stateDir() (string, error) {
	if d := statedir.Default(a.getenv); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", errorf("no state directory: set RUNBOX_STATE_DIR")
	}
	return filepath.Join(home, ".local", "state", "runbox"), nil
}

// checkedStateDir is stateDir, created if missing and checked before
// anything is written to it: a directory that another user could change
// is refused (statedir.Prepare says exactly when). It is the
// path to use, with symbolic links resolved.
func (a *app) checkedStateDir() (string, error) {
	state, err := a.stateDir()
	if err != nil {
		return "", err
	}
	return statedir.Prepare(state)
}

func daemonSocket(state string) string { return filepath.Join(state, "run", "daemon.sock") }

// jobsClient returns a client of the running daemon, starting one if
// none answers.
func (a *app) jobsClient(ctx context.Context) (*procregistry.Client, error) {
	if a.remote != nil {
		return a.remote.client(ctx)
	}
	state, err := a.checkedStateDir()
	if err != nil {
		return nil, err
	}
	c := &procregistry.Client{Path: daemonSocket(state)}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = c.Ping(pctx)
	cancel()
	if err == nil {
		return c, nil
	}
	// One starter at a time: commands that find no daemon together (the
	// readers of a daemon that died) start one daemon, not one each.
	unlock, err := lockSpawn(ctx, state)
	if err != nil {
		return nil, err
	}
	defer unlock()
	pctx, cancel = context.WithTimeout(ctx, time.Second)
	_, err = c.Ping(pctx)
	cancel()
	if err == nil {
		return c, nil // started by the holder of the lock
	}
	if err := a.spawnDaemon(state, true); err != nil {
		return nil, err
	}
	// Wait (bounded) for the daemon to answer.
	deadline := time.Now().Add(daemonStartWait)
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err = c.Ping(pctx)
		cancel()
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, errorf("job daemon did not start: %v\n%s", err, daemonLogTail(state, 2000))
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// daemonStartWait bounds how long a command waits for a daemon it
// started to answer.
const daemonStartWait = 10 * time.Second

// lockSpawn takes the state directory's spawn lock (a flock on
// spawn.lock, released by the returned function or by the process's
// death), waiting for whoever is starting a daemon meanwhile.
func lockSpawn(ctx context.Context, state string) (func(), error) {
	f, err := statedir.OpenFile(filepath.Join(state, "spawn.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, errorf("job daemon: %w", err)
	}
	// The holder waits at most daemonStartWait and a ping or two.
	deadline := time.Now().Add(daemonStartWait + 5*time.Second)
	for delay := time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, errorf("job daemon: lock %s: %v", f.Name(), err)
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, ctx.Err()
		}
	}
}

// spawnDaemon starts `runbox __daemon` in a session of its own, so it
// outlives this command and no terminal hangup reaches it.
// state has been checked (checkedStateDir).
//
// With detach, what it starts is a first stage (`__daemon --detach`)
// that starts the daemon proper and exits at once, waited for here: the
// daemon is then nobody's child but init's (or a subreaper's), so a
// teardown that walks the tree of the command that started it (a relay
// whose connection was cut, say) cannot reach it or its jobs.
func (a *app) spawnDaemon(state string, detach bool) error {
	exe, err := os.Executable()
	if err != nil {
		return errorf("%v", err)
	}
	logf, err := statedir.OpenFile(filepath.Join(state, "daemon.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return errorf("job daemon log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(exe, "__daemon")
	// The daemon is runbox itself, not a command: it gets this process's
	// launch environment, which spawn scrubs for every job it starts. The
	// secret values travel sealed, never in the daemon's own environ.
	cmd.Env = append(a.environ(), "RUNBOX_STATE_DIR="+state)
	handed := func() {}
	if a.launch != nil {
		if handed, err = a.launch.Hand(cmd, "RUNBOX_STATE_DIR="+state); err != nil {
			return errorf("start job daemon: %v", err)
		}
	}
	if a.configPath != "" {
		cmd.Args = append(cmd.Args, "--config", a.configPath)
	}
	if detach {
		cmd.Args = append(cmd.Args, "--detach")
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	handed()
	if err != nil {
		return errorf("start job daemon: %v", err)
	}
	if !detach {
		return cmd.Process.Release()
	}
	// The first stage only starts the second; its failure is in the log.
	if err := cmd.Wait(); err != nil {
		return errorf("start job daemon: %v\n%s", err, daemonLogTail(state, 2000))
	}
	return nil
}

// daemonLogTail is the end of the daemon's log (at most n bytes), read
// like every file of the state directory: never through a link.
func daemonLogTail(state string, n int64) string {
	f, err := statedir.OpenFile(filepath.Join(state, "daemon.log"), os.O_RDONLY, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	b, _ := io.ReadAll(io.NewSectionReader(f, max(0, fi.Size()-n), n))
	return string(b)
}

func newDaemonCommand(a *app) *cobra.Command {
	var detach bool
	cmd := &cobra.Command{
		Use:    "__daemon",
		Short:  "Serve the per-user job registry (started on demand)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if detach {
				return detachDaemon(a)
			}
			return runDaemon(cmd.Context(), a)
		},
	}
	cmd.Flags().BoolVar(&detach, "detach", false, "start the daemon detached from this process's tree and exit")
	return cmd
}

// detachDaemon is the first stage of spawnDaemon: it starts the daemon
// proper and exits, leaving it an orphan.
func detachDaemon(a *app) error {
	state, err := a.checkedStateDir()
	if err != nil {
		return err
	}
	return a.spawnDaemon(state, false)
}

// runDaemon serves the registry until ctx ends (SIGTERM). Jobs keep
// running when it stops; the next daemon picks them up.
func runDaemon(ctx context.Context, a *app) error {
	state, err := a.checkedStateDir()
	if err != nil {
		return err
	}
	leaveStarter(ctx, a.log)
	// Every connection and every followed log takes a descriptor.
	if err := procregistry.RaiseFileLimit(); err != nil {
		a.log.Warn("runbox: job daemon", "err", err)
	}
	reg, env, err := a.openRegistry(state)
	if errors.Is(err, procregistry.ErrBusy) {
		return nil // another daemon won the race
	}
	if err != nil {
		return err
	}
	defer env.Close(context.Background())
	defer reg.Close()
	ln, err := procregistry.Listen(daemonSocket(state))
	if errors.Is(err, procregistry.ErrBusy) {
		return nil
	}
	if err != nil {
		return err
	}
	a.log.Info("runbox: job daemon serving", "state", state, "pid", os.Getpid())
	// The server's limits (request size, connections, idle time) are its
	// defaults: a runaway client of this user cannot take it down.
	return (&procregistry.Server{Reg: reg, Logger: a.log, StrictPolicy: a.strictJobPolicy}).Serve(ctx, ln)
}

// strictJobPolicy is the sandbox of a job that a confined command starts
// when the daemon does not know that command's own sandbox: read-only,
// with no network, and the deny list of every sandbox (see "Confined
// callers" in docs/jobs.md). It is at least as strict as any sandbox
// runbox makes from this configuration.
func (a *app) strictJobPolicy(dir string) (*confine.Policy, []string, error) {
	p, err := a.svc.SandboxPolicy(envs.Spec{Sandbox: confine.ProfileReadOnly, Network: "none", Dir: dir})
	if err != nil {
		return nil, nil, err
	}
	return &p, a.confiner(), nil
}

// openRegistry opens the registry in state with the local backend. The
// backend only starts each job's supervisor, so it places nothing in a
// cgroup and sets no limits (a cgroup of the local backend is torn down
// with its environment, and a detached job must outlive the process that
// started it): each supervisor makes the job's own container.
func (a *app) openRegistry(state string) (*procregistry.Registry, envs.Environment, error) {
	b := *a
	b.direct = true
	b.cfg.Contain = false
	b.cfg.Limits = config.LimitsConf{}
	env, err := b.openLocal(envs.Spec{})
	if err != nil {
		return nil, nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		env.Close(context.Background())
		return nil, nil, errorf("%v", err)
	}
	grace := time.Duration(a.cfg.Grace)
	if grace == 0 {
		grace = -1
	}
	reg, err := procregistry.Open(procregistry.Options{
		Dir: state, Env: env, Supervisor: []string{exe, "__supervise"}, Logger: a.log, Grace: grace,
		Retention: time.Duration(a.cfg.Jobs.Retention), MaxFinished: a.cfg.Jobs.MaxFinished,
	})
	if err != nil {
		env.Close(context.Background())
		return nil, nil, err
	}
	return reg, env, nil
}

func newSuperviseCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:                "__supervise [-own] JOBDIR | -host STATEDIR",
		Short:              "Supervise background jobs (started by the job daemon)",
		Hidden:             true,
		DisableFlagParsing: true,
		// No configuration: the supervisor runs the jobs it was given.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(_ *cobra.Command, args []string) error {
			if code := supervisor.Main(args); code != 0 {
				return quietError{&envs.ExitError{Code: code}}
			}
			return nil
		},
	}
}
