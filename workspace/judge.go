package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
)

// What a sandbox must never get written into the local directory, because
// git, a hook manager or a shell on the host would act on it. The check is
// by name, on every element of a path, after folding the spellings that
// name the same file on some file system (see foldName).

const reasonGit = ".git in any form: git reads it as a repository or as a pointer to one, and runs the commands its configuration names"

// hostNames maps a folded name to why a path holding it is refused.
var hostNames = map[string]string{
	".git":           reasonGit,
	".gitmodules":    "git clones and checks out the repositories it names",
	".gitattributes": "git runs the filter and diff programs it assigns to files",
	".gitconfig":     "git configuration: it can name commands git runs",
	".lfsconfig":     "git-lfs configuration: it redirects where git fetches from",
	// Hook managers: what they name runs at the next git commit or push.
	".husky":                  "git hooks (husky) run by git commit and push",
	".githooks":               "git hooks run by git commit and push",
	".git-hooks":              "git hooks run by git commit and push",
	".lefthook":               "git hooks (lefthook) run by git commit and push",
	"lefthook.yml":            "git hooks (lefthook) run by git commit and push",
	"lefthook.yaml":           "git hooks (lefthook) run by git commit and push",
	".lefthook.yml":           "git hooks (lefthook) run by git commit and push",
	".lefthook.yaml":          "git hooks (lefthook) run by git commit and push",
	"lefthook-local.yml":      "git hooks (lefthook) run by git commit and push",
	"lefthook-local.yaml":     "git hooks (lefthook) run by git commit and push",
	".pre-commit-config.yaml": "git hooks (pre-commit) run by git commit and push",
	".overcommit.yml":         "git hooks (overcommit) run by git commit and push",
	// Shells and direnv.
	".envrc":        "direnv runs it when a shell enters the directory",
	".profile":      "shell start-up file",
	".bashrc":       "shell start-up file",
	".bash_profile": "shell start-up file",
	".bash_login":   "shell start-up file",
	".bash_logout":  "shell start-up file",
	".zshenv":       "shell start-up file",
	".zshrc":        "shell start-up file",
	".zprofile":     "shell start-up file",
	".zlogin":       "shell start-up file",
	".zlogout":      "shell start-up file",
	".kshrc":        "shell start-up file",
	".mkshrc":       "shell start-up file",
	".cshrc":        "shell start-up file",
	".tcshrc":       "shell start-up file",
	".login":        "shell start-up file",
	".logout":       "shell start-up file",
}

// shortNames are the 8.3 names Windows file systems give .git and
// .gitmodules (the plain ones and the hashed ones git itself refuses).
var shortNames = []struct {
	re   *regexp.Regexp
	long string
}{
	{regexp.MustCompile(`^(git|gi7eba)~[1-9][0-9]*$`), ".git"},
	{regexp.MustCompile(`^(gitmod|gi7d29)~[1-9][0-9]*$`), ".gitmodules"},
}

// foldName returns the name a file system that folds names would use for
// el: lower case (Windows, macOS), without the code points HFS+ ignores,
// without an NTFS stream suffix (".git::$INDEX_ALLOCATION") and without
// the trailing dots and spaces Windows drops; an 8.3 short name becomes
// the long name it stands for.
func foldName(el string) string {
	var b strings.Builder
	for _, r := range el {
		if !hfsIgnored(r) {
			b.WriteRune(r)
		}
	}
	s := strings.ToLower(b.String())
	if i := strings.IndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimRight(s, ". ")
	for _, sn := range shortNames {
		if sn.re.MatchString(s) {
			return sn.long
		}
	}
	return s
}

// hfsIgnored reports the code points HFS+ leaves out when it compares
// names (the list git uses).
func hfsIgnored(r rune) bool {
	return r >= 0x200c && r <= 0x200f || r >= 0x202a && r <= 0x202e || r >= 0x206a && r <= 0x206f || r == 0xfeff
}

// hostRefusal says why p (slash-separated, relative) must never be
// written here, or "" when nothing on the host acts on it by name.
func hostRefusal(p string) string {
	for _, el := range strings.Split(p, "/") {
		if el == "" || el == "." || el == ".." {
			continue
		}
		if why, ok := hostNames[foldName(el)]; ok {
			return why
		}
	}
	return ""
}

const reasonHooks = "the git hooks directory this project's core.hooksPath names: git commit and push run what is there"

const reasonGitDir = "inside what git takes for a git directory (HEAD with objects/ or refs/): git run there obeys its configuration"

// gitDirLike reports whether directory d (relative, "." for the root)
// holds what git looks for when it decides a directory is a repository:
// a HEAD beside objects/ or refs/, or a commondir file. has says whether
// a path exists.
func gitDirLike(d string, has func(p string) bool) bool {
	j := func(n string) string { return path.Join(d, n) }
	return has(j("HEAD")) && (has(j("objects")) || has(j("refs"))) || has(j("commondir"))
}

// maxLinkHops bounds the links followed to resolve one link (as the
// kernel's ELOOP does).
const maxLinkHops = 40

// errLinkLoop is a chain of links too long to resolve.
var errLinkLoop = errors.New("too many levels of symbolic links")

// errLinkOut is a resolution that leaves the directory.
var errLinkOut = errors.New("leads out of the directory")

// node is what a path is in a [view]: absent, or an entry's type (and a
// link's target).
type node struct {
	typ  Type // "" when absent
	link string
}

