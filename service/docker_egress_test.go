package service_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/runbox/runbox/approval"
	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/docker"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/service"
)

const egressImage = "runbox-test-debian:bookworm" // has python3

// egressProbe is the command that runs the probe in the container with
// args: the host's TCP port, its UDP echo port, the allowed URL, the
// asked-about URL, then host addresses to try directly. The egress
// network's gateway (from HTTP_PROXY) is tried too. It prints one line
// per attempt.
func egressProbe(args []string) string {
	return "python3 - " + strings.Join(quoteAll(args), " ") + " <<'EOF'\n" + egressProbeScript + "EOF\n"
}

const egressProbeScript = `
import os, socket, sys, urllib.parse, urllib.request
tcp, udp, allowed, asked = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
addrs = sys.argv[5:]
proxy = os.environ.get("HTTP_PROXY", "")
if proxy:
    addrs.append(urllib.parse.urlparse(proxy).hostname)
    for name, url in (("allowed", allowed), ("asked", asked)):
        try:
            print("http", name, urllib.request.urlopen(url, timeout=60).read().decode())
        except Exception as e:
            print("http", name, "fail", e)
for a in addrs:
    try:
        socket.create_connection((a, tcp), timeout=10).close()
        print("tcp", a, "ok")
    except Exception as e:
        print("tcp", a, "fail", e)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(10)
    try:
        s.connect((a, udp))
        s.send(b"ping")
        print("udp", a, "ok", s.recv(64).decode())
    except Exception as e:
        print("udp", a, "fail", e)
# A name nobody has: an answer (even "no such name") means the question
# left the container, which is how DNS carries data out.
try:
    socket.getaddrinfo("runbox-exfil.example", 80)
    print("dns answered")
except socket.gaierror as e:
    print("dns", "answered" if e.errno == socket.EAI_NONAME else "unanswered", e)
`

// hostTargets are what a container tries to reach on the host: an HTTP
// server on loopback the allow list names, one it does not, a TCP server
// and a UDP echo server on every address.
type hostTargets struct {
	allowed, asked string // host:port on 127.0.0.1
	tcp, udp       int
	udpGot         chan struct{} // closed when a datagram arrives
}

func startHostTargets(t *testing.T) *hostTargets {
	t.Helper()
	h := &hostTargets{udpGot: make(chan struct{})}
	for _, p := range []*string{&h.allowed, &h.asked} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		body := "reached-" + ln.Addr().String()
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, body) })}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		*p = ln.Addr().String()
	}
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	h.tcp = ln.Addr().(*net.TCPAddr).Port
	pc, err := net.ListenPacket("udp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 64)
		got := false
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if !got {
				got = true
				close(h.udpGot)
			}
			pc.WriteTo(append([]byte("echo-"), buf[:n]...), from)
		}
	}()
	h.udp = pc.LocalAddr().(*net.UDPAddr).Port
	return h
}

// needEgressDocker skips (or, with RUNBOX_INTEGRATION=require, fails)
// without an engine, the test image, or what the allowlist needs.
func needEgressDocker(t *testing.T) *client.Client {
	t.Helper()
	fail := func(format string, args ...any) { integration.Skip(t, format, args...) }
	cli, err := docker.NewClient()
	if err != nil {
		fail("no docker client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := cli.ImageInspect(ctx, egressImage); err != nil {
		fail("no docker engine or no image %s: %v", egressImage, err)
	}
	if err := docker.CheckEgress(); err != nil {
		fail("%v", err)
	}
	return cli
}

// hostResolves reports whether a resolver answers this machine (with "no
// such name" for a name nobody has): only then can the control container
// show that its DNS questions leave it.
func hostResolves(t *testing.T) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := net.DefaultResolver.LookupHost(ctx, "runbox-exfil.example")
	var dnsErr *net.DNSError
	return errors.As(err, &dnsErr) && dnsErr.IsNotFound
}

