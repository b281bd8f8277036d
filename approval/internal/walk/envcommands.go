package walk

import "strings"

// envCommands are environment variables whose value is a command that
// programs run: git's pager, editor and ssh command, the askpass helpers,
// the pager and editor every tool uses, less's input filter. An
// assignment of one is judged by the command it names, wherever it is
// made (GIT_SSH_COMMAND='…' git fetch, export PAGER=…, env EDITOR=… git
// commit): `GIT_PAGER=less git log` runs, `GIT_PAGER='rm -rf ~' git log`
// is `rm -rf ~`, and a value only known at run time (EDITOR="$VISUAL")
// asks, as a command word held in a variable does.
var envCommands = setOf(`GIT_SSH_COMMAND GIT_SSH GIT_PAGER GIT_EDITOR GIT_SEQUENCE_EDITOR GIT_EXTERNAL_DIFF
	GIT_ASKPASS GIT_PROXY_COMMAND SSH_ASKPASS SUDO_ASKPASS PAGER MANPAGER SYSTEMD_PAGER EDITOR VISUAL
	LESSOPEN LESSCLOSE BROWSER`)

// envCode returns the shell code the assignments in env make programs
// run, including git configuration given through the environment
// (GIT_CONFIG_KEY_n, GIT_CONFIG_PARAMETERS).
func envCode(env []string) []string {
	var out []string
	for _, e := range env {
		name, v, ok := strings.Cut(e, "=")
		if !ok || !envCommands[name] || strings.TrimSpace(v) == "" {
			continue
		}
		if name == "LESSOPEN" || name == "LESSCLOSE" {
			// "|cmd %s", "||cmd %s", "|-cmd %s": a filter less runs.
			v = strings.ReplaceAll(strings.TrimLeft(v, "|-"), "%s", "file")
		}
		out = append(out, v)
	}
	for _, kv := range gitEnvConfig(env) {
		if code, ok := gitConfigCommand(kv[0], kv[1]); ok {
			out = append(out, code)
		}
	}
	return out
}
