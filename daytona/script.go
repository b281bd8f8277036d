package daytona

import (
	"fmt"
	"sort"
	"strings"
)

// scriptDir is where a command's wrapper script and stdin fifo live in the
// sandbox while it runs.
const scriptDir = "/tmp/.runbox"

// markerVar marks every process of one command, for the tree kill: the
// wrapper is started with it, and everything it starts inherits it.
const markerVar = "RUNBOX_CMD_ID"

// quote single-quotes s for sh.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// wrapper is what one command runs as: a script uploaded to the sandbox
// (so the environment's values never appear in a command line), which
// removes itself, exports the child environment, enters the directory
// (126 when it cannot) and runs the command — with stdin from /dev/null,
// or from a fifo fed by a relay that decodes base64 lines sent through the
// toolbox's input route until a line holding only ".".
type wrapper struct {
	marker string
	env    map[string]string
	dir    string
	shell  string   // a shell string, or
	args   []string // an argv
	merge  bool     // stderr into stdout, in the sandbox, so order is kept
	relay  bool     // stdin through the input route
}

func (w wrapper) path() string { return scriptDir + "/" + w.marker + ".sh" }

// command is the session command that starts the wrapper.
func (w wrapper) command() string {
	return fmt.Sprintf("%s=%s sh %s", markerVar, w.marker, w.path())
}

func (w wrapper) script() string {
	var b strings.Builder
	b.WriteString("rm -f \"$0\"\n")
	keys := make([]string, 0, len(w.env))
	for k := range w.env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "export %s=%s\n", k, quote(w.env[k]))
	}
	if w.merge {
		b.WriteString("exec 2>&1\n")
	}
	if w.dir != "" {
		fmt.Fprintf(&b, "cd -- %s || exit 126\n", quote(w.dir))
	}
	if w.shell != "" {
		b.WriteString("if command -v bash >/dev/null 2>&1; then runbox_sh=bash; else runbox_sh=sh; fi\n")
		fmt.Fprintf(&b, "set -- \"$runbox_sh\" -c %s\n", quote(w.shell))
	} else {
		words := make([]string, len(w.args))
		for i, a := range w.args {
			words[i] = quote(a)
		}
		fmt.Fprintf(&b, "set -- %s\n", strings.Join(words, " "))
	}
	if !w.relay {
		b.WriteString("\"$@\" </dev/null\nexit $?\n")
		return b.String()
	}
	fmt.Fprintf(&b, "runbox_in=%s\n", quote(scriptDir+"/"+w.marker+".in"))
	b.WriteString(`mkfifo "$runbox_in" || exit 125
exec 3<&0
( while IFS= read -r runbox_l; do [ "$runbox_l" = . ] && break; printf '%s' "$runbox_l" | base64 -d; done >"$runbox_in" ) <&3 3<&- &
runbox_relay=$!
"$@" 3<&- <"$runbox_in"
runbox_rc=$?
kill "$runbox_relay" 2>/dev/null
rm -f "$runbox_in"
exit $runbox_rc
`)
	return b.String()
}

// killScript kills every process carrying marker: SIGTERM to all of them
// at once, a short grace, then SIGKILL to what is left, until none is
// (zombies, whose environment can no longer be read, drop out). It prints
// the pids that outlived it. The processes are found by one grep over
// every environment where grep reads NUL-separated records (-z: GNU's,
// busybox's), else by one per process: the sandbox may hold hundreds of
// processes, and two programs started for each one once took a busy
// machine's kill past its 30 seconds.
func killScript(marker string) string {
	return fmt.Sprintf(`m=%s
if printf 'a\0' 2>/dev/null | grep -qzxF a 2>/dev/null; then
runbox_list() { grep -lzxF -- "$m" /proc/[0-9]*/environ 2>/dev/null | sed -n 's|^/proc/\([0-9]*\)/environ$|\1|p'; }
else
runbox_list() { for d in /proc/[0-9]*; do if tr '\0' '\n' 2>/dev/null <"$d/environ" | grep -qxF "$m"; then echo "${d#/proc/}"; fi; done; }
fi
p=$(runbox_list)
[ -z "$p" ] && exit 0
kill -TERM $p 2>/dev/null
sleep 0.2
i=0
while [ $i -lt 30 ]; do
  p=$(runbox_list)
  [ -z "$p" ] && exit 0
  kill -KILL $p 2>/dev/null
  sleep 0.1
  i=$((i+1))
done
echo $(runbox_list)
`, quote(markerVar+"="+marker))
}
