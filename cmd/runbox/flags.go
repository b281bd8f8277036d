package main

import (
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/envs"
)

// placeFlags are the flags that say where commands run and what they get
// there: the backend and its sandbox, the task, the directory, the
// timeout, the environment, the resource limits, the network and the
// workspace. They are defined here once for run, serve, code and the job
// commands, so that a flag means the same, and is read the same, wherever
// it is given; each command registers the ones it takes ([placeUse]).
type placeFlags struct {
	backend     string
	image       string
	task        string
	ssh         sshFlags
	kube        kubeFlags
	cwd         string
	timeout     time.Duration
	env         []string
	memory      string // --memory, --pids, --cpus: see limitsOver
	pids        int64
	cpus        float64
	network     string
	workspace   bool
	sync        string
	syncTo      string
	syncExclude []string
}

// placeUse is the command a set of place flags is registered on: it
// decides which flags there are and what their help says.
type placeUse int

const (
	forRun   placeUse = iota // runbox run: one command
	forServe                 // runbox serve: every command of every session
	forCode                  // runbox code: one Python cell
	forJobs                  // every job command: where the job daemon is
	forStart                 // runbox start: what the started job gets
	forUndo                  // runbox undo: where the journal is kept
)

// placeHelp is the help of each place flag for one use; a flag whose help
// is empty is not one that use takes. The ssh and kubernetes flags come
// with the backend, the memory, pids and cpus limits with limits.
type placeHelp struct {
	backend, image, task, cwd, timeout, env string
	limits, network, workspace              bool
	sync, syncTo, syncExclude               string
}

const (
	helpBackend     = "backend to run on (default from config: local)"
	helpImage       = "container image (docker backend)"
	helpCwd         = "working directory (default: the current one)"
	helpSyncExclude = "gitignore-style pattern of paths --sync leaves out (repeatable; .git/ and .gitignore'd paths are left out anyway)"
	// helpHandOver ends --env's help where a.envFlags reads the values
	// (run, start).
	helpHandOver = "; a bare KEY hands over runbox's own KEY, even a blocked one, keeping the value off the command line"
)

func placeHelpFor(use placeUse) placeHelp {
	switch use {
	case forRun:
		return placeHelp{
			backend: helpBackend, image: helpImage, cwd: helpCwd,
			task:    "the task's own environment, kept between runs: a container or pod kept running (--backend docker, kubernetes) or a sandbox snapshotted on exit and restored (--backend modal); with --sync, on any backend, the name its workspace is kept by",
			timeout: "kill the command's tree after this long (exit 124); 0 = config default",
			env:     "set KEY=VALUE in the command's environment (repeatable)" + helpHandOver,
			limits:  true, network: true, workspace: true,
			sync:        "push this directory to the task's workspace first (only what changed after the first time; docker, modal, ssh: /workspace, local: a directory of the task's own); see runbox sync",
			syncTo:      "with --sync: the directory on the backend that --sync's directory is pushed to, replaced by the first push (default /workspace; local: a directory of the task's own)",
			syncExclude: helpSyncExclude,
		}
	case forServe:
		return placeHelp{
			backend: "backend the sessions run on (default from config: local)", image: helpImage,
			task:    "sessions run in the task's own environment, kept between commands (--backend docker, modal, kubernetes, singularity, vercel or daytona)",
			cwd:     "initial working directory of each session (default: the current one)",
			timeout: "default per-command timeout when a call gives none; 0 = config default",
			env:     "set KEY=VALUE in every command's environment (repeatable)",
			limits:  true, network: true, workspace: true,
			sync:        "push this directory to the task's /workspace before each foreground command and offer the sync tool",
			syncExclude: helpSyncExclude,
		}
	case forCode:
		return placeHelp{
			backend: helpBackend, image: helpImage, cwd: helpCwd,
			timeout: "interrupt the cell after this long (exit 124); 0 = config default",
		}
	case forJobs:
		return placeHelp{
			backend: `where the job daemon is: "local" (default), "docker" (the task's container), "kubernetes" (the task's pod) or "ssh" (a remote host)`,
			image:   "container image, with --backend docker (default from config)",
			task:    "the task whose container or pod holds the jobs, with --backend docker or kubernetes (default docker.task, kubernetes.task)",
		}
	case forUndo:
		return placeHelp{
			backend: "the backend whose workspace to put back (default from config: local; this machine's backends keep the journal here)",
			image:   "container image, with --backend docker (default from config)",
			task:    "the task whose environment keeps the journal (--backend docker, kubernetes, modal, vercel, daytona, singularity): the one runbox run --task T --changes recorded in",
		}
	case forStart:
		return placeHelp{
			cwd:    helpCwd,
			env:    "set KEY=VALUE in the job's environment (repeatable)" + helpHandOver,
			limits: true,
		}
	}
	return placeHelp{}
}

