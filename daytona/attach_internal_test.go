package daytona

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/daytona/internal/fake"
	"github.com/runbox/runbox/internal/integration"
)

// payload is every byte value, then the ones a cooked terminal acts on:
// CR LF pairs, a lone CR, ^C ^D ^Z ^\, XOFF/XON, erase and kill
// characters, ^V, and bytes with the 8th bit — repeated to n bytes.
func payload(n int) []byte {
	var b []byte
	for i := range 256 {
		b = append(b, byte(i))
	}
	b = append(b, "\r\n\n\r\r\x03\x04\x1a\x1c\x13\x11\x7f\x08\x15\x17\x16\x12\x0f\x00\xff\xfe\x80\x9b\x1b[0m"...)
	return bytes.Repeat(b, n/len(b)+1)[:n]
}

// TestAttach_RawTerminalIsByteClean sends bytes through the stream
// Attach returns, to a cat that the PTY session's shell became, and
// reads back what cat wrote: with the terminal in raw mode every byte
// comes back as sent. The control run leaves the terminal as the toolbox
// made it (stty sane) and shows what that does to the same bytes: echo,
// CR/LF translation, ^C killing the reader.
func TestAttach_RawTerminalIsByteClean(t *testing.T) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		integration.Skip(t, "no cat on this machine: %v", err)
	}
	const key = "dtn_attach-test"
	f := fake.New(key, t.TempDir())
	t.Cleanup(f.Close)
	creds := Credentials{APIKey: key, APIURL: f.APIURL, Source: "test"}
	for _, tc := range []struct {
		name  string
		stty  string
		size  int
		clean bool
	}{
		{"raw, every byte", rawMode, 300, true},
		{"raw, 1 MiB", rawMode, 1 << 20, true},
		{"cooked (control)", "sane", 300, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cl, err := newClient(creds)
			if err != nil {
				t.Fatal(err)
			}
			s := &sandbox{cl: cl, opts: Options{Credentials: creds, Owner: "tester"}, log: slog.New(slog.DiscardHandler), toolbox: &http.Client{}, stty: tc.stty}
			inst, err := s.Provision(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Release(context.WithoutCancel(ctx), inst.ID)
			bin := filepath.Join(t.TempDir(), "cat")
			if err := os.Symlink(cat, bin); err != nil {
				t.Fatal(err)
			}
			st, err := s.Attach(ctx, inst.ID, []string{bin})
			if err != nil {
				t.Fatalf("Attach: %v", err)
			}
			if !tc.clean {
				awaitCookedCat(t, st)
			}
			in := payload(tc.size)
			wrote := make(chan error, 1)
			go func() { _, err := st.Write(in); wrote <- err }()
			got := readUpTo(t, st, len(in))
			st.Close()
			if err := <-wrote; tc.clean && err != nil {
				t.Errorf("Write: %v", err)
			}
			if eq := bytes.Equal(got, in); eq != tc.clean {
				t.Fatalf("sent %d bytes, got %d back (identical: %v); want identical: %v\nfirst bytes back: %q", len(in), len(got), eq, tc.clean, got[:min(len(got), 80)])
			}
		})
	}
}

// awaitCookedCat makes sure cat, not the shell before it, reads the
// cooked terminal: a line it echoes comes back twice (the terminal's echo
// and cat's copy). A ^C the shell got would abort its line instead and
// leave it waiting for input.
func awaitCookedCat(t *testing.T, st io.ReadWriter) {
	t.Helper()
	if _, err := st.Write([]byte("probe\n")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		var seen []byte
		b := make([]byte, 4096)
		for bytes.Count(seen, []byte("probe")) < 2 {
			n, err := st.Read(b)
			seen = append(seen, b[:n]...)
			if err != nil {
				done <- fmt.Errorf("stream ended before cat echoed: %q: %w", seen, err)
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("cat did not echo a line within a minute")
	}
}

// readUpTo reads until n bytes or the end of r, bounded by a minute.
func readUpTo(t *testing.T, r io.Reader, n int) []byte {
	t.Helper()
	done := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(r, int64(n)))
		done <- b
	}()
	select {
	case b := <-done:
		return b
	case <-time.After(time.Minute):
		t.Fatalf("fewer than %d bytes back within a minute", n)
		return nil
	}
}

// TestAttach_NoRawTerminalFailsWithReason: a terminal that cannot be put
// in raw mode (here stty refuses its arguments) fails Attach at once with
// what stty said — the agent host then falls back to toolbox sessions
// with that reason — instead of handing out a stream that would corrupt
// bytes.
func TestAttach_NoRawTerminalFailsWithReason(t *testing.T) {
	const key = "dtn_attach-test"
	f := fake.New(key, t.TempDir())
	t.Cleanup(f.Close)
	creds := Credentials{APIKey: key, APIURL: f.APIURL, Source: "test"}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cl, err := newClient(creds)
	if err != nil {
		t.Fatal(err)
	}
	s := &sandbox{cl: cl, opts: Options{Credentials: creds, Owner: "tester"}, log: slog.New(slog.DiscardHandler), toolbox: &http.Client{}, stty: "no-such-terminal-setting"}
	inst, err := s.Provision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release(context.WithoutCancel(ctx), inst.ID)
	st, err := s.Attach(ctx, inst.ID, []string{filepath.Join(t.TempDir(), "agent")})
	if err == nil {
		st.Close()
		t.Fatal("Attach succeeded on a terminal stty could not set")
	}
	if !strings.Contains(err.Error(), "could not be made raw") || !strings.Contains(err.Error(), "no-such-terminal-setting") {
		t.Fatalf("Attach = %v; want it to say the terminal could not be made raw, with stty's complaint", err)
	}
}
