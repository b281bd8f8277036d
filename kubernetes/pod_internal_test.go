package kubernetes

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestLabelValue: whatever an owner or task is called, its label value is
// one the API server accepts.
func TestLabelValue(t *testing.T) {
	cases := []struct{ in, want string }{
		{"alice", "alice"},
		{"DOMAIN\\bob", "DOMAIN_bob"},
		{"pr-42", "pr-42"},
		{"-x-", "x"},
		{"", "x"},
		{"a b/c", "a_b_c"},
		{string(make([]byte, 80)), "x"},
		{"abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij", "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabc"},
	}
	for _, c := range cases {
		if got := labelValue(c.in); got != c.want {
			t.Errorf("labelValue(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}

// TestPodSpec: the options reach the pod spec, and what keeps credentials
// out of the pod is there whatever the options.
func TestPodSpec(t *testing.T) {
	cases := []struct {
		name  string
		opts  Options
		check func(t *testing.T, p *corev1.Pod)
	}{
		{"root", Options{Image: "img", Owner: "o"}, func(t *testing.T, p *corev1.Pod) {
			sc := p.Spec.Containers[0].SecurityContext
			if p.Spec.SecurityContext != nil || len(sc.Capabilities.Add) != len(keptCaps) || p.Spec.RuntimeClassName != nil {
				t.Errorf("root pod: %+v %+v", p.Spec.SecurityContext, sc)
			}
			if p.Annotations[AnnotationHolder] != "h" || p.Labels[LabelTask] != "" {
				t.Errorf("ephemeral pod: labels %v annotations %v", p.Labels, p.Annotations)
			}
		}},
		{"non-root with runtime class", Options{Image: "img", Owner: "o", NonRoot: true, RuntimeClass: "gvisor"}, func(t *testing.T, p *corev1.Pod) {
			ps := p.Spec.SecurityContext
			if ps == nil || !*ps.RunAsNonRoot || *ps.RunAsUser != NonRootUser || len(p.Spec.Containers[0].SecurityContext.Capabilities.Add) != 0 {
				t.Errorf("non-root pod: %+v", ps)
			}
			if p.Spec.RuntimeClassName == nil || *p.Spec.RuntimeClassName != "gvisor" {
				t.Errorf("runtime class %v", p.Spec.RuntimeClassName)
			}
		}},
		{"task", Options{Image: "img", Owner: "o", Task: "t 1"}, func(t *testing.T, p *corev1.Pod) {
			if p.Labels[LabelTask] != "t_1" || p.Annotations[AnnotationHolder] != "" {
				t.Errorf("task pod: labels %v annotations %v", p.Labels, p.Annotations)
			}
		}},
		{"limits", Options{Image: "img", Owner: "o", CPU: 0.25, MemoryBytes: 1 << 30}, func(t *testing.T, p *corev1.Pod) {
			r := p.Spec.Containers[0].Resources
			if r.Limits.Cpu().MilliValue() != 250 || r.Requests.Memory().Value() != 1<<30 {
				t.Errorf("resources %+v", r)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := podSpec(c.opts, "h")
			if *p.Spec.AutomountServiceAccountToken || *p.Spec.EnableServiceLinks || *p.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation {
				t.Errorf("token, service links or privilege escalation left on: %+v", p.Spec)
			}
			if p.Labels[LabelManaged] != managedValue || p.Labels[LabelOwner] != "o" {
				t.Errorf("labels %v", p.Labels)
			}
			c.check(t, p)
		})
	}
}
