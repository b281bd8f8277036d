package shell_test

import (
	"strings"
	"testing"
	"time"

	"github.com/runbox/runbox/approval/internal/rules"
	"github.com/runbox/runbox/approval/internal/shell"
)

// TestNormalize_Cases: each row is a way to hide a command from a text
// match; Normalize must undo it (or, for $IFSX, leave a different variable
// alone).
func TestNormalize_Cases(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ls -la", "ls -la"},
		{"ｒｍ -ｒｆ /", "rm -rf /"},
		{"\x1b[31mrm\x1b[0m -rf /", "rm -rf /"},
		{"\x1b]0;title\x07rm -rf /", "rm -rf /"},
		{"\x1b]0;title\x1b\\rm", "rm"},
		{"\u009b31mrm", "rm"},
		{"\u009d0;t\u009crm", "rm"},
		{"r\x00m", "rm"},
		{"a\r\nb", "a\nb"},
		{"echo hi\rrm", "echo hirm"},
		{"rm -rf \\\n/", "rm -rf /"},
		{"r\\\nm", "rm"},
		{"a\\\\\nb", "a\\\\\nb"}, // escaped backslash: a real newline follows
		{"rm${IFS}-rf${IFS}/", "rm -rf /"},
		{"rm$IFS-rf$IFS/", "rm -rf /"},
		{"echo ${IFS:0:1}x", "echo  x"},
		{"echo $IFSACONFIG", "echo $IFSACONFIG"},
		{"\xffrm", "rm"},
		{"ﬁle", "file"},
	}
	for _, tt := range tests {
		if got := shell.Normalize(tt.in); got != tt.want {
			t.Errorf("Normalize(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzNormalize: no panic, idempotent enough to be stable (a second pass
// changes nothing the gate would see differently), and linear time.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"rm -rf /", "ｒｍ", "\x1b[31m", "\x1b]0;x", "a\\\nb", "${IFS}", "\u009b1m", "\x00"} {
		f.Add(s)
	}
	for _, r := range rules.All() {
		for _, s := range r.Match {
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		start := time.Now()
		out := shell.Normalize(s)
		if d := time.Since(start); d > 100*time.Millisecond && len(s) < 1<<16 {
			t.Fatalf("Normalize took %v on %d bytes", d, len(s))
		}
		if strings.ContainsRune(out, 0) || strings.ContainsRune(out, 0x1b) {
			t.Fatalf("Normalize(%q) = %q keeps a NUL or ESC", s, out)
		}
	})
}

func BenchmarkNormalize(b *testing.B) {
	for b.Loop() {
		shell.Normalize("git add -A && git commit -m 'fix: handle empty input' && go test ./...")
	}
}