// view is the local directory as it will be once an apply is done: what
// is on disk, with the changes laid over it.
type view struct {
	root *os.Root
	// over maps a changed path to its new entry (nil: deleted).
	over map[string]*Entry
	// dirs are the directories the changes' writes create.
	dirs map[string]bool
}

// newView lays changes (path → the sandbox's entry, nil for a deletion)
// over the directory of root.
func newView(root *os.Root, changes map[string]*Entry) *view {
	v := &view{root: root, over: changes, dirs: map[string]bool{}}
	for p, e := range changes {
		if e == nil {
			continue
		}
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			v.dirs[d] = true
		}
	}
	return v
}

// lookup returns what p is in the view.
func (v *view) lookup(p string) (node, error) {
	if e, ok := v.over[p]; ok {
		if e == nil {
			return node{}, nil
		}
		return node{typ: e.Type, link: e.Link}, nil
	}
	if v.root != nil {
		fi, err := v.root.Lstat(p)
		switch {
		case err == nil && fi.Mode()&fs.ModeSymlink != 0:
			target, err := v.root.Readlink(p)
			if err != nil {
				return node{}, fmt.Errorf("workspace: %s: %w", p, err)
			}
			return node{typ: TypeSymlink, link: target}, nil
		case err == nil && fi.IsDir():
			return node{typ: TypeDir}, nil
		case err == nil:
			return node{typ: TypeFile}, nil
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return node{}, fmt.Errorf("workspace: %s: %w", p, err)
		}
	}
	if v.dirs[p] {
		return node{typ: TypeDir}, nil
	}
	return node{}, nil
}

// resolve returns where a link at name with target really leads in the
// view: the slash-separated path it reaches ("." for the root), following
// every link on the way (the link's own chain, links already here and
// links the changes make) as the kernel would. A name that does not exist
// is taken for a directory that may be made later, so what follows it
// still counts. A chain that leaves the directory is errLinkOut.
func (v *view) resolve(name, target string) (string, error) {
	hops := 0
	cur, err := v.walk(splitDir(path.Dir(name)), target, &hops)
	if err != nil {
		return "", err
	}
	if len(cur) == 0 {
		return ".", nil
	}
	return strings.Join(cur, "/"), nil
}

func splitDir(d string) []string {
	if d == "." || d == "" {
		return nil
	}
	return strings.Split(d, "/")
}

// walk resolves rel from the directory cur (its elements), following
// links, and returns the elements of the result.
func (v *view) walk(cur []string, rel string, hops *int) ([]string, error) {
	if rel == "" || path.IsAbs(rel) || strings.HasPrefix(rel, `\`) {
		return nil, errLinkOut
	}
	for _, el := range strings.Split(rel, "/") {
		switch el {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return nil, errLinkOut
			}
			cur = cur[:len(cur)-1]
			continue
		}
		next := append(cur[:len(cur):len(cur)], el)
		n, err := v.lookup(strings.Join(next, "/"))
		if err != nil {
			return nil, err
		}
		if n.typ != TypeSymlink {
			cur = next
			continue
		}
		if *hops++; *hops > maxLinkHops {
			return nil, errLinkLoop
		}
		if cur, err = v.walk(cur, n.link, hops); err != nil {
			return nil, err
		}
	}
	return cur, nil
}

// linkRefusal says why a link at name to target must not be made, or
// "" when it may: in the view it resolves out of the directory, does not
// resolve, or reaches a path refused by name (into .git, a hook
// directory, ...). The error is a failure to read the directory.
func (v *view) linkRefusal(name, target string) (string, error) {
	to, err := v.resolve(name, target)
	switch {
	case errors.Is(err, errLinkOut):
		return "symbolic link that leads out of the directory once the links on its way are followed", nil
	case errors.Is(err, errLinkLoop):
		return "symbolic link that does not resolve: " + err.Error(), nil
	case err != nil:
		return "", err
	}
	if why := hostRefusal(to); why != "" {
		return "symbolic link to " + to + ", refused by name: " + why, nil
	}
	return "", nil
}

// linkError is the error of a link refused for why.
func linkError(name, target, why string) error {
	return &PathError{Path: name + " -> " + target, Err: fmt.Errorf("%w (%s)", ErrUnsafePath, why)}
}

// hooksPath returns the directory (relative to the project, slash-
// separated) that the project's own git configuration names in
// core.hooksPath, or "" when it names none inside the project. Only
// .git/config is read, as plain lines (no includes): what git runs from
// there at the next commit must not come from the sandbox.
func hooksPath(root *os.Root, dir string) string {
	b, err := readIn(root, ".git/config")
	if err != nil {
		return ""
	}
	section, val := "", ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			name, _, _ := strings.Cut(strings.Trim(line, "[]"), " ")
			section = strings.ToLower(strings.TrimSpace(name))
			continue
		}
		key, v, ok := strings.Cut(line, "=")
		if ok && section == "core" && strings.EqualFold(strings.TrimSpace(key), "hookspath") {
			val = strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	if val == "" || strings.HasPrefix(val, "~") {
		return ""
	}
	if filepath.IsAbs(val) {
		rel, err := filepath.Rel(dir, val)
		if err != nil {
			return ""
		}
		val = filepath.ToSlash(rel)
	}
	val = path.Clean(val)
	if val == "." || val == ".." || strings.HasPrefix(val, "../") || path.IsAbs(val) {
		return ""
	}
	return val
}

// under reports whether p is d or inside it.
func under(p, d string) bool {
	return d != "" && (p == d || strings.HasPrefix(p, d+"/"))
}
