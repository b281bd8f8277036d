package jobtest

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// HostProcesses lists the command lines of this machine's processes, one
// per line: those of local jobs, and of every container and fake sandbox
// a test starts here, which share this machine's kernel. A process that
// has exited but was not reaped yet has no command line, so it is not
// listed.
func HostProcesses(t *testing.T) string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("jobtest: list processes: %v", err)
	}
	var b strings.Builder
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		args, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(args) == 0 {
			continue // gone meanwhile, or a zombie
		}
		b.Write(bytes.ReplaceAll(bytes.TrimRight(args, "\x00"), []byte{0}, []byte{' '}))
		b.WriteByte('\n')
	}
	return b.String()
}

// marker is a word no other process's command line holds: a job whose
// shell command ends in `: MARKER` keeps it in its shell's command line
// for as long as that shell runs (the shell cannot exec the last command
// of its list, a builtin), so the job is found from outside runbox.
func marker() string { return "jobtest-" + strings.ToLower(rand.Text()[:12]) }

// running reports whether a process holding mark runs where the
// session's jobs run.
func (x *session) running(t *testing.T, mark string) bool {
	t.Helper()
	return strings.Contains(x.procs(t), mark)
}
