package local

import (
	"bytes"
	"strings"

	"github.com/runbox/runbox/internal/regular"
)

// maxWarmState is the largest session state sent to a warm shell in its
// pipe (with maxWarmScript of command text, well under the 64 KiB a pipe
// holds). A larger one is sourced from its file, as a cold shell does.
const maxWarmState = 32 << 10

// The session state is the output of export -p, declare -f and alias -p.
// Most of its export -p lines re-declare a variable with the very value
// the shell already has from its environment, and sourcing them is most of
// what restoring costs (each is parsed and assigned again; LANG reloads
// the locale). A warm shell gets the state without those lines: the
// result is the same shell, because each line it skips would set an
// exported variable to the value it already holds, exported.

// unchangedLines returns, for a shell whose environment is env, the
// export -p lines that would change nothing: `declare -x NAME="VALUE"` for
// each variable whose value bash prints that way (printable ASCII; bash
// quotes anything else as $'...').
func unchangedLines(env []string) map[string]bool {
	lines := make(map[string]bool, len(env))
	for _, kv := range env {
		name, val, _ := strings.Cut(kv, "=")
		if !validName(name) || !printableASCII(val) || bashOwned(name) {
			continue
		}
		lines["declare -x "+name+"=\""+bashDoubleQuote(val)+"\""] = true
	}
	return lines
}

// bashOwned reports whether bash gives name a value of its own at start
// (SHLVL, PWD, PPID), ignores it in the environment (IFS, and PS4 for
// root) or computes it (RANDOM, SECONDS): the shell may hold something
// else than the environment's value, so a line setting it is kept.
func bashOwned(name string) bool {
	switch name {
	case "_", "SHLVL", "PWD", "OLDPWD", "IFS", "PS4", "PPID", "UID", "EUID", "SHELLOPTS", "POSIXLY_CORRECT",
		"RANDOM", "SRANDOM", "SECONDS", "LINENO", "HISTCMD", "EPOCHSECONDS", "EPOCHREALTIME",
		"GROUPS", "FUNCNAME", "DIRSTACK", "COMP_WORDBREAKS", "OPTIND", "OPTERR":
		return true
	}
	return strings.HasPrefix(name, "BASH")
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// bashDoubleQuote escapes s as bash's export -p does inside double quotes.
func bashDoubleQuote(s string) string {
	if !strings.ContainsAny(s, "\"\\$`") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"', '\\', '$', '`':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// warmState reads the state file at path and returns it without the lines
// in unchanged. Only the leading run of `declare -` lines (export -p's
// part) is filtered: a line inside a function or an alias is never
// dropped, and a multi-line value ends the run, since its continuation
// lines do not start with `declare -` and no continuation can equal a
// line in unchanged (its double quotes would be escaped). ok is false when
// the file cannot be read or is too big to send, and the shell should
// source the file itself.
func warmState(path string, unchanged map[string]bool) (state string, ok bool) {
	// Read as the regular file the session adopted, no link in its
	// place: a later command may have replaced it.
	b, err := regular.ReadFile(path, maxWarmState)
	if err != nil {
		return "", false
	}
	var out bytes.Buffer
	out.Grow(len(b))
	rest := b
	for len(rest) > 0 {
		line, after, found := bytes.Cut(rest, []byte{'\n'})
		if !bytes.HasPrefix(line, []byte("declare -")) {
			break
		}
		if !found || !unchanged[string(line)] {
			out.Write(line)
			out.WriteByte('\n')
		}
		rest = after
	}
	out.Write(rest)
	return out.String(), true
}
