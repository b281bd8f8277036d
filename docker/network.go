package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/runbox/runbox/envs"
)

// Labels of an egress network beside LabelManaged and LabelOwner.
const (
	LabelNetwork = "io.runbox.network" // "egress" on an EgressNetwork
	LabelBridge  = "io.runbox.bridge"  // the host interface of its bridge
	LabelPID     = "io.runbox.pid"     // the process that made it
)

// guardComment marks the host firewall rules of the bridge it is
// followed by, so that they can be found and removed again.
const guardComment = "runbox-egress:"

// EgressNetwork is a docker network whose only exit is one TCP port on
// the host: an internal bridge network (the engine gives it no route
// out), plus host firewall rules on its bridge that refuse whatever a
// container on it sends to the host itself, except to Gateway on the port
// [EgressNetwork.Guard] names. Without those rules a container could reach
// every service of the host that listens on all addresses through the
// gateway (or any other host address). A container joins it through
// Options.Egress; one network serves one environment.
type EgressNetwork struct {
	cli *client.Client
	// ID and Name are the engine's network; Bridge is its host interface.
	ID, Name, Bridge string
	// Gateway is the host's address on the network: what the container
	// can reach, once guarded, on one port.
	Gateway string
	guarded bool
}

// CheckEgress says why this machine cannot make an EgressNetwork's host
// firewall rules (nil when it can): they need root and iptables.
func CheckEgress() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("docker: network allowlist guards the host with iptables rules, which needs root: %w", envs.ErrUnsupported)
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		return fmt.Errorf("docker: network allowlist needs iptables on this machine: %w", envs.ErrUnsupported)
	}
	return nil
}

// NewEgressNetwork creates an internal network labelled for owner (empty
// means the current user's name, as for containers). It is
// not usable until Guard has closed the host to it; Close removes it (and
// [ReapNetworks] one a crashed process left).
func NewEgressNetwork(ctx context.Context, cli *client.Client, owner string) (*EgressNetwork, error) {
	if err := CheckEgress(); err != nil {
		return nil, err
	}
	if owner == "" {
		owner = currentUser()
	}
	var b [5]byte
	rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	n := &EgressNetwork{cli: cli, Name: "runbox-egress-" + suffix, Bridge: "rbx" + suffix}
	resp, err := cli.NetworkCreate(ctx, n.Name, network.CreateOptions{
		Driver:   "bridge",
		Internal: true,
		Options:  map[string]string{"com.docker.network.bridge.name": n.Bridge},
		Labels:   map[string]string{LabelManaged: "true", LabelOwner: owner, LabelNetwork: "egress", LabelBridge: n.Bridge, LabelPID: strconv.Itoa(os.Getpid())},
	})
	if err != nil {
		return nil, fmt.Errorf("docker: create egress network: %w", err)
	}
	n.ID = resp.ID
	ni, err := cli.NetworkInspect(ctx, n.ID, network.InspectOptions{})
	if err == nil {
		for _, c := range ni.IPAM.Config {
			if !strings.Contains(c.Gateway, ":") && c.Gateway != "" {
				n.Gateway = c.Gateway
				break
			}
		}
		if n.Gateway == "" {
			err = errors.New("the engine gave it no IPv4 gateway")
		}
	}
	if err != nil {
		n.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("docker: egress network %s: %w", n.Name, err)
	}
	return n, nil
}

// Guard makes TCP to Gateway:port the only traffic from the network the
// host accepts: everything else a container sends to any host address is
// rejected. The engine's own rules already keep it from being forwarded
// anywhere else. The port is closed to everyone else (other containers,
// the host's own processes), so that only this network's container can
// use the proxy and make it ask the session's approver.
func (n *EgressNetwork) Guard(ctx context.Context, port int) error {
	tag := guardComment + n.Bridge
	// Inserted at the top in reverse order: the accept lands above the
	// reject.
	rules := [][]string{
		{"-i", n.Bridge, "-m", "comment", "--comment", tag, "-j", "REJECT"},
		{"!", "-i", n.Bridge, "-d", n.Gateway, "-p", "tcp", "--dport", fmt.Sprint(port), "-m", "comment", "--comment", tag, "-j", "REJECT"},
		{"-i", n.Bridge, "-d", n.Gateway, "-p", "tcp", "--dport", fmt.Sprint(port), "-m", "comment", "--comment", tag, "-j", "ACCEPT"},
	}
	n.guarded = true // from here on Close looks for rules to remove
	for _, r := range rules {
		if err := iptables(ctx, append([]string{"-I", "INPUT", "1"}, r...)...); err != nil {
			return fmt.Errorf("docker: guard egress network %s: %w", n.Name, err)
		}
	}
	return nil
}

