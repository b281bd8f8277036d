package local

import (
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/launch"
)

// wire connects the command's stdin and output. In pipe mode stdout and
// stderr share one pipe (so they interleave in arrival order) unless
// SeparateStreams; in PTY mode the terminal carries everything.
func (p *process) wire(c envs.Command, out, errc *envs.Capture) error {
	if c.PTY != nil {
		return p.wirePTY(c, out)
	}
	xc := p.cmd
	xc.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	xc.WaitDelay = p.env.opts.DrainDelay // bounds exec's stdin copier after exit
	switch {
	case c.Stdin != nil:
		xc.Stdin = c.Stdin
	case out == nil:
		w, err := xc.StdinPipe()
		if err != nil {
			return err
		}
		p.stdin = w
	}
	or, ow, err := os.Pipe()
	if err != nil {
		return err
	}
	xc.Stdout, xc.Stderr = ow, ow
	p.output = p.sink(or, out)
	p.parentEnds = append(p.parentEnds, ow)
	p.readEnds = append(p.readEnds, or)
	if c.SeparateStreams {
		er, ew, err := os.Pipe()
		if err != nil {
			return err
		}
		xc.Stderr = ew
		p.parentEnds = append(p.parentEnds, ew)
		p.readEnds = append(p.readEnds, er)
		var sinkTo *envs.Capture
		if errc != nil {
			sinkTo = errc
		}
		p.stderr = p.sink(er, sinkTo)
	}
	return nil
}

// sink starts copying r. For Run it copies into the capture; for Start it
// hands the reader out through an io.Pipe, so the copier can be cut off
// when a grandchild holds the OS pipe.
func (p *process) sink(r *os.File, capture *envs.Capture) io.Reader {
	if capture != nil {
		p.copyFrom(r, capture, nil)
		return nil
	}
	pr, pw := io.Pipe()
	p.readers = append(p.readers, pr)
	p.copyFrom(r, pw, pw)
	return pr
}

func (p *process) copyFrom(r *os.File, w io.Writer, pw *io.PipeWriter) {
	p.pending = append(p.pending, func() {
		p.copiers.Go(func() {
			held, err := copyOut(w, r)
			if held {
				p.outputCut.Store(true)
			}
			if pw != nil {
				if errors.Is(err, os.ErrClosed) {
					err = nil
				}
				pw.CloseWithError(err)
			}
		})
	})
}

// startOS starts the process and, once it runs, the copiers.
func (p *process) startOS() error {
	var err error
	if p.ptySize != nil {
		p.ptyFile, err = launch.StartPTY(p.cmd, p.ptySize)
		if err == nil {
			p.readEnds = append(p.readEnds, p.ptyFile)
			p.ptyStarted()
		}
	} else {
		err = p.cmd.Start()
	}
	p.closeParentEnds()
	if err != nil {
		return err
	}
	for _, f := range p.pending {
		f()
	}
	p.pending = nil
	return nil
}

// closeParentEnds closes the parent's copies of the child's write ends, so
// the copiers see EOF when the child and its descendants are done.
func (p *process) closeParentEnds() {
	for _, f := range p.parentEnds {
		f.Close()
	}
	p.parentEnds = nil
}

func (p *process) closeReadEnds() {
	p.readMu.Lock()
	defer p.readMu.Unlock()
	for _, f := range p.readEnds {
		f.Close()
	}
	p.readEnds = nil
}
