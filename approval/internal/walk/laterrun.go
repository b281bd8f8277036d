package walk

import (
	"encoding/json"

	"github.com/runbox/runbox/approval/internal/inline"
	"path"
	"regexp"
	"strings"
)

// factAutorunCode names a Python file that tools import on their own
// (pytest's conftest.py, setup.py) written with code that starts a
// process, reaches the network or builds code (args: the file).
const factAutorunCode = "@autorun-code"

// factAgentInstruction names an AI agent's instruction file the line
// writes with a command that fetches code into a shell (args: the file).
const factAgentInstruction = "@agent-instruction-code"

// agentInstructions reports whether target is a file AI coding agents
// read as their instructions (AGENTS.md, CLAUDE.md, .cursorrules …).
func agentInstructions(target string) bool {
	switch path.Base(target) {
	case "AGENTS.md", "CLAUDE.md", "GEMINI.md", ".cursorrules", ".windsurfrules", "copilot-instructions.md", "CONVENTIONS.md":
		return true
	}
	return strings.Contains(target, ".cursor/rules/")
}

// pipeToShell matches text that fetches something into a shell: curl or
// wget piped into sh, bash <(curl …).
var pipeToShell = regexp.MustCompile(`(curl|wget|iwr|irm)\b[^|\n]*\|\s*(sudo\s+)?(ba|z|da)?sh\b|(ba|z)?sh\s+<\(\s*(curl|wget)`)

// fetchesIntoShell reports whether prose holds a command that runs
// fetched code: an instruction an agent reading the file would follow.
func fetchesIntoShell(text string) bool { return pipeToShell.MatchString(text) }

// autorunPython reports whether target is a Python file that a tool runs
// without being asked to run it: pytest imports every conftest.py, pip
// and setuptools run setup.py.
func autorunPython(target string) bool {
	b := path.Base(target)
	return b == "conftest.py" || b == "setup.py" || b == "sitecustomize.py" || b == "usercustomize.py"
}

// startsOrSends reports whether Python code, as package inline reads it,
// starts a process, reaches the network or builds code at run time: what
// a planted conftest.py or setup.py would do on the next test run or
// install. Code that writes files or imports shutil, as fixtures do, is
// not that.
func startsOrSends(code string) bool {
	ok, why := inline.Quiet(inline.Python, code)
	if ok {
		return false
	}
	for _, p := range []string{"calls ", "uses the network", "builds code", "reaches around", "cannot read it",
		"imports subprocess", "imports socket", "imports requests", "imports urllib", "imports http", "imports pty",
		"imports ctypes", "imports importlib", "imports runpy", "imports paramiko", "imports httpx", "imports aiohttp"} {
		if strings.HasPrefix(why, p) {
			return true
		}
	}
	return false
}

// laterRunCode returns the shell code in text, written to target, that a
// tool runs later without anyone reading it: a direnv .envrc whole, a
// Makefile's or justfile's recipes, a Dockerfile's RUN lines, a CI
// workflow's run and script steps, a package.json's scripts, an editor's
// tasks (.vscode/tasks.json). ok is false for any other file. An agent
// edits these files as part of its work; what it writes into them is
// judged as the code it is, as if typed, so that curl … | sh planted in a
// test script asks as it would typed.
func laterRunCode(target, text string) (code string, ok bool) {
	extract := laterRunExtract(target)
	if extract == nil {
		return "", false
	}
	// A fragment (appended, or a sed replacement) may hold none of the
	// file's own structure: then it is judged as it is.
	if code = extract(text); strings.TrimSpace(code) == "" {
		code = text
	}
	return code, true
}

// laterRunExtract returns how the code of target, a file a tool runs
// later, is found in its text; nil for any other file.
func laterRunExtract(target string) func(string) string {
	base := path.Base(target)
	switch {
	case base == ".envrc":
		return func(text string) string { return text }
	case base == "Makefile" || base == "makefile" || base == "GNUmakefile" || base == "justfile" || base == "Justfile":
		return makeRecipes
	case base == "Dockerfile" || strings.HasSuffix(base, ".Dockerfile") || strings.HasPrefix(base, "Dockerfile."):
		return dockerRuns
	case (strings.Contains(target, ".github/workflows/") || base == ".gitlab-ci.yml" || strings.Contains(target, ".circleci/")) &&
		(strings.HasSuffix(base, ".yml") || strings.HasSuffix(base, ".yaml")):
		return ciSteps
	case base == "package.json":
		return func(text string) string { return jsonCommands(text, "scripts") }
	case base == "tasks.json" && strings.Contains(target, ".vscode"):
		return func(text string) string { return jsonCommands(text, "command") }
	}
	return nil
}

