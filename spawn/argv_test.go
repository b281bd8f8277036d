package spawn

import (
	"errors"
	"strings"
	"testing"
)

// TestResult_CheckArgv: a secret the build saw, dropped or passed, must not
// be accepted on a command line; if this fails, ps shows a secret.
func TestResult_CheckArgv(t *testing.T) {
	res, err := Build(Request{
		Base: []string{"OPENAI_API_KEY=sk-openai-1234", "GITHUB_TOKEN=ghp_passed_1234",
			"RUNBOX_TOKEN=rbx-token-1234", "SHORT_TOKEN=abc", "PLAIN=not-a-secret-1234"},
		Overlay: map[string]string{"RUNBOX_FORCE_NPM_TOKEN": "npm-forced-1234"},
		Policy:  Policy{Passthrough: []string{"GITHUB_TOKEN"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		argv  []string
		name  string // "" means no error
		index int
	}{
		{[]string{"curl", "-H", "Authorization: Bearer sk-openai-1234"}, "OPENAI_API_KEY", 2},
		{[]string{"git", "clone", "https://x:ghp_passed_1234@github.com/a/b"}, "GITHUB_TOKEN", 2},
		{[]string{"rbx-token-1234"}, "RUNBOX_TOKEN", 0},
		{[]string{"npm", "--token=npm-forced-1234"}, "NPM_TOKEN", 1},
		{[]string{"echo", "abc"}, "", 0},               // shorter than MinSecretLen
		{[]string{"echo", "not-a-secret-1234"}, "", 0}, // not a secret name
		{[]string{"ls", "-l"}, "", 0},
		{nil, "", 0},
	}
	for _, tt := range tests {
		err := res.CheckArgv(tt.argv)
		if tt.name == "" {
			if err != nil {
				t.Errorf("CheckArgv(%q) = %v; want nil", tt.argv, err)
			}
			continue
		}
		var ae *ArgvError
		if !errors.As(err, &ae) || ae.Name != tt.name || ae.Index != tt.index {
			t.Errorf("CheckArgv(%q) = %v; want ArgvError{%d, %s}", tt.argv, err, tt.index, tt.name)
			continue
		}
		if !errors.Is(err, ErrSecretInArgv) {
			t.Errorf("CheckArgv(%q) = %v; want errors.Is ErrSecretInArgv", tt.argv, err)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "spawn: ") || strings.Contains(msg, "1234") {
			t.Errorf("CheckArgv error %q; want a spawn: message without the value", msg)
		}
	}
	var nilRes *Result
	if err := nilRes.CheckArgv([]string{"sk-openai-1234"}); err != nil {
		t.Errorf("nil Result CheckArgv = %v; want nil", err)
	}
}
