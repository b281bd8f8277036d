package spawn

import (
	"slices"
	"testing"
)

// TestParseEnvFile_Dialect: every key a profile's env file sets must be
// found, or the launch profile's value leaks into another profile's child.
func TestParseEnvFile_Dialect(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []envVar
		bad  []int
	}{
		{"plain", "A=1\nB = two words \n", []envVar{{"A", "1"}, {"B", "two words"}}, nil},
		{"comments and blanks", "# c\n\n  # indented\nA=1 # trailing\nB=x#y\r\n", []envVar{{"A", "1"}, {"B", "x#y"}}, nil},
		{"export", "export A=1\nexport\tB=2\nexported=3\n", []envVar{{"A", "1"}, {"B", "2"}, {"exported", "3"}}, nil},
		{"single quotes", `A='$x \n "y"' # c`, []envVar{{"A", `$x \n "y"`}}, nil},
		{"double quotes", `A="a\nb \"c\" \\ \$d \q"`, []envVar{{"A", "a\nb \"c\" \\ $d \\q"}}, nil},
		{"multi-line", "A=\"one\nB=not a key\"\nC=3", []envVar{{"A", "one\nB=not a key"}, {"C", "3"}}, nil},
		{"empty values", "A=\nB=\"\"\nC=''", []envVar{{"A", ""}, {"B", ""}, {"C", ""}}, nil},
		{"bad lines", "no equals\n1A=x\nA=\"open\nB=2\nC=ok", []envVar{{"A", "open"}, {"B", "2"}, {"C", "ok"}}, []int{1, 2, 3}},
		{"junk after quote", "A='x' junk\nB=1", []envVar{{"A", "x"}, {"B", "1"}}, []int{1}},
		{"dotted keys", "spring.datasource-url=x", []envVar{{"spring.datasource-url", "x"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, bad := parseEnvFile(tt.src)
			if !slices.Equal(got, tt.want) || !slices.Equal(bad, tt.bad) {
				t.Errorf("parseEnvFile(%q) = %q, bad %v; want %q, bad %v", tt.src, got, bad, tt.want, tt.bad)
			}
		})
	}
}
