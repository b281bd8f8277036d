package remote

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Program is a runbox program that the host puts into sandboxes: the
// agent, or (for commands that run runbox itself inside) the full CLI.
type Program struct {
	// Name is the binary's name. A prebuilt one is looked for next to the
	// running executable as Name-linux-<arch>.
	Name string
	// Package is the Go package that builds it, relative to the runbox
	// module's root ("./cmd/runbox-agent").
	Package string
	// Mains are the Go main packages whose builds serve as this program
	// (by the build information Go writes into every binary): the full
	// CLI serves `agent` as runbox-agent does, so a static runbox that is
	// running is the agent too, whatever its file is called.
	Mains []string
}

const module = "github.com/runbox/runbox"

// Agent is the dedicated agent build, cmd/runbox-agent; a full runbox
// serves as the agent too (`runbox agent`).
func Agent() Program {
	return Program{Name: "runbox-agent", Package: "./cmd/runbox-agent", Mains: []string{module + "/cmd/runbox-agent", module + "/cmd/runbox"}}
}

// CLI is the whole runbox command line.
func CLI() Program {
	return Program{Name: "runbox", Package: "./cmd/runbox", Mains: []string{module + "/cmd/runbox"}}
}

// buildTimeout bounds building a program from source.
const buildTimeout = 5 * time.Minute

// Find returns a static (CGO_ENABLED=0) linux/arch build of p, so that it
// runs in any image, busybox and scratch included. In order:
//
//  1. Name-linux-<arch> next to the running executable (a release ships
//     these);
//  2. the running executable itself, if it is such a build and its name
//     is Name or its Go build information names one of Mains (the
//     README's `CGO_ENABLED=0 go build -o runbox ./cmd/runbox` makes a
//     runbox that is its own agent: nothing to rebuild);
//  3. one built from source (sourceDir, or the tree the running program
//     was built from, never one found from the current directory: see
//     findModule) into the user's cache, with
//     -trimpath -ldflags="-s -w";
//  4. without a source tree, the last one built into the cache (an
//     incompatible one is refused by the agent handshake, with its
//     version).
//
// The go tool runs with this process's environment: it is runbox's own
// build tool, not a user command.
func (p Program) Find(ctx context.Context, arch, sourceDir string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		exe = ""
	}
	return p.find(ctx, exe, arch, cmp.Or(sourceDir, findModule()))
}

// find is Find with the running executable given (exe "" when unknown)
// and the source tree found (root "" when there is none).
func (p Program) find(ctx context.Context, exe, arch, root string) (string, error) {
	if exe != "" {
		side := filepath.Join(filepath.Dir(exe), p.Name+"-linux-"+arch)
		if CheckStatic(side, arch) == nil {
			return side, nil
		}
		if p.Is(exe) && CheckStatic(exe, arch) == nil {
			return exe, nil
		}
	}
	latest, err := p.cachePath("", arch)
	if err != nil {
		return "", err
	}
	if root == "" {
		if CheckStatic(latest, arch) != nil {
			return "", fmt.Errorf("no static %s for linux/%s: none next to the binary and no source tree to build one", p.Name, arch)
		}
		if err := trusted(latest); err != nil {
			return "", fmt.Errorf("the last %s built for linux/%s: %w", p.Name, arch, err)
		}
		return latest, nil
	}
	return p.build(ctx, root, arch, latest)
}

// FindSmall is Find for a host that uploads the program (over ssh, or
// into a cloud sandbox), where every megabyte is paid for: p's own
// dedicated build is preferred to a static runbox that would serve too.
// From a source tree it runs the go tool once per build of the running
// program, where Find runs it (a link of the whole program) on every
// call, and what it finds matches the running program even after the
// tree changed. In order:
//
//  1. Name-linux-<arch> next to the running executable, or Name there
//     when arch is this machine's;
//  2. the running executable, if it is p's dedicated build (its first
//     main package, or its name);
//  3. the build made for the running executable from the source tree,
//     in the user's cache: built once per build of the running program
//     (keyed by its Go build id), then found without running the go tool;
//  4. what Find returns (a static runbox that serves as p, a fresh build,
//     the latest one built).
func (p Program) FindSmall(ctx context.Context, arch, sourceDir string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		exe = ""
	}
	return p.findSmall(ctx, exe, arch, cmp.Or(sourceDir, findModule()))
}

