package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/runbox/runbox/internal/integration"
	"github.com/runbox/runbox/internal/testproc"
	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/kubernetes/kubetest"
)

// kubeCLI is the test cluster (scripts/kube) as the CLI reaches it: a
// configuration file whose kubernetes section points at it, and a client
// for the test's own checks and cleanup.
type kubeCLI struct {
	env map[string]string
	cs  k8s.Interface
}

// needKube skips (or, under RUNBOX_INTEGRATION=require, fails) when no
// test cluster is up.
func needKube(t *testing.T) *kubeCLI {
	t.Helper()
	kc, cs := kubetest.Cluster(t)
	dir := t.TempDir()
	agentBin := filepath.Join(dir, "runbox-agent")
	if err := testproc.BuildAgent(agentBin); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	conf := fmt.Sprintf("kubernetes:\n  kubeconfig: %s\n  image: runbox-test-debian:bookworm\n  pull_policy: Never\n  agent_binary: %s\n", kc, agentBin)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return &kubeCLI{env: map[string]string{"RUNBOX_CONFIG": cfg, "RUNBOX_OWNER": fmt.Sprintf("cli-test-%d", os.Getpid())}, cs: cs}
}

// pods lists the pods of this test's owner.
func (k *kubeCLI) pods(t *testing.T) []string {
	t.Helper()
	l, err := k.cs.CoreV1().Pods("default").List(t.Context(), metav1.ListOptions{LabelSelector: "runbox.owner=" + k.env["RUNBOX_OWNER"]})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	return names
}

// TestRunKubernetes_CommandInPod: `runbox run --backend kubernetes` runs
// the command in a pod through the agent, passes its exit status, and
// leaves no pod behind.
func TestRunKubernetes_CommandInPod(t *testing.T) {
	k := needKube(t)
	out, stderr, code := cli(t, "", k.env, "run", "--backend", "kubernetes", "--namespace", "default", "--", "echo in $(cat /etc/debian_version | cut -c1-2); exit 3")
	if code != 3 || out != "in 12\n" {
		t.Fatalf("run: exit %d, stdout %q, stderr %q; want 3 and the image's Debian version", code, out, stderr)
	}
	testwait.Within(t, 60*time.Second, "no pod left after run", func() bool { return len(k.pods(t)) == 0 })
}

// TestCodeKubernetes_KernelInPod: a Python cell runs in a kernel inside
// the pod (its host name is the pod's), and the pod goes with the kernel.
func TestCodeKubernetes_KernelInPod(t *testing.T) {
	k := needKube(t)
	out, stderr, code := cli(t, "", k.env, "code", "--backend", "kubernetes", "--yolo", "import socket; print(6 * 7, socket.gethostname())")
	if code != 0 || !strings.HasPrefix(out, "42 runbox-") {
		t.Fatalf("code: exit %d, stdout %q, stderr %q; want 42 and the pod's name", code, out, stderr)
	}
	testwait.Within(t, 60*time.Second, "no pod left after the kernel", func() bool { return len(k.pods(t)) == 0 })
}

// TestJobsKubernetes_BackgroundJobOneNotice: a background job in a task's
// pod completes, its exit code reaches wait, and exactly one completion
// is queued for it.
func TestJobsKubernetes_BackgroundJobOneNotice(t *testing.T) {
	k := needKube(t)
	needContainerCLI(t)
	task := fmt.Sprintf("jobs-%s", strings.ToLower(rand.Text()[:8]))
	t.Cleanup(func() {
		k.cs.CoreV1().Pods("default").DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)},
			metav1.ListOptions{LabelSelector: "runbox.task=" + task})
	})
	d := func(sub string, rest ...string) []string {
		return append([]string{sub, "--backend", "kubernetes", "--task", task}, rest...)
	}
	out, stderr, code := cli(t, "", k.env, d("start", "--notify", "--", "for i in 1 2 3; do echo line $i; sleep 0.2; done; exit 5")...)
	id := strings.TrimSpace(out)
	if code != 0 || len(id) != 12 {
		t.Fatalf("start: exit %d, out %q, stderr %q", code, out, stderr)
	}
	if out, stderr, code := cli(t, "", k.env, d("wait", "--timeout", "60s", id)...); code != 5 || !strings.Contains(out, "exited 5") {
		t.Fatalf("wait: exit %d, %q %q; want 5", code, out, stderr)
	}
	if out, _, _ := cli(t, "", k.env, d("logs", id)...); out != "line 1\nline 2\nline 3\n" {
		t.Fatalf("logs = %q", out)
	}
	out, _, _ = cli(t, "", k.env, d("events")...)
	if strings.Count(out, `"type":"completion"`) != 1 || !strings.Contains(out, id) {
		t.Fatalf("events = %q; want one completion of %s", out, id)
	}
	if pods := k.pods(t); len(pods) != 1 {
		t.Fatalf("pods of the task: %v; want its one pod, kept", pods)
	}
}

// TestBenchKubernetes_RowsWithBaselines: runbox bench's kubernetes rows
// measure the backend and client-go's own pod creation and exec in the
// same run, each with its baseline's time, and leave no pod behind.
func TestBenchKubernetes_RowsWithBaselines(t *testing.T) {
	benchKubeRows(t, needKube(t), "client-go", "kubernetes-create-to-first-command", "kubernetes-exec")
}

// TestBenchKubernetes_KubectlBaselines: the two kubernetes rows measured
// against the kubectl program itself in the same run (scripts/test
// builds kubectl beside the test cluster and names it in
// RUNBOX_KUBECTL), with no pod left by either side.
func TestBenchKubernetes_KubectlBaselines(t *testing.T) {
	k := needKube(t)
	if os.Getenv("RUNBOX_KUBECTL") == "" {
		if _, err := exec.LookPath("kubectl"); err != nil {
			integration.Skip(t, "no kubectl: set RUNBOX_KUBECTL (scripts/kube/build.sh builds one)")
		}
	}
	benchKubeRows(t, k, "kubectl", "kubernetes-create-to-first-command.kubectl", "kubernetes-exec.kubectl")
}

// benchKubeRows runs the bench rows named, twice each, and wants every
// one measured against a baseline that names baseline, with no pod left
// by either side.
func benchKubeRows(t *testing.T, k *kubeCLI, baseline string, rows ...string) {
	t.Helper()
	out, stderr, code := cli(t, "", k.env, "bench", "--json", "-n", "2", "--only", strings.Join(rows, ","))
	if code != 0 {
		t.Fatalf("bench: exit %d, %s", code, stderr)
	}
	ms := decodeMeasurements(t, out)
	if len(ms) != len(rows) {
		t.Fatalf("bench rows = %+v; want %d", ms, len(rows))
	}
	for _, m := range ms {
		if m.Note != "" || m.N != 2 || m.P50ms <= 0 || m.BaselineP50ms <= 0 || !strings.Contains(m.Baseline, baseline) {
			t.Errorf("row %+v; want measured against its %s baseline", m, baseline)
		}
	}
	testwait.Within(t, 60*time.Second, "no pod left after bench", func() bool { return len(k.pods(t)) == 0 })
}
