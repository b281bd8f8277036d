package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// These tests drive the whole test cluster through the API server, as the
// kubernetes backend will: the cluster named by RUNBOX_TEST_KUBECONFIG, or
// else one that ../up.sh starts for the run (and ../down.sh stops).

// Local images the test script builds. The Debian one has a real stty
// (busybox's cannot print the size).
const (
	testImage   = "runbox-test-busybox:latest"
	debianImage = "runbox-test-debian:bookworm"
)

type cluster struct {
	cfg *rest.Config
	cs  kubernetes.Interface
	dyn dynamic.Interface
	ns  string
}

var shared *cluster

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	kubeconfig := os.Getenv("RUNBOX_TEST_KUBECONFIG")
	if kubeconfig == "" && !testing.Short() {
		dir, err := os.MkdirTemp("", "kube-test-")
		if err == nil {
			defer os.RemoveAll(dir) // after down.sh, which reads dir/pids
			up := exec.Command("../up.sh", dir)
			up.Stdout, up.Stderr = os.Stderr, os.Stderr
			if err := up.Run(); err == nil {
				kubeconfig = filepath.Join(dir, "kubeconfig")
				defer func() { _ = exec.Command("../down.sh", dir).Run() }()
			} else {
				fmt.Fprintln(os.Stderr, "cluster did not start:", err)
			}
		}
	}
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err == nil {
			shared = &cluster{cfg: cfg, cs: kubernetes.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg)}
		}
	}
	return m.Run()
}

