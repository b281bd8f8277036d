package spawn

import "testing"

func TestMatch_Glob(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"A", "A", true},
		{"A", "AB", false},
		{"*_TOKEN", "GH_TOKEN", true},
		{"*_TOKEN", "_TOKEN", true},
		{"*_TOKEN", "TOKEN", false},
		{"*_TOKEN", "GH_TOKEN_X", false},
		{"RUNBOX_*TOKEN*", "RUNBOX_TOKEN", true},
		{"RUNBOX_*TOKEN*", "RUNBOX_SERVER_TOKEN_FILE", true},
		{"RUNBOX_*TOKEN*", "RUNBOX_HOME", false},
		{"SUDO_*PASS*", "SUDO_ASKPASS", true},
		{"SUDO_*PASS*", "SUDO_USER", false},
		{"*", "", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"**", "x", true},
	}
	for _, tt := range tests {
		if got := match(tt.pattern, tt.name); got != tt.want {
			t.Errorf("match(%q, %q) = %v; want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

// TestPolicy_Classify pins the split between always-strip and block that
// doc.go promises.
func TestPolicy_Classify(t *testing.T) {
	r, err := compile(Policy{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		want class
	}{
		{"RUNBOX_TOKEN", always},
		{"RUNBOX_SERVER_TOKEN", always},
		{"RUNBOX_API_KEY", always},
		{"RUNBOX_WEBHOOK_SECRET", always},
		{"MODAL_TOKEN_ID", always},
		{"MODAL_TOKEN_SECRET", always},
		{"DAYTONA_API_KEY", always},
		{"E2B_API_KEY", always},
		{"SUDO_PASSWORD", always},
		{"SUDO_ASKPASS", always},
		{"SLACK_BOT_TOKEN", always},
		{"TELEGRAM_BOT_TOKEN", always},
		{"DISCORD_TOKEN", always},
		{"RUNBOX_FORCE_X", control},
		{"Runbox_Force_X", control},
		{"OPENAI_API_KEY", blocked},
		{"ANTHROPIC_API_KEY", blocked},
		{"GITHUB_TOKEN", blocked},
		{"AWS_SESSION_TOKEN", blocked},
		{"HF_TOKEN", blocked},
		{"ACME_PASSWORD", blocked},
		{"ACME_SECRET_KEY", blocked},
		{"RUNBOX_HOME", plain},
		{"SUDO_USER", plain},
		{"HOME", plain},
		{"PATH", plain},
		{"MODAL_ENVIRONMENT", plain},
	}
	for _, tt := range tests {
		if got := r.classify(tt.name); got != tt.want {
			t.Errorf("classify(%s) = %d; want %d", tt.name, got, tt.want)
		}
	}
}
