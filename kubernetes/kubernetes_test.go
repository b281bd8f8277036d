package kubernetes_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/envs/envtest"
	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/testproc"
	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/kubernetes"
	"github.com/runbox/runbox/kubernetes/kubetest"
)

// testImage is the image pods run: present in the node's docker engine
// (scripts/docker/build-images.sh), never pulled.
const testImage = "runbox-test-debian:bookworm"

// agentBin is the static runbox-agent built once by TestMain ("" if the
// build failed; agentErr says why).
var agentBin, agentErr = "", error(nil)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "runbox-kube-test-*")
	if err == nil {
		agentBin = filepath.Join(dir, "runbox-agent")
		if agentErr = testproc.BuildAgent(agentBin); agentErr != nil {
			agentBin = ""
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	// Every Env ends its exec streams and its connections with it.
	if err := goleak.Find(
		// The websocket executor's heartbeat ends on a Close frame, or
		// on its next ping (every 5s) after the connection closed
		// without one (a pod deleted, a stream cut): bounded, not ours.
		goleak.IgnoreTopFunction("k8s.io/client-go/tools/remotecommand.(*heartbeat).start"),
	); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goroutine leak:", err)
		code = 1
	}
	os.Exit(code)
}

// testCluster is the test cluster: its kubeconfig and a client of it.
type testCluster struct {
	kubeconfig string
	ns         string
	cs         k8s.Interface
	owner      string // what this test's objects are labelled with
}

// cluster returns the test cluster (scripts/kube), or skips with the
// reason when there is none.
func cluster(t *testing.T) *testCluster {
	t.Helper()
	kc, cs := kubetest.Cluster(t)
	if agentBin == "" {
		t.Fatalf("agent build: %v", agentErr)
	}
	ns := os.Getenv("RUNBOX_TEST_KUBE_NAMESPACE")
	if ns == "" {
		ns = "default"
	}
	b := make([]byte, 4)
	rand.Read(b)
	return &testCluster{kubeconfig: kc, ns: ns, cs: cs, owner: "test-" + hex.EncodeToString(b)}
}

// options are the options of a plain pod of the test image for this test.
func (tc *testCluster) options() kubernetes.Options {
	return kubernetes.Options{
		Kubeconfig:  tc.kubeconfig,
		Namespace:   tc.ns,
		Mode:        kubernetes.ModePlain,
		Image:       testImage,
		PullPolicy:  "Never",
		Owner:       tc.owner,
		AgentBinary: agentBin,
		Getenv:      func(string) string { return "" },
	}
}

func open(t *testing.T, o kubernetes.Options) *kubernetes.Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	env, err := kubernetes.New(ctx, o)
	if err != nil {
		t.Fatalf("kubernetes.New: %v", err)
	}
	t.Cleanup(func() { env.Close(context.Background()) })
	return env
}

func mustRun(t *testing.T, env envs.Environment, shell string) *envs.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := env.Run(ctx, envs.Command{Shell: shell})
	if err != nil {
		t.Fatalf("Run(%q): %v", shell, err)
	}
	return res
}