// bridgeGateway is the host's address on the engine's default bridge.
func bridgeGateway(t *testing.T, cli *client.Client) string {
	t.Helper()
	ni, err := cli.NetworkInspect(t.Context(), "bridge", network.InspectOptions{})
	if err != nil || len(ni.IPAM.Config) == 0 {
		t.Fatalf("inspect the default bridge: %v", err)
	}
	return ni.IPAM.Config[0].Gateway
}

// egressNetworks are the runbox egress networks this process made (other
// processes may be running the same tests against the same engine).
func egressNetworks(t *testing.T, cli *client.Client) map[string]bool {
	t.Helper()
	f := filters.NewArgs(filters.Arg("label", docker.LabelNetwork+"=egress"), filters.Arg("label", docker.LabelPID+"="+strconv.Itoa(os.Getpid())))
	list, err := cli.NetworkList(t.Context(), network.ListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, n := range list {
		out[n.Name] = true
	}
	return out
}

// TestSession_DockerNetworkAllowlist protects the docker backend's
// network allowlist, attacked from inside the container: an allowed
// loopback server of the host is reached through the session's proxy; a
// host not on the list is asked about through the session's asker and,
// refused, is in the result's violations; direct TCP and UDP to the
// host's every-address servers (through the default bridge's gateway and
// the egress network's own) fail, and so does resolving a name. The
// control, a container on the default bridge, reaches the same TCP and
// UDP servers directly, so the attacks are real.
func TestSession_DockerNetworkAllowlist(t *testing.T) {
	cli := needEgressDocker(t)
	bridge := bridgeGateway(t, cli)

	for _, tc := range []struct {
		name       string
		specNet    string // spec.Network
		confNet    string // docker.network
		answer     approval.AnswerKind
		allowlist  bool
		reachAsked bool
	}{
		{name: "control", allowlist: false},
		{name: "spec-deny", specNet: "allowlist", answer: approval.AnswerDeny, allowlist: true},
		{name: "config-once", confNet: "allowlist", answer: approval.AnswerOnce, allowlist: true, reachAsked: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startHostTargets(t)
			argv := []string{strconv.Itoa(h.tcp), strconv.Itoa(h.udp), "http://" + h.allowed + "/", "http://" + h.asked + "/", bridge}
			before := egressNetworks(t, cli)
			cfg := config.Default()
			cfg.Approval.Mode = "off" // only the egress proxy asks
			cfg.Docker.Image, cfg.Docker.Network = egressImage, tc.confNet
			cfg.Sandbox.Network.Allow = []string{h.allowed}
			s := newService(t, cfg)
			a := &asker{kind: tc.answer}
			ss, err := s.NewSession(service.SessionOptions{Backend: "docker", Spec: envs.Spec{Network: tc.specNet}, Asker: a})
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close(context.Background())
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
			defer cancel()
			res, err := ss.Run(ctx, envs.Command{Shell: egressProbe(argv)})
			if err != nil {
				t.Fatal(err)
			}
			out := res.Output
			t.Logf("output:\n%s", out)
			if !tc.allowlist {
				wants := []string{"tcp " + bridge + " ok", "udp " + bridge + " ok echo-ping"}
				if hostResolves(t) {
					wants = append(wants, "dns answered")
				}
				for _, want := range wants {
					if !strings.Contains(out, want) {
						t.Errorf("control: no %q: the direct attacks do not work even unprotected", want)
					}
				}
				return
			}
			if want := "http allowed reached-" + h.allowed; !strings.Contains(out, want) {
				t.Errorf("no %q: the allowed host was not reached through the proxy", want)
			}
			if got := strings.Contains(out, "http asked reached-"+h.asked); got != tc.reachAsked {
				t.Errorf("asked host reached: %v, want %v", got, tc.reachAsked)
			}
			for line := range strings.Lines(out) {
				if (strings.HasPrefix(line, "tcp ") || strings.HasPrefix(line, "udp ")) && strings.Contains(line, " ok") || strings.HasPrefix(line, "dns answered") {
					t.Errorf("escaped the proxy: %q", strings.TrimSpace(line))
				}
			}
			select {
			case <-h.udpGot:
				t.Errorf("a datagram from the container reached the host")
			default:
			}
			qs := a.questions()
			if len(qs) != 1 || !strings.Contains(qs[0].Command, h.asked) || qs[0].Rules[0] != service.RuleEgress || qs[0].Backend != "docker" {
				t.Errorf("questions %+v; want one, from docker, about %s", qs, h.asked)
			}
			denied := false
			for _, v := range res.SandboxViolations {
				denied = denied || v.Op == "connect" && v.Target == h.asked
			}
			if denied == tc.reachAsked {
				t.Errorf("violations %+v; want a denied connect to %s only when refused", res.SandboxViolations, h.asked)
			}
			env, err := ss.Env(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if c := env.Capabilities()[envs.CapNetworkPolicy]; c.State != envs.Active || !strings.Contains(c.Detail, "allowlist") {
				t.Errorf("network policy capability %+v; want allowlist active", c)
			}
			// The proxy the container just used is closed to anyone else:
			// nobody but the container can make it ask the session.
			pr, err := ss.Run(ctx, envs.Command{Shell: "printf %s \"$HTTP_PROXY\""})
			if err != nil || !strings.HasPrefix(pr.Output, "http://") {
				t.Fatalf("HTTP_PROXY in the container = %+v, %v", pr, err)
			}
			if c, err := net.DialTimeout("tcp", strings.TrimPrefix(pr.Output, "http://"), 30*time.Second); err == nil {
				c.Close()
				t.Errorf("the session's proxy %s accepts a connection from the host", pr.Output)
			}
			// The container's file transfer stays reachable through the
			// sandbox's wrapper (workspace sync uses it).
			if ft, ok := env.(envs.FileTransfer); !ok {
				t.Errorf("an allow-listed docker environment (%T) has no file transfer", env)
			} else if err := ft.PutFile(ctx, "/tmp/put", strings.NewReader("put-through"), 0o644); err != nil {
				t.Errorf("PutFile: %v", err)
			} else if res, err := ss.Run(ctx, envs.Command{Shell: "cat /tmp/put"}); err != nil || res.Output != "put-through" {
				t.Errorf("cat of the file put = %+v, %v", res, err)
			}
			row, err := s.Providers().Lookup("docker")
			if err != nil {
				t.Fatal(err)
			}
			if c := row.Capabilities(t.Context(), envs.Spec{Network: "allowlist"})[envs.CapNetworkPolicy]; c.State != envs.Active {
				t.Errorf("the docker row reports network policy %+v under allowlist; want active", c)
			}
			if err := ss.Close(t.Context()); err != nil {
				t.Fatalf("Close: %v", err)
			}
			for n := range egressNetworks(t, cli) {
				if !before[n] {
					t.Errorf("egress network %s left after Close", n)
				}
			}
		})
	}
}

// TestSession_DockerAllowlistFailedOpenLeavesNothing: when the
// environment cannot be made after its network and proxy were, both go
// at once (here a persistent container, which the allowlist refuses).
func TestSession_DockerAllowlistFailedOpenLeavesNothing(t *testing.T) {
	cli := needEgressDocker(t)
	before := egressNetworks(t, cli)
	cfg := config.Default()
	cfg.Approval.Mode = "off"
	cfg.Docker.Image, cfg.Docker.Network = egressImage, "allowlist"
	cfg.Docker.Persistent, cfg.Docker.Task = true, "egress-refused"
	s := newService(t, cfg)
	ss, err := s.NewSession(service.SessionOptions{Backend: "docker"})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close(context.Background())
	if _, err := ss.Run(t.Context(), envs.Command{Shell: "true"}); err == nil {
		t.Fatal("a persistent container under allowlist was opened")
	}
	for n := range egressNetworks(t, cli) {
		if !before[n] {
			t.Errorf("egress network %s left by a failed open", n)
		}
	}
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return out
}