// findSmall is FindSmall with the running executable given ("" when
// unknown) and the source tree found (root "" when there is none).
func (p Program) findSmall(ctx context.Context, exe, arch, root string) (string, error) {
	if exe == "" {
		return p.find(ctx, exe, arch, root)
	}
	dir := filepath.Dir(exe)
	if side := filepath.Join(dir, p.Name+"-linux-"+arch); CheckStatic(side, arch) == nil {
		return side, nil
	}
	if side := filepath.Join(dir, p.Name); arch == runtime.GOARCH && side != exe && CheckStatic(side, arch) == nil {
		return side, nil
	}
	if p.dedicated(exe) && CheckStatic(exe, arch) == nil {
		return exe, nil
	}
	key, err := buildKey(exe)
	if root == "" || err != nil {
		return p.find(ctx, exe, arch, root)
	}
	base, err := p.cachePath(root, arch)
	if err != nil {
		return "", err
	}
	out := base + "-for-" + key
	if CheckStatic(out, arch) == nil && trusted(out) == nil {
		now := time.Now()
		os.Chtimes(out, now, now) // in use: pruneBuilds keeps the newest
		return out, nil
	}
	latest, err := p.cachePath("", arch)
	if err != nil {
		return "", err
	}
	if _, err := exec.LookPath("go"); err != nil {
		return p.find(ctx, exe, arch, root)
	}
	built, err := p.buildTo(ctx, root, arch, out, latest)
	if err == nil {
		pruneBuilds(base+"-for-", out)
	}
	return built, err
}

// dedicated reports whether the binary at path is p's own build (by name,
// or by its first main package), not another program that serves as p.
func (p Program) dedicated(path string) bool {
	if filepath.Base(path) == p.Name {
		return true
	}
	bi, err := buildinfo.ReadFile(path)
	return err == nil && len(p.Mains) > 0 && bi.Path == p.Mains[0]
}

// buildKey names the build of the binary at path: a digest of its Go
// build id (which the go tool derives from the binary's content), read
// from one ELF note rather than hashing the file; the file's digest
// where there is no such note.
func buildKey(path string) (string, error) {
	f, err := elf.Open(path)
	if err == nil {
		defer f.Close()
		if sec := f.Section(".note.go.buildid"); sec != nil {
			if note, err := sec.Data(); err == nil && len(note) > 16 {
				sum := sha256.Sum256(note)
				return hex.EncodeToString(sum[:8]), nil
			}
		}
	}
	sum, err := FileDigest(path)
	if err != nil {
		return "", err
	}
	return sum[:16], nil
}

// keptBuilds is how many builds made for builds of the running program
// pruneBuilds keeps (the newest, by when they were last made or found):
// a few runbox builds (or test binaries) side by side each keep their
// own, instead of each rebuilding what the other just removed.
const keptBuilds = 4

// pruneBuilds removes the builds named prefix* but keep and the newest
// others up to keptBuilds in all: those made for earlier builds of the
// running program. Best effort.
func pruneBuilds(prefix, keep string) {
	old, _ := filepath.Glob(prefix + "*")
	type build struct {
		path string
		used time.Time
	}
	var others []build
	for _, o := range old {
		if o == keep || strings.HasSuffix(o, ".tmp") {
			continue
		}
		if fi, err := os.Stat(o); err == nil {
			others = append(others, build{o, fi.ModTime()})
		}
	}
	slices.SortFunc(others, func(a, b build) int { return b.used.Compare(a.used) })
	for i, o := range others {
		if i >= keptBuilds-1 {
			os.Remove(o.path)
		}
	}
}

