package sshtest

import (
	"bufio"
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/internal/integration"
)

// Image is the image of [StartContainer]: runbox-test-debian:bookworm
// with openssh-server, built locally by scripts/docker/build-images.sh.
const Image = "runbox-test-sshd:bookworm"

// label marks the containers StartContainer runs.
const label = "io.runbox.test=sshtest"

// StartContainer runs sshd in a docker container of [Image]: a second
// host with a filesystem, processes and hostname of its own, published on
// 127.0.0.1 at a random port, with the same generated keys as [Start]
// (mounted read-only). The container is removed at the end of the test.
// It skips without a docker CLI, an engine or the image (it fails instead
// under RUNBOX_INTEGRATION=require).
func StartContainer(t *testing.T, opts ...Option) *Server {
	t.Helper()
	var o options
	for _, f := range opts {
		f(&o)
	}
	if testing.Short() {
		t.Skip("sshd tests are integration tests (-short)")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		integration.Skip(t, "no docker CLI: %v", err)
	}
	if b, err := exec.Command("docker", "image", "inspect", "-f", "{{.Id}}", Image).CombinedOutput(); err != nil {
		integration.Skip(t, "no image %s (scripts/docker/build-images.sh builds it) or no engine: %v: %s", Image, err, strings.TrimSpace(string(b)))
	}
	d := newServer(t)
	const mnt = "/sshtest"
	d.config = d.writeConfig(22, "0.0.0.0", mnt, o)
	out, err := exec.Command("docker", "run", "-d", "--rm", "--label", label,
		"-p", "127.0.0.1::22", "-v", d.Dir+":"+mnt+":ro",
		Image, "/usr/sbin/sshd", "-D", "-e", "-f", mnt+"/sshd_config").CombinedOutput()
	if err != nil {
		t.Fatalf("docker run %s: %v: %s", Image, err, out)
	}
	d.Container = strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := exec.Command("docker", "logs", d.Container).CombinedOutput()
			t.Logf("sshd log (container %.12s):\n%s", d.Container, b)
		}
		exec.Command("docker", "rm", "-f", d.Container).Run()
	})
	out, err = exec.Command("docker", "port", d.Container, "22/tcp").Output()
	if err != nil {
		t.Fatalf("docker port %.12s: %v", d.Container, err)
	}
	_, port, err := net.SplitHostPort(strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0]))
	if d.Port, _ = strconv.Atoi(port); err != nil || d.Port == 0 {
		t.Fatalf("docker port %.12s: %q", d.Container, out)
	}
	// The published port accepts connections before sshd listens behind
	// it: wait for sshd's banner.
	deadline := time.Now().Add(30 * time.Second)
	for !banner(d.Addr()) {
		if time.Now().After(deadline) {
			t.Fatalf("sshd in container %.12s does not answer on %s", d.Container, d.Addr())
		}
		time.Sleep(50 * time.Millisecond) // bounded: the deadline above
	}
	return d
}

// banner reports whether an ssh server's identification line comes from
// addr within a second.
func banner(addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var dl net.Dialer
	c, err := dl.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "SSH-")
}

// Exec runs argv in d's container (docker exec) and returns its output.
func (d *Server) Exec(argv ...string) (string, error) {
	b, err := exec.Command("docker", append([]string{"exec", d.Container}, argv...)...).CombinedOutput()
	return string(b), err
}
