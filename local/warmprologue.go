package local

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// newWarmPrologue makes the file a warm shell sources at its start (its
// BASH_ENV, warmPrologue): a sealed memfd that no process can change,
// which each shell gets as a descriptor and reopens through /dev/fd.
// Not a file in the state directory, which commands write: a shell
// started from a confined thread runs its start-up before that thread has
// ended (see confine.Prepared.Start), and while it lives the thread shares
// the shell's sandbox, so that code must be runbox's own. Where no memfd
// can be made, the prologue is a file in stateDir (returned as path) and
// source is nil.
func newWarmPrologue(stateDir string, log *slog.Logger) (path string, source *os.File, err error) {
	fd, err := unix.MemfdCreate("runbox-warm-prologue", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err == nil {
		source = os.NewFile(uintptr(fd), "runbox-warm-prologue")
		_, err = source.WriteString(warmPrologue)
		if err == nil {
			_, err = unix.FcntlInt(source.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL)
		}
		if err == nil {
			return "", source, nil
		}
		source.Close()
	}
	log.Debug("local: no sealed warm prologue; using a file", "err", err)
	path = filepath.Join(stateDir, "warm.bash")
	if err := os.WriteFile(path, []byte(warmPrologue), 0o600); err != nil {
		return "", nil, fmt.Errorf("local: session prologue: %w", err)
	}
	return path, nil, nil
}