// Close removes the network's firewall rules and the network. A container
// still on it (one not removed) keeps the network, and Close says so.
func (n *EgressNetwork) Close(ctx context.Context) error {
	var err error
	if n.guarded {
		err = unguard(ctx, n.Bridge)
	}
	if n.ID != "" {
		if rerr := n.cli.NetworkRemove(ctx, n.ID); rerr != nil && !cerrdefs.IsNotFound(rerr) {
			err = errors.Join(err, fmt.Errorf("docker: remove egress network %s: %w", n.Name, rerr))
		}
	}
	return err
}

// unguard removes every host firewall rule made for bridge.
func unguard(ctx context.Context, bridge string) error {
	return removeRules(ctx, func(b string) bool { return b == bridge })
}

// removeRules removes the egress networks' host firewall rules whose
// bridge drop says to.
func removeRules(ctx context.Context, drop func(bridge string) bool) error {
	out, err := exec.CommandContext(ctx, "iptables", "-w", "-S", "INPUT").Output()
	if err != nil {
		return fmt.Errorf("docker: list firewall rules: %w", err)
	}
	var errs []error
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		for i := range f {
			f[i] = strings.Trim(f[i], `"`) // -S quotes a comment; -D wants it bare
		}
		b, ok := ruleBridge(f)
		if len(f) < 2 || f[0] != "-A" || !ok || !drop(b) {
			continue
		}
		f[0] = "-D"
		if err := iptables(ctx, f...); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ruleBridge is the bridge whose guard the rule's words are part of.
func ruleBridge(words []string) (string, bool) {
	for _, w := range words {
		if b, ok := strings.CutPrefix(w, guardComment); ok {
			return b, true
		}
	}
	return "", false
}

func iptables(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "iptables", append([]string{"-w"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ReapNetworks removes runbox egress networks of owner ("" means
// anyone's) created longer than age ago that no container is on (a
// process that crashed before its Close), with their firewall rules, and
// returns their names. It also removes firewall rules whose network's
// bridge is gone.
func ReapNetworks(ctx context.Context, cli *client.Client, owner string, age time.Duration) ([]string, error) {
	f := filters.NewArgs(filters.Arg("label", LabelManaged+"=true"), filters.Arg("label", LabelNetwork+"=egress"))
	if owner != "" {
		f.Add("label", LabelOwner+"="+owner)
	}
	list, err := cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("docker: reap networks: list: %w", err)
	}
	var removed []string
	var errs []error
	for _, nw := range list {
		if time.Since(nw.Created) < age {
			continue
		}
		ni, err := cli.NetworkInspect(ctx, nw.ID, network.InspectOptions{})
		if err != nil || len(ni.Containers) > 0 {
			continue
		}
		n := &EgressNetwork{cli: cli, ID: nw.ID, Name: nw.Name, Bridge: nw.Labels[LabelBridge]}
		n.guarded = n.Bridge != "" && CheckEgress() == nil
		if err := n.Close(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, nw.Name)
	}
	if CheckEgress() == nil {
		// Rules whose bridge is gone (a crash between removing the
		// network and its rules) match nothing, but are clutter.
		errs = append(errs, removeRules(ctx, func(b string) bool {
			_, err := net.InterfaceByName(b)
			return err != nil
		}))
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("docker: reap networks: %w", err)
	}
	return removed, nil
}

// reapNetworkAge bounds how long New leaves an unused egress network: one
// is unused only between its creation and its container's, seconds.
const reapNetworkAge = 10 * time.Minute

// ipv6Enabled reports whether this kernel has IPv6 (the container's IPv6
// sysctls exist only then).
func ipv6Enabled() bool {
	_, err := os.Stat("/proc/sys/net/ipv6")
	return err == nil
}
