package shell

import "testing"

// TestCanonicalPath_Spellings: every spelling of the same place reads the
// same to the rules; a miss lets "rm -rf $HOME/" past the hardline rule.
func TestCanonicalPath_Spellings(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/", "/"}, {"//", "/"}, {"/./", "/"}, {"/..", "/"}, {"/*", "/"}, {"/e*", "/"},
		{"/home/*", "/home"}, {"/etc/", "/etc"}, {"~", "~"}, {"~/", "~"}, {"~/*", "~"},
		{"$HOME", "~"}, {"$HOME/", "~"}, {"$HOME/.ssh", "~/.ssh"}, {"~root", "~"}, {"~/..", "/"},
		{"/home/$USER", "~"}, {"/tmp/x/../y", "/tmp/y"}, {"/....", "/...."},
	}
	for _, tt := range tests {
		if got, _ := CanonicalPath(tt.in); got != tt.want {
			t.Errorf("canonicalPath(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
	if _, ok := CanonicalPath("build/x"); ok {
		t.Error("canonicalPath(build/x) reported a path-like arg")
	}
}

func TestDecodeANSIC_Escapes(t *testing.T) {
	tests := []struct{ in, want string }{
		{`\x72\x6d`, "rm"}, {`\162\155`, "rm"}, {`\u0072m`, "rm"}, {`a\tb`, "a\tb"}, {`\q`, "q"}, {`\x`, `\x`},
	}
	for _, tt := range tests {
		if got := DecodeANSIC(tt.in); got != tt.want {
			t.Errorf("decodeANSIC(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestSplitOpts_Clusters(t *testing.T) {
	opts, rest := SplitOpts([]Arg{{Text: "-nSu"}, {Text: "bob"}, {Text: "--user=x"}, {Text: "--"}, {Text: "-rf"}}, OptSpec{Short: "u"})
	want := []string{"-n", "-S", "-u", "bob", "--user=x"}
	if len(opts) != len(want) || len(rest) != 1 || rest[0].Text != "-rf" {
		t.Fatalf("splitOpts = %q, %v; want %q, [-rf]", opts, rest, want)
	}
	for i := range want {
		if opts[i] != want[i] {
			t.Errorf("opts[%d] = %q; want %q", i, opts[i], want[i])
		}
	}
}
