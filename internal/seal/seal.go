package seal

import (
	"os"
	"slices"
	"strings"

	"github.com/runbox/runbox/internal/inherit"
	"github.com/runbox/runbox/spawn"
)

// HandVar names the variable through which [Launch.Hand] tells a runbox
// child which descriptor holds its secrets.
const HandVar = "RUNBOX_SEALED_FD"

// Launch is what a sealed process was started with: its whole
// environment (secret values included) and its arguments, held in memory
// that only this process can read. It is safe for concurrent use: nothing
// changes it after [Process] returns.
type Launch struct {
	env      []string          // KEY=VALUE, as the process was started (plus handed secrets)
	vals     map[string]string // env by name (the last entry wins, as in os.Getenv)
	args     []string
	secrets  []secret // sorted by descending value length, for Redact
	warnings []string
}

type secret struct{ name, value string }

// Process seals the calling process (see the package documentation) and
// returns its launch environment. pol decides which names are secrets;
// spawn.DefaultPolicy() is what runbox uses, since configuration is read
// only later, from the Launch. Call it once, first thing in main: a
// second call sees an environment the first one already emptied of
// secrets.
func Process(pol spawn.Policy) *Launch {
	l := &Launch{vals: map[string]string{}}
	for _, kv := range os.Environ() {
		l.env = append(l.env, strings.Clone(kv))
	}
	for _, a := range os.Args {
		l.args = append(l.args, strings.Clone(a))
	}
	// os.Args shares its bytes with the memory that step 3 overwrites.
	os.Args = slices.Clone(l.args)
	l.receive()
	var names []string
	for _, kv := range l.env {
		k, v, _ := strings.Cut(kv, "=")
		l.vals[k] = v
		if v != "" && pol.Secret(k) {
			names = append(names, k)
			l.secrets = append(l.secrets, secret{k, v})
		}
	}
	slices.SortFunc(l.secrets, func(a, b secret) int { return len(b.value) - len(a.value) })
	for _, k := range names {
		os.Unsetenv(k)
	}
	if err := erase(names, l.argvSecrets()); err != nil {
		l.warnings = append(l.warnings, "seal: cannot erase secrets from /proc/self: "+err.Error())
	}
	if err := nonDumpable(); err != nil {
		l.warnings = append(l.warnings, "seal: cannot make the process non-dumpable: "+err.Error())
	}
	if err := inherit.CloseOnExec(); err != nil {
		l.warnings = append(l.warnings, "seal: cannot keep inherited descriptors from commands: "+err.Error())
	}
	return l
}

// argvSecrets are the values worth looking for in the arguments: long
// enough that a match is not an ordinary word.
func (l *Launch) argvSecrets() []string {
	var vs []string
	for _, s := range l.secrets {
		if len(s.value) >= spawn.MinSecretLen {
			vs = append(vs, s.value)
		}
	}
	return vs
}

// Environ returns a copy of the launch environment, secrets included: the
// base that spawn scrubs for each child.
func (l *Launch) Environ() []string { return slices.Clone(l.env) }

// Getenv is os.Getenv over the launch environment.
func (l *Launch) Getenv(key string) string { return l.vals[key] }

// LookupEnv is os.LookupEnv over the launch environment.
func (l *Launch) LookupEnv(key string) (string, bool) {
	v, ok := l.vals[key]
	return v, ok
}

// Args returns a copy of the arguments the process was started with, as
// given (before any secret in them was blanked from /proc/PID/cmdline).
func (l *Launch) Args() []string { return slices.Clone(l.args) }

// SecretNames lists the secret variables the process was started with.
func (l *Launch) SecretNames() []string {
	var ns []string
	for _, s := range l.secrets {
		ns = append(ns, s.name)
	}
	slices.Sort(ns)
	return slices.Compact(ns)
}

// Redact replaces every secret value that occurs in s (one at least
// [spawn.MinSecretLen] bytes long) with "[NAME]", and reports the names it
// replaced. Job records and displays of a command's text go through it.
func (l *Launch) Redact(s string) (string, []string) {
	var hit []string
	for _, sec := range l.secrets {
		if len(sec.value) < spawn.MinSecretLen || !strings.Contains(s, sec.value) {
			continue
		}
		s = strings.ReplaceAll(s, sec.value, "["+sec.name+"]")
		hit = append(hit, sec.name)
	}
	return s, hit
}

// Warnings says which steps of sealing could not be done, for doctor and
// verbose logs. It names no value.
func (l *Launch) Warnings() []string { return slices.Clone(l.warnings) }

// Secret reports the name of a secret variable whose value is exactly v,
// if there is one: a caller passing a withheld value back in by another
// name (an --env flag) is told so.
func (l *Launch) Secret(v string) (string, bool) {
	for _, s := range l.secrets {
		if s.value == v {
			return s.name, true
		}
	}
	return "", false
}
