package local

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/runbox/runbox/internal/regular"
)

// The prologue runs before every shell command and, from its EXIT trap,
// after it. Its inputs are: the state script to restore ("" for none), the
// file to write the new state to, the file to write the final cwd to, the
// directory to start in, "gate" when it must wait at its start gate
// (launch.BarrierFD) for its placement in a container before running user
// code — exiting launch.ExitBarrierClosed, having run nothing, when the gate
// closes unopened — and the variables the session has unset.
//
// With bash the prologue is a file named by BASH_ENV, which bash sources
// before the -c string, and the inputs come in __RB_* variables that it
// unsets (with BASH_ENV) so no child inherits them. The user's command is
// then the whole -c string: its line numbers and $0 are a plain bash's.
const bashPrologue = `__rb_in=$__RB_IN __rb_out=$__RB_OUT __rb_cwdf=$__RB_CWDF __rb_dir=$__RB_DIR __rb_unset=$__RB_UNSET __rb_gate=$__RB_GATE
builtin unset BASH_ENV __RB_IN __RB_OUT __RB_CWDF __RB_DIR __RB_UNSET __RB_GATE
if [ "$__rb_gate" = gate ]; then IFS= builtin read -r __rb_gate <&3 || exit 125; exec 3<&-; fi
{
` + bashUnset + bashRestoreFile + `} 2>/dev/null
` + bashEnter

// The parts of the prologue that a cold shell and a warm one (see
// warm.go) share, run once they have their inputs in __rb_* variables:
// bashUnset drops what the session has unset, bashRestoreFile sources the
// saved state (both run with stderr on /dev/null: their caller's one
// redirection), and bashEnter enters the directory and arms the saving of
// the next state (bashSave, which a warm shell arms before it waits).
const (
	bashUnset = `shopt -s expand_aliases
if [ -n "$__rb_unset" ]; then builtin unset $__rb_unset; fi
`
	bashRestoreFile = `if [ -n "$__rb_in" ]; then builtin . "$__rb_in"; fi
`
	bashEnter = `builtin unset __rb_in __rb_unset __rb_gate __rb_state
builtin cd -- "$__rb_dir" 2>/dev/null || { builtin printf 'runbox: cannot enter directory %s\n' "$__rb_dir" >&2; exit 126; }
` + bashSave
	// bashSave saves the state from the EXIT trap.
	// A shell that exits before its command arrived (a warm shell closed
	// unwritten) has no state file: it must not write ".names" into its
	// working directory.
	//
	// A command that cannot change the state (see sessionFiles.keep)
	// saves nothing: the names of both files are empty.
	bashSave = `__rb_save() {
	[ -n "$__rb_cwdf" ] || return 0
	if [ -n "$__rb_out" ]; then
		{ builtin export -p; builtin declare -f; builtin alias -p; } >"$__rb_out" 2>/dev/null
		builtin compgen -e >"$__rb_out.names" 2>/dev/null
	fi
	builtin printf '%s' "$PWD" >"$__rb_cwdf" 2>/dev/null
}
trap __rb_save EXIT
`
)