// podGone waits (bounded) until pod name no longer exists.
func (tc *testCluster) podGone(t *testing.T, name string) {
	t.Helper()
	testwait.Within(t, 60*time.Second, "pod "+name+" deleted", func() bool {
		_, err := tc.cs.CoreV1().Pods(tc.ns).Get(t.Context(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// TestEnv_Conformance runs the contract suite through the agent in a pod.
func TestEnv_Conformance(t *testing.T) {
	tc := cluster(t)
	envtest.Run(t, func(t *testing.T) envs.Environment {
		return open(t, tc.options())
	})
}

// TestEnv_PodShape: the pod is what the docs say — labelled with its
// owner, no service-account token, no service links, privilege
// escalation off, the limits as requests and limits — and Close deletes
// it.
func TestEnv_PodShape(t *testing.T) {
	tc := cluster(t)
	o := tc.options()
	o.CPU, o.MemoryBytes = 0.5, 256<<20
	env := open(t, o)
	pod, err := tc.cs.CoreV1().Pods(tc.ns).Get(t.Context(), env.PodName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := pod.Spec.Containers[0]
	checks := []struct {
		what string
		ok   bool
	}{
		{"owner label", pod.Labels[kubernetes.LabelOwner] == tc.owner},
		{"no task label", pod.Labels[kubernetes.LabelTask] == ""},
		{"holder annotation", pod.Annotations[kubernetes.AnnotationHolder] != ""},
		{"no token mounted", pod.Spec.AutomountServiceAccountToken != nil && !*pod.Spec.AutomountServiceAccountToken},
		{"no service links", pod.Spec.EnableServiceLinks != nil && !*pod.Spec.EnableServiceLinks},
		{"no privilege escalation", c.SecurityContext != nil && c.SecurityContext.AllowPrivilegeEscalation != nil && !*c.SecurityContext.AllowPrivilegeEscalation},
		{"cpu limit", c.Resources.Limits.Cpu().MilliValue() == 500},
		{"memory request", c.Resources.Requests.Memory().Value() == 256<<20},
	}
	for _, ck := range checks {
		if !ck.ok {
			t.Errorf("pod %s: %s missing: %+v", pod.Name, ck.what, pod.Spec)
		}
	}
	name := env.PodName()
	if err := env.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	tc.podGone(t, name)
}

// TestEnv_PodDeletedMidCommand: a pod deleted while a command runs fails
// that command at once with an error that says the pod is gone, and the
// next command runs in a new pod and says the environment was recreated.
func TestEnv_PodDeletedMidCommand(t *testing.T) {
	tc := cluster(t)
	env := open(t, tc.options())
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
	start := time.Now()
	if err := tc.cs.CoreV1().Pods(tc.ns).Delete(t.Context(), old, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, envs.ErrClosed) || !strings.Contains(err.Error(), "pod "+tc.ns+"/"+old+" is gone (deleted)") {
			t.Fatalf("Run after the pod's deletion = %v; want a lost-agent error saying pod %s is gone", err, old)
		}
		t.Logf("failed after %v: %v", time.Since(start), err)
	case <-time.After(60 * time.Second):
		t.Fatalf("the command still runs 60s after its pod was deleted")
	}
	res := mustRun(t, env, "cat /tmp/state 2>/dev/null || echo fresh")
	if !res.EnvironmentRecreated || res.Output != "fresh\n" || env.PodName() == old {
		t.Errorf("next Run: recreated=%v output=%q pod %s (was %s); want a recreated, fresh pod", res.EnvironmentRecreated, res.Output, env.PodName(), old)
	}
	if res := mustRun(t, env, "true"); res.EnvironmentRecreated {
		t.Errorf("EnvironmentRecreated reported twice")
	}
}

// TestEnv_TaskKeepsItsPod: two environments of one task, one after the
// other, run in the same pod, found again by its labels, and the state
// the first left is there for the second; another task gets another pod;
// Tasks lists them and RemoveTask deletes the task's pod.
func TestEnv_TaskKeepsItsPod(t *testing.T) {
	tc := cluster(t)
	o := tc.options()
	o.Task = "keep-" + tc.owner
	first := open(t, o)
	pod := first.PodName()
	t.Cleanup(func() {
		tc.cs.CoreV1().Pods(tc.ns).Delete(context.Background(), pod, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	mustRun(t, first, "echo kept > /root/task-state")
	if err := first.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := tc.cs.CoreV1().Pods(tc.ns).Get(t.Context(), pod, metav1.GetOptions{}); err != nil {
		t.Fatalf("the task's pod is gone after Close: %v", err)
	}
	second := open(t, o)
	if second.PodName() != pod {
		t.Fatalf("second open of the task: pod %s; want %s", second.PodName(), pod)
	}
	if res := mustRun(t, second, "cat /root/task-state"); res.Output != "kept\n" {
		t.Fatalf("task state = %q; want kept", res.Output)
	}
	other := tc.options()
	other.Task = "other-" + tc.owner
	third := open(t, other)
	t.Cleanup(func() {
		tc.cs.CoreV1().Pods(tc.ns).Delete(context.Background(), third.PodName(), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	if third.PodName() == pod {
		t.Fatalf("another task got this task's pod %s", pod)
	}
	// runbox tasks: the task is listed with its pod, and removing it
	// deletes that pod.
	ts, err := kubernetes.Tasks(t.Context(), o)
	if err != nil {
		t.Fatalf("Tasks: %v", err)
	}
	found := false
	for _, tk := range ts {
		found = found || tk.Name == o.Task && tk.Kind == "pod" && tk.Object == pod
	}
	if !found || len(ts) != 2 {
		t.Fatalf("Tasks = %+v; want this task's pod %s and the other task's", ts, pod)
	}
	removed, err := kubernetes.RemoveTask(t.Context(), o, o.Task)
	if err != nil || len(removed) != 1 || removed[0] != "pod/"+pod {
		t.Fatalf("RemoveTask = %v, %v; want pod/%s", removed, err, pod)
	}
	tc.podGone(t, pod)
	if _, err := kubernetes.RemoveTask(t.Context(), o, o.Task); !errors.Is(err, envs.ErrNotFound) {
		t.Fatalf("RemoveTask of a removed task = %v; want envs.ErrNotFound", err)
	}
}

// TestEnv_SetsidChildDiesWithCommand: killing a command whose tree has a
// setsid child leaves no process of it in the pod. The control run shows
// what happens without runbox's tree kill: a plain exec (what kubectl
// exec does) cut off mid-command leaves its setsid child running.
func TestEnv_SetsidChildDiesWithCommand(t *testing.T) {
	tc := cluster(t)
	env := open(t, tc.options())
	count := func(pattern string) string {
		return strings.TrimSpace(mustRun(t, env, "ps -eo args | grep -c '^"+pattern+"' || true").Output)
	}

	// Control: a plain exec of the same tree, its connection cut.
	d, err := kubernetes.NewDirect(tc.options())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	xctx, cut := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- d.Exec(xctx, env.PodName(), "sh", "-c", "setsid sleep 311 & sleep 312 & wait")
	}()
	// Both sleeps, seen as themselves: the setsid child has left the
	// exec's session by then (setsid runs before it executes sleep).
	// Cut sooner, on a loaded machine, and it could still be in it.
	testwait.Within(t, 60*time.Second, "the control exec's tree runs", func() bool {
		return count("sleep 31[12]") == "2"
	})
	cut()
	<-done
	if n := count("sleep 311"); n != "1" {
		t.Fatalf("control: %s setsid children after a plain exec was cut; want 1 (the leftover runbox must prevent)", n)
	}
	mustRun(t, env, "pkill -f '^sleep 31[12]' || true")

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	p, err := env.Start(ctx, envs.Command{Shell: "setsid sleep 313 & sleep 314 & echo ready; wait"})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if line, err := bufio.NewReader(p.Output()).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	// "ready" comes once both are forked, not once both run sleep: the
	// setsid child may still be setsid. Wait for both to be seen.
	testwait.Within(t, 60*time.Second, "before the kill: the setsid child and the plain one run", func() bool {
		return count("sleep 31[34]") == "2"
	})
	if err := p.Kill(ctx); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	p.Wait(ctx)
	if n := count("sleep 31[34]"); n != "0" {
		t.Fatalf("processes left after the tree kill: %s", n)
	}
}

// TestEnv_NoCredentialsInPod: nothing of the kubeconfig's credentials —
// token, client key, client certificate, password — is in the pod's
// files or in any of its processes' environments, and no service-account
// token is mounted. The control pod, created as kubectl would create one
// (token automount left at its default), gets the token volume in its
// spec from the API server's service-account admission: the mount
// runbox's pod leaves out is real. (The test node does not mount that
// volume into containers; a kubelet does.)
func TestEnv_NoCredentialsInPod(t *testing.T) {
	tc := cluster(t)
	secrets := kubeSecrets(t, tc.kubeconfig)
	if len(secrets) == 0 {
		t.Fatalf("the test kubeconfig %s holds no credential to look for", tc.kubeconfig)
	}
	env := open(t, tc.options())
	const tokenDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	pod, err := tc.cs.CoreV1().Pods(tc.ns).Get(t.Context(), env.PodName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mountsToken(pod, tokenDir) {
		t.Errorf("pod %s mounts a service-account token at %s", pod.Name, tokenDir)
	}
	if res := mustRun(t, env, "test -e "+tokenDir+" && echo mounted || echo absent"); res.Output != "absent\n" {
		t.Errorf("service-account token directory in the pod: %q", res.Output)
	}
	// The patterns come on stdin, so they are in no file and no argv of
	// the pod; grep reads every file and every process's environment.
	script := `grep -rlF -f /dev/stdin / /proc/[0-9]*/environ --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev 2>/dev/null; echo done`
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	res, err := env.Run(ctx, envs.Command{Shell: script, Stdin: strings.NewReader(strings.Join(secrets, "\n") + "\n")})
	if err != nil {
		t.Fatalf("search: %v", err)
	}
	if strings.TrimSpace(res.Output) != "done" {
		t.Errorf("kubeconfig credentials found in the pod:\n%s", res.Output)
	}
	// The search itself works: a file holding one of the credentials is
	// found (so an empty answer above is not a blind grep).
	if _, err := env.Run(ctx, envs.Command{Shell: "cat > /tmp/planted", Stdin: strings.NewReader(secrets[0] + "\n")}); err != nil {
		t.Fatal(err)
	}
	ctl, err := env.Run(ctx, envs.Command{Shell: script, Stdin: strings.NewReader(strings.Join(secrets, "\n") + "\n")})
	if err != nil || !strings.Contains(ctl.Output, "/tmp/planted") {
		t.Errorf("control: a planted credential was not found (%v): %q", err, ctl.Output)
	}
	tc.controlTokenMount(t, tokenDir)
}

// controlTokenMount creates a pod with the token automount at its
// default and reports whether the cluster mounts one there.
func (tc *testCluster) controlTokenMount(t *testing.T, tokenDir string) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "runbox-control-", Labels: map[string]string{kubernetes.LabelOwner: tc.owner}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "c", Image: testImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "600"},
			}},
		},
	}
	got, err := tc.cs.CoreV1().Pods(tc.ns).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("control pod: %v", err)
	}
	defer tc.cs.CoreV1().Pods(tc.ns).Delete(context.Background(), got.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if !mountsToken(got, tokenDir) {
		t.Fatalf("control: a pod with the default automount has no token volume at %s, so the check above proves nothing", tokenDir)
	}
	t.Logf("control: a pod with the default automount gets a token volume at %s", tokenDir)
}

// mountsToken says whether pod's spec mounts a volume at dir (the
// service-account admission plugin adds the token volume there).
func mountsToken(pod *corev1.Pod, dir string) bool {
	for _, c := range pod.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if m.MountPath == dir {
				return true
			}
		}
	}
	return false
}

// kubeSecrets are the credential values in the kubeconfig: tokens,
// passwords, client keys and certificates (as they would appear in a
// file, base64, and decoded).
func kubeSecrets(t *testing.T, path string) []string {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); len(s) >= 16 {
			out = append(out, s)
		}
	}
	for _, a := range cfg.AuthInfos {
		add(a.Token)
		add(a.Password)
		if a.TokenFile != "" {
			if b, err := os.ReadFile(a.TokenFile); err == nil {
				add(string(b))
			}
		}
		for _, pem := range [][]byte{a.ClientKeyData, a.ClientCertificateData} {
			// One line from the middle of the PEM body: the same bytes
			// in any copy of the key.
			lines := strings.Split(string(pem), "\n")
			if len(lines) > 3 {
				add(lines[len(lines)/2])
			}
		}
		for _, f := range []string{a.ClientKey, a.ClientCertificate} {
			if b, err := os.ReadFile(f); err == nil {
				lines := strings.Split(string(b), "\n")
				if len(lines) > 3 {
					add(lines[len(lines)/2])
				}
			}
		}
	}
	return out
}

// TestReap_RemovesPodsWhoseHolderIsGone: a pod whose holder process has
// exited is deleted by Reap; the pod of a live holder (this test) and a
// task's pod are kept.
func TestReap_RemovesPodsWhoseHolderIsGone(t *testing.T) {
	tc := cluster(t)
	live := open(t, tc.options())
	o := tc.options()
	o.Task = "reap-" + tc.owner
	task := open(t, o)
	t.Cleanup(func() {
		tc.cs.CoreV1().Pods(tc.ns).Delete(context.Background(), task.PodName(), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	host, _ := os.Hostname()
	// A holder that cannot be running: pid 2^22+1 is above pid_max's
	// ceiling.
	orphan := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "runbox-orphan-",
			Labels:       map[string]string{kubernetes.LabelManaged: "runbox", kubernetes.LabelOwner: tc.owner},
			Annotations:  map[string]string{kubernetes.AnnotationHolder: fmt.Sprintf("%s/%d/1", host, 1<<22+1)},
		},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "c", Image: testImage, ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "600"}}},
		},
	}
	got, err := tc.cs.CoreV1().Pods(tc.ns).Create(t.Context(), orphan, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reaped, err := kubernetes.Reap(t.Context(), tc.options())
	if err != nil {
		t.Fatalf("Reap: %v", err)
	}
	if len(reaped) != 1 || reaped[0] != "pod/"+got.Name {
		t.Fatalf("Reap = %v; want only pod/%s", reaped, got.Name)
	}
	tc.podGone(t, got.Name)
	for _, e := range []*kubernetes.Env{live, task} {
		if res := mustRun(t, e, "echo alive"); res.Output != "alive\n" {
			t.Errorf("pod %s after Reap: %q", e.PodName(), res.Output)
		}
	}
}

