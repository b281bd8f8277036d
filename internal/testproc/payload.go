package testproc

import (
	"fmt"
	"strings"
)

// alphabet is cut into each payload line at a shifting offset.
const alphabet = "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz"

// Payload is what PayloadCommand(i) prints: i on every line and 4 KiB in
// all, so a lost, cut or swapped byte, or another command's output, shows
// in a stress test that checks every byte.
func Payload(i int) string {
	var b strings.Builder
	for j := range 64 {
		off := (i + j) % 26
		fmt.Fprintf(&b, "cmd %04d line %02d %s\n", i, j, alphabet[off:off+48])
	}
	return b.String()
}

// PayloadCommand prints Payload(i) with bash builtins only, so that the
// command costs little and many are in flight at once.
func PayloadCommand(i int) string {
	return fmt.Sprintf(`s=%s; for j in {0..63}; do printf 'cmd %%04d line %%02d %%s\n' %d "$j" "${s:(%d+j)%%26:48}"; done`, alphabet, i, i)
}
