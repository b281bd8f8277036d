package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/docker/docker/client"
	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kube-node run|freeports|smoke ...")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	var err error
	switch os.Args[1] {
	case "run":
		err = runNode(ctx, log, os.Args[2:])
	case "freeports":
		err = freePorts(os.Args[2:])
	case "smoke":
		err = runSmoke(ctx, os.Args[2:])
	case "apply":
		err = runApply(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube-node:", err)
		os.Exit(1)
	}
}

type nodeOptions struct {
	kubeconfig, name, cluster, listen, cert, key, clientCA string
}

func runNode(ctx context.Context, log *slog.Logger, args []string) error {
	var o nodeOptions
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "admin kubeconfig")
	fs.StringVar(&o.name, "name", "runbox-node", "node name")
	fs.StringVar(&o.cluster, "cluster", "", "value of the runbox.kube.node label on this node's containers (default: the node name)")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:10250", "address of the node's exec/logs server")
	fs.StringVar(&o.cert, "cert", "", "serving certificate")
	fs.StringVar(&o.key, "key", "", "serving key")
	fs.StringVar(&o.clientCA, "client-ca", "", "CA of the API server's client certificate")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("node: reading kubeconfig: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	docker, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return fmt.Errorf("node: docker client: %w", err)
	}
	defer docker.Close()
	if o.cluster == "" {
		o.cluster = o.name
	}
	p := newProvider(docker, o.cluster, log)
	if err := p.removeAll(ctx); err != nil {
		return err
	}
	defer func() {
		// ctx is done by now; the cleanup gets its own bounded time.
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.removeAll(cctx); err != nil {
			log.Warn("cleanup", "err", err)
		}
	}()
	n, err := newVirtualNode(p, cs, o)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // runs before wg.Wait: the helpers stop, then are joined
	wg.Go(func() { _ = p.watch(ctx) })
	wg.Go(func() { runScheduler(ctx, cs, o.name, log) })
	wg.Go(func() { runNamespaces(ctx, cs, dyn, log) })
	wg.Go(func() { (&garbageCollector{dyn: dyn, log: log}).run(ctx) })
	log.Info("node starting", "name", o.name, "listen", o.listen)
	err = n.Run(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func newVirtualNode(p *provider, cs kubernetes.Interface, o nodeOptions) (*nodeutil.Node, error) {
	host, port, err := net.SplitHostPort(o.listen)
	if err != nil {
		return nil, fmt.Errorf("node: --listen: %w", err)
	}
	var portNum int32
	if _, err := fmt.Sscan(port, &portNum); err != nil {
		return nil, fmt.Errorf("node: --listen port: %w", err)
	}
	mux := http.NewServeMux()
	return nodeutil.NewNode(o.name, func(pc nodeutil.ProviderConfig) (nodeutil.Provider, node.NodeProvider, error) {
		fillNode(pc.Node, host, portNum)
		return p, nil, nil
	},
		nodeutil.WithClient(cs),
		func(c *nodeutil.NodeConfig) error {
			c.HTTPListenAddr = o.listen
			// Only the API server, holding a certificate from our CA, can
			// connect (WithCAFromPath requires one); it has authorised the
			// request already.
			c.Handler = nodeutil.WithAuth(nodeutil.NoAuth(), mux)
			c.NumWorkers = 4
			c.InformerResyncPeriod = 30 * time.Second
			return nil
		},
		nodeutil.WithTLSConfig(nodeutil.WithKeyPairFromPath(o.cert, o.key), nodeutil.WithCAFromPath(o.clientCA)),
		nodeutil.AttachProviderRoutes(mux),
	)
}

func fillNode(n *corev1.Node, host string, port int32) {
	n.Labels["kubernetes.io/os"] = "linux"
	n.Labels["kubernetes.io/arch"] = runtime.GOARCH
	n.Labels["node.kubernetes.io/instance-type"] = "runbox-docker"
	res := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	n.Status.Capacity, n.Status.Allocatable = res, res
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: host}, {Type: corev1.NodeHostName, Address: n.Name}}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = port
	n.Status.NodeInfo = corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: runtime.GOARCH,
		KubeletVersion: "v1.37.2", ContainerRuntimeVersion: "docker://"}
}

func freePorts(args []string) error {
	count := 1
	if len(args) > 0 {
		if _, err := fmt.Sscan(args[0], &count); err != nil {
			return err
		}
	}
	// All listeners stay open until every port is chosen, so no two are equal.
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range count {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return errors.Join(errors.New("no free port"), err)
		}
		ls = append(ls, l)
		fmt.Println(l.Addr().(*net.TCPAddr).Port)
	}
	return nil
}
