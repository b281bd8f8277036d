package local

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// maxArgScript is the longest shell command passed as an argument. Linux
// refuses any single argument over 128 KiB (MAX_ARG_STRLEN) with "argument
// list too long"; a longer command, one of whatever length the gate let
// through, goes in a file.
const maxArgScript = 64 << 10

// scriptFile writes a shell command to a private file beside the
// command's session state, for the shell to source instead of receiving it
// in argv: argv is visible to every user through ps and /proc, and is
// bounded. The file is removed when the command finishes.
func scriptFile(f sessionFiles, text string) (string, error) {
	path := f.script()
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", fmt.Errorf("local: command file: %w", err)
	}
	_, err = fh.WriteString(text + "\n")
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", fmt.Errorf("local: command file: %w", err)
	}
	return path, nil
}

// script is where scriptFile puts this command's text.
func (f sessionFiles) script() string { return strings.TrimSuffix(f.out, ".state") + ".sh" }

// shellQuote quotes s for sh and bash alike.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
