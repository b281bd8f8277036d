package confine

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Why caches are private by default: the host trusts its caches. Go runs
// what it finds in its module and build caches, npm and cargo install
// from theirs; a command that rewrote a module under ~/go/pkg/mod or an
// object in ~/.cache/go-build would run later, outside any sandbox, in
// the user's own builds. So a confined command gets caches of its
// workspace's own, through the variables each tool reads, and the host's
// are not writable to it. Go still takes modules the host already
// downloaded (its download cache is read as a file proxy, checked against
// go.sum), so only builds start cold.

// privateCacheVars are the variables that point the tools at the
// workspace's caches, with the subdirectory each gets.
var privateCacheVars = []struct{ name, sub string }{
	{"XDG_CACHE_HOME", "xdg"}, // pip, uv, yarn, pre-commit, node-gyp, playwright, ...
	{"GOCACHE", "go-build"},
	{"GOMODCACHE", "go-mod"},
	{"npm_config_cache", "npm"},
	{"npm_config_store_dir", "pnpm-store"},
	{"YARN_CACHE_FOLDER", "yarn"},
	{"PIP_CACHE_DIR", "pip"},
	{"CARGO_HOME", "cargo"},
	{"GRADLE_USER_HOME", "gradle"},
	{"BUN_INSTALL_CACHE_DIR", "bun"},
}

// PrivateCacheRoot is the directory that holds the private caches of
// every workspace of a user whose home is home.
func PrivateCacheRoot(home string, getenv func(string) string) string {
	base := getenv("XDG_CACHE_HOME")
	if !filepath.IsAbs(base) {
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "runbox", "workspaces")
}

// privateCaches points p's command at the caches of its workspace (a
// directory of PrivateCacheRoot named after the workspace) and makes that
// directory writable.
func (p *Policy) privateCaches(home string, getenv func(string) string) {
	sum := sha256.Sum256([]byte(p.Workspace))
	root := filepath.Join(PrivateCacheRoot(home, getenv), filepath.Base(p.Workspace)+"-"+hex.EncodeToString(sum[:6]))
	p.Env = map[string]string{}
	for _, v := range privateCacheVars {
		p.Env[v.name] = filepath.Join(root, v.sub)
	}
	if opts := strings.TrimSpace(getenv("MAVEN_OPTS") + " -Dmaven.repo.local=" + filepath.Join(root, "m2")); opts != "" {
		p.Env["MAVEN_OPTS"] = opts
	}
	// Modules the host already has, read from its download cache (the
	// file proxy of its layout), before the network.
	if dl := filepath.Join(hostModCache(home, getenv), "cache", "download"); isDir(dl) {
		p.Env["GOPROXY"] = "file://" + dl + "," + hostGoproxy(home, getenv)
	}
	p.Writable = append(p.Writable, root)
}

// ShareCaches makes p's command use the host's caches, writable, instead
// of its workspace's own (sandbox.caches: shared): faster, and every
// command can then change what the host's own builds run.
func (p *Policy) ShareCaches(home string) {
	if p.Profile != ProfileWorkspace || home == "" {
		return
	}
	root := ""
	if c := p.Env["XDG_CACHE_HOME"]; c != "" {
		root = filepath.Dir(c)
	}
	p.Env = nil
	p.Writable = slices.DeleteFunc(p.Writable, func(w string) bool { return w == root })
	for _, c := range cacheDirs {
		p.Writable = append(p.Writable, filepath.Join(home, c.dir))
	}
	for _, v := range []string{"GOMODCACHE", "GOCACHE"} {
		if d := os.Getenv(v); filepath.IsAbs(d) && !slices.Contains(p.Writable, d) {
			p.Writable = append(p.Writable, d)
		}
	}
}

// hostModCache is the host's GOMODCACHE: the variable, else the first
// GOPATH entry's pkg/mod, else ~/go/pkg/mod.
func hostModCache(home string, getenv func(string) string) string {
	if d := getenv("GOMODCACHE"); filepath.IsAbs(d) {
		return d
	}
	if gp := filepath.SplitList(getenv("GOPATH")); len(gp) > 0 && filepath.IsAbs(gp[0]) {
		return filepath.Join(gp[0], "pkg", "mod")
	}
	return filepath.Join(home, "go", "pkg", "mod")
}

