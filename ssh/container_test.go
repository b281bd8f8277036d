package ssh_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/runbox/runbox/ssh"
	"github.com/runbox/runbox/ssh/sshtest"
)

// containerOptions are options for d in a container: the agent goes to
// the remote user's default cache directory, on the container's own
// filesystem.
func containerOptions(t *testing.T, d *sshtest.Server) ssh.Options {
	o := options(t, d)
	o.AgentDir = ""
	return o
}

// The conformance suite against a second host: sshd in a container, with
// a filesystem and processes of its own.
func TestEnvContainer_Conformance(t *testing.T) {
	d := sshtest.StartContainer(t)
	conformance(t, containerOptions(t, d))
}

// Commands run on the other host: its hostname, its files; the agent is
// uploaded to the remote user's cache there, and nothing lands on this
// machine.
func TestEnvContainer_OtherHost(t *testing.T) {
	d := sshtest.StartContainer(t)
	env := open(t, containerOptions(t, d))
	if fb := env.Fallback(); fb != "" {
		t.Fatalf("agent not in use: %s", fb)
	}
	marker := fmt.Sprintf("/root/runbox-sshtest-marker-%d", os.Getpid())
	res := run(t, env, "cat /etc/hostname && echo there >"+marker+" && ls ${XDG_CACHE_HOME:-$HOME/.cache}/runbox/agent")
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Output)
	}
	lines := strings.Split(strings.TrimSpace(string(res.Output)), "\n")
	if len(lines) < 2 || !strings.HasPrefix(d.Container, lines[0]) || !strings.Contains(string(res.Output), "runbox-agent") {
		t.Fatalf("output %q; want container %.12s's hostname and the uploaded agent", res.Output, d.Container)
	}
	if out, err := d.Exec("cat", marker); err != nil || out != "there\n" {
		t.Errorf("the file in the container: %q, %v", out, err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		os.Remove(marker)
		t.Errorf("%s written on this machine (%v): the command did not run on the other host", marker, err)
	}
}
