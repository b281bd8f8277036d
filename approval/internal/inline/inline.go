package inline

import (
	"strings"
	"unicode/utf8"
)

// Lang is the language of a piece of inline code.
type Lang int

const (
	Python     Lang = iota + 1
	JavaScript      // node, deno, bun
)

// MaxSource is the largest source judged; anything longer is not quiet.
// Inline code an agent writes on a command line is far smaller, and the
// bound keeps every check cheap.
const MaxSource = 64 << 10

const unreadable = "cannot read it"

// Quiet reports whether src, a whole program in lang, plainly only computes and
// reads local files: it starts no process, writes, renames or deletes no file,
// opens no network connection, runs no code built at run time, and names no
// destructive operation. When it is not, why says what was seen, short and
// lower-case (for example "calls os.system", "opens a file for writing",
// "imports socket", "builds code at run time (eval)", "names a destructive
// operation (delete)").
func Quiet(lang Lang, src string) (ok bool, why string) {
	if lang != Python && lang != JavaScript {
		return false, "unknown language"
	}
	if len(src) > MaxSource || !utf8.ValidString(src) || strings.IndexByte(src, 0) >= 0 {
		return false, unreadable
	}
	toks, err := tokenize(lang, src)
	if err != nil {
		return false, unreadable
	}
	j, ok := newJudge(lang, toks)
	if !ok {
		return false, unreadable
	}
	if why := j.verdict(); why != "" {
		return false, why
	}
	return true, ""
}
