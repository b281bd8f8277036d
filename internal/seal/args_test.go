package seal

import "testing"

// blankArgs touches only whole NAME=VALUE (or --env=NAME=VALUE)
// arguments, and only their value: a value that is also a word of the
// command text stays in the command text. Breaks if a --env value stays
// in the arguments, or if unrelated arguments are rewritten.
func TestBlankArgs(t *testing.T) {
	forms := []envArg{{"KEY=v1", 4}, {"--env=KEY=v1", 10}, {"TOKEN=abc=def", 6}}
	for _, tc := range []struct{ in, want string }{
		{"runbox\x00run\x00--env\x00KEY=v1\x00--\x00echo v1\x00", "runbox\x00run\x00--env\x00KEY=**\x00--\x00echo v1\x00"},
		{"runbox\x00--env=KEY=v1\x00x\x00", "runbox\x00--env=KEY=**\x00x\x00"},
		{"a\x00TOKEN=abc=def\x00", "a\x00TOKEN=*******\x00"},
		{"a\x00XKEY=v1\x00KEY=v12\x00", "a\x00XKEY=v1\x00KEY=v12\x00"},
		{"KEY=v1", "KEY=**"}, // no trailing NUL
	} {
		b := []byte(tc.in)
		blankArgs(b, forms)
		if string(b) != tc.want {
			t.Errorf("blankArgs(%q) = %q; want %q", tc.in, b, tc.want)
		}
	}
}
