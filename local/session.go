package local

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The wrapper runs before and after every shell command. Its positional
// parameters are: the state script to restore ("" for none), the file to
// write the new state to, the file to write the final cwd to, the directory
// to start in, and "gate" when it must wait on fd 3 for its placement in a
// container before running user code. It unsets them before the user's
// code so $1.. are empty, as in a fresh shell.
const bashPrologue = `__rb_in=$1 __rb_out=$2 __rb_cwdf=$3 __rb_dir=$4 __rb_unset=$6
if [ "$5" = gate ]; then IFS= read -r __rb_ <&3; exec 3<&-; unset __rb_; fi
set --
shopt -s expand_aliases
if [ -n "$__rb_unset" ]; then builtin unset $__rb_unset 2>/dev/null; fi
if [ -n "$__rb_in" ]; then builtin . "$__rb_in" 2>/dev/null; fi
builtin unset __rb_in __rb_unset
builtin cd -- "$__rb_dir" 2>/dev/null || { builtin printf 'runbox: cannot enter directory %s\n' "$__rb_dir" >&2; exit 126; }
__rb_save() {
	{ builtin export -p; builtin declare -f; builtin alias -p; } >"$__rb_out" 2>/dev/null
	builtin compgen -e >"$__rb_out.names" 2>/dev/null
	builtin printf '%s' "$PWD" >"$__rb_cwdf" 2>/dev/null
}
trap __rb_save EXIT
`

const shPrologue = `__rb_in=$1 __rb_out=$2 __rb_cwdf=$3 __rb_dir=$4 __rb_unset=$6
if [ "$5" = gate ]; then IFS= read -r __rb_ <&3; exec 3<&-; unset __rb_; fi
set --
if [ -n "$__rb_unset" ]; then unset $__rb_unset 2>/dev/null; fi
if [ -n "$__rb_in" ]; then . "$__rb_in" 2>/dev/null; fi
unset __rb_in __rb_unset
cd -- "$__rb_dir" 2>/dev/null || { printf 'runbox: cannot enter directory %s\n' "$__rb_dir" >&2; exit 126; }
__rb_save() {
	export -p >"$__rb_out" 2>/dev/null
	export -p | sed -n 's/^export \([A-Za-z_][A-Za-z0-9_]*\).*/\1/p' >"$__rb_out.names" 2>/dev/null
	printf '%s' "$PWD" >"$__rb_cwdf" 2>/dev/null
}
trap __rb_save EXIT
`

// sessionFiles are one command's view of the session: the state it
// restores and the files it writes its new state into.
type sessionFiles struct {
	in, out, cwd string
	// names are the variables exported when the restored state was saved;
	// anything else the child environment has was unset by a command.
	names map[string]bool
}

// unsetList names the child's variables that the session has unset
// (space-separated, for the wrapper's $6). Names from spawn are valid
// identifiers, so word splitting them in the shell is safe.
func (f sessionFiles) unsetList(env []string) string {
	if f.in == "" || f.names == nil {
		return ""
	}
	var b strings.Builder
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !f.names[name] && validName(name) {
			b.WriteString(name)
			b.WriteByte(' ')
		}
	}
	return b.String()
}

func validName(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

func (e *Env) newSessionFiles() (sessionFiles, string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return sessionFiles{}, "", fmt.Errorf("local: %w", errClosed)
	}
	e.seq++
	base := filepath.Join(e.stateDir, fmt.Sprintf("cmd-%d", e.seq))
	if e.state != "" {
		e.stateRefs[e.state]++
	}
	return sessionFiles{in: e.state, out: base + ".state", cwd: base + ".cwd", names: e.stateNames}, e.cwd, nil
}

// release drops a command's hold on the state it restored, removing that
// file once nothing uses it and it is no longer the session's state.
func (e *Env) releaseState(f sessionFiles) {
	if f.in == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stateRefs[f.in]--
	if e.stateRefs[f.in] <= 0 {
		delete(e.stateRefs, f.in)
		if f.in != e.state {
			removeState(f.in)
		}
	}
}

// script is the full text given to the shell.
func (e *Env) script(user string) string {
	if e.bash {
		return bashPrologue + user + "\n"
	}
	return shPrologue + user + "\n"
}

// adopt makes the state a command left the session's state. It is called
// only for commands that ended by themselves.
func (e *Env) adopt(f sessionFiles, overrideDir bool) string {
	cwd, err := os.ReadFile(f.cwd)
	os.Remove(f.cwd)
	if _, serr := os.Stat(f.out); err != nil || serr != nil {
		removeState(f.out)
		return ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return string(cwd)
	}
	names := map[string]bool{}
	if b, err := os.ReadFile(f.out + ".names"); err == nil {
		for _, n := range strings.Fields(string(b)) {
			names[n] = true
		}
	}
	old := e.state
	e.state, e.stateNames = f.out, names
	if !overrideDir {
		e.cwd = string(cwd)
	}
	if old != "" && e.stateRefs[old] == 0 {
		removeState(old) // no running command still has to restore it
	}
	return string(cwd)
}

// discard drops the state a command left (it timed out or was killed).
func discard(f sessionFiles) (cwd string) {
	b, _ := os.ReadFile(f.cwd)
	os.Remove(f.cwd)
	removeState(f.out)
	return strings.TrimSpace(string(b))
}

func removeState(path string) {
	os.Remove(path)
	os.Remove(path + ".names")
}
