package singularity

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/runbox/runbox/spawn"
)

// Programs are the names looked for on PATH, in order, when
// Options.Program is empty: Apptainer, then the SingularityCE program
// (or Apptainer's compatibility link of that name).
var programs = [...]string{"apptainer", "singularity"}

// programEnv lists what the program itself may inherit from runbox's
// environment: what it needs to find its per-user files and caches. It
// is an allow-list on purpose: APPTAINERENV_* and SINGULARITYENV_* would
// be copied into every container, and runbox's own variables (and any
// secret a caller exported) have no business there either.
var programEnv = [...]string{
	"HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "XDG_RUNTIME_DIR", "TMPDIR",
	"APPTAINER_CACHEDIR", "APPTAINER_TMPDIR", "APPTAINER_CONFIGDIR",
	"SINGULARITY_CACHEDIR", "SINGULARITY_TMPDIR", "SINGULARITY_CONFIGDIR",
}

// program is a found apptainer or singularity executable and the
// environment it runs with.
type program struct {
	path string
	env  []string
}

// findProgram resolves name (a path, a bare name looked up on PATH, or ""
// for the first of [programs] found) with getenv's PATH.
func findProgram(name string, getenv func(string) string) (program, error) {
	path := getenv("PATH")
	if path == "" {
		path = strings.Join(spawn.SystemPath(), string(filepath.ListSeparator))
	}
	p := program{env: []string{"PATH=" + path}}
	for _, k := range programEnv {
		v := getenv(k)
		if k == "HOME" && v == "" {
			// The program keeps its per-user files under the home
			// directory; a caller that gives none still has one.
			if u, err := user.Current(); err == nil {
				v = u.HomeDir
			}
		}
		if v != "" {
			p.env = append(p.env, k+"="+v)
		}
	}
	names := programs[:]
	if name != "" {
		names = []string{name}
	}
	for _, n := range names {
		if found, err := lookPath(n, path); err == nil {
			p.path = found
			return p, nil
		}
	}
	if name != "" {
		return p, fmt.Errorf("%w: %q not found (PATH %s)", ErrNoProgram, name, path)
	}
	return p, fmt.Errorf("%w: neither is on PATH (%s)", ErrNoProgram, path)
}

// lookPath is exec.LookPath against path rather than the process's PATH.
func lookPath(name, path string) (string, error) {
	if strings.Contains(name, "/") {
		return name, executable(name)
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue // a relative entry would search the working directory
		}
		f := filepath.Join(dir, name)
		if executable(f) == nil {
			return f, nil
		}
	}
	return "", exec.ErrNotFound
}

func executable(f string) error {
	fi, err := os.Stat(f)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", f)
	}
	return nil
}

// ErrNoProgram: neither apptainer nor singularity can be found.
var ErrNoProgram = errors.New("singularity: no apptainer or singularity program")

// command is the program with args, its environment [program.env] and
// nothing else.
func (p program) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, p.path, args...)
	cmd.Env = p.env
	// Its own process group, so that a signal meant for runbox's terminal
	// group does not stop an instance mid-start.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// output runs the program and returns its standard output; a failure
// carries its standard error.
func (p program) output(ctx context.Context, args ...string) ([]byte, error) {
	cmd := p.command(ctx, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			return out, fmt.Errorf("%s %s: %w", filepath.Base(p.path), args[0], err)
		}
		return out, fmt.Errorf("%s %s: %w: %s", filepath.Base(p.path), args[0], err, lastLines(msg, 5))
	}
	return out, nil
}

// lastLines keeps the last n lines of s: the program's error comes last,
// after its warnings.
func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "; ")
}

// Info is what [Probe] finds out about the installation.
type Info struct {
	// Program is the executable's path.
	Program string
	// Version is its --version line ("apptainer version 1.4.3").
	Version string
	// UserNS says whether this process can make a user namespace: the
	// unprivileged mode, which runbox asks for (--userns) when it can.
	UserNS bool
	// UserNSError says why not, when UserNS is false.
	UserNSError string
	// Setuid says whether the installation has a setuid starter, which it
	// uses for containers when user namespaces are not available.
	Setuid bool
}

// Probe finds the program Options.Program names (or the first of
// apptainer and singularity on PATH), asks its version and checks how it
// can make containers here.
func Probe(ctx context.Context, opts Options) (Info, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	p, err := findProgram(opts.Program, getenv)
	if err != nil {
		return Info{}, err
	}
	return p.probe(ctx)
}

func (p program) probe(ctx context.Context) (Info, error) {
	info := Info{Program: p.path}
	out, err := p.output(ctx, "--version")
	if err != nil {
		return info, fmt.Errorf("singularity: %w", err)
	}
	info.Version = strings.TrimSpace(string(out))
	if err := userNS(); err != nil {
		info.UserNSError = err.Error()
	} else {
		info.UserNS = true
	}
	info.Setuid = p.setuid(ctx)
	if !info.UserNS && !info.Setuid {
		return info, fmt.Errorf("singularity: %s cannot make containers here: no user namespaces (%s) and no setuid starter", info.Version, info.UserNSError)
	}
	return info, nil
}

// userNS tries to make a user namespace, the way the program would: a
// child in a new one runs /bin/true.
func userNS() error {
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("cannot make a user namespace: %w", err)
	}
	return nil
}

// setuid says whether the installation's starter-suid is installed
// setuid root (buildcfg names where the installation keeps it).
func (p program) setuid(ctx context.Context) bool {
	out, err := p.output(ctx, "buildcfg")
	if err != nil {
		return false
	}
	libexec := ""
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "LIBEXECDIR="); ok {
			libexec = v
		}
	}
	if libexec == "" {
		return false
	}
	for _, n := range programs {
		fi, err := os.Stat(filepath.Join(libexec, n, "bin", "starter-suid"))
		if err == nil && fi.Mode()&os.ModeSetuid != 0 {
			st, ok := fi.Sys().(*syscall.Stat_t)
			return ok && st.Uid == 0
		}
	}
	return false
}
