package kubernetes

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/runbox/runbox/agent/remote"
	"github.com/runbox/runbox/envs"
)

// sandbox is the kubernetes backend's part of the agent host: the
// environment's pod (a plain one, or the one bound to its claim). The
// agent, loss detection and recreation are package remote's.
type sandbox struct {
	c      *cluster
	opts   Options // defaults filled by New
	claim  bool    // pods come from SandboxClaims
	holder string  // AnnotationHolder's value for this process
	log    *slog.Logger

	mu    sync.Mutex
	cur   string            // the pod Provision returned last
	pods  map[string]podRef // what is known of each pod this sandbox used
	archs map[string]string // node → "os/arch"
}

// podRef is what the sandbox knows of a pod it used.
type podRef struct {
	container string    // the container commands run in
	claim     string    // the claim the pod is bound to ("" for a plain pod)
	arch      string    // its node's architecture ("" when unknown)
	uid       types.UID // the pod's UID: a pod of the same name made again has another
}

var _ remote.Sandbox = (*sandbox)(nil)

// Provision returns the pod it had while that still runs; else the
// task's pod or claim found by its labels (with a task); else a new one.
// A pod that ended is deleted (a claim's, with its claim) so nothing
// stays behind for nobody.
func (s *sandbox) Provision(ctx context.Context) (remote.Instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != "" {
		pod, err := s.c.core.Pods(s.c.ns).Get(ctx, s.cur, metav1.GetOptions{})
		switch {
		case err == nil && usable(pod):
			return s.instance(ctx, pod), nil
		case err == nil || apierrors.IsNotFound(err):
			s.dropLocked(ctx, s.cur)
		default:
			return remote.Instance{}, fmt.Errorf("kubernetes: look up pod %s/%s: %w", s.c.ns, s.cur, err)
		}
	}
	var pod *corev1.Pod
	var ref podRef
	var err error
	if s.claim {
		pod, ref, err = s.provisionClaim(ctx)
	} else {
		pod, err = s.provisionPod(ctx)
		if pod != nil {
			ref = podRef{container: ContainerName}
		}
	}
	if err != nil {
		return remote.Instance{}, err
	}
	inst := s.instance(ctx, pod)
	ref.arch = inst.Arch
	ref.uid = pod.UID
	s.cur = pod.Name
	s.pods[pod.Name] = ref
	return inst, nil
}

// provisionPod is the task's running pod, or a new plain pod.
func (s *sandbox) provisionPod(ctx context.Context) (*corev1.Pod, error) {
	if s.opts.Task != "" {
		pod, err := s.c.findTaskPod(ctx, s.opts)
		if err != nil || pod != nil {
			if pod != nil && pod.Status.Phase != corev1.PodRunning {
				return s.c.waitRunning(ctx, pod, s.opts.ReadyTimeout)
			}
			return pod, err
		}
	}
	return s.c.createPod(ctx, s.opts, s.holder)
}

// usable says whether commands can run in pod: it runs and is not being
// deleted.
func usable(pod *corev1.Pod) bool {
	ok, err := podReady(pod)
	return ok && err == nil
}

// dropLocked forgets pod name as the current one, deleting it when it is
// this environment's own (an ephemeral pod that ended, or its claim).
func (s *sandbox) dropLocked(ctx context.Context, name string) {
	s.cur = ""
	if s.opts.Task != "" {
		return
	}
	if err := s.removeLocked(ctx, name); err != nil {
		s.log.Debug("kubernetes: remove a pod that ended", "pod", name, "err", err)
	}
}

// instance is the remote.Instance of pod: its name, and its node's
// platform (unknown when the node cannot be read: this machine's).
func (s *sandbox) instance(ctx context.Context, pod *corev1.Pod) remote.Instance {
	inst := remote.Instance{ID: pod.Name}
	node := pod.Spec.NodeName
	if node == "" {
		return inst
	}
	plat, ok := s.archs[node]
	if !ok {
		if n, err := s.c.core.Nodes().Get(ctx, node, metav1.GetOptions{}); err == nil {
			plat = n.Status.NodeInfo.OperatingSystem + "/" + n.Status.NodeInfo.Architecture
		} else {
			s.log.Debug("kubernetes: node platform unknown", "node", node, "err", err)
		}
		s.archs[node] = plat
	}
	inst.OS, inst.Arch, _ = strings.Cut(plat, "/")
	return inst
}

// ref is what is known of pod id.
func (s *sandbox) ref(id string) podRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.pods[id]
	if !ok {
		r.container = ContainerName
	}
	return r
}

// arch is the architecture of pod id's node, in Go's spelling (""
// when unknown: this machine's).
func (s *sandbox) arch(id string) string { return s.ref(id).arch }

