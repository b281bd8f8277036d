package approval

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/runbox/runbox/approval/internal/shell"
	"github.com/runbox/runbox/approval/internal/walk"
)

// TestParsePlain_SameTreeAsParser: for every input parsePlain accepts,
// the tree is the parser's, node for node; it accepts the plain command
// lines it is for, and refuses what it cannot be sure of.
func TestParsePlain_SameTreeAsParser(t *testing.T) {
	inputs := append(differentialInputs(t), generatedCommands(rand.New(rand.NewPCG(7, 8)), 3000)...)
	inputs = append(inputs, "ls", "  git  status -s\t", "go test ./...", "npm test -- --watch=false", "a=b", "ls a=b",
		"if", "then x", "echo if then", "x\ty", "export A", "declare -x A", "let x", "time ls", "{ ls", "ls #x", "ls ~",
		"-x", "ls\n", "ls \\\n -l", "\t", "", "echo a,b", "user@host:/p", "100%", "a+b", "./x.sh", "coproc x", "x=1 y")
	// Random strings over the plain alphabet and a few others.
	rng := rand.New(rand.NewPCG(9, 10))
	const alphabet = "ab-_./:@%+,=  \t09AZ#~'\"$;&|(){}[]*?!\n\\"
	for range 5000 {
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		inputs = append(inputs, b.String())
	}
	accepted := 0
	for _, src := range inputs {
		got, ok := shell.ParsePlain(src, nil)
		want, err := walk.NewParser().Parse(strings.NewReader(src), "")
		if !ok {
			continue
		}
		accepted++
		if err != nil {
			t.Errorf("parsePlain(%q) accepted what the parser refuses: %v", src, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("parsePlain(%q) differs from the parser", src)
		}
	}
	for _, src := range []string{"ls", "git status", "go test ./...", "npm test -- --watch=false", "rm -rf /", "ls a=b"} {
		if _, ok := shell.ParsePlain(src, nil); !ok {
			t.Errorf("parsePlain(%q) refused a plain command line", src)
		}
	}
	for _, src := range []string{"a=b", "if x", "export A=1", "ls #x", "ls ~", "ls *", "ls\n", "ls; rm", "", " ", "echo $x", "'ls'"} {
		if _, ok := shell.ParsePlain(src, nil); ok {
			t.Errorf("parsePlain(%q) accepted what only the parser can read", src)
		}
	}
	if accepted < 1000 {
		t.Errorf("only %d inputs were plain; the test does not exercise parsePlain", accepted)
	}
}
