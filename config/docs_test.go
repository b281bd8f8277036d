package config_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/runbox/runbox/config"
)

// TestDocs_EveryKey keeps docs/configuration.md whole: every key of the
// configuration, in every section, is in its schema (it once lacked the
// kubernetes, singularity, vercel and tasks sections).
func TestDocs_EveryKey(t *testing.T) {
	b, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "```yaml\n")
	end := strings.Index(doc[start+8:], "```")
	if start < 0 || end < 0 {
		t.Fatal("docs/configuration.md has no yaml schema block")
	}
	checkKeys(t, strings.Split(doc[start+8:start+8+end], "\n"), "", reflect.TypeFor[config.Config]())
}

// checkKeys checks that lines (a section's, indented by indent) hold
// every key of the struct type typ, and recurses into sub-sections.
func checkKeys(t *testing.T, lines []string, path string, typ reflect.Type) {
	t.Helper()
	for f := range typ.Fields() {
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key == "" || key == "-" {
			continue
		}
		name := strings.TrimPrefix(path+"."+key, ".")
		at := -1
		for i, l := range lines {
			if strings.HasPrefix(strings.TrimLeft(l, " "), key+":") {
				at = i
				break
			}
		}
		if at < 0 {
			t.Errorf("docs/configuration.md does not document %s", name)
			continue
		}
		if f.Type.Kind() != reflect.Struct || f.Type.PkgPath() != typ.PkgPath() {
			continue
		}
		head := lines[at]
		if strings.Contains(head, "{") { // limits: {memory: 0, …}
			for sub := range f.Type.Fields() {
				k, _, _ := strings.Cut(sub.Tag.Get("yaml"), ",")
				if !strings.Contains(head, k+":") {
					t.Errorf("docs/configuration.md does not document %s.%s", name, k)
				}
			}
			continue
		}
		depth := len(head) - len(strings.TrimLeft(head, " "))
		var body []string
		for _, l := range lines[at+1:] {
			trimmed := strings.TrimLeft(l, " ")
			if trimmed != "" && !strings.HasPrefix(trimmed, "#") && len(l)-len(trimmed) <= depth {
				break
			}
			body = append(body, l)
		}
		checkKeys(t, body, name, f.Type)
	}
}
