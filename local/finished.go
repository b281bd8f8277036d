package local

import (
	"context"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/runbox/runbox/envs"
)

// finished is the Process of a command that ended before it started
// (a directory it cannot enter, a program that is not there): its output
// is the explanation and its status the conventional exit code.
type finished struct {
	res *envs.Result
	out io.Reader
}

func finishedProcess(res *envs.Result) envs.Process {
	return &finished{res: res, out: strings.NewReader(res.Output)}
}

func (f *finished) PID() int              { return 0 }
func (f *finished) Stdin() io.WriteCloser { return nopWriteCloser{} }
func (f *finished) Output() io.Reader     { return f.out }
func (f *finished) Stderr() io.Reader     { return nil }
func (f *finished) Signal(context.Context, syscall.Signal) error {
	return fmt.Errorf("local: signal: process never started: %w", envs.ErrNotFound)
}
func (f *finished) Kill(context.Context) error { return nil }
func (f *finished) Resize(context.Context, envs.WindowSize) error {
	return fmt.Errorf("local: resize: process never started: %w", envs.ErrUnsupported)
}
func (f *finished) Wait(context.Context) (envs.ExitStatus, error) { return f.res.ExitStatus, nil }

type nopWriteCloser struct{}

func (nopWriteCloser) Write(b []byte) (int, error) { return len(b), nil }
func (nopWriteCloser) Close() error                { return nil }
