package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// A session costs more than anything else in a one-shot command: sshd
// forks, runs the login shell, and that shell starts the command (about
// what all of `ssh HOST true` costs beyond the handshake). So the first
// connection's probe runs in a lead session that stays open: it answers
// `uname -sm` and the cache directory, then waits on its stdin for
// requests — the size of a file (is the agent there?), and finally the
// argv to exec, which turns that very session into the agent's. The
// common case — the agent is already on the host — costs one session,
// as `ssh HOST true` does.
//
// The requests are lines, answered by lines; a POSIX shell's `read`
// takes its input a byte at a time from a pipe, so nothing meant for the
// program exec'ed afterwards is consumed by the shell.
const leadLoop = `while IFS= read -r op; do
case $op in
size)
	IFS= read -r f || exit 1
	if [ -f "$f" ]; then wc -c <"$f" | tr -d ' '; else echo -1; fi ;;
exec)
	IFS= read -r n || exit 1
	set --
	while [ "$n" -gt 0 ]; do IFS= read -r a || exit 1; set -- "$@" "$a"; n=$((n-1)); done
	unset SSH_CLIENT SSH2_CLIENT SSH_CONNECTION SSH_TTY
	%s
	exec "$@" ;;
*) exit 2 ;;
esac
done`

// probeScript prints the host's `uname -sm` and the remote user's cache
// directory, one line each.
const probeScript = `uname -sm && printf '%s\n' "${XDG_CACHE_HOME:-$HOME/.cache}"`

// leadScript is the lead session's whole script: the probe, then the
// request loop; dir is the directory the exec'ed program starts in ("":
// the home directory).
func leadScript(dir string) string {
	cd := ":"
	if dir != "" {
		cd = "cd " + shellCommand(dir) + " || exit 126"
	}
	return probeScript + " || exit 1\n" + fmt.Sprintf(leadLoop, cd)
}

// errLeadGone is what a request to a lead session that has ended fails
// with; the caller then does the same in a session of its own.
var errLeadGone = errors.New("ssh: the lead session has ended")

// readLine reads one line from r a byte at a time, so that nothing after
// it is taken from the stream; at most 4 KiB.
func readLine(r io.Reader) (string, error) {
	var b strings.Builder
	var c [1]byte
	for b.Len() < 4096 {
		if _, err := io.ReadFull(r, c[:]); err != nil {
			return b.String(), err
		}
		if c[0] == '\n' {
			return b.String(), nil
		}
		b.WriteByte(c[0])
	}
	return b.String(), errors.New("ssh: line too long")
}

// startLead starts the lead session on cn and reads the probe's answer;
// ctx bounds the wait for it.
func startLead(ctx context.Context, cn *conn, dir string) (*stream, []string, error) {
	st, err := cn.attach(script(leadScript(dir)))
	if err != nil {
		return nil, nil, err
	}
	stop := context.AfterFunc(ctx, func() { st.Close() })
	defer stop()
	lines := make([]string, 2)
	for i := range lines {
		if lines[i], err = readLine(st); err != nil {
			st.Close()
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			return nil, nil, fmt.Errorf("%w (%s)", err, strings.TrimSpace(st.Stderr()))
		}
	}
	return st, lines, nil
}

// leadSize asks the lead session for the size of the file at p (-1: no
// such file). ctx's end closes the session.
func leadSize(ctx context.Context, st *stream, p string) (int64, error) {
	stop := context.AfterFunc(ctx, func() { st.Close() })
	defer stop()
	if _, err := io.WriteString(st, "size\n"+p+"\n"); err != nil {
		return 0, fmt.Errorf("%w: %v", errLeadGone, err)
	}
	line, err := readLine(st)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", errLeadGone, err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("ssh: the size of %s: unexpected answer %q", p, line)
	}
	return n, nil
}

// leadExec has the lead session exec argv; the session is then argv's.
func leadExec(st *stream, argv []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "exec\n%d\n", len(argv))
	for _, a := range argv {
		b.WriteString(a + "\n")
	}
	if _, err := io.WriteString(st, b.String()); err != nil {
		return fmt.Errorf("%w: %v", errLeadGone, err)
	}
	return nil
}

// lineSafe reports whether every string can travel as one request line.
func lineSafe(ss ...string) bool {
	for _, s := range ss {
		if strings.ContainsAny(s, "\n\x00") {
			return false
		}
	}
	return true
}
