package service_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/runbox/runbox/config"
	"github.com/runbox/runbox/envs"
	"github.com/runbox/runbox/internal/testproc"
	"github.com/runbox/runbox/internal/testwait"
	"github.com/runbox/runbox/kubernetes/kubetest"
	"github.com/runbox/runbox/service"
)

// TestService_KubernetesSessionsOwnPods: as `runbox serve --backend
// kubernetes` uses them, two sessions run in two pods of their own, and
// closing a session deletes its pod while the other's keeps running.
func TestService_KubernetesSessionsOwnPods(t *testing.T) {
	kc, cs := kubetest.Cluster(t)
	agentBin := filepath.Join(t.TempDir(), "runbox-agent")
	if err := testproc.BuildAgent(agentBin); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Approval.Mode = "off"
	cfg.Kubernetes = config.KubernetesConf{Kubeconfig: kc, Image: "runbox-test-debian:bookworm", PullPolicy: "Never", AgentBinary: agentBin}
	s := newService(t, cfg)
	pods := make([]string, 2)
	sessions := make([]*service.Session, 2)
	for i := range sessions {
		ss, err := s.NewSession(service.SessionOptions{Backend: "kubernetes"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := ss.Run(t.Context(), envs.Command{Shell: "hostname"})
		if err != nil || res.Code != 0 {
			t.Fatalf("session %d: Run = %+v, %v", i, res, err)
		}
		sessions[i], pods[i] = ss, strings.TrimSpace(res.Output)
	}
	if pods[0] == pods[1] || !strings.HasPrefix(pods[0], "runbox-") {
		t.Fatalf("the sessions ran in pods %v; want two pods of their own", pods)
	}
	if err := sessions[0].Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	testwait.Within(t, 60*time.Second, "the closed session's pod deleted", func() bool {
		_, err := cs.CoreV1().Pods("default").Get(t.Context(), pods[0], metav1.GetOptions{})
		return err != nil
	})
	if res, err := sessions[1].Run(t.Context(), envs.Command{Shell: "hostname"}); err != nil || strings.TrimSpace(res.Output) != pods[1] {
		t.Fatalf("the other session after the first closed: %+v, %v", res, err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatalf("Service.Close: %v", err)
	}
	testwait.Within(t, 60*time.Second, "the last session's pod deleted with the service", func() bool {
		_, err := cs.CoreV1().Pods("default").Get(t.Context(), pods[1], metav1.GetOptions{})
		return err != nil
	})
}
