package shellstate

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// unchanging are commands that cannot change the saved state.
var unchanging = []string{
	"true",
	"ls -la",
	"echo hi > out.txt",
	"echo hi >> out.txt; cat out.txt | grep h",
	"(cd /; export X=1; f() { :; })",
	"echo $(cd /tmp; export X=1; pwd)",
	"echo `cd /`",
	"FOO=1 env > /dev/null",
	"echo ${HOME:-x} ${HOME-y} ${HOME:+z} ${NOPE:?} 2>/dev/null; true",
	"if test -f x; then echo y; elif [ -d . ]; then echo d; else echo n; fi",
	"while false; do :; done",
	"case $HOME in /*) echo abs;; *) echo rel;; esac",
	"echo ${HOME#/} ${HOME%%o*} ${HOME/o/0} ${#HOME} ${HOME^^} ${!HO*} ${HOME@Q}",
	"cat <(echo a) <(echo b)",
	"/bin/echo hi",
	"time ls >/dev/null",
	"{ echo a; echo b; } > f",
	"echo a && false || true",
	"exit 3",
	"pwd; type ls; jobs; times >/dev/null; wait",
	"! grep -q nothing /dev/null",
	"cat <<EOF\n$HOME $(cd /)\nEOF",
	"ls & wait",
	"echo \"$HOME\" '$(cd /)' $'\\x41'",
	"[ 1 -eq 1 ] && echo yes",
	"git --version >/dev/null 2>&1; true",
}

// changing may change it (most do, and the oracle sees it). A pipeline's elements
// are read as if they ran in this shell, as they do under lastpipe.
var changing = []string{
	"cd /tmp", "export X=1", "X=1", "unset HOME", "alias ll=ls", "f() { :; }",
	"source /dev/null", ". /dev/null", "eval cd /", "for HOME in a; do :; done",
	"read HOME < /dev/null", "printf -v HOME x", "echo ${NOPE:=x}", "echo ${NOPE=1}",
	"export NOPE; echo ${NOPE=1}", "echo $((HOME=1))", "echo ${a[HOME=1]}", "echo ${HOME:HOME=1}",
	"[[ 1 -eq HOME ]]", "let HOME=1", "((HOME=1))", "exec 3>f", "echo hi {fd}>f",
	"declare -x Y=1", "local Z", "readonly HOME", "getopts a HOME", "mapfile HOME < /dev/null",
	"pushd /", "c\\d /", "'cd' /", "\"cd\" /", "$CMD", "${CMD}", "command cd /", "builtin cd /",
	"set -a", "shopt -s lastpipe", "cd / | cat", "trap 'cd /' EXIT", "enable -n echo", "coproc cat",
	"HOME=/ :", "X=1 echo hi", "hash -p /bin/ls ls", "kill -0 $$", "select x in a; do break; done",
	"for ((i=0;i<1;i++)); do :; done", "echo ${HOME[0]}", "c* /", "~/bin/x", "a[0]=1 ls",
	"if cd /; then :; fi", "true && cd /", "{ cd /; }", "case x in x) cd /;; esac", "while cd /; do break; done",
	"echo x > ${NOPE:=f}", "time cd /", "unalias -a", "ulimit -n 64", "umask 077",
}

func TestUnchanging(t *testing.T) {
	for _, c := range unchanging {
		if !Unchanging(c) {
			t.Errorf("Unchanging(%q) = false, want true", c)
		}
	}
	for _, c := range changing {
		if Unchanging(c) {
			t.Errorf("Unchanging(%q) = true, want false", c)
		}
	}
	for _, c := range []string{"echo 'unterminated", "if true; then", strings.Repeat("true;", maxText)} {
		if Unchanging(c) {
			t.Errorf("Unchanging(%.40q) = true, want false", c)
		}
	}
}

// harness runs $RB_CMD in bash and prints SAME when what a session saves
// (export -p, declare -f, alias -p, $PWD) is the same after it, from the
// EXIT trap as runbox's save runs, or the difference.
const harness = `__rb_s() { builtin export -p; builtin declare -f; builtin alias -p; builtin printf 'PWD=%s\n' "$PWD"; }
__rb_cmp() {
	__rb_after=$(__rb_s)
	if [ "$__rb_before" = "$__rb_after" ]; then echo SAME; else echo DIFF; printf '%s\n---\n%s\n' "$__rb_before" "$__rb_after"; fi
}
__rb_before=$(__rb_s)
trap '__rb_cmp >&9' EXIT
builtin eval "$RB_CMD" </dev/null >/dev/null 2>&1
`

// sameAfter runs command in bash, as an unprivileged user when this test
// runs as root, in a new directory, and reports whether the saved state
// stayed the same, with what it saw.
func sameAfter(t testing.TB, command, path string) (bool, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "shellstate-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "exec 9>&1; "+harness)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + path, "HOME=" + dir, "RB_CMD=" + command, "LC_ALL=C"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if os.Geteuid() == 0 {
		os.Chown(dir, 65534, 65534)
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.Output()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what it left running
	}
	s := string(out)
	if !strings.HasPrefix(s, "SAME") && !strings.HasPrefix(s, "DIFF") {
		// The command replaced the EXIT trap, or the shell died.
		return false, fmt.Sprintf("no comparison (%v): %q", err, s)
	}
	return strings.HasPrefix(s, "SAME"), s
}

// TestUnchanging_BashAgrees runs each command in bash: every command read
// as unchanging leaves the state as it was, and the oracle sees most of
// the changing ones change it (a control that it would see a change).
func TestUnchanging_BashAgrees(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	path := "/usr/local/bin:/usr/bin:/bin"
	for _, c := range unchanging {
		if same, diff := sameAfter(t, c, path); !same {
			t.Errorf("%q read as unchanging, but bash's state changed:\n%s", c, diff)
		}
	}
	seen := 0
	for _, c := range changing {
		if same, _ := sameAfter(t, c, path); !same {
			seen++
		}
	}
	if seen < len(changing)/2 {
		t.Errorf("the oracle saw only %d of %d changing commands change the state", seen, len(changing))
	}
}

// FuzzUnchanging holds Unchanging to bash: a text read as unchanging
// leaves the state as it was. No program is found by name (PATH is an
// empty directory), so only builtins and subshells run, as an
// unprivileged user when the fuzzer runs as root.
func FuzzUnchanging(f *testing.F) {
	for _, c := range append(unchanging, changing...) {
		f.Add(c)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		f.Skip("no bash")
	}
	empty := f.TempDir()
	os.Chmod(empty, 0o755)
	f.Fuzz(func(t *testing.T, text string) {
		if !Unchanging(text) || strings.ContainsAny(text, "/\x00") {
			return
		}
		if same, diff := sameAfter(t, text, empty); !same {
			t.Errorf("%q read as unchanging, but bash's state changed:\n%s", text, diff)
		}
	})
}