// dockerRuns is the shell of a Dockerfile's RUN instructions, one a line.
func dockerRuns(text string) string {
	var b strings.Builder
	for l := range strings.Lines(text) {
		f := strings.TrimSpace(l)
		if len(f) > 4 && strings.EqualFold(f[:4], "RUN ") {
			b.WriteString(strings.TrimSpace(f[4:]))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// ciStep matches a CI step's command: run: CMD, script: CMD, - CMD under
// a script list.
var ciStep = regexp.MustCompile(`^\s*(?:-\s*)?(?:run|script|command)\s*:\s*(.*)$`)

// ciSteps is the shell of a CI file's steps: each run or script value,
// and the lines of a block (run: |) below it.
func ciSteps(text string) string {
	var b strings.Builder
	block, indent := false, 0
	for l := range strings.Lines(text) {
		l = strings.TrimRight(l, "\r\n")
		ind := len(l) - len(strings.TrimLeft(l, " "))
		if block {
			if strings.TrimSpace(l) == "" || ind > indent {
				b.WriteString(strings.TrimSpace(l))
				b.WriteByte('\n')
				continue
			}
			block = false
		}
		m := ciStep.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		v := strings.TrimSpace(m[1])
		if v == "|" || v == ">" || v == "|-" || v == ">-" {
			block, indent = true, ind
			continue
		}
		b.WriteString(strings.Trim(v, `'"`))
		b.WriteByte('\n')
	}
	return b.String()
}

// jsonCommands is the shell of a JSON file's commands: the values of
// the object named key (package.json's scripts) or of every member named
// key (tasks.json's command). Text that is not whole JSON (a fragment
// appended or a replacement) is judged as it is.
func jsonCommands(text, key string) string {
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		// A fragment: the string values of its members.
		var b strings.Builder
		for _, m := range jsonMember.FindAllStringSubmatch(text, -1) {
			var val string
			if json.Unmarshal([]byte(`"`+m[1]+`"`), &val) == nil {
				b.WriteString(val + "\n")
			}
		}
		return b.String()
	}
	var b strings.Builder
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			for k, val := range x {
				switch inner := val.(type) {
				case string:
					if k == key {
						b.WriteString(inner + "\n")
					}
				case map[string]any:
					if k == key {
						for _, s := range inner {
							if s, ok := s.(string); ok {
								b.WriteString(s + "\n")
							}
						}
						continue
					}
					walk(inner)
				default:
					walk(inner)
				}
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return b.String()
}

// jsonMember matches a member of a JSON fragment whose value is a
// string: "name": "value".
var jsonMember = regexp.MustCompile(`"(?:[^"\\]|\\.)*"\s*:\s*"((?:[^"\\]|\\.)*)"`)

// sedReplacements returns the text a sed script inserts: the replacement
// of each s command, and the text of a, i and c commands, so that an edit
// of a file run later is judged by what it puts there.
func sedReplacements(script string) []string {
	var out []string
	for rest := script; rest != ""; {
		rest = strings.TrimLeft(rest, " \t\n;")
		// An address before the command (1, $, /re/, 3,5) is skipped.
		rest = strings.TrimLeft(rest, "0123456789,$!")
		if rest == "" {
			break
		}
		switch c := rest[0]; {
		case c == 's' && len(rest) > 1:
			d := rest[1]
			parts, n := delimited(rest[2:], d, 2)
			if len(parts) == 2 {
				// \d is the delimiter itself in the replacement (s|a|b \| sh|).
				out = append(out, strings.ReplaceAll(parts[1], "\\"+string(d), string(d)))
			}
			rest = rest[min(len(rest), 2+n):]
			if k := strings.IndexAny(rest, ";\n"); k >= 0 {
				rest = rest[k+1:] // the flags
			} else {
				rest = ""
			}
		case c == 'a' || c == 'i' || c == 'c':
			line, after, _ := strings.Cut(rest[1:], "\n")
			out = append(out, strings.TrimLeft(line, "\\ "))
			rest = after
		default:
			_, after, _ := strings.Cut(rest, ";")
			if after == rest {
				return out
			}
			rest = after
		}
	}
	return out
}

// delimited reads n parts of s each ended by an unescaped d, and returns
// them with the bytes read.
func delimited(s string, d byte, n int) ([]string, int) {
	var parts []string
	start := 0
	for i := 0; i < len(s) && len(parts) < n; i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if s[i] == d {
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return parts, start
}
