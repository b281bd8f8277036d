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
const bashPrologue = `__rb_in=$1 __rb_out=$2 __rb_cwdf=$3 __rb_dir=$4
if [ "$5" = gate ]; then IFS= read -r __rb_ <&3; exec 3<&-; unset __rb_; fi
set --
shopt -s expand_aliases
if [ -n "$__rb_in" ]; then builtin . "$__rb_in" 2>/dev/null; fi
builtin cd -- "$__rb_dir" 2>/dev/null || { printf 'runbox: cannot enter directory %s\n' "$__rb_dir" >&2; exit 126; }
__rb_save() {
	{
		builtin printf '__rb_keep='\''%s'\''\n' " $(builtin compgen -e | builtin tr '\n' ' ')"
		builtin printf 'for __rb_v in $(builtin compgen -e); do case "$__rb_keep" in *" $__rb_v "*) ;; *) builtin unset "$__rb_v" ;; esac; done; builtin unset __rb_v __rb_keep\n'
		builtin export -p
		builtin declare -f
		builtin alias -p
	} >"$__rb_out" 2>/dev/null
	builtin printf '%s' "$PWD" >"$__rb_cwdf" 2>/dev/null
}
trap __rb_save EXIT
`

const shPrologue = `__rb_in=$1 __rb_out=$2 __rb_cwdf=$3 __rb_dir=$4
if [ "$5" = gate ]; then IFS= read -r __rb_ <&3; exec 3<&-; unset __rb_; fi
set --
if [ -n "$__rb_in" ]; then . "$__rb_in" 2>/dev/null; fi
cd -- "$__rb_dir" 2>/dev/null || { printf 'runbox: cannot enter directory %s\n' "$__rb_dir" >&2; exit 126; }
__rb_save() {
	export -p >"$__rb_out" 2>/dev/null
	printf '%s' "$PWD" >"$__rb_cwdf" 2>/dev/null
}
trap __rb_save EXIT
`

// sessionFiles are one command's view of the session: the state it
// restores and the files it writes its new state into.
type sessionFiles struct {
	in, out, cwd string
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
	return sessionFiles{in: e.state, out: base + ".state", cwd: base + ".cwd"}, e.cwd, nil
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
			os.Remove(f.in)
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
		os.Remove(f.out)
		return ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return string(cwd)
	}
	old := e.state
	e.state = f.out
	if !overrideDir {
		e.cwd = string(cwd)
	}
	if old != "" && e.stateRefs[old] == 0 {
		os.Remove(old) // no running command still has to restore it
	}
	return string(cwd)
}

// discard drops the state a command left (it timed out or was killed).
func discard(f sessionFiles) (cwd string) {
	b, _ := os.ReadFile(f.cwd)
	os.Remove(f.cwd)
	os.Remove(f.out)
	return strings.TrimSpace(string(b))
}
