package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/runbox/runbox/envs"
)

// The Agent Sandbox API (kubernetes-sigs/agent-sandbox, v1beta1): the
// extensions group serves SandboxTemplate, SandboxWarmPool and
// SandboxClaim, the core group Sandbox. A claim names a warm pool; the
// pool names a template.
var (
	claimGVR    = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxclaims"}
	templateGVR = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxtemplates"}
	poolGVR     = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxwarmpools"}
	sandboxGVR  = schema.GroupVersionResource{Group: "agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxes"}
)

// claimPoll is how often a claim is looked at while it waits for a pod.
const claimPoll = 200 * time.Millisecond

// provisionClaim is the task's claim found by its labels (with a task),
// else a new claim from the warm pool; either way, the running pod it
// is bound to. A claim it made that is not bound in time is deleted.
func (s *sandbox) provisionClaim(ctx context.Context) (*corev1.Pod, podRef, error) {
	name := ""
	if s.opts.Task != "" {
		found, err := s.c.findTaskClaim(ctx, s.opts)
		if err != nil {
			return nil, podRef{}, err
		}
		name = found
	}
	created := false
	if name == "" {
		var err error
		if name, err = s.c.createClaim(ctx, s.opts, s.holder); err != nil {
			return nil, podRef{}, err
		}
		created = true
	}
	pod, err := s.c.waitClaimPod(ctx, name, s.opts.ReadyTimeout)
	if err != nil {
		if created {
			s.c.deleteClaim(context.WithoutCancel(ctx), name)
		}
		return nil, podRef{}, err
	}
	ctr := ContainerName
	if len(pod.Spec.Containers) > 0 {
		ctr = pod.Spec.Containers[0].Name
	}
	return pod, podRef{container: ctr, claim: name}, nil
}

// createClaim makes a SandboxClaim from o.WarmPool, labelled like a
// plain pod, and returns its name. Its pod gets runbox's labels as
// annotations (claimPodAnnotations).
func (c *cluster) createClaim(ctx context.Context, o Options, holder string) (string, error) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": claimGVR.GroupVersion().String(),
		"kind":       "SandboxClaim",
		"metadata": map[string]any{
			"name": "runbox-" + randomSuffix(),
		},
		"spec": map[string]any{
			"warmPoolRef":           map[string]any{"name": o.WarmPool},
			"additionalPodMetadata": map[string]any{"annotations": claimPodAnnotations(o, holder)},
		},
	}}
	u.SetLabels(baseLabels(o))
	if o.Task == "" {
		u.SetAnnotations(map[string]string{AnnotationHolder: holder})
	}
	got, err := c.dyn.Resource(claimGVR).Namespace(c.ns).Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("kubernetes: create a SandboxClaim from warm pool %s in namespace %s: %w", o.WarmPool, c.ns, err)
	}
	return got.GetName(), nil
}

// claimPodAnnotations is what a claim asks its controller to put on its
// pod: runbox's owner and task labels, and the holder annotation, all as
// annotations. Agent Sandbox's controller accepts additionalPodMetadata
// labels only under allowlisted domains (sandbox.users.io unless its
// operator configures more): a claim carrying runbox's labels is refused
// (Ready False, InvalidMetadata) and never bound. Annotations are refused
// only under kubernetes.io, k8s.io and agents.x-k8s.io, so LabelManaged
// stays on the claim alone. Nothing finds a claimed pod by label: the
// claim names its Sandbox, the Sandbox its pod.
func claimPodAnnotations(o Options, holder string) map[string]any {
	an := map[string]any{}
	for k, v := range baseLabels(o) {
		if k != LabelManaged {
			an[k] = v
		}
	}
	if o.Task == "" {
		an[AnnotationHolder] = holder
	}
	return an
}

// findTaskClaim is the name of o's task's claim ("" when none).
func (c *cluster) findTaskClaim(ctx context.Context, o Options) (string, error) {
	sel := labels.SelectorFromSet(baseLabels(o)).String()
	list, err := c.dyn.Resource(claimGVR).Namespace(c.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return "", fmt.Errorf("kubernetes: find the SandboxClaim of task %s: %w", o.Task, err)
	}
	for _, it := range list.Items {
		if it.GetDeletionTimestamp() == nil {
			return it.GetName(), nil
		}
	}
	return "", nil
}

