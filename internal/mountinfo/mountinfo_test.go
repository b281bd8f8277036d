package mountinfo_test

import (
	"fmt"
	"testing"

	"github.com/runbox/runbox/internal/mountinfo"
)

// TestUnescape reads mount points as the kernel escapes them: space,
// tab, newline and backslash as three octal digits.
func TestUnescape(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`/home/u/project/.git`, "/home/u/project/.git"},
		{`/home/u/my\040project/.git`, "/home/u/my project/.git"},
		{`/a\011b\012c\134d`, "/a\tb\nc\\d"},
		{`/trailing\04`, `/trailing\04`},
		{`/not\09x`, `/not\09x`},
	} {
		if got := mountinfo.Unescape(tt.in); got != tt.want {
			t.Errorf("Unescape(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func ExampleUnescape() {
	fmt.Println(mountinfo.Unescape(`/home/u/my\040project`))
	// Output: /home/u/my project
}
