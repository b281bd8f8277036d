package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/local"
	"github.com/runbox/runbox/spawn"
	"github.com/runbox/runbox/spawn/seal"
	"github.com/runbox/runbox/termination/subreaper"
)

// app is what every command shares: the streams, the environment lookup
// and the configuration, loaded once flags are parsed.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// launch is this process's sealed launch environment (nil in tests
	// that drive the app in-process: os.Environ is the base then).
	launch *seal.Launch
	// direct runs local commands without the subreaper: the job daemon's
	// environment starts supervisors that must outlive their first stage.
	direct bool

	configPath string
	verbose    bool
	yolo       bool // --yolo: fixed when runbox starts; no command can set it
	cfg        config.Config
	log        *slog.Logger
	providers  *envs.Providers
}

func newApp(stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) *app {
	return &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
}

// seal makes l the source of every variable the app reads and of every
// child's base environment: the process's own environment no longer
// holds the secret values.
func (a *app) seal(l *seal.Launch) {
	a.launch = l
	a.getenv = l.Getenv
}

func (a *app) execute(ctx context.Context, args []string) error {
	root := a.rootCommand()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil && exitCode(err) >= exitUsage && !isQuiet(err) {
		fmt.Fprintln(a.stderr, err)
	}
	return err
}

// quietError is an error already reported to the user (or a plain exit
// status that needs no message).
type quietError struct{ error }

func (q quietError) Unwrap() error { return q.error }

func isQuiet(err error) bool {
	_, ok := err.(quietError)
	return ok
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "runbox",
		Short: "Run shell commands for AI agents in sandboxed environments",
		Long: `runbox runs shell commands for AI agents, on this machine or in containers,
with timeouts, bounded output, whole-tree teardown, a scrubbed child
environment, durable background jobs, and a command gate that stops dangerous
commands first.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return a.load()
		},
	}
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.PersistentFlags().StringVar(&a.configPath, "config", "", "configuration file (default $RUNBOX_CONFIG or $XDG_CONFIG_HOME/runbox/config.yaml)")
	root.PersistentFlags().BoolVarP(&a.verbose, "verbose", "v", false, "log debug messages to stderr")
	root.PersistentFlags().BoolVar(&a.yolo, "yolo", false, "run dangerous commands without asking (hardline commands and deny rules still hold)")
	root.AddCommand(
		newRunCommand(a),
		newDoctorCommand(a),
		newBenchCommand(a),
		newCheckCommand(a),
		newAgentCommand(a),
	)
	root.AddCommand(newServeCommand(a))
	root.AddCommand(a.withJobTargets(newJobCommands(a))...)
	return root
}

func (a *app) load() error {
	level := slog.LevelWarn
	if a.verbose {
		level = slog.LevelDebug
	}
	a.log = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
	cfg, err := config.Load(a.configPath, a.getenv)
	if err != nil {
		return err
	}
	a.cfg = cfg
	a.providers = a.newProviders()
	return nil
}

// spawnPolicy is the configured child-environment policy.
func (a *app) spawnPolicy() spawn.Policy {
	p := spawn.DefaultPolicy()
	p.Passthrough = append(p.Passthrough, a.cfg.Spawn.Passthrough...)
	p.ExtraBlock = append(p.ExtraBlock, a.cfg.Spawn.ExtraBlock...)
	p.ExtraStrip = append(p.ExtraStrip, a.cfg.Spawn.ExtraStrip...)
	return p
}

// environ is this process's launch environment: the base that spawn
// scrubs for every child.
func (a *app) environ() []string {
	if a.launch != nil {
		return a.launch.Environ()
	}
	return os.Environ()
}

// newProviders is the provider table: every backend runbox can open.
func (a *app) newProviders() *envs.Providers {
	t := envs.NewProviders()
	t.Register(envs.Provider{
		Name:        "local",
		Description: "this machine (bash or sh), each command in its own process group and container",
		New: func(ctx context.Context, spec envs.Spec) (envs.Environment, error) {
			return a.openLocal(spec)
		},
		Capabilities: func(ctx context.Context, spec envs.Spec) envs.Capabilities {
			return local.Capabilities(ctx, local.Options{Shell: a.cfg.Shell, NoContainment: !a.cfg.Contain, Subreaper: a.subreaper()})
		},
	})
	a.registerDocker(t)
	return t
}

func (a *app) openLocal(spec envs.Spec) (envs.Environment, error) {
	pol := a.spawnPolicy()
	grace := time.Duration(a.cfg.Grace)
	if grace == 0 {
		grace = local.NoGrace
	}
	limits := spec.Limits
	if limits.IsZero() {
		limits = a.configLimits()
	}
	return local.New(local.Options{
		Dir:           spec.Dir,
		Shell:         a.cfg.Shell,
		BaseEnv:       a.environ(),
		Env:           spec.Env,
		Spawn:         &pol,
		Grace:         grace,
		Limits:        limits,
		NoContainment: !a.cfg.Contain,
		Subreaper:     a.subreaper(),
		Logger:        a.log,
	})
}

// subreaper is the argv prefix that runs this binary as the subreaper of
// a command that gets no cgroup or scope (nil when it cannot be found).
func (a *app) subreaper() []string {
	if a.direct {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		a.log.Warn("runbox: no subreaper: cannot find this executable", "err", err)
		return nil
	}
	return []string{exe, subreaper.Command}
}

func (a *app) configLimits() envs.Limits {
	return envs.Limits{MemoryBytes: int64(a.cfg.Limits.Memory), Pids: a.cfg.Limits.Pids, CPUs: a.cfg.Limits.CPUs}
}

// parseEnvFlags turns repeated --env K=V into a map.
func parseEnvFlags(kvs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageError{errorf("--env %q: want KEY=VALUE", kv)}
		}
		m[k] = v
	}
	return m, nil
}

// minArgs is cobra.MinimumNArgs as a usage error (exit 2).
func minArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usageError{errorf("%s: want at least %d argument(s); see --help", cmd.CommandPath(), n)}
		}
		return nil
	}
}
