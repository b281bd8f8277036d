package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/runbox/runbox/envs"
)

// terminalSession lends runbox's terminal to a command run with --pty
// while stdin is a terminal, the way ssh -t does: the terminal is put in
// raw mode, so every key (^C and ^Z included) reaches the command's own
// terminal, which decides what it means; window-size changes resize the
// command's terminal; SIGINT, SIGQUIT, SIGUSR1 and SIGUSR2 sent to runbox
// are passed to the command. SIGTERM and SIGHUP still tear the command
// down. close restores the terminal's mode, and every path out of
// runStreaming goes through it.
type terminalSession struct {
	fd    int             // the terminal: runbox's stdin
	saved *term.State     // its mode before raw, put back by close
	in    *terminalReader // what the forwarder reads keys from

	stop      chan struct{}
	wg        sync.WaitGroup // the input and signal forwarders
	closeOnce sync.Once
	release   func() // gives SIGINT back to runbox
}

// openTerminal puts stdin's terminal in raw mode and opens it for reading.
func openTerminal(stdin *os.File) (*terminalSession, error) {
	fd := int(stdin.Fd())
	in, err := openTerminalReader(fd)
	if err != nil {
		return nil, fmt.Errorf("runbox: --pty: reading the terminal: %w", err)
	}
	saved, err := term.MakeRaw(fd)
	if err != nil {
		in.Close()
		return nil, fmt.Errorf("runbox: --pty: raw mode: %w", err)
	}
	return &terminalSession{fd: fd, saved: saved, in: in, stop: make(chan struct{}), release: func() {}}, nil
}

// terminalReader is a handle of runbox's own for reading a terminal, whose
// pending read Close interrupts, so that no goroutine is left blocked on
// the terminal to steal the keys meant for what comes next (os.Stdin,
// blocking, cannot be interrupted).
type terminalReader struct {
	*os.File
	fd int // the terminal's descriptor it was opened from
	// shared: the handle shares fd's open file description, whose
	// O_NONBLOCK Close clears again for the shell that comes after.
	shared bool
}

// openTerminalReader opens the terminal on fd afresh (a description of its
// own, made non-blocking by the runtime's poller), or else duplicates fd
// and makes the shared description non-blocking.
func openTerminalReader(fd int) (*terminalReader, error) {
	f, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", fd), os.O_RDONLY|unix.O_NOCTTY, 0)
	if err == nil {
		if f.SetReadDeadline(time.Time{}) == nil {
			return &terminalReader{File: f, fd: fd}, nil
		}
		f.Close()
	}
	nfd, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(nfd, true); err != nil {
		unix.Close(nfd)
		return nil, err
	}
	f = os.NewFile(uintptr(nfd), "terminal")
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		f.Close()
		unix.SetNonblock(fd, false)
		return nil, err
	}
	return &terminalReader{File: f, fd: fd, shared: true}, nil
}

// Close interrupts a pending read and closes the handle.
func (r *terminalReader) Close() error {
	r.SetReadDeadline(time.Now())
	err := r.File.Close()
	if r.shared {
		unix.SetNonblock(r.fd, false)
	}
	return err
}

// size is the terminal's window size.
func (s *terminalSession) size() *envs.WindowSize {
	cols, rows, err := term.GetSize(s.fd)
	if err != nil {
		return &envs.WindowSize{Rows: 24, Cols: 80}
	}
	return &envs.WindowSize{Rows: uint16(rows), Cols: uint16(cols)}
}

// attach forwards input, window-size changes and signals to p until close.
func (s *terminalSession) attach(p envs.Process, relay *signalRelay) {
	if w := p.Stdin(); w != nil {
		s.wg.Go(func() {
			// Ends at close (the read deadline), when the terminal goes
			// away, or when a write fails because the command is gone.
			io.Copy(w, s.in)
		})
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGWINCH, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	// Deliveries are bounded: a lost remote must not wedge the terminal.
	deliver := func(f func(context.Context) error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		f(ctx)
	}
	s.release = relay.takeInterrupt(func(sig syscall.Signal) {
		deliver(func(ctx context.Context) error { return p.Signal(ctx, sig) })
	})
	deliver(func(ctx context.Context) error { return p.Resize(ctx, *s.size()) }) // a change while the command was starting
	s.wg.Go(func() {
		defer signal.Stop(sigs)
		for {
			select {
			case sig := <-sigs:
				if sig == syscall.SIGWINCH {
					deliver(func(ctx context.Context) error { return p.Resize(ctx, *s.size()) })
				} else {
					deliver(func(ctx context.Context) error { return p.Signal(ctx, sig.(syscall.Signal)) })
				}
			case <-s.stop:
				return
			}
		}
	})
}

// close stops the forwarders, waits for them and restores the terminal.
// It is safe to call more than once.
func (s *terminalSession) close() error {
	var err error
	s.closeOnce.Do(func() {
		s.release()
		close(s.stop)
		s.in.Close() // ends the input forwarder's read
		s.wg.Wait()
		err = term.Restore(s.fd, s.saved)
	})
	if err != nil {
		return fmt.Errorf("runbox: restoring the terminal: %w", err)
	}
	return nil
}

// stdinTerminal is runbox's stdin when it is a terminal, else nil.
func (a *app) stdinTerminal() *os.File {
	f, ok := a.stdin.(*os.File)
	if !ok || f == nil || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return f
}
