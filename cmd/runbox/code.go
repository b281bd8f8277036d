package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runbox/runbox/approval"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/regular"
	"github.com/runbox/runbox/kernel"
	"github.com/runbox/runbox/service"
)

type codeOptions struct {
	placeFlags
	json bool
	file string
	args []string
}

func newCodeCommand(a *app) *cobra.Command {
	var opts codeOptions
	cmd := &cobra.Command{
		Use:   "code [flags] [CODE | -f FILE | -]",
		Short: "Run Python code as one cell in a fresh kernel",
		Long: `Run Python code as one cell of a fresh kernel (the kernel execute_code uses
in runbox serve) on a backend, and print what it wrote. The code comes from
the argument, from -f FILE, or from stdin ("-" or no argument).

In the code, "import runbox" gives runbox.terminal(command, ...), which runs a
shell command through the command gate in the same environment and returns
its result as a dict. On a backend with host access the code itself is
judged like "python3 -c CODE" first (the inline-code rule asks).

With --json the cell's reply is printed as one JSON object.

Exit status: 0 when the cell ran to its end; 1 on a Python exception (the
traceback goes to stderr); sys.exit's code; 124 when --timeout expired;
125 when runbox failed (no python3, refused by the gate).`,
		Example: `  runbox code 'import sys; print(sys.version)'
  runbox code --backend docker -f analysis.py
  echo 'print(sum(range(10)))' | runbox code --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.args = args
			return a.reportJSON(opts.json, runCode(cmd.Context(), a, &opts))
		},
	}
	f := cmd.Flags()
	opts.register(f, forCode)
	f.BoolVar(&opts.json, "json", false, "print the reply as JSON")
	f.StringVarP(&opts.file, "file", "f", "", "read the code from FILE")
	return cmd
}

func (o *codeOptions) code(stdin io.Reader) (string, error) {
	switch {
	case o.file != "" && len(o.args) > 0:
		return "", usageError{errorf("code: give the code or -f FILE, not both")}
	case o.file != "":
		// A regular file only: a fifo a command left under that name
		// would hold runbox for good.
		f, err := regular.Open(o.file, true)
		if err != nil {
			return "", errorf("code: %v", err)
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			return "", errorf("code: %v", err)
		}
		return string(b), nil
	case len(o.args) == 1 && o.args[0] != "-":
		return o.args[0], nil
	}
	b, err := io.ReadAll(stdin)
	if err != nil {
		return "", errorf("code: read stdin: %v", err)
	}
	return string(b), nil
}

func runCode(ctx context.Context, a *app, opts *codeOptions) error {
	code, err := opts.code(a.stdin)
	if err != nil {
		return err
	}
	if strings.TrimSpace(code) == "" {
		return usageError{errorf("code: no code; see --help")}
	}
	if opts.timeout < 0 {
		return usageError{errorf("--timeout %v: want a duration >= 0", opts.timeout)}
	}
	spec, err := opts.spec(envs.Limits{})
	if err != nil {
		return err
	}
	var reply *kernel.Reply
	err = a.withAsker(func(asker approval.Asker) error {
		ss, err := a.svc.NewSession(service.SessionOptions{Backend: opts.backend, Spec: spec, Asker: asker})
		if err != nil {
			return err
		}
		defer ss.Close(context.WithoutCancel(ctx))
		if err := ss.AuthorizeCode(ctx, code); err != nil {
			return err
		}
		k, err := ss.NewKernel(ctx, kernel.Options{})
		if err != nil {
			return err
		}
		defer k.Close(context.WithoutCancel(ctx))
		timeout := opts.timeout
		if timeout == 0 {
			timeout = a.svc.Timeout()
		}
		reply, err = k.Execute(ctx, code, kernel.ExecOptions{Timeout: timeout})
		return err
	})
	if err != nil {
		return err
	}
	if opts.json {
		enc := json.NewEncoder(a.stdout)
		enc.SetEscapeHTML(false)
		enc.Encode(reply)
	} else {
		io.WriteString(a.stdout, reply.Stdout)
		if reply.Result != nil {
			fmt.Fprintln(a.stdout, *reply.Result)
		}
		io.WriteString(a.stderr, reply.Stderr)
		io.WriteString(a.stderr, reply.Traceback)
		if reply.Notice != "" {
			fmt.Fprintf(a.stderr, "runbox: %s\n", reply.Notice)
		}
	}
	return codeExit(reply)
}

// codeExit is the exit status of a cell as an error (nil for 0).
func codeExit(r *kernel.Reply) error {
	st := envs.ExitError{}
	switch {
	case r.TimedOut:
		st.Code, st.TimedOut = envs.ExitTimeout, true
	case r.Status == kernel.StatusOK:
		return nil
	case r.Status == kernel.StatusExit && r.ExitCode != nil && !r.StateLost:
		if *r.ExitCode == 0 {
			return nil
		}
		st.Code = *r.ExitCode
	default:
		st.Code = 1
	}
	return quietError{&st}
}
