package confine_test

import (
	"slices"
	"testing"

	"github.com/runbox/runbox/confine"
)

// TestExplain reads the messages real programs print. Each row names the
// violations it must find; rows whose paths the policy allows (a plain
// file-mode error) must find none.
func TestExplain(t *testing.T) {
	p := confine.Policy{
		Profile:    confine.ProfileWorkspace,
		Network:    confine.NetworkAllowlist,
		Workspace:  "/nonexistent/ws",
		Writable:   []string{"/nonexistent/tmp"},
		DenyRead:   []string{"/nonexistent/home/.ssh"},
		ProtectGit: true,
		ProxyPorts: []int{8080},
	}
	const notLoopback = "not loopback (direct connections go to loopback only; other hosts through the session proxy)"
	cases := []struct {
		name   string
		output string
		want   []confine.Violation
	}{
		{"redirect-outside", "bash: line 1: /etc/passwd: Permission denied\n",
			[]confine.Violation{{Op: "write", Target: "/etc/passwd", Rule: "outside the workspace"}}},
		{"rm-outside", "rm: cannot remove '/srv/data/x': Permission denied\n",
			[]confine.Violation{{Op: "write", Target: "/srv/data/x", Rule: "outside the workspace"}}},
		{"hard-link", "ln: failed to create hard link 'h' => '/etc/shadow': Invalid cross-device link\n",
			[]confine.Violation{{Op: "write", Target: "/etc/shadow", Rule: "outside the workspace"}}},
		{"ssh-key", "cat: /nonexistent/home/.ssh/id_ed25519: Permission denied\n",
			[]confine.Violation{{Op: "read", Target: "/nonexistent/home/.ssh/id_ed25519", Rule: "deny list"}}},
		{"git-hook", "bash: .git/hooks/pre-commit: Read-only file system\n",
			[]confine.Violation{{Op: "write", Target: "/nonexistent/ws/.git/hooks/pre-commit", Rule: "protected: .git/hooks runs programs outside the sandbox"}}},
		{"git-dir", "mv: cannot move '.git' to '.git-old': Device or resource busy\n",
			[]confine.Violation{{Op: "write", Target: "/nonexistent/ws/.git", Rule: "protected: .git cannot be moved or removed"}}},
		{"cgroup", "bash: /sys/fs/cgroup/x/cgroup.procs: Permission denied\n",
			[]confine.Violation{{Op: "write", Target: "/sys/fs/cgroup/x/cgroup.procs", Rule: "cgroups are not writable"}}},
		{"proc-mem", "dd: failed to open '/proc/42/mem': Permission denied\n",
			[]confine.Violation{{Op: "ptrace", Target: "/proc/42/mem", Rule: "process outside the sandbox"}}},
		{"tcp-port", "bash: connect: Permission denied\nbash: line 1: /dev/tcp/127.0.0.1/9999: Permission denied\n",
			[]confine.Violation{{Op: "connect", Target: "127.0.0.1:9999", Rule: "port not allowed (only the session proxy, allowed ports and the command's own servers)"}}},
		{"curl-port", "curl: (7) Failed to connect to 10.0.0.1 port 443 after 0 ms: Couldn't connect to server: Permission denied\n",
			[]confine.Violation{{Op: "connect", Target: "10.0.0.1:443", Rule: notLoopback}}},
		{"allowed-port-elsewhere", "bash: connect: Permission denied\nbash: /dev/tcp/10.0.0.1/8080: Permission denied\n",
			[]confine.Violation{{Op: "connect", Target: "10.0.0.1:8080", Rule: notLoopback}}},
		{"udp", "bash: socket: Operation not permitted\nbash: /dev/udp/8.8.8.8/53: Operation not permitted\n",
			[]confine.Violation{{Op: "connect", Target: "udp 8.8.8.8:53", Rule: "UDP and raw sockets are blocked (DNS goes through the proxy)"}}},
		{"signal", "bash: line 1: kill: (77) - Operation not permitted\n",
			[]confine.Violation{{Op: "signal", Target: "process 77", Rule: "outside the sandbox"}}},
		// Nothing the policy allows is reported.
		{"workspace-file", "bash: /nonexistent/ws/out.txt: Permission denied\n", nil},
		{"relative-in-workspace", "touch: cannot touch 'build/x': Permission denied\n", nil},
		{"tmp-file", "cp: cannot create regular file '/nonexistent/tmp/y': Permission denied\n", nil},
		{"read-elsewhere", "cat: /etc/shadow: Permission denied\n", nil},
		{"proxy-port", "bash: connect: Permission denied\nbash: /dev/tcp/127.0.0.1/8080: Permission denied\n", nil},
		{"no-denial", "all good\n/etc/passwd exists\n", nil},
		{"repeated", "rm: cannot remove '/a/b': Permission denied\nrm: cannot remove '/a/b': Permission denied\n",
			[]confine.Violation{{Op: "write", Target: "/a/b", Rule: "outside the workspace"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := confine.Explain(p, c.output)
			if !slices.Equal(got, c.want) {
				t.Errorf("Explain(%q) = %v; want %v", c.output, got, c.want)
			}
		})
	}
	if got := confine.Explain(confine.Policy{Profile: confine.ProfileOff}, "bash: /etc/passwd: Permission denied"); got != nil {
		t.Errorf("under off Explain = %v; want nothing", got)
	}
}

// FuzzExplain: Explain never panics, and never reports a write to a file
// the workspace profile lets the command write, whatever the output.
func FuzzExplain(f *testing.F) {
	for _, s := range []string{
		"bash: /nonexistent/ws/a: Permission denied",
		"rm: cannot remove '/etc/x': Permission denied",
		"ln: failed to create hard link 'h' => '/x': Invalid cross-device link",
		"bash: /dev/tcp/1.2.3.4/80: Permission denied",
		"kill: (1) - Operation not permitted",
		"curl: Failed to connect to h port 99999999999999999999: Permission denied",
	} {
		f.Add(s)
	}
	p := confine.Policy{Profile: confine.ProfileWorkspace, Workspace: "/nonexistent/ws", Network: confine.NetworkAllowlist}
	f.Fuzz(func(t *testing.T, out string) {
		for _, v := range confine.Explain(p, out) {
			if v.Op == "write" && (v.Target == p.Workspace || len(v.Target) > len(p.Workspace) && v.Target[:len(p.Workspace)+1] == p.Workspace+"/") {
				t.Fatalf("Explain(%q) reports a write to the workspace: %v", out, v)
			}
		}
	})
}