// CopyIn writes src to p through an exec of sh that reads its stdin and
// checks the size it received; a file of that size already there is kept.
func (s *sandbox) CopyIn(ctx context.Context, id, p string, src io.ReaderAt, size int64, perm fs.FileMode) error {
	ctr := s.ref(id).container
	n := strconv.FormatInt(size, 10)
	check := []string{"sh", "-c", `[ "$(wc -c < "$1" 2>/dev/null)" = "$2" ]`, "sh", p, n}
	if code, _, err := s.c.execRun(ctx, id, ctr, check, nil); err != nil {
		return err
	} else if code == 0 {
		return nil
	}
	script := `set -e; mkdir -p "$(dirname "$1")"; cat > "$1.tmp"; [ "$(wc -c < "$1.tmp")" = "$2" ]; chmod "$3" "$1.tmp"; mv -f "$1.tmp" "$1"`
	argv := []string{"sh", "-c", script, "sh", p, n, strconv.FormatUint(uint64(perm.Perm()), 8)}
	code, stderr, err := s.c.execRun(ctx, id, ctr, argv, io.NewSectionReader(src, 0, size))
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("kubernetes: write %s in pod %s: exit code %d: %s", p, id, code, strings.TrimSpace(stderr))
	}
	return nil
}

// Attach starts argv with an exec whose stdin and stdout are the stream.
func (s *sandbox) Attach(ctx context.Context, id string, argv []string) (io.ReadWriteCloser, error) {
	return s.c.attach(ctx, id, s.ref(id).container, argv)
}

// Describe says what became of pod id: deleted, being deleted, evicted,
// ended (with its container's exit), or running with its agent dead.
func (s *sandbox) Describe(ctx context.Context, id string) string {
	what := "pod " + s.c.ns + "/" + id
	pod, err := s.c.core.Pods(s.c.ns).Get(ctx, id, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return what + " is gone (deleted)"
	case err != nil:
		return fmt.Sprintf("%s cannot be looked up (does the API server answer?): %v", what, err)
	case pod.DeletionTimestamp != nil:
		return what + " is being deleted"
	case s.ref(id).uid != "" && pod.UID != s.ref(id).uid:
		// A claim's Sandbox makes its pod again under the same name.
		return fmt.Sprintf("%s was deleted and made again by its controller (%s)", what, podState(pod))
	case pod.Status.Reason == "Evicted":
		return fmt.Sprintf("%s was evicted: %s", what, pod.Status.Message)
	case pod.Status.Phase == corev1.PodRunning:
		return what + " is running but its agent died"
	}
	return fmt.Sprintf("%s has ended (%s)", what, podState(pod))
}

// Release deletes the environment's own pod (grace 0) or claim; a task's
// is left running for the task's next environment.
func (s *sandbox) Release(ctx context.Context, id string) error {
	if s.opts.Task != "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == id {
		s.cur = ""
	}
	return s.removeLocked(ctx, id)
}

// removeLocked deletes pod id, its claim or its network policy.
func (s *sandbox) removeLocked(ctx context.Context, id string) error {
	ref := s.pods[id]
	delete(s.pods, id)
	if ref.claim != "" {
		return s.c.deleteClaim(ctx, ref.claim)
	}
	err := s.c.deletePod(ctx, id)
	if s.opts.NetworkNone {
		if perr := s.c.deletePolicy(ctx, id); err == nil {
			err = perr
		}
	}
	return err
}

// Capabilities lays what the pod enforces over caps.
func (s *sandbox) Capabilities(caps envs.Capabilities) { podCapabilities(s.opts, s.claim, caps) }

func podCapabilities(o Options, claim bool, caps envs.Capabilities) {
	if claim {
		caps[envs.CapContainment] = envs.CapInfo{State: envs.Active, Detail: "pod of an Agent Sandbox from warm pool " + o.WarmPool + " (its security context is its template's)"}
		caps[envs.CapLimits] = envs.CapInfo{State: envs.Degraded, Detail: "the template's resources"}
		caps[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Degraded, Detail: "the template's network policy"}
	} else {
		detail := "pod (no service-account token, privilege escalation off, capabilities dropped"
		if o.NonRoot {
			detail += ", non-root uid " + strconv.Itoa(NonRootUser)
		}
		if o.RuntimeClass != "" {
			detail += ", runtime class " + o.RuntimeClass
		}
		caps[envs.CapContainment] = envs.CapInfo{State: envs.Active, Detail: detail + ")"}
		var lim []string
		if o.CPU > 0 {
			lim = append(lim, fmt.Sprintf("cpu %g", o.CPU))
		}
		if o.MemoryBytes > 0 {
			lim = append(lim, fmt.Sprintf("memory %d bytes", o.MemoryBytes))
		}
		if len(lim) > 0 {
			caps[envs.CapLimits] = envs.CapInfo{State: envs.Active, Detail: "pod requests and limits: " + strings.Join(lim, ", ") + " (whole pod)"}
		} else {
			caps[envs.CapLimits] = envs.CapInfo{State: envs.Degraded, Detail: "no pod limits set (the namespace's defaults, if any)"}
		}
		if o.NetworkNone {
			caps[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Degraded, Detail: "a deny-all NetworkPolicy for the pod, enforced only where the cluster's network plugin enforces NetworkPolicy"}
		} else {
			caps[envs.CapNetworkPolicy] = envs.CapInfo{State: envs.Unsupported, Detail: "the cluster's pod network (use network none)"}
		}
	}
	caps[envs.CapFileTransfer] = envs.CapInfo{State: envs.Active, Detail: "through the agent"}
	caps[envs.CapSnapshots] = envs.CapInfo{State: envs.Unsupported}
	caps[envs.CapHostAccess] = envs.CapInfo{State: envs.Unsupported, Detail: "no host directory is mounted"}
}