// hostGoproxy is the GOPROXY the host's go uses: the variable, else the
// one `go env -w` wrote (the variable set here would hide it), else Go's
// default.
func hostGoproxy(home string, getenv func(string) string) string {
	if v := getenv("GOPROXY"); v != "" {
		return v
	}
	file := getenv("GOENV")
	if file == "" {
		base := getenv("XDG_CONFIG_HOME")
		if !filepath.IsAbs(base) {
			base = filepath.Join(home, ".config")
		}
		file = filepath.Join(base, "go", "env")
	}
	if b, err := os.ReadFile(file); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "GOPROXY="); ok && v != "" {
				return v
			}
		}
	}
	return "https://proxy.golang.org,direct"
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// cacheDirs are the host's caches under HOME that compilers and package
// managers write, writable under shared caches. tool is the program
// that writes each ("" for the shared ~/.cache): MakeCaches makes a
// missing one when its tool is installed.
var cacheDirs = []struct{ dir, tool string }{
	{".cache", ""}, // go-build, pip, yarn, pre-commit, ...
	{"go/pkg/mod", "go"},
	{".npm", "npm"},
	{".cargo/registry", "cargo"},
	{".cargo/git", "cargo"},
	{".rustup/downloads", "rustup"},
	{".m2/repository", "mvn"},
	{".gradle/caches", "gradle"},
	{".local/share/pnpm", "pnpm"},
	{".bun/install/cache", "bun"},
}

// MakeCaches makes the caches p's command writes that are missing (a path
// missing when a command starts is not writable by it, so on a fresh
// account the first build would fail): the workspace's private caches, or,
// under shared caches, ~/.cache always and a tool's cache when the tool
// is installed (lookPath finds it). The cargo configuration of home is
// copied into a new private CARGO_HOME (credentials stay behind). It
// returns the directories it made.
func MakeCaches(p Policy, home string, lookPath func(string) (string, error)) ([]string, error) {
	if p.Profile != ProfileWorkspace {
		return nil, nil
	}
	var dirs []string
	if p.Env != nil {
		for _, v := range privateCacheVars {
			dirs = append(dirs, p.Env[v.name])
		}
	} else if home != "" {
		for _, c := range cacheDirs {
			if _, err := os.Lstat(filepath.Join(home, c.dir)); err == nil {
				continue // the usual case: no search of PATH
			}
			if _, err := lookPath(c.tool); c.tool == "" || err == nil {
				dirs = append(dirs, filepath.Join(home, c.dir))
			}
		}
	}
	var made []string
	for _, d := range dirs {
		if _, err := os.Lstat(d); err == nil {
			continue
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return made, fmt.Errorf("confine: making the cache %s: %w", d, err)
		}
		made = append(made, d)
	}
	if c := p.Env["CARGO_HOME"]; c != "" && slices.Contains(made, c) {
		copyCargoConfig(home, c)
	}
	return made, nil
}

// copyCargoConfig copies ~/.cargo/config.toml (or config) into a new
// private CARGO_HOME, so that mirrors and build settings still apply.
// The workspace's caches are writable to its commands, and a job of the
// workspace may swap a link in while the copy is made: the directory is
// opened through no link that leads out of the private caches, and the
// file is written anew under a name of its own and renamed into place,
// which replaces a link rather than writing where it points.
func copyCargoConfig(home, cargo string) {
	ws := filepath.Dir(cargo)
	top, err := os.OpenRoot(filepath.Dir(ws))
	if err != nil {
		return
	}
	defer top.Close()
	dir, err := top.OpenRoot(filepath.Join(filepath.Base(ws), filepath.Base(cargo)))
	if err != nil {
		return
	}
	defer dir.Close()
	for _, name := range []string{"config.toml", "config"} {
		b, err := os.ReadFile(filepath.Join(home, ".cargo", name))
		if err != nil {
			continue // none, or unreadable: cargo's defaults apply
		}
		writeAnew(dir, name, b)
	}
}

// writeAnew writes b to name in dir through a file it creates, and
// renames that file over name.
func writeAnew(dir *os.Root, name string, b []byte) error {
	var r [6]byte
	rand.Read(r[:])
	tmp := "." + name + ".runbox-" + hex.EncodeToString(r[:])
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = dir.Rename(tmp, name)
	}
	if err != nil {
		dir.Remove(tmp)
	}
	return err
}
