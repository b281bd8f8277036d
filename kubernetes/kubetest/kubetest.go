// Package kubetest finds the test cluster that scripts/kube starts (a
// real kube-apiserver and etcd, and a node that runs pods as docker
// containers) for the tests of every package that needs one.
//
//	kc, cs := kubetest.Cluster(t) // skips, or fails under RUNBOX_INTEGRATION=require
//	cfg.Kubernetes.Kubeconfig = kc
package kubetest

import (
	"net/http"
	"os"
	"testing"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/runbox/runbox/internal/integration"
)

// Cluster returns the test cluster's kubeconfig (RUNBOX_TEST_KUBECONFIG)
// and a client of it whose connections are closed at the test's end
// (client-go's shared transport would keep them past a leak check). It
// skips the test under -short, and when no cluster is named or its API
// server does not answer (integration.Skip: a failure under CI).
func Cluster(t testing.TB) (kubeconfig string, cs k8s.Interface) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no cluster tests")
	}
	kc := os.Getenv("RUNBOX_TEST_KUBECONFIG")
	if kc == "" {
		integration.Skip(t, "RUNBOX_TEST_KUBECONFIG is not set (start the test cluster with scripts/kube and source its env file)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		integration.Skip(t, "kubeconfig %s: %v", kc, err)
	}
	probe := rest.CopyConfig(cfg)
	probe.Timeout = 10 * time.Second
	if _, err := Client(t, probe).Discovery().ServerVersion(); err != nil {
		integration.Skip(t, "the test cluster's API server does not answer (%s): %v", kc, err)
	}
	return kc, Client(t, cfg)
}

// Client is a client of cfg through the proxy settings of the
// environment (none for loopback), whose connections are closed at the
// test's end.
func Client(t testing.TB, cfg *rest.Config) k8s.Interface {
	t.Helper()
	cfg, hc := HTTPClient(t, cfg)
	cs, err := k8s.NewForConfigAndClient(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// HTTPClient is a copy of cfg through the proxy settings of the
// environment, and the HTTP client for it, for client-go's constructors
// (NewForConfigAndClient); its connections are closed at the test's end.
func HTTPClient(t testing.TB, cfg *rest.Config) (*rest.Config, *http.Client) {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.Proxy = utilnet.NewProxierWithNoProxyCIDR(http.ProxyFromEnvironment)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { utilnet.CloseIdleConnectionsFor(hc.Transport) })
	return cfg, hc
}
