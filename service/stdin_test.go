package service_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/service"
)

// TestSession_PipedStdinIsGated: a command's piped stdin (Command.Stdin)
// is judged line by line like a session's stdin writes, through Run and
// Start alike: a shell fed "cat script.sh | bash" never runs the script,
// is killed at that line (the line after it never runs either), and the
// error is a *StdinRefusedError that matches envs.ErrDenied. The control
// rows feed allowed lines, one of which runs the same script, and see
// its canary: the gate, not the setup, stops the refused rows.
func TestSession_PipedStdinIsGated(t *testing.T) {
	dir := t.TempDir()
	canary, after := filepath.Join(dir, "ran"), filepath.Join(dir, "after")
	os.WriteFile(filepath.Join(dir, "script.sh"), []byte("touch "+canary+"\n"), 0o644)
	refused := "cat script.sh | bash\ntouch " + after + "\n"
	allowed := "bash script.sh\ntouch " + after + "\n"
	cases := []struct {
		name, stdin string
		start       bool
		refused     bool
	}{
		{"run refused", refused, false, true},
		{"start refused", refused, true, true},
		{"run allowed", allowed, false, false},
		{"start allowed", allowed, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(canary)
			os.Remove(after)
			s := newService(t, config.Default())
			ss, err := s.NewSession(service.SessionOptions{Backend: "local", Spec: envs.Spec{Dir: dir, Sandbox: "off"}})
			if err != nil {
				t.Fatal(err)
			}
			c := envs.Command{Args: []string{"bash"}, Stdin: strings.NewReader(tc.stdin)}
			if tc.start {
				err = startAndWait(t, ss, c)
			} else {
				_, err = ss.Run(t.Context(), c)
			}
			var re *service.StdinRefusedError
			if got := errors.As(err, &re); got != tc.refused || tc.refused && (!errors.Is(err, envs.ErrDenied) || re.Line != 1) {
				t.Fatalf("err = %v; want a refusal of line 1: %v", err, tc.refused)
			}
			for path, want := range map[string]bool{canary: !tc.refused, after: !tc.refused} {
				if _, err := os.Stat(path); (err == nil) != want {
					t.Errorf("%s exists = %v; want %v", filepath.Base(path), err == nil, want)
				}
			}
		})
	}
}

func startAndWait(t *testing.T, ss *service.Session, c envs.Command) error {
	t.Helper()
	p, err := ss.Start(t.Context(), c)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, p.Output()); close(done) }()
	_, err = p.Wait(t.Context())
	<-done
	return err
}
