package approval

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// corpusFile is the shared accuracy corpus of the approval work: real
// commands, each with the verdict it must get.
const corpusFile = "testdata/corpus.json"

// TestCorpus_SharedCases runs the shared corpus (corpusFile). It is a
// sample of real commands; the gate must generalise, so no case is
// special-cased.
func TestCorpus_SharedCases(t *testing.T) {
	b, err := os.ReadFile(corpusFile)
	if err != nil {
		t.Fatal(err)
	}
	var corpus struct {
		Cases []struct {
			Cmd, Want, Category string
		}
	}
	if err := json.Unmarshal(b, &corpus); err != nil {
		t.Fatal(err)
	}
	g := newTestGate(t)
	total, failed := map[string]int{}, map[string]int{}
	for _, c := range corpus.Cases {
		if want, ok := supersededCases[c.Cmd]; ok {
			c.Want = want
		}
		v := g.Check(t.Context(), Request{Command: c.Cmd, Backend: "local"})
		var ok bool
		switch c.Want {
		case "hardline":
			ok = v.Decision == Deny && v.Hardline
		case "deny":
			ok = v.Decision == Deny
		case "danger":
			ok = v.Decision == Ask || v.Decision == Deny
		case "safe":
			ok = v.Decision == Allow
		case "not-hardline":
			ok = !v.Hardline
		case "not-deny":
			ok = v.Decision != Deny
		default:
			t.Fatalf("unknown want %q", c.Want)
		}
		total[c.Want]++
		if !ok {
			failed[c.Want]++
			t.Logf("%-12s got %s hardline=%v rules=%v: %q (%s)", c.Want, v.Decision, v.Hardline, v.Rules, c.Cmd, c.Category)
		}
	}
	for want, n := range total {
		t.Logf("%-12s %d/%d pass", want, n-failed[want], n)
	}
	for _, want := range []string{"hardline", "deny", "danger", "not-hardline", "not-deny"} {
		if failed[want] > 0 {
			t.Errorf("%s: %d of %d cases fail", want, failed[want], total[want])
		}
	}
	if s := total["safe"]; s > 0 && float64(s-failed["safe"]) < 0.98*float64(s) {
		t.Errorf("safe: %d of %d allowed, want at least 98%%", s-failed["safe"], s)
	}
}

// supersededCases are corpus cases whose expected verdict a later
// decision changed, with the verdict now expected. Each is still checked.
var supersededCases = map[string]string{
	// A read-only command sent to another container daemon no longer
	// asks (docker -H … ps); what changes that daemon still does.
	"docker " + strings.Repeat("--opt val --flag=x -q - ", 58) + "-H ssh://prod ps": "safe",
	// Inline code the gate reads (package inline) and finds plainly
	// local and read-only runs as cat or grep does; code that starts a
	// process, writes, deletes or talks to the network still asks.
	`python -c "print('hello')"`:                   "safe",
	"python << \"PYEOF\"\nprint(\"pwned\")\nPYEOF": "safe",
	`bun -e "console.log(1)"`:                      "safe",
	`bun --eval "console.log(1)"`:                  "safe",
	`sudo deno eval "console.log(1)"`:              "safe",
	`BUN.EXE -e "console.log(1)"`:                  "safe",
	"bun << \"EOF\"\nconsole.log(\"pwned\")\nEOF":  "safe",
	"deno << 'EOF'\nconsole.log(\"pwned\")\nEOF":   "safe",
}
