package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/seal"
	"github.com/runbox/runbox/internal/subreaper"
	"github.com/runbox/runbox/service"
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
	// oneCommand: the command being run serves one command per
	// environment (annotateOneCommand).
	oneCommand bool

	configPath string
	verbose    bool
	yolo       bool   // --yolo: fixed when runbox starts; no command can set it
	sandbox    string // --sandbox: the profile of local commands ("" = configured)
	cfg        config.Config
	cfgErr     error // why the configuration could not be loaded (doctor only; others stop)
	log        *slog.Logger
	svc        *service.Service // the application core, made from cfg
	providers  *envs.Providers  // svc's provider table
	signals    *signalRelay     // nil when not run by main (tests)
	remote     *remoteJobs      // set while a job command acts on a container's jobs
	// jsonReported: the command's failure was already printed as a
	// --json object.
	jsonReported bool
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
	if err != nil && !isQuiet(err) && !a.jsonReported && wantsJSON(root, args) {
		// Failures before a command's own code ran (a bad flag, a broken
		// configuration) too: a caller reading --json's stdout gets one
		// object for every failure.
		writeJSONError(a.stdout, err)
	}
	if err != nil && exitCode(err) >= exitUsage && !isQuiet(err) {
		fmt.Fprintln(a.stderr, service.Message(err))
	}
	return err
}

// wantsJSON reports whether args ask the command they name for --json,
// even when parsing them failed (the flag may then not be set yet).
func wantsJSON(root *cobra.Command, args []string) bool {
	cmd, _, err := root.Find(args)
	if err != nil || cmd.Flags().Lookup("json") == nil {
		return false
	}
	if f := cmd.Flags().Lookup("json"); f.Changed {
		return f.Value.String() == "true"
	}
	for _, arg := range args {
		if arg == "--" {
			break
		}
		if arg == "--json" || arg == "--json=true" {
			return true
		}
	}
	return false
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
			a.oneCommand = cmd.Annotations[annotateOneCommand] != ""
			return a.loadConfig(cmd.Annotations[annotateConfig] == configReported)
		},
	}
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.PersistentFlags().StringVar(&a.configPath, "config", "", "configuration file (default $RUNBOX_CONFIG or $XDG_CONFIG_HOME/runbox/config.yaml)")
	root.PersistentFlags().BoolVarP(&a.verbose, "verbose", "v", false, "log debug messages to stderr")
	root.PersistentFlags().BoolVar(&a.yolo, "yolo", false, "run dangerous commands without asking (hardline commands and deny rules still hold)")
	root.PersistentFlags().StringVar(&a.sandbox, "sandbox", "", "confinement of commands on this machine: workspace, read-only or off (default: sandbox.profile, else workspace where the kernel can)")
	root.AddCommand(
		newRunCommand(a),
		newDoctorCommand(a),
		newBenchCommand(a),
		newCheckCommand(a),
		newCodeCommand(a),
		newAgentCommand(a),
		newSyncCommand(a),
		newTasksCommand(a),
		newUndoCommand(a),
	)
	root.AddCommand(newServeCommand(a))
	root.AddCommand(a.withJobTargets(newJobCommands(a))...)
	return root
}

// A command annotated with annotateConfig: configReported runs with the
// defaults when the configuration is broken, and reports a.cfgErr itself
// (doctor, which is where a user goes to find out what is wrong).
const (
	annotateConfig = "runbox.config"
	configReported = "reported"
)

// annotateOneCommand marks a command whose environments each serve one
// command and close (run): they start no spare shell (service.Options.OneCommand).
const annotateOneCommand = "runbox.one-command"

// loadConfig sets up logging, the configuration and the provider table. A
// broken configuration is an error, unless tolerate: then it is kept in
// a.cfgErr and the defaults are used instead.
func (a *app) loadConfig(tolerate bool) error {
	level := slog.LevelWarn
	if a.verbose {
		level = slog.LevelDebug
	}
	a.log = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
	cfg, err := config.Load(a.configPath, a.getenv)
	if err != nil {
		if !tolerate {
			return err
		}
		a.cfgErr, cfg = err, config.Default()
	}
	if a.sandbox != "" {
		cfg.Sandbox.Profile = a.sandbox
		if err := cfg.Validate(); err != nil {
			return usageError{fmt.Errorf("--sandbox: %w", err)}
		}
	}
	a.cfg = cfg
	a.svc, err = service.New(service.Options{
		Config: cfg, Environ: a.environ(), Getenv: a.getenv, Yolo: a.yolo,
		Subreaper: a.subreaper(), Confiner: a.confiner(), Progress: a.stderr, Logger: a.log,
		OneCommand: a.oneCommand,
	})
	if err != nil {
		return err
	}
	a.providers = a.svc.Providers()
	return nil
}

// environ is this process's launch environment: the base that spawn
// scrubs for every child.
func (a *app) environ() []string {
	if a.launch != nil {
		return a.launch.Environ()
	}
	return os.Environ()
}

// openLocal opens a local environment with the configuration's options
// (direct: the job daemon's, see service.LocalTuning).
func (a *app) openLocal(spec envs.Spec) (envs.Environment, error) {
	return a.svc.OpenLocalTuned(spec, service.LocalTuning{Direct: a.direct})
}

// confiner is the argv prefix of the confinement trampoline of a local
// command: runbox-confine next to this executable when it is there (it
// starts in a fraction of runbox's time, and every confined command starts
// through it), else this binary's own `__confine`. Nil when neither can be
// found: the sandbox is then off, and a profile asked for by name refuses.
func (a *app) confiner() []string {
	exe, err := os.Executable()
	if err != nil {
		a.log.Warn("runbox: no sandbox: cannot find this executable", "err", err)
		return nil
	}
	small := filepath.Join(filepath.Dir(exe), "runbox-confine")
	if fi, err := os.Stat(small); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return []string{small, confine.Command}
	}
	return []string{exe, confine.Command}
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

// warnWithheld tells the user when an --env value is the value of a
// variable runbox withholds: handing it over by another name defeats the
// withholding, which may be meant, but should not pass unnoticed.
func (a *app) warnWithheld(env map[string]string) {
	if a.launch == nil {
		return
	}
	for k, v := range env {
		if name, ok := a.launch.Secret(v); ok && name != k {
			fmt.Fprintf(a.stderr, "runbox: warning: --env %s has the value of %s, which runbox withholds from commands\n", k, name)
		}
	}
}

// redact returns the text ps and job records show for a command: the
// command with every withheld value replaced by [NAME], and those names.
func (a *app) redact(command string) (string, []string) {
	if a.launch == nil {
		return command, nil
	}
	return a.launch.Redact(command)
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
