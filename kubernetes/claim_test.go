package kubernetes_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/kubernetes"
)

// These tests run against Agent Sandbox's own controller, which
// scripts/kube/up.sh starts beside the test cluster's node.

var (
	templateRes = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxtemplates"}
	poolRes     = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxwarmpools"}
	claimRes    = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxclaims"}
	sandboxRes  = schema.GroupVersionResource{Group: "agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxes"}
)

// warmPool makes a SandboxTemplate and a SandboxWarmPool of replicas
// members, both named name, removed at cleanup, and waits until every
// member is ready.
func (tc *testCluster) warmPool(t *testing.T, dyn dynamic.Interface, name string, replicas int64) {
	t.Helper()
	template := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1",
		"kind":       "SandboxTemplate",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{"podTemplate": map[string]any{"spec": map[string]any{
			"automountServiceAccountToken": false,
			"containers": []any{map[string]any{
				"name": "main", "image": testImage, "imagePullPolicy": "Never",
				"command": []any{"sleep", "infinity"},
			}},
		}}},
	}}
	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1",
		"kind":       "SandboxWarmPool",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"replicas": replicas, "sandboxTemplateRef": map[string]any{"name": name}},
	}}
	for _, obj := range []struct {
		gvr schema.GroupVersionResource
		u   *unstructured.Unstructured
	}{{templateRes, template}, {poolRes, pool}} {
		if _, err := dyn.Resource(obj.gvr).Namespace(tc.ns).Create(t.Context(), obj.u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", obj.u.GetKind(), err)
		}
		gvr := obj.gvr
		t.Cleanup(func() { dyn.Resource(gvr).Namespace(tc.ns).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	testwait.Within(t, 2*time.Minute, "the warm pool's members are ready", func() bool {
		return len(tc.readyMembers(t, dyn, name)) == int(replicas)
	})
}

// readyMembers are the names of warm pool name's Sandboxes that are
// Ready and still the pool's (owned by it).
func (tc *testCluster) readyMembers(t *testing.T, dyn dynamic.Interface, name string) []string {
	list, err := dyn.Resource(sandboxRes).Namespace(tc.ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []string
	for _, sb := range list.Items {
		owner := metav1.GetControllerOf(&sb)
		if owner == nil || owner.Kind != "SandboxWarmPool" || owner.Name != name || sb.GetDeletionTimestamp() != nil {
			continue
		}
		if conditionTrue(&sb, "Ready") {
			out = append(out, sb.GetName())
		}
	}
	return out
}

func conditionTrue(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m["status"] == "True"
		}
	}
	return false
}

// claimOf is the one SandboxClaim of tc's owner.
func (tc *testCluster) claimOf(t *testing.T, dyn dynamic.Interface) *unstructured.Unstructured {
	t.Helper()
	claims, err := dyn.Resource(claimRes).Namespace(tc.ns).List(t.Context(), metav1.ListOptions{LabelSelector: kubernetes.LabelOwner + "=" + tc.owner})
	if err != nil || len(claims.Items) != 1 {
		t.Fatalf("claims of this owner: %v, %v; want one", claims, err)
	}
	return &claims.Items[0]
}

// TestEnv_ClaimFromWarmPool: with a SandboxWarmPool that keeps a ready
// Sandbox, an environment in claim mode gets that warm pod (not a new
// one), labelled as runbox's through the claim, runs commands in it
// through the agent, and Close deletes the claim and with it the pod.
func TestEnv_ClaimFromWarmPool(t *testing.T) {
	tc := cluster(t)
	dyn := tc.dynamic(t)
	name := "runbox-" + tc.owner
	tc.warmPool(t, dyn, name, 1)
	members := tc.readyMembers(t, dyn, name)
	o := tc.options()
	o.Mode, o.WarmPool, o.Image = kubernetes.ModeClaim, name, ""
	env := open(t, o)
	if !env.Claimed() {
		t.Fatalf("claim mode did not claim")
	}
	if res := mustRun(t, env, "echo from-the-pool"); res.Output != "from-the-pool\n" {
		t.Fatalf("output %q", res.Output)
	}
	pod, err := tc.cs.CoreV1().Pods(tc.ns).Get(t.Context(), env.PodName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The pool's members are named <pool>-<random>; a cold start would
	// be named after the claim.
	if !strings.HasPrefix(pod.Name, name+"-") {
		t.Errorf("pod %s is not a member of warm pool %s (members %v, labels %v)", pod.Name, name, members, pod.Labels)
	}
	// The controller refuses runbox's labels in a claim's
	// additionalPodMetadata (their domains are not allowlisted): they
	// reach the pod as annotations.
	if got := pod.Annotations[kubernetes.LabelOwner]; got != tc.owner {
		t.Errorf("pod %s owner annotation %q; want %s (through the claim)", pod.Name, got, tc.owner)
	}
	claim := tc.claimOf(t, dyn)
	if err := env.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	tc.podGone(t, pod.Name)
	testwait.Within(t, 60*time.Second, "claim deleted", func() bool {
		_, err := dyn.Resource(claimRes).Namespace(tc.ns).Get(t.Context(), claim.GetName(), metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// restartController restarts the test cluster's Agent Sandbox controller
// with scripts/kube/controller.sh; the test skips when the cluster was not
// started by scripts/kube/up.sh (it has no record of its binaries).
func (tc *testCluster) restartController(t *testing.T) {
	t.Helper()
	dir := filepath.Dir(tc.kubeconfig)
	if _, err := os.Stat(filepath.Join(dir, "bin")); err != nil {
		integration.Skip(t, "the test cluster was not started by scripts/kube/up.sh: cannot restart its controller")
	}
	cmd := exec.CommandContext(t.Context(), filepath.Join("..", "scripts", "kube", "controller.sh"), dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("restarting the controller: %v\n%s", err, out)
	}
}

// TestEnv_ClaimSurvivesControllerRestart: a claim from a warm pool of two
// binds to one of the pool's ready members and runs a command through
// runbox; the controller restarts under it and the same pod keeps running
// commands, the claim still bound to the same Sandbox; when the session
// ends the claim is released (it, its Sandbox and pod go) and the pool is
// back to two ready members, neither of them the claimed one.
func TestEnv_ClaimSurvivesControllerRestart(t *testing.T) {
	tc := cluster(t)
	dyn := tc.dynamic(t)
	name := "runbox-" + tc.owner
	tc.warmPool(t, dyn, name, 2)
	before := tc.readyMembers(t, dyn, name)

	o := tc.options()
	o.Mode, o.WarmPool, o.Image = kubernetes.ModeClaim, name, ""
	env := open(t, o)
	if res := mustRun(t, env, "echo before"); res.Output != "before\n" {
		t.Fatalf("output %q", res.Output)
	}
	podName := env.PodName()
	claim := tc.claimOf(t, dyn)
	sandbox, _, _ := unstructured.NestedString(claim.Object, "status", "sandbox", "name")
	if !slices.Contains(before, sandbox) {
		t.Errorf("claim bound to sandbox %q; want one of the pool's ready members %v", sandbox, before)
	}

	tc.restartController(t)
	if res := mustRun(t, env, "echo after"); res.Output != "after\n" {
		t.Fatalf("output after the restart %q", res.Output)
	}
	if got := env.PodName(); got != podName {
		t.Errorf("pod after the restart %s; want %s", got, podName)
	}
	claim = tc.claimOf(t, dyn)
	if got, _, _ := unstructured.NestedString(claim.Object, "status", "sandbox", "name"); got != sandbox || !conditionTrue(claim, "Ready") {
		t.Errorf("claim after the restart bound to %q (Ready %v); want %q, Ready", got, conditionTrue(claim, "Ready"), sandbox)
	}

	if err := env.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	tc.podGone(t, podName)
	testwait.Within(t, 60*time.Second, "claim and sandbox deleted", func() bool {
		_, errC := dyn.Resource(claimRes).Namespace(tc.ns).Get(t.Context(), claim.GetName(), metav1.GetOptions{})
		_, errS := dyn.Resource(sandboxRes).Namespace(tc.ns).Get(t.Context(), sandbox, metav1.GetOptions{})
		return apierrors.IsNotFound(errC) && apierrors.IsNotFound(errS)
	})
	testwait.Within(t, 2*time.Minute, "the pool replaced the claimed member", func() bool {
		now := tc.readyMembers(t, dyn, name)
		return len(now) == 2 && !slices.Contains(now, sandbox)
	})
}

// TestEnv_ClaimedPodDeleted: when a claimed pod dies (here deleted behind
// runbox's back while a command runs), Agent Sandbox's controller makes
// its Sandbox a new pod of the same name. The command fails at once saying
// the pod was deleted (and, once the new one exists, made again), not that
// it ended; the next command runs in a fresh pod and says the environment
// was recreated; at Close no claim of the session is left behind, and the
// pool is back to its two ready members.
func TestEnv_ClaimedPodDeleted(t *testing.T) {
	tc := cluster(t)
	dyn := tc.dynamic(t)
	name := "runbox-" + tc.owner
	tc.warmPool(t, dyn, name, 2)
	o := tc.options()
	o.Mode, o.WarmPool, o.Image = kubernetes.ModeClaim, name, ""
	env := open(t, o)
	mustRun(t, env, "echo state > /tmp/state")
	old := env.PodName()
	errc := make(chan error, 1)
	go func() {
		_, err := env.Run(context.Background(), envs.Command{Shell: "touch /tmp/started; sleep 120"})
		errc <- err
	}()
	testwait.Within(t, 60*time.Second, "the command runs", func() bool {
		return mustRun(t, env, "test -e /tmp/started && echo yes || true").Output == "yes\n"
	})
	if err := tc.cs.CoreV1().Pods(tc.ns).Delete(t.Context(), old, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	select {
	case err := <-errc:
		msg := fmt.Sprint(err)
		if !errors.Is(err, envs.ErrClosed) || !strings.Contains(msg, "made again") && !strings.Contains(msg, "is gone (deleted)") {
			t.Fatalf("Run after the pod's deletion = %v; want a lost-agent error saying pod %s was deleted", err, old)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the command still runs 60s after its pod was deleted")
	}
	res := mustRun(t, env, "cat /tmp/state 2>/dev/null || echo fresh")
	if !res.EnvironmentRecreated || res.Output != "fresh\n" {
		t.Errorf("after the pod's deletion: recreated=%v output=%q; want a recreated, fresh pod", res.EnvironmentRecreated, res.Output)
	}
	if err := env.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	testwait.Within(t, 60*time.Second, "no claim of this session left", func() bool {
		l, err := dyn.Resource(claimRes).Namespace(tc.ns).List(t.Context(), metav1.ListOptions{LabelSelector: kubernetes.LabelOwner + "=" + tc.owner})
		return err == nil && len(l.Items) == 0
	})
	testwait.Within(t, 2*time.Minute, "the pool is back to two ready members", func() bool {
		return len(tc.readyMembers(t, dyn, name)) == 2
	})
}
