package service

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/kernel"
)

// KernelTerminalArgs are the arguments of runbox.terminal(...) in a
// kernel's code: the terminal tool's names.
type KernelTerminalArgs struct {
	Command          string  `json:"command"`
	Timeout          float64 `json:"timeout,omitempty"`
	Workdir          string  `json:"workdir,omitempty"`
	Background       bool    `json:"background,omitempty"`
	NotifyOnComplete bool    `json:"notify_on_complete,omitempty"`
}

// KernelTerminal is the terminal tool as code in a kernel calls it: each
// command passes the session's gate (an ask goes to the session's asker;
// without one it is refused) and runs in the session's environment, the
// one the kernel runs in. The result is [EncodeResult]'s object, as the
// server's terminal tool returns it. It runs foreground commands only;
// env is laid over each command's environment.
func (ss *Session) KernelTerminal(env map[string]string) kernel.ToolFunc {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in KernelTerminalArgs
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return nil, &kernel.ToolError{Kind: KindUsage, Message: fmt.Sprintf("runbox.terminal: bad arguments: %v", err)}
		}
		if strings.TrimSpace(in.Command) == "" {
			return nil, &kernel.ToolError{Kind: KindUsage, Message: "runbox.terminal: command is empty"}
		}
		if in.Background || in.NotifyOnComplete {
			return nil, &kernel.ToolError{Kind: KindUnsupported, Message: "runbox.terminal: background commands are not available to this kernel", Err: envs.ErrUnsupported}
		}
		c := envs.Command{Shell: in.Command, Dir: in.Workdir, Env: env, Timeout: time.Duration(in.Timeout * float64(time.Second))}
		res, err := ss.Run(ctx, c)
		if err != nil {
			e := EncodeError(err, 125)
			return nil, &kernel.ToolError{Message: e.Error, Data: e, Err: err}
		}
		return EncodeResult(res), nil
	}
}

// AuthorizeCode judges running code as one cell of a kernel in this
// session. On a backend without host access it runs without asking (the
// sandbox is the boundary, and each command the code runs through
// runbox.terminal is still judged). With host access it is judged as the
// command line `python3 -c CODE`: the gate's inline-code rule asks (a
// "session" answer allows the session's later cells), approval mode off
// or yolo runs it, and with nobody to ask it is refused with a hint.
// A refusal matches envs.ErrDenied.
func (ss *Session) AuthorizeCode(ctx context.Context, code string) error {
	if host, _ := ss.hostAccess(ctx); !host {
		return nil
	}
	return ss.authorize(ctx, CodeLine(code))
}

// CodeLine is the command line a cell of code is judged as.
func CodeLine(code string) string {
	return CommandLine(envs.Command{Args: []string{kernel.DefaultPython, "-c", code}})
}

// NewKernel makes a Python kernel in the session's environment (opening
// it if need be). opts.Env is set to that environment; nil opts.Tools
// get the session's [Session.KernelTerminal] as "terminal".
func (ss *Session) NewKernel(ctx context.Context, opts kernel.Options) (*kernel.Kernel, error) {
	env, err := ss.Env(ctx)
	if err != nil {
		return nil, err
	}
	opts.Env = env
	if opts.Tools == nil {
		opts.Tools = kernel.Tools{"terminal": ss.KernelTerminal(nil)}
	}
	if opts.OutputLimit == 0 {
		opts.OutputLimit = ss.svc.OutputLimit()
	}
	return kernel.New(opts)
}
