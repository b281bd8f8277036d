//go:build linux

package confine

import "testing"

// TestUnescapeMount reads mount points as the kernel escapes them in
// mountinfo: space, tab, newline and backslash as three octal digits.
func TestUnescapeMount(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`/home/u/project/.git`, "/home/u/project/.git"},
		{`/home/u/my\040project/.git`, "/home/u/my project/.git"},
		{`/a\011b\012c\134d`, "/a\tb\nc\\d"},
		{`/trailing\04`, `/trailing\04`},
		{`/not\09x`, `/not\09x`},
	} {
		if got := unescapeMount(tt.in); got != tt.want {
			t.Errorf("unescapeMount(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}
