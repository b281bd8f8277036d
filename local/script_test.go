package local_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/runbox/runbox/confine"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/local"
	"github.com/runbox/runbox/spawn"
)

// TestRun_CommandOverArgumentLimit protects the promise that any command
// the gate lets through can run: Linux refuses a single argument over
// 128 KiB with "argument list too long", so a longer shell command must
// reach the shell another way, with session state intact.
func TestRun_CommandOverArgumentLimit(t *testing.T) {
	env := open(t, local.Options{Confine: confine.Off()})
	big := "X=" + strings.Repeat("a", 300<<10) + "\nexport LEN=${#X}\necho len=$LEN; cd /tmp"
	res := run(t, env, envs.Command{Shell: big})
	if res.Code != 0 || strings.TrimSpace(res.Output) != "len=307200" {
		t.Fatalf("big command: exit %d, output %.200q", res.Code, res.Output)
	}
	res = run(t, env, envs.Command{Shell: "echo $LEN $PWD"})
	if got := strings.TrimSpace(res.Output); got != "307200 /tmp" {
		t.Errorf("state after the big command = %q; want %q", got, "307200 /tmp")
	}
}

// TestRun_SecretInCommandTextNotInArgv protects the promise that a
// withheld value the caller's shell expanded into the command text does
// not show in any process's argv: the shell gets the text from a private
// file, and a direct argv with the value is refused.
func TestRun_SecretInCommandTextNotInArgv(t *testing.T) {
	const secret = "ghp_notreallyasecret123456"
	env := open(t, local.Options{Confine: confine.Off(), BaseEnv: []string{"PATH=/usr/bin:/bin", "GITHUB_TOKEN=" + secret}})
	res := run(t, env, envs.Command{Shell: ": " + secret + "; cat /proc/$$/cmdline | tr '\\0' ' '"})
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Output)
	}
	if strings.Contains(res.Output, secret) {
		t.Errorf("the shell's argv shows the secret: %q", res.Output)
	}
	_, err := env.Run(t.Context(), envs.Command{Args: []string{"echo", secret}})
	if !errors.Is(err, spawn.ErrSecretInArgv) {
		t.Errorf("argv with a secret: err = %v; want spawn.ErrSecretInArgv", err)
	}
}
