package service

import (
	"cmp"
	"os"
	"os/user"
	"strconv"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/modal"
	"github.com/runbox/runbox/statedir"
)

// ModalOptions are the modal backend's options for spec, from the
// configuration's modal section. A task named in spec.Settings["task"]
// (runbox run --task) is persistent: its filesystem is snapshotted on close
// and restored on its next open.
func (s *Service) ModalOptions(spec envs.Spec) modal.Options {
	c := s.opts.Config.Modal
	o := modal.Options{
		Getenv:        s.opts.Getenv,
		App:           c.App,
		Image:         cmp.Or(spec.Image, c.Image),
		CPU:           c.CPU,
		MemoryMiB:     int(int64(c.Memory) >> 20),
		Timeout:       time.Duration(c.Timeout).Truncate(time.Second),
		IdleTimeout:   time.Duration(c.IdleTimeout).Truncate(time.Second),
		Workdir:       cmp.Or(c.Workdir, spec.Dir),
		BlockNetwork:  c.BlockNetwork || spec.Network == "none",
		CIDRAllowlist: c.CIDRAllowlist,
		Owner:         s.modalOwner(),
		Task:          c.Task,
		Persistent:    c.Persistent,
		StateDir:      s.stateDir(),
		AgentBinary:   c.AgentBinary,
		AgentDir:      c.AgentDir,
		Env:           spec.Env,
		Logger:        s.log,
	}
	if spec.Limits.CPUs > 0 {
		o.CPU = spec.Limits.CPUs
	}
	if spec.Limits.MemoryBytes > 0 {
		o.MemoryMiB = int(spec.Limits.MemoryBytes >> 20)
	}
	if t := spec.Settings["task"]; t != "" {
		o.Task, o.Persistent = t, true
	}
	return o
}

// modalOwner tags sandboxes with who made them: RUNBOX_OWNER, else the
// user's name, else the uid.
func (s *Service) modalOwner() string {
	if o := s.opts.Getenv("RUNBOX_OWNER"); o != "" {
		return o
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return strconv.Itoa(os.Getuid())
}

// stateDir is runbox's state directory: $RUNBOX_STATE_DIR, else
// $XDG_STATE_HOME/runbox, else ~/.local/state/runbox ("" when none can be
// named).
func (s *Service) stateDir() string { return statedir.Default(s.opts.Getenv) }