// TestNew_MissingImage: an image the node does not have, under pull
// policy Never, fails at once with an error that names why, and leaves
// no pod behind.
func TestNew_MissingImage(t *testing.T) {
	tc := cluster(t)
	o := tc.options()
	o.Image = "runbox-test-absent:nope"
	o.ReadyTimeout = 2 * time.Minute
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	env, err := kubernetes.New(ctx, o)
	if err == nil {
		env.Close(context.Background())
		t.Fatal("New with an absent image succeeded")
	}
	t.Logf("error: %v", err)
	testwait.Within(t, 60*time.Second, "no pod left", func() bool {
		l, err := tc.cs.CoreV1().Pods(tc.ns).List(t.Context(), metav1.ListOptions{LabelSelector: kubernetes.LabelOwner + "=" + tc.owner})
		return err == nil && len(l.Items) == 0
	})
}

// dynamic is a dynamic client of the test cluster; the test skips when the
// cluster has no Agent Sandbox API.
func (tc *testCluster) dynamic(t *testing.T) dynamic.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", tc.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.cs.Discovery().ServerResourcesForGroupVersion("extensions.agents.x-k8s.io/v1beta1"); err != nil {
		integration.Skip(t, "the test cluster has no Agent Sandbox CRDs: %v", err)
	}
	cfg, hc := kubetest.HTTPClient(t, cfg)
	dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

