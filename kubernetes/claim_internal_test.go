package kubernetes

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestClaimPodAnnotations_PassTheController: what a claim asks to put on
// its pod is annotations only (Agent Sandbox's controller refuses every
// additionalPodMetadata label outside its allowlisted domains) and none
// under the domains it refuses for annotations; otherwise the claim is
// never bound. The owner, the task and, without a task, the holder are
// there.
func TestClaimPodAnnotations_PassTheController(t *testing.T) {
	for _, task := range []string{"", "t1"} {
		o := Options{Owner: "alice", Task: task}
		an := claimPodAnnotations(o, "host/1/2")
		for k := range an {
			domain, _, found := strings.Cut(k, "/")
			if !found {
				continue
			}
			for _, bad := range []string{"kubernetes.io", "k8s.io", "agents.x-k8s.io"} {
				if domain == bad || strings.HasSuffix(domain, "."+bad) {
					t.Errorf("task %q: annotation %s is under %s, which the controller refuses", task, k, bad)
				}
			}
		}
		if an[LabelOwner] != "alice" {
			t.Errorf("task %q: owner annotation %v; want alice", task, an[LabelOwner])
		}
		if got, want := an[LabelTask] != nil, task != ""; got != want {
			t.Errorf("task %q: task annotation present = %v; want %v", task, got, want)
		}
		if got, want := an[AnnotationHolder] != nil, task == ""; got != want {
			t.Errorf("task %q: holder annotation present = %v; want %v", task, got, want)
		}
	}
}

// TestClaimRefused: a claim whose Ready condition is False with a reason
// the controller never retries from is refused (New fails at once instead
// of waiting out ReadyTimeout); one still waiting, or Ready, is not.
func TestClaimRefused(t *testing.T) {
	cases := []struct {
		status, reason, want string
	}{
		{"False", "InvalidMetadata", "InvalidMetadata"},
		{"False", "EnvVarsInjectionRejected", "EnvVarsInjectionRejected"},
		{"False", "ClaimExpired", "ClaimExpired"},
		{"False", "SandboxNotReady", ""},
		{"False", "WarmPoolNotFound", ""},
		{"True", "DependenciesReady", ""},
	}
	for _, c := range cases {
		u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Ready", "status": c.status, "reason": c.reason},
		}}}}
		if got := claimRefused(u); got != c.want {
			t.Errorf("claimRefused(Ready %s %s) = %q; want %q", c.status, c.reason, got, c.want)
		}
	}
	if got := claimRefused(&unstructured.Unstructured{Object: map[string]any{}}); got != "" {
		t.Errorf("claimRefused(no status) = %q; want \"\"", got)
	}
}