// register adds to f the place flags that use takes.
func (p *placeFlags) register(f *pflag.FlagSet, use placeUse) {
	h := placeHelpFor(use)
	str := func(v *string, name, help string) {
		if help != "" {
			f.StringVar(v, name, "", help)
		}
	}
	str(&p.backend, "backend", h.backend)
	str(&p.image, "image", h.image)
	str(&p.task, "task", h.task)
	if h.backend != "" {
		p.ssh.bind(f)
		p.kube.bind(f)
	}
	str(&p.cwd, "cwd", h.cwd)
	if h.timeout != "" {
		f.DurationVar(&p.timeout, "timeout", 0, h.timeout)
	}
	if h.env != "" {
		f.StringArrayVar(&p.env, "env", nil, h.env)
	}
	if h.limits {
		f.StringVar(&p.memory, "memory", "", "memory limit, e.g. 256M")
		f.Int64Var(&p.pids, "pids", 0, "limit on the number of tasks")
		f.Float64Var(&p.cpus, "cpus", 0, "CPU limit, e.g. 0.5")
	}
	if h.network {
		f.StringVar(&p.network, "network", "", `network policy ("none" to cut the network; container backends)`)
	}
	if h.workspace {
		f.BoolVar(&p.workspace, "workspace", false, "mount the current directory at /workspace (container backends; the gate then treats the backend as having host access)")
	}
	str(&p.sync, "sync", h.sync)
	str(&p.syncTo, "sync-to", h.syncTo)
	if h.syncExclude != "" {
		f.StringArrayVar(&p.syncExclude, "sync-exclude", nil, h.syncExclude)
	}
}

// spec is the environment the flags describe, with the limits laid over
// base (the configuration's) and, with --workspace, the current
// directory mounted. The task is not in it: where a task lives depends on
// the backend and on --sync (service.TaskPlace), which the caller knows.
// An image left empty is the backend's configured one, filled in by the
// service.
func (p *placeFlags) spec(base envs.Limits) (envs.Spec, error) {
	limits, err := p.limitsOver(base)
	if err != nil {
		return envs.Spec{}, err
	}
	spec := envs.Spec{Dir: p.cwd, Image: p.image, Limits: limits, Network: p.network}
	if p.workspace {
		wd, err := os.Getwd()
		if err != nil {
			return envs.Spec{}, errorf("--workspace: %v", err)
		}
		spec.Settings = map[string]string{"workspace": wd}
	}
	p.ssh.apply(&spec)
	p.kube.apply(&spec)
	return spec, nil
}

// limitsOver lays the limits given (--memory, --pids, --cpus) over base
// (the configuration's).
func (p *placeFlags) limitsOver(base envs.Limits) (envs.Limits, error) {
	if p.memory != "" {
		m, err := config.ParseSize(p.memory)
		if err != nil {
			return base, usageError{errorf("--memory: %v", err)}
		}
		base.MemoryBytes = m
	}
	if p.pids > 0 {
		base.Pids = p.pids
	}
	if p.cpus > 0 {
		base.CPUs = p.cpus
	}
	return base, nil
}