// TestEnv_NonRootAndNetworkNone: with NonRoot the commands run as uid
// 65534 (the agent in /tmp/.runbox); with NetworkNone the pod has a
// deny-all NetworkPolicy selecting it alone, gone with the pod at Close.
func TestEnv_NonRootAndNetworkNone(t *testing.T) {
	tc := cluster(t)
	o := tc.options()
	o.NonRoot, o.NetworkNone = true, true
	env := open(t, o)
	if res := mustRun(t, env, "id -u"); res.Output != "65534\n" {
		t.Errorf("id -u = %q; want 65534", res.Output)
	}
	pod := env.PodName()
	np, err := tc.cs.NetworkingV1().NetworkPolicies(tc.ns).Get(t.Context(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("network policy of pod %s: %v", pod, err)
	}
	if np.Spec.PodSelector.MatchLabels[kubernetes.LabelPod] != pod || len(np.Spec.PolicyTypes) != 2 || len(np.Spec.Ingress) != 0 || len(np.Spec.Egress) != 0 {
		t.Errorf("network policy %+v; want deny-all ingress and egress for pod %s alone", np.Spec, pod)
	}
	if err := env.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	tc.podGone(t, pod)
	if _, err := tc.cs.NetworkingV1().NetworkPolicies(tc.ns).Get(t.Context(), pod, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("network policy %s after Close: %v; want it gone", pod, err)
	}
}
