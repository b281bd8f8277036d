package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
)

// ErrNoCluster: no kubeconfig names a cluster and runbox does not run in
// one; nothing of the kubernetes backend can exist.
var ErrNoCluster = errors.New("kubernetes: no cluster configured: no kubeconfig (kubernetes.kubeconfig, $KUBECONFIG, ~/.kube/config) and no in-cluster service account")

// quietKlog silences client-go's process-wide logger once: it writes to
// stderr about streams runbox ends on purpose ("Copying stdin failed" when
// an agent's stream is closed), which would land in a command's terminal.
// runbox reports what matters in its own errors.
var quietKlog sync.Once

// cluster is one connection to the API server: the typed, discovery and
// dynamic clients over the same REST configuration, and the namespace
// runbox works in.
//
// The typed clients are those of the two API groups runbox uses (pods and
// nodes; network policies), not client-go's whole clientset: that one
// makes a client for every group a server may serve, and every one of
// them (with its apply configurations) would be linked into runbox.
type cluster struct {
	cfg        *rest.Config
	hc         *http.Client // the clients' own: Close ends its idle connections
	core       corev1client.CoreV1Interface
	networking networkingv1client.NetworkingV1Interface
	disc       discovery.DiscoveryInterface
	dyn        dynamic.Interface
	ns         string
	where      string // the kubeconfig and context, for messages
}

// connect loads the kubeconfig as kubectl does (the explicit file, else
// the files $KUBECONFIG lists, else ~/.kube/config, else the in-cluster
// service account) and makes the clients. Nothing is sent to the server.
func connect(o Options) (*cluster, error) {
	quietKlog.Do(func() { klog.SetLogger(logr.Discard()) })
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	// KUBECONFIG is read through Getenv (runbox's launch environment),
	// not this process's environment.
	rules.Precedence, rules.WarnIfAllMissing = []string{clientcmd.RecommendedHomeFile}, false
	if v := o.Getenv(clientcmd.RecommendedConfigPathEnvVar); v != "" {
		rules.Precedence, rules.WarnIfAllMissing = filepath.SplitList(v), true
	}
	rules.ExplicitPath = o.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.Context}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	where := describeSource(o, rules)
	cfg, err := cc.ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, fmt.Errorf("%w (%s)", ErrNoCluster, where)
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes: load the client configuration (%s): %w", where, err)
	}
	ns := o.Namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil || ns == "" {
			ns = DefaultNamespace
		}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "runbox"
	// Each command is one exec round trip on the agent's stream, but
	// provisioning, describing and reaping poll: the client's default
	// rate limit (5 qps) would pace a busy server session.
	cfg.QPS, cfg.Burst = 50, 100
	// A proxy function of its own (the same as client-go's default) keeps
	// the transport out of client-go's process-wide cache, so that close
	// can end its connections: an environment leaves nothing open.
	cfg.Proxy = utilnet.NewProxierWithNoProxyCIDR(http.ProxyFromEnvironment)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: HTTP client for %s: %w", where, err)
	}
	c := &cluster{cfg: cfg, hc: hc, ns: ns, where: where}
	// One rate limit for the typed and discovery clients together, as
	// the clientset gives its own.
	typed := rest.CopyConfig(cfg)
	typed.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	if c.core, err = corev1client.NewForConfigAndClient(typed, hc); err != nil {
		return nil, fmt.Errorf("kubernetes: client for %s: %w", where, err)
	}
	if c.networking, err = networkingv1client.NewForConfigAndClient(typed, hc); err != nil {
		return nil, fmt.Errorf("kubernetes: networking client for %s: %w", where, err)
	}
	if c.disc, err = discovery.NewDiscoveryClientForConfigAndClient(typed, hc); err != nil {
		return nil, fmt.Errorf("kubernetes: discovery client for %s: %w", where, err)
	}
	if c.dyn, err = dynamic.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, fmt.Errorf("kubernetes: dynamic client for %s: %w", where, err)
	}
	return c, nil
}

// close ends the clients' idle connections; the cluster is not used
// after it.
func (c *cluster) close() { utilnet.CloseIdleConnectionsFor(c.hc.Transport) }

// describeSource says where the configuration comes from, for errors:
// the file(s) and the context, never their content.
func describeSource(o Options, rules *clientcmd.ClientConfigLoadingRules) string {
	src := o.Kubeconfig
	if src == "" {
		src = fmt.Sprint(rules.Precedence)
		if len(rules.Precedence) == 1 {
			src = rules.Precedence[0]
		}
		if _, err := os.Stat(rules.Precedence[0]); err != nil && len(rules.Precedence) == 1 {
			src += " (absent; in-cluster service account if any)"
		}
	}
	if o.Context != "" {
		return "kubeconfig " + src + ", context " + o.Context
	}
	return "kubeconfig " + src
}

// ping asks the server its version: the cheapest call that proves it
// answers and accepts the credentials.
func (c *cluster) ping(ctx context.Context) error {
	rc := c.disc.RESTClient()
	if rc == nil {
		return fmt.Errorf("kubernetes: no REST client for %s", c.where)
	}
	res := rc.Get().AbsPath("/version").Do(ctx)
	if err := res.Error(); err != nil {
		return fmt.Errorf("kubernetes: the API server of %s does not answer: %w", c.where, err)
	}
	return nil
}
