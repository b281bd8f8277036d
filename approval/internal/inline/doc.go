// Package inline judges inline interpreter code — the program in
// python3 -c '…', python3 - <<'EOF', node -e '…' — and says whether it
// is plainly local and read-only, so that the command gate may let it run
// without asking. Its one question is [Quiet].
//
// # How it judges
//
// The judge is lexical. A tokenizer per language (lexpy.go,
// lexjs.go) reads the source exactly as far as the judge needs: comments
// are dropped, string literals become single tokens, and the code inside
// strings — the {…} fields of Python f-strings, the ${…} parts of JS
// templates — is read as code again, so nothing can hide in a string that
// runs. Whatever the tokenizer cannot follow exactly is refused as "cannot
// read it": an unterminated string or comment, unbalanced brackets,
// non-ASCII outside strings (Python folds ｅval to eval; JS spells names
// with \u escapes), a NUL byte, invalid UTF-8, more than [MaxSource]
// bytes, a JS slash that could be a regular expression or a division and
// would read differently either way.
//
// The tokens are then judged (judge.go) against tables of names
// (words.go): every identifier, lower-cased, and every part of it split at
// _ and at camelCase boundaries, is looked up in groups — processes,
// file changes, data writers, the network, code built at run time, ways
// around a lexical judge (getattr, __dict__, constructor) and destructive
// verbs. A name is enough: the judge does not track values, so it does
// not ask what os.system is bound to; import os as o; o.system('x') still
// names system. A few contexts excuse a name (platform.system,
// sys.stdout.write, re.compile, print(…, flush=True)).
//
// Some rules need more than a name:
//
//   - open (python.go, calls.go) is quiet only with no mode or a literal
//     mode of r, b and t; a variable mode, *args or **kw is refused.
//   - SQL calls (sql.go) are quiet only when given a literal, or a name
//     bound once to one, and no string in the program holds a word that
//     changes data (DROP, DELETE, UPDATE, INSERT, …).
//   - update, create and the like are destructive where an ORM is named
//     (objects, query, session).
//   - imports and requires name allowed modules only (pyModules,
//     jsModules); a JS require or import takes a plain string, and the
//     module it yields must be used through named members (fs.readFileSync),
//     never indexed (fs[name]) or passed along, so that every function it
//     reaches is named in the source (js.go).
//
// # What callers may rely on
//
// Quiet is conservative: when in doubt it says not quiet, and appending
// code that names a forbidden operation to any source never makes the
// whole quiet (FuzzQuiet checks this). It is deterministic, keeps no
// state between calls, and runs in time linear in the source for all
// practical inputs: a few microseconds for a kilobyte.
//
// It is not a sandbox. A lexical judge cannot see what a library does
// inside a call whose name is harmless, nor what a file it reads
// contains; the gate relies on it only to let plainly harmless analysis
// through, and everything else still asks.
package inline
