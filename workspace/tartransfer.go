package workspace

import (
	"context"
	"fmt"
	"io"

	"github.com/runbox/runbox/envs"
)

// trees returns how trees move in and out of env: its own
// [envs.TreeTransfer] when it has one (one archive call), else tar run
// inside it over the command's stdin and stdout, which any backend that
// streams output offers, given a tar in the sandbox.
func trees(env envs.Environment) envs.TreeTransfer {
	if tt, ok := env.(envs.TreeTransfer); ok {
		return tt
	}
	return shellTar{env}
}

// shellTar moves trees with the sandbox's own tar.
type shellTar struct{ env envs.Environment }

// PutTree unpacks r into dir with tar -x. The stream is the one Push
// writes: plain relative names, links checked to stay inside.
func (s shellTar) PutTree(ctx context.Context, dir string, r io.Reader) error {
	res, err := s.env.Run(ctx, envs.Command{
		Args:  []string{"sh", "-c", `mkdir -p -- "$1" && exec tar -xf - -C "$1"`, "sh", dir},
		Stdin: r, OutputLimit: 4096,
	})
	if err == nil {
		err = res.Err()
	}
	if err != nil {
		out := ""
		if res != nil {
			out = res.Output
		}
		return fmt.Errorf("workspace: tar -x in the sandbox: %w (%s)", err, out)
	}
	return nil
}

// GetTree streams dir as tar -c writes it (names "./a/b"); a missing dir
// is an empty stream (a container made again has none). The reader
// returns an error instead of EOF when tar fails, and Close ends the
// command if it is still running. Its stderr goes nowhere: unread, it
// would hold the command's end.
func (s shellTar) GetTree(ctx context.Context, dir string) (io.ReadCloser, error) {
	p, err := s.env.Start(ctx, envs.Command{
		Args:            []string{"sh", "-c", `exec 2>/dev/null; [ -e "$1" ] || exit 0; cd -- "$1" && exec tar -cf - .`, "sh", dir},
		SeparateStreams: true,
	})
	if err != nil {
		return nil, fmt.Errorf("workspace: tar -c in the sandbox: %w", err)
	}
	if w := p.Stdin(); w != nil {
		w.Close()
	}
	return &tarOutput{ctx: ctx, p: p}, nil
}

// tarOutput is a running tar -c's stdout.
type tarOutput struct {
	ctx  context.Context
	p    envs.Process
	done bool
}

func (t *tarOutput) Read(b []byte) (int, error) {
	n, err := t.p.Output().Read(b)
	if err == io.EOF && !t.done {
		t.done = true
		st, werr := t.p.Wait(context.WithoutCancel(t.ctx))
		if werr == nil {
			werr = st.Err()
		}
		if werr != nil {
			return n, fmt.Errorf("workspace: tar -c in the sandbox: %w", werr)
		}
	}
	return n, err
}

func (t *tarOutput) Close() error {
	if !t.done {
		t.done = true
		t.p.Kill(context.WithoutCancel(t.ctx))
		io.Copy(io.Discard, t.p.Output()) // EOF comes with the kill
		t.p.Wait(context.WithoutCancel(t.ctx))
	}
	return nil
}
