package confine

import (
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Violation is one access the sandbox denied.
type Violation struct {
	// Op is read, write, exec, connect, socket, domain, signal, ptrace
	// or cgroup.
	Op string `json:"op"`
	// Target is the path, the host:port or the process.
	Target string `json:"target"`
	// Rule is the part of the policy that denied it.
	Rule string `json:"rule"`
}

func (v Violation) String() string { return fmt.Sprintf("%s %s: %s", v.Op, v.Target, v.Rule) }

// patterns are Explain's regular expressions, compiled on first use:
// every run of the runbox binary (the trampoline's included) would
// otherwise pay for them at start.
var patterns = sync.OnceValue(func() *explainPatterns {
	return &explainPatterns{
		// the messages programs print for EACCES, EPERM, the EXDEV that
		// Landlock returns for a link or rename it refuses, and the
		// EBUSY of a protected mount point.
		denial:   regexp.MustCompile(`Permission denied|Operation not permitted|Invalid cross-device link|Read-only file system|Cannot open: File exists|Device or resource busy`),
		devNet:   regexp.MustCompile(`/dev/(tcp|udp)/([^/\s:'"]+)/(\d+)`),
		portWord: regexp.MustCompile(`([\w.:\[\]-]+) port (\d+)`),
		hostPort: regexp.MustCompile(`(\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]|localhost):(\d+)`),
		quoted:   regexp.MustCompile(`['‘"]([^'’"]+)['’"]`),
		absPath:  regexp.MustCompile(`(?:^|[\s=(])(/[^\s:'"’,;()]*)`),
		// the word before the reason: "prog: PATH: reason", "prog: line
		// N: PATH: reason", "could not write file PATH: reason".
		named:   regexp.MustCompile(`(\S+): (?:Permission denied|Operation not permitted|Read-only file system|Device or resource busy|Invalid cross-device link)`),
		readers: regexp.MustCompile(`(?i)for reading|^(cat|head|tail|less|more|grep|rg|od|xxd|hexdump|base64|strings|sha\d*sum|md5sum|wc|sort|diff|cmp|source|ls|find|du|stat|file):`),
		killed:  regexp.MustCompile(`kill: \(?(\d+)\)?`),
		procPID: regexp.MustCompile(`^/proc/(\d+)/(mem|maps|environ|auxv|syscall|stack|pagemap|smaps|fd|root|cwd|exe)`),
	}
})

type explainPatterns struct {
	denial, devNet, portWord, hostPort, quoted, absPath, named, readers, killed, procPID *regexp.Regexp
}

// Explain reads a confined command's output for the permission errors
// programs print, and returns one Violation per path or port that p
// denies, with the rule that denied it. A named path that p lets the
// command use in that way (a permission error from ordinary file modes,
// say) yields nothing. Relative paths are taken from the workspace;
// symbolic links still in place are followed, so a write through a link
// names the file the link points to.
func Explain(p Policy, output string) []Violation {
	if p.Profile == ProfileOff || p.Profile == "" {
		return nil
	}
	rx := patterns()
	var out []Violation
	socket := false
	add := func(v Violation, ok bool) {
		if ok && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	for _, line := range strings.Split(output, "\n") {
		line = strings.TrimSpace(line)
		if strings.Contains(line, "clone3") && strings.Contains(line, "Function not implemented") {
			// Only a program that calls clone3 itself and reports its
			// failure says so: the C library falls back to clone
			// silently.
			add(Violation{Op: "cgroup", Target: "clone3", Rule: "no process may start in another cgroup (clone3 is refused)"}, true)
			continue
		}
		if !rx.denial.MatchString(line) {
			continue
		}
		if m := rx.devNet.FindStringSubmatch(line); m != nil {
			add(p.explainNet(m[1], m[2], m[3]))
			continue
		}
		if strings.Contains(line, "connect") {
			if m := rx.portWord.FindStringSubmatch(line); m != nil {
				add(p.explainNet("tcp", m[1], m[2]))
				continue
			}
			if m := rx.hostPort.FindStringSubmatch(line); m != nil {
				add(p.explainNet("tcp", m[1], m[2]))
				continue
			}
		}
		if strings.Contains(line, "socket:") && p.network() != NetworkOpen {
			// bash says "socket:" and then names /dev/udp/...: the
			// bare refusal is reported only when nothing names it.
			socket = true
			continue
		}
		if m := rx.killed.FindStringSubmatch(line); m != nil && strings.Contains(line, "not permitted") {
			add(Violation{Op: "signal", Target: "process " + m[1], Rule: "outside the sandbox"}, true)
			continue
		}
		hint := "write"
		if rx.readers.MatchString(line) {
			hint = "read"
		}
		for _, path := range candidates(line) {
			add(p.explainPath(path, hint))
		}
	}
	if socket && !slices.ContainsFunc(out, func(v Violation) bool { return v.Op == "connect" }) {
		add(Violation{Op: "connect", Target: "socket", Rule: p.netRule("udp")}, true)
	}
	return out
}

// candidates are the paths a message names.
func candidates(line string) []string {
	rx := patterns()
	var out []string
	for _, m := range rx.quoted.FindAllStringSubmatch(line, -1) {
		out = append(out, m[1])
	}
	for _, m := range rx.named.FindAllStringSubmatch(line, -1) {
		out = append(out, m[1])
	}
	for _, m := range rx.absPath.FindAllStringSubmatch(line, -1) {
		out = append(out, m[1])
	}
	return out
}

// The rules a refused TCP connect is reported under.
const (
	ruleNotLoopback = "not loopback (direct connections go to loopback only; other hosts through the session proxy)"
	rulePort        = "port not allowed (only the session proxy, allowed ports and the command's own servers)"
)

// explainNet classifies a refused connection.
func (p Policy) explainNet(proto, host, portText string) (Violation, bool) {
	port, err := strconv.Atoi(portText)
	if err != nil {
		return Violation{}, false
	}
	target := fmt.Sprintf("%s:%d", host, port)
	if proto == "udp" {
		if p.network() == NetworkOpen {
			return Violation{}, false
		}
		return Violation{Op: "connect", Target: "udp " + target, Rule: p.netRule("udp")}, true
	}
	switch p.network() {
	case NetworkOpen:
		return Violation{}, false
	case NetworkAllowlist:
		if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil && !ip.IsLoopback() && !ip.IsUnspecified() {
			return Violation{Op: "connect", Target: target, Rule: ruleNotLoopback}, true
		}
		if slices.Contains(p.ProxyPorts, port) || slices.Contains(p.AllowPorts, port) {
			return Violation{}, false
		}
	}
	return Violation{Op: "connect", Target: target, Rule: p.netRule("tcp")}, true
}

func (p Policy) netRule(proto string) string {
	switch {
	case p.network() == NetworkOff:
		return "network off"
	case proto == "udp":
		return "UDP and raw sockets are blocked (DNS goes through the proxy)"
	default:
		return rulePort
	}
}

// explainPath classifies a refused access to path; hint is the operation
// the message suggests (read or write).
func (p Policy) explainPath(path, hint string) (Violation, bool) {
	rx := patterns()
	if strings.HasPrefix(path, "/dev/tcp/") || strings.HasPrefix(path, "/dev/udp/") {
		return Violation{}, false
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.Workspace, path)
	}
	path = filepath.Clean(path)
	if real, err := resolve(path); err == nil {
		path = real
	}
	if rx.procPID.MatchString(path) {
		return Violation{Op: "ptrace", Target: path, Rule: "process outside the sandbox"}, true
	}
	deny, _ := resolveAll(p.DenyRead)
	if deepest(path, deny) > deepest(path, p.writableRoots()) {
		return Violation{Op: hint, Target: path, Rule: "deny list"}, true
	}
	if hint == "read" {
		return Violation{}, false // reading is allowed everywhere else
	}
	if p.writable(path) {
		if rule, ok := p.protected(path); ok {
			return Violation{Op: "write", Target: path, Rule: rule}, true
		}
		return Violation{}, false
	}
	rule := "outside the workspace"
	switch {
	case p.Profile == ProfileReadOnly:
		rule = "read-only profile"
	case strings.HasSuffix(path, "/cgroup.procs") || strings.HasSuffix(path, "/tasks") || within(path, "/sys/fs/cgroup"):
		rule = "cgroups are not writable"
	case within(path, "/sys") || within(path, "/proc/sys"):
		rule = "system settings are not writable"
	}
	return Violation{Op: "write", Target: path, Rule: rule}, true
}

// writable reports whether p lets a command write path.
func (p Policy) writable(path string) bool {
	return deepest(path, p.writableRoots()) >= 0
}

// writableRoots are the paths p lets a command write, resolved.
func (p Policy) writableRoots() []string {
	roots := slices.Clone(p.Writable)
	if p.Profile == ProfileWorkspace {
		roots = append(roots, p.Workspace)
	}
	roots = append(append(roots, devWritable...), devTrees...)
	for i, r := range roots {
		if real, err := resolve(r); err == nil {
			roots[i] = real
		}
	}
	return roots
}

// devWritable are the device nodes every confined command may read and
// write (with ioctls: terminals need them), and devTrees the device
// directories it may also create entries in. /dev/shm is not one of
// them: it is shared by every process of the user (runbox keeps its
// session state there), so a command that could write it could change
// what another session runs. A user who needs POSIX shared memory adds it
// to Policy.Writable.
var (
	devWritable = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}
	devTrees    = []string{"/dev/pts"}
)

// protected reports whether path is one of the repository files that
// ProtectGit keeps read-only.
func (p Policy) protected(path string) (string, bool) {
	if !p.ProtectGit || p.Profile != ProfileWorkspace {
		return "", false
	}
	ws, err := resolve(p.Workspace)
	if err != nil {
		ws = p.Workspace
	}
	if path == filepath.Join(ws, ".git") {
		return "protected: .git cannot be moved or removed", true
	}
	for _, f := range []string{".git/hooks", ".git/config"} {
		if within(path, filepath.Join(ws, f)) {
			return "protected: " + f + " runs programs outside the sandbox", true
		}
	}
	return "", false
}
