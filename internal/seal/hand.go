package seal

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// maxHanded bounds what a child reads from the descriptor it was handed.
const maxHanded = 4 << 20

// Hand prepares cmd, a runbox process about to be started, to receive the
// launch environment without secrets in its own environ: cmd.Env becomes
// the non-secret variables plus extra (KEY=VALUE entries), and the secret
// ones travel in a memfd appended to cmd.ExtraFiles, which the child's
// [Process] reads and closes. The returned function closes this side's
// copy of the descriptor; call it once cmd has started (or failed to).
func (l *Launch) Hand(cmd *exec.Cmd, extra ...string) (func(), error) {
	secret := map[string]bool{}
	var data bytes.Buffer
	for _, s := range l.secrets {
		if !secret[s.name] {
			secret[s.name] = true
			fmt.Fprintf(&data, "%s=%s\x00", s.name, s.value)
		}
	}
	var env []string
	for _, kv := range l.env {
		k, _, _ := strings.Cut(kv, "=")
		if !secret[k] && k != HandVar {
			env = append(env, kv)
		}
	}
	env = append(env, extra...)
	if data.Len() == 0 {
		cmd.Env = env
		return func() {}, nil
	}
	f, err := sealedFile(data.Bytes())
	if err != nil {
		return nil, fmt.Errorf("seal: hand secrets to %s: %w", cmd.Path, err)
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	cmd.Env = append(env, HandVar+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
	return func() { f.Close() }, nil
}

// receive takes what a runbox parent handed over with Hand, and drops
// HandVar from both the launch environment and the process's own.
func (l *Launch) receive() {
	fdText, ok := os.LookupEnv(HandVar)
	if !ok {
		return
	}
	os.Unsetenv(HandVar)
	kept := l.env[:0]
	for _, kv := range l.env {
		if !strings.HasPrefix(kv, HandVar+"=") {
			kept = append(kept, kv)
		}
	}
	l.env = kept
	fd, err := strconv.Atoi(fdText)
	if err != nil || fd < 3 {
		l.warnings = append(l.warnings, "seal: ignoring a malformed "+HandVar)
		return
	}
	f := os.NewFile(uintptr(fd), "runbox-sealed")
	defer f.Close()
	// Only a regular file (the memfd Hand made) is read: a descriptor
	// that is a pipe or a terminal could block this process forever.
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		l.warnings = append(l.warnings, "seal: "+HandVar+" does not name a sealed file")
		return
	}
	b, err := io.ReadAll(io.LimitReader(f, maxHanded))
	if err != nil {
		l.warnings = append(l.warnings, "seal: reading the handed environment: "+err.Error())
		return
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if k, _, ok := strings.Cut(kv, "="); ok && k != "" {
			l.env = append(l.env, kv)
		}
	}
}
