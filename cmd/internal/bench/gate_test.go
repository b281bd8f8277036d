package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestJSONLInput: check --jsonl gets jsonlCommands lines, each a JSON
// string of a corpus command, the corpus over and over.
func TestJSONLInput(t *testing.T) {
	corpus := gateCorpus()
	lines := strings.Split(strings.TrimSuffix(string(jsonlInput()), "\n"), "\n")
	if len(lines) != jsonlCommands {
		t.Fatalf("%d lines; want %d", len(lines), jsonlCommands)
	}
	for _, i := range []int{0, len(corpus) - 1, len(corpus), jsonlCommands - 1} {
		var c string
		if err := json.Unmarshal([]byte(lines[i]), &c); err != nil || c != corpus[i%len(corpus)] {
			t.Errorf("line %d = %s (%v); want corpus command %d", i, lines[i], err, i%len(corpus))
		}
	}
}

// TestCountVerdicts: every line of check --jsonl's answer must be a
// verdict naming its command; anything else is an error, so a crash
// half-way cannot pass for a fast run.
func TestCountVerdicts(t *testing.T) {
	ok := `{"command":"ls","verdict":"allow"}` + "\n" + `{"command":"rm -rf /","parsed":true}` + "\n"
	if n, err := countVerdicts(bytes.NewBufferString(ok)); n != 2 || err != nil {
		t.Errorf("countVerdicts(two verdicts) = %d, %v; want 2, nil", n, err)
	}
	for _, bad := range []string{"panic: oops\n", `{"verdict":"allow"}` + "\n"} {
		if n, err := countVerdicts(bytes.NewBufferString(ok + bad)); err == nil || n != 2 {
			t.Errorf("countVerdicts(%q after two verdicts) = %d, %v; want 2 and an error", bad, n, err)
		}
	}
}