// setup gives the test its own namespace on the shared cluster, or skips
// (fails under RUNBOX_INTEGRATION=require) when there is no cluster.
func setup(t *testing.T) *cluster {
	t.Helper()
	if shared == nil {
		if os.Getenv("RUNBOX_INTEGRATION") == "require" {
			t.Fatal("no test cluster (RUNBOX_TEST_KUBECONFIG unset and up.sh failed)")
		}
		t.Skip("no test cluster: set RUNBOX_TEST_KUBECONFIG or make ../up.sh work")
	}
	c := *shared
	ns, err := c.cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.ns = ns.Name
	t.Cleanup(func() {
		_ = c.cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	// Pods are refused until the namespace has its default service account.
	c.eventually(t, "default service account", func(ctx context.Context) (bool, error) {
		_, err := c.cs.CoreV1().ServiceAccounts(c.ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	return &c
}

// eventually polls cond until it holds; the bound only catches hangs.
func (c *cluster) eventually(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func (c *cluster) pod(t *testing.T, name string, restart corev1.RestartPolicy, cmd ...string) *corev1.Pod {
	t.Helper()
	return c.podOf(t, testImage, name, restart, cmd...)
}

func (c *cluster) podOf(t *testing.T, image, name string, restart corev1.RestartPolicy, cmd ...string) *corev1.Pod {
	t.Helper()
	p := sleeperPod(name, image)
	p.Spec.RestartPolicy = restart
	p.Spec.Containers[0].Command = cmd
	p, err := c.cs.CoreV1().Pods(c.ns).Create(t.Context(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (c *cluster) waitPhase(t *testing.T, name string, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	c.eventually(t, fmt.Sprintf("pod %s %s", name, phase), func(ctx context.Context) (bool, error) {
		var err error
		pod, err = c.cs.CoreV1().Pods(c.ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && pod.Status.Phase == phase, nil
	})
	return pod
}

type sizes chan remotecommand.TerminalSize

func (s sizes) Next() *remotecommand.TerminalSize {
	v, ok := <-s
	if !ok {
		return nil
	}
	return &v
}

// exec runs cmd in the pod through the API server and returns its output
// and exit code.
func (c *cluster) exec(t *testing.T, pod string, stdin string, tty bool, size *remotecommand.TerminalSize, cmd ...string) (string, int) {
	t.Helper()
	req := c.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(c.ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: cmd, Stdin: true, Stdout: true, Stderr: !tty, TTY: tty}, scheme.ParameterCodec)
	ex, err := remotecommand.NewWebSocketExecutor(c.cfg, "GET", req.URL().String())
	if err != nil {
		t.Fatal(err)
	}
	// Stdout and stderr are copied concurrently, so each has its own buffer.
	var out, errOut bytes.Buffer
	opts := remotecommand.StreamOptions{Stdin: strings.NewReader(stdin), Stdout: &out, Tty: tty}
	if !tty {
		opts.Stderr = &errOut
	}
	if size != nil {
		q := make(sizes, 1)
		q <- *size
		close(q)
		opts.TerminalSizeQueue = q
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err = ex.StreamWithContext(ctx, opts)
	var exit utilexec.ExitError
	switch {
	case err == nil:
		return out.String() + errOut.String(), 0
	case errors.As(err, &exit):
		return out.String() + errOut.String(), exit.ExitStatus()
	}
	t.Fatalf("exec %v: %v", cmd, err)
	return "", -1
}

func dockerContainers(t *testing.T, pod *corev1.Pod) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label=runbox.kube.uid="+string(pod.UID)).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	return strings.Fields(string(out))
}

// A pod runs as a docker container and exec reaches it through the API
// server with stdin, a tty of the requested size, and the exit code.
func TestPod_Exec(t *testing.T) {
	c := setup(t)
	pod := c.podOf(t, debianImage, "exec", corev1.RestartPolicyNever, "sleep", "3600")
	c.waitPhase(t, pod.Name, corev1.PodRunning)
	tests := []struct {
		name     string
		stdin    string
		tty      bool
		size     *remotecommand.TerminalSize
		cmd      []string
		want     string
		wantCode int
	}{
		{name: "stdin", stdin: "hello\n", cmd: []string{"cat"}, want: "hello\n"},
		{name: "exit code", cmd: []string{"sh", "-c", "echo out; exit 7"}, want: "out\n", wantCode: 7},
		{name: "tty", tty: true, size: &remotecommand.TerminalSize{Width: 101, Height: 41},
			// The size may land just after the command starts: poll for it.
			cmd:  []string{"sh", "-c", `for i in $(seq 100); do s=$(stty size); [ "$s" != "0 0" ] && break; sleep 0.1; done; echo "$s"; [ -t 0 ] && echo tty; exit 3`},
			want: "41 101\r\ntty\r\n", wantCode: 3},
		{name: "tty stdin", tty: true, stdin: "typed\n", cmd: []string{"sh", "-c", "read l; echo got-$l"}, want: "got-typed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := c.exec(t, pod.Name, tt.stdin, tt.tty, tt.size, tt.cmd...)
			if !strings.Contains(out, tt.want) || code != tt.wantCode {
				t.Errorf("exec %v = %q, exit %d; want %q, exit %d", tt.cmd, out, code, tt.want, tt.wantCode)
			}
		})
	}
}

// Deleting with grace period 0 removes the pod at once and its container
// right after.
func TestPod_DeleteGraceZero(t *testing.T) {
	c := setup(t)
	pod := c.pod(t, "del", corev1.RestartPolicyNever, "sleep", "3600")
	c.waitPhase(t, pod.Name, corev1.PodRunning)
	if n := len(dockerContainers(t, pod)); n != 1 {
		t.Fatalf("running pod has %d containers; want 1", n)
	}
	zero := int64(0)
	if err := c.cs.CoreV1().Pods(c.ns).Delete(t.Context(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.cs.CoreV1().Pods(c.ns).Get(t.Context(), pod.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod still there after delete with grace 0: %v", err)
	}
	c.eventually(t, "container removed", func(context.Context) (bool, error) {
		return len(dockerContainers(t, pod)) == 0, nil
	})
}

// A pod's phase and its container's exit code follow the process, and a
// container removed behind the node's back fails the pod.
func TestPod_Status(t *testing.T) {
	c := setup(t)
	tests := []struct {
		name   string
		cmd    []string
		remove bool
		phase  corev1.PodPhase
		code   int32
	}{
		{name: "ok", cmd: []string{"true"}, phase: corev1.PodSucceeded, code: 0},
		{name: "fails", cmd: []string{"sh", "-c", "exit 9"}, phase: corev1.PodFailed, code: 9},
		{name: "vanished", cmd: []string{"sleep", "3600"}, remove: true, phase: corev1.PodFailed, code: 137},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := c.pod(t, tt.name, corev1.RestartPolicyNever, tt.cmd...)
			if tt.remove {
				c.waitPhase(t, pod.Name, corev1.PodRunning)
				if out, err := exec.Command("docker", append([]string{"rm", "-f"}, dockerContainers(t, pod)...)...).CombinedOutput(); err != nil {
					t.Fatalf("docker rm: %v %s", err, out)
				}
			}
			got := c.waitPhase(t, pod.Name, tt.phase)
			if len(got.Status.ContainerStatuses) != 1 || got.Status.ContainerStatuses[0].State.Terminated == nil {
				t.Fatalf("container statuses = %+v; want one terminated", got.Status.ContainerStatuses)
			}
			if code := got.Status.ContainerStatuses[0].State.Terminated.ExitCode; code != tt.code {
				t.Errorf("exit code = %d; want %d", code, tt.code)
			}
		})
	}
}

func (c *cluster) apply(t *testing.T, gvr schema.GroupVersionResource, obj map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	if _, err := c.dyn.Resource(gvr).Namespace(c.ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s: %v", u.GetName(), err)
	}
}

func (c *cluster) get(t *testing.T, gvr schema.GroupVersionResource, name string) (*unstructured.Unstructured, error) {
	return c.dyn.Resource(gvr).Namespace(c.ns).Get(t.Context(), name, metav1.GetOptions{})
}

// num is the integer at path in u (0 when absent).
func num(u *unstructured.Unstructured, path ...string) int64 {
	v, _, _ := unstructured.NestedInt64(u.Object, path...)
	return v
}

// str is the string at path in u ("" when absent).
func str(u *unstructured.Unstructured, path ...string) string {
	v, _, _ := unstructured.NestedString(u.Object, path...)
	return v
}

// readyTrue says whether u's Ready condition is True.
func readyTrue(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			return m["status"] == "True"
		}
	}
	return false
}

// The cluster runs Agent Sandbox's own controller beside the node: a claim
// against a warm pool adopts the pool's ready Sandbox (warm) or, with an
// empty pool, gets a new Sandbox (cold); either way its status names a
// Sandbox whose pod runs commands on this node; the pool refills; deleting
// the claim deletes the Sandbox and the pod (through the node's garbage
// collector, which the controller relies on).
func TestSandbox_Claims(t *testing.T) {
	c := setup(t)
	c.apply(t, gvrTemplate, map[string]any{
		"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxTemplate",
		"metadata": map[string]any{"name": "busy"},
		"spec": map[string]any{"podTemplate": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "main", "image": testImage, "command": []any{"sleep", "3600"}}}}}},
	})
	for _, pool := range []struct {
		name     string
		replicas int64
	}{{"warm", 1}, {"empty", 0}} {
		c.apply(t, gvrPool, map[string]any{
			"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
			"metadata": map[string]any{"name": pool.name},
			"spec":     map[string]any{"replicas": pool.replicas, "sandboxTemplateRef": map[string]any{"name": "busy"}},
		})
	}
	c.eventually(t, "warm pool ready", func(context.Context) (bool, error) {
		p, err := c.get(t, gvrPool, "warm")
		return err == nil && num(p, "status", "readyReplicas") == 1, nil
	})
	tests := []struct {
		pool, claim, launch string
	}{
		{pool: "warm", claim: "claim-warm", launch: "warm"},
		{pool: "empty", claim: "claim-cold", launch: "cold"},
	}
	for _, tt := range tests {
		t.Run(tt.launch, func(t *testing.T) {
			c.apply(t, gvrClaim, map[string]any{
				"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
				"metadata": map[string]any{"name": tt.claim},
				"spec": map[string]any{"warmPoolRef": map[string]any{"name": tt.pool},
					// Annotations: the controller refuses labels outside
					// its allowlisted domains.
					"additionalPodMetadata": map[string]any{"annotations": map[string]any{"runbox.task": "t1"}}},
			})
			var cl *unstructured.Unstructured
			c.eventually(t, "claim ready", func(context.Context) (bool, error) {
				var err error
				cl, err = c.get(t, gvrClaim, tt.claim)
				return err == nil && readyTrue(cl), nil
			})
			name := str(cl, "status", "sandbox", "name")
			sb, err := c.get(t, gvrSandbox, name)
			if err != nil || sb.GetLabels()["agents.x-k8s.io/launch-type"] != tt.launch {
				t.Fatalf("sandbox %q of claim %s: %v; want launch type %s", name, tt.claim, err, tt.launch)
			}
			podName := name
			if p := sb.GetAnnotations()["agents.x-k8s.io/pod-name"]; p != "" {
				podName = p
			}
			c.eventually(t, "claimed pod running with the claim's annotation", func(ctx context.Context) (bool, error) {
				pod, err := c.cs.CoreV1().Pods(c.ns).Get(ctx, podName, metav1.GetOptions{})
				return err == nil && pod.Status.Phase == corev1.PodRunning && pod.Annotations["runbox.task"] == "t1", nil
			})
			if out, code := c.exec(t, podName, "", false, nil, "echo", "in-sandbox"); out != "in-sandbox\n" || code != 0 {
				t.Errorf("exec in claimed pod = %q, %d", out, code)
			}
			if err := c.dyn.Resource(gvrClaim).Namespace(c.ns).Delete(t.Context(), tt.claim, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			c.eventually(t, "sandbox and pod deleted with the claim", func(ctx context.Context) (bool, error) {
				_, errS := c.get(t, gvrSandbox, name)
				_, errP := c.cs.CoreV1().Pods(c.ns).Get(ctx, podName, metav1.GetOptions{})
				return apierrors.IsNotFound(errS) && apierrors.IsNotFound(errP), nil
			})
		})
	}
	c.eventually(t, "warm pool refilled", func(context.Context) (bool, error) {
		p, err := c.get(t, gvrPool, "warm")
		return err == nil && num(p, "status", "readyReplicas") == 1 && num(p, "status", "replicas") == 1, nil
	})
}