// Is reports whether the binary at path is a build of p: by its name, or
// by the main package its Go build information records.
func (p Program) Is(path string) bool {
	if filepath.Base(path) == p.Name {
		return true
	}
	bi, err := buildinfo.ReadFile(path)
	return err == nil && slices.Contains(p.Mains, bi.Path)
}

// build compiles p in root into a cache directory of its own (two source
// trees never overwrite each other's builds), and links the result as the
// latest build for callers without a source tree.
func (p Program) build(ctx context.Context, root, arch, latest string) (string, error) {
	out, err := p.cachePath(root, arch)
	if err != nil {
		return "", err
	}
	return p.buildTo(ctx, root, arch, out, latest)
}

// buildTo compiles p in root to out, and links the result as latest.
func (p Program) buildTo(ctx context.Context, root, arch, out, latest string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("no static %s for linux/%s and no go tool to build one", p.Name, arch)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		return "", fmt.Errorf("build %s: %w", p.Name, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), p.Name+".*.tmp")
	if err != nil {
		return "", fmt.Errorf("build %s: %w", p.Name, err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", tmp.Name(), p.Package)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s (go build %s in %s): %v: %s", p.Name, p.Package, root, err, bytes.TrimSpace(b))
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return "", fmt.Errorf("build %s: %w", p.Name, err)
	}
	// Best effort: the latest build serves callers without a source tree.
	if link, err := os.CreateTemp(filepath.Dir(latest), p.Name+".*.tmp"); err == nil {
		link.Close()
		os.Remove(link.Name())
		if os.Link(out, link.Name()) == nil && os.Rename(link.Name(), latest) != nil {
			os.Remove(link.Name())
		}
	}
	// After the link, which changes the file's change time: the build
	// and the latest one are one file.
	if err := recordBuild(out); err != nil {
		return "", fmt.Errorf("build %s: %w", p.Name, err)
	}
	if latest != out {
		recordBuild(latest) // best effort, as the link
	}
	return out, nil
}

// cachePath is where a build of p for arch from the source tree root is
// kept; root "" names the latest build of any tree.
func (p Program) cachePath(root, arch string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "runbox", "agent")
	if root != "" {
		sum := sha256.Sum256([]byte(root))
		dir = filepath.Join(dir, hex.EncodeToString(sum[:6]))
	}
	return filepath.Join(dir, p.Name+"-linux-"+arch), nil
}

// findModule is the source tree the running program was built from: the
// module's root above this file as the compiler saw it, when that is an
// absolute path that still holds runbox's go.mod (a build without
// -trimpath, as go build and go test make); "" otherwise. Never the
// working directory or a directory above it: a command confined to its
// workspace may write a go.mod and a cmd/runbox-agent there, and runbox
// would build that, unconfined, and run it as its agent on every host
// and in every sandbox it connects to.
func findModule() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	dir := filepath.Dir(filepath.Dir(filepath.Dir(file))) // agent/remote/binary.go
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil || !bytes.Contains(b, []byte("module github.com/runbox/runbox\n")) {
		return ""
	}
	return dir
}

// machines maps Go architectures to ELF machines.
var machines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386, "arm": elf.EM_ARM,
	"riscv64": elf.EM_RISCV, "ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390,
}

// CheckStatic accepts a static ELF executable for arch: no interpreter,
// so it runs in any image, busybox and scratch included.
func CheckStatic(path, arch string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("binary %s: %w", path, err)
	}
	defer f.Close()
	if want := machines[arch]; want == 0 || f.Machine != want {
		return fmt.Errorf("binary %s is for %v, the sandbox is %s", path, f.Machine, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("binary %s is dynamically linked (build it with CGO_ENABLED=0)", path)
		}
	}
	return nil
}