// With sh (which reads no startup file for -c), the prologue leads the -c
// string and the inputs are its positional parameters, cleared before the
// user's code.
const shPrologue = `__rb_in=$1 __rb_out=$2 __rb_cwdf=$3 __rb_dir=$4 __rb_unset=$6
if [ "$5" = gate ]; then IFS= read -r __rb_ <&3 || exit 125; exec 3<&-; unset __rb_; fi
set --
if [ -n "$__rb_unset" ]; then unset $__rb_unset 2>/dev/null; fi
if [ -n "$__rb_in" ]; then . "$__rb_in" 2>/dev/null; fi
unset __rb_in __rb_unset
cd -- "$__rb_dir" 2>/dev/null || { printf 'runbox: cannot enter directory %s\n' "$__rb_dir" >&2; exit 126; }
__rb_save() {
	[ -n "$__rb_cwdf" ] || return 0
	if [ -n "$__rb_out" ]; then
		export -p >"$__rb_out" 2>/dev/null
		export -p | sed -n 's/^export \([A-Za-z_][A-Za-z0-9_]*\).*/\1/p' >"$__rb_out.names" 2>/dev/null
	fi
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
	// keep is set for a command that cannot change the state (see
	// package shellstate): its shell saves only its working directory,
	// and the session's state stays the one it restored.
	keep bool
}

// saveTo is the state file the shell writes: none for a command that
// keeps the state.
func (f sessionFiles) saveTo() string {
	if f.keep {
		return ""
	}
	return f.out
}

// cwdTo is the file the shell writes its last directory to: none for a
// command that keeps the state, which cannot leave the directory it
// started in.
func (f sessionFiles) cwdTo() string {
	if f.keep {
		return ""
	}
	return f.cwd
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

// newSessionFiles makes the session files of a command; unchanging is
// whether its text cannot change the state in a session that defines no
// function or alias.
func (e *Env) newSessionFiles(unchanging bool) (sessionFiles, string, error) {
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
	f := sessionFiles{in: e.state, out: base + ".state", cwd: base + ".cwd", names: e.stateNames}
	f.keep = unchanging && !e.stateDefines
	return f, e.cwd, nil
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

// shellCommand builds the shell invocation for a user's command.
func (e *Env) shellCommand(user string, f sessionFiles, dir, gate string, env []string) *exec.Cmd {
	if !e.bash {
		return exec.Command(e.shell, "-c", shPrologue+user+"\n", "sh", f.in, f.saveTo(), f.cwdTo(), dir, gate, f.unsetList(env))
	}
	xc := exec.Command(e.shell, "-c", user)
	xc.Args[0] = "bash" // $0 and the prefix of bash's own messages, as in a plain bash -c
	xc.Env = append(env[:len(env):len(env)],
		"BASH_ENV="+e.prologue,
		"__RB_IN="+f.in, "__RB_OUT="+f.saveTo(), "__RB_CWDF="+f.cwdTo(), "__RB_DIR="+dir,
		"__RB_GATE="+gate, "__RB_UNSET="+f.unsetList(env))
	return xc
}

// adopt makes the state a command left the session's state. It is called
// only for commands that ended by themselves.
func (e *Env) adopt(f sessionFiles, overrideDir bool) string {
	// The files are in the state directory, which the command writes:
	// each is read only as the regular file it should be, and bounded.
	cwd, err := regular.ReadFile(f.cwd, maxCwdFile)
	os.Remove(f.cwd)
	state, serr := regular.ReadFile(f.out, maxStateFile)
	if err != nil || serr != nil {
		removeState(f.out)
		return ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return string(cwd)
	}
	names := map[string]bool{}
	if b, err := regular.ReadFile(f.out+".names", maxStateFile); err == nil {
		for _, n := range strings.Fields(string(b)) {
			names[n] = true
		}
	}
	old := e.state
	e.state, e.stateNames, e.stateDefines = f.out, names, defines(state)
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
	b, _ := regular.ReadFile(f.cwd, maxCwdFile)
	os.Remove(f.cwd)
	removeState(f.out)
	return strings.TrimSpace(string(b))
}

func removeState(path string) {
	os.Remove(path)
	os.Remove(path + ".names")
}

// Bounds of the session files runbox reads back: a directory's path (the
// kernel's own bound is 4 KiB; $PWD can grow past it only by deep cds),
// and a state (every exported variable, function and alias).
const (
	maxCwdFile   = 1 << 20
	maxStateFile = 64 << 20
)

// defines reports whether the state b may define a function or
// an alias, or exports a variable that bash changes by itself: then a
// command's name may not be what its text says, or the state changes with
// no command changing it, and every command saves it. It errs towards
// true: any line that is not a declaration counts, a line of a multi-line
// value too, but for the saving function itself.
func defines(b []byte) bool {
	inSave := false
	for line := range strings.SplitSeq(strings.TrimSuffix(string(b), "\n"), "\n") {
		switch {
		case line == "__rb_save () ":
			inSave = true
			continue
		case inSave:
			inSave = line != "}"
			continue
		}
		// bash writes "declare -x NAME=...", sh "export NAME=...".
		decl, ok := strings.CutPrefix(line, "declare -")
		if ok {
			_, decl, _ = strings.Cut(decl, " ")
		} else if decl, ok = strings.CutPrefix(line, "export "); !ok {
			return true
		}
		name, _, _ := strings.Cut(decl, "=")
		if selfChanging(name) {
			return true
		}
	}
	return false
}

// selfChanging reports whether bash changes the variable name without an
// assignment (a clock, a counter) when exported. "_", exported in every
// state, is the last argument of the command before, which restoring it
// cannot bring back anyway: the prologue's own commands set it again.
func selfChanging(name string) bool {
	switch name {
	case "SECONDS", "RANDOM", "SRANDOM", "LINENO", "EPOCHSECONDS", "EPOCHREALTIME", "HISTCMD", "BASHPID":
		return true
	}
	return strings.HasPrefix(name, "BASH_")
}