// waitClaimPod waits until claim name is bound to a sandbox whose pod
// runs, and returns that pod.
func (c *cluster) waitClaimPod(ctx context.Context, name string, timeout time.Duration) (*corev1.Pod, error) {
	var pod *corev1.Pod
	var state string
	err := wait.PollUntilContextTimeout(ctx, claimPoll, timeout, true, func(ctx context.Context) (bool, error) {
		u, err := c.dyn.Resource(claimGVR).Namespace(c.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				return false, fmt.Errorf("kubernetes: SandboxClaim %s/%s was deleted", c.ns, name)
			}
			return false, nil
		}
		sb, _, _ := unstructured.NestedString(u.Object, "status", "sandbox", "name")
		if sb == "" {
			sb = u.GetAnnotations()[claimSandboxAnnotation]
		}
		if sb == "" {
			if reason := claimRefused(u); reason != "" {
				return false, fmt.Errorf("kubernetes: SandboxClaim %s/%s was refused by the Agent Sandbox controller%s: %w", c.ns, name, readyReason(u), envs.ErrBadCommand)
			}
			state = "not bound to a sandbox yet" + readyReason(u)
			return false, nil
		}
		podName, err := c.sandboxPod(ctx, sb)
		if err != nil || podName == "" {
			state = "bound to sandbox " + sb + ", whose pod is not known yet"
			return false, nil
		}
		p, err := c.core.Pods(c.ns).Get(ctx, podName, metav1.GetOptions{})
		if err != nil {
			state = "sandbox " + sb + ": pod " + podName + " not found yet"
			return false, nil
		}
		ok, err := podReady(p)
		if err != nil {
			return false, err
		}
		state = "pod " + podName + ": " + podState(p)
		pod = p
		return ok, nil
	})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: SandboxClaim %s/%s has no running pod (%s): %w", c.ns, name, state, err)
	}
	return pod, nil
}

// sandboxPod is the name of the pod of Sandbox name: the one its
// annotation names, else the pod of the same name.
func (c *cluster) sandboxPod(ctx context.Context, name string) (string, error) {
	u, err := c.dyn.Resource(sandboxGVR).Namespace(c.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if p := u.GetAnnotations()[sandboxPodAnnotation]; p != "" {
		return p, nil
	}
	return u.GetName(), nil
}

// sandboxPodAnnotation is where a Sandbox names its pod, and
// claimSandboxAnnotation where a claim names its Sandbox (besides
// status.sandbox.name).
const (
	sandboxPodAnnotation   = "agents.x-k8s.io/pod-name"
	claimSandboxAnnotation = "agents.x-k8s.io/sandbox-name"
)

// refusedReasons are the claim's Ready reasons with which Agent Sandbox's
// controller gives up on it: the claim will never be bound as it stands.
var refusedReasons = []string{"InvalidMetadata", "EnvVarsInjectionRejected", "VolumeClaimTemplatesError", "ClaimExpired"}

// claimRefused is the claim's Ready reason when it is one of
// refusedReasons and Ready is False ("" otherwise).
func claimRefused(u *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Ready" || m["status"] != "False" {
			continue
		}
		if r, _ := m["reason"].(string); slices.Contains(refusedReasons, r) {
			return r
		}
	}
	return ""
}

// readyReason is ", Ready: <reason>: <message>" from an object's Ready
// condition ("" when it has none), for a claim that waits.
func readyReason(u *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Ready" {
			continue
		}
		return fmt.Sprintf(" (Ready %v: %v: %v)", m["status"], m["reason"], m["message"])
	}
	return ""
}

// deleteClaim deletes claim name; the controller then removes its
// sandbox and pod. One already gone is no error.
func (c *cluster) deleteClaim(ctx context.Context, name string) error {
	err := c.dyn.Resource(claimGVR).Namespace(c.ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kubernetes: delete SandboxClaim %s/%s: %w", c.ns, name, err)
	}
	return nil
}

// AgentSandbox says whether the cluster serves the Agent Sandbox API
// (SandboxClaim and SandboxTemplate in the extensions group): nil when
// it does, else why not.
func (c *cluster) agentSandbox(ctx context.Context) error {
	rl, err := c.disc.ServerResourcesForGroupVersion(claimGVR.GroupVersion().String())
	if err != nil {
		return fmt.Errorf("kubernetes: the cluster does not serve the Agent Sandbox API (%s): %w", claimGVR.GroupVersion(), err)
	}
	have := map[string]bool{}
	for _, r := range rl.APIResources {
		have[r.Name] = true
	}
	for _, want := range []string{claimGVR.Resource, poolGVR.Resource, templateGVR.Resource} {
		if !have[want] {
			return fmt.Errorf("kubernetes: the cluster serves %s without %s", claimGVR.GroupVersion(), want)
		}
	}
	return nil
}

// randomSuffix is 10 hex digits for a name nobody else picks.
func randomSuffix() string {
	b := make([]byte, 5)
	rand.Read(b)
	return hex.EncodeToString(b)
}
