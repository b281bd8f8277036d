package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Labels on every docker container and volume the node creates. labelNode
// holds the cluster's ID, so down.sh removes exactly one cluster's objects.
const (
	labelNode      = "runbox.kube.node"
	labelNamespace = "runbox.kube.namespace"
	labelPod       = "runbox.kube.pod"
	labelUID       = "runbox.kube.uid"
	labelContainer = "runbox.kube.container"
)

// provider runs each pod as docker containers: one per spec container, the
// first owning the network namespace the others join (as a pod's containers
// share one IP). It keeps the pods it runs in memory; the docker objects are
// found again by label.
type provider struct {
	docker  *client.Client
	cluster string // the runbox.kube.node label value
	log     *slog.Logger

	mu     sync.Mutex
	pods   map[string]*corev1.Pod // key namespace/name; status kept current
	notify func(*corev1.Pod)
}

func newProvider(docker *client.Client, cluster string, log *slog.Logger) *provider {
	return &provider{docker: docker, cluster: cluster, log: log, pods: map[string]*corev1.Pod{}}
}

func podKey(namespace, name string) string { return namespace + "/" + name }

func containerName(pod *corev1.Pod, c string) string {
	return fmt.Sprintf("k8s_%s_%s_%s_%s", c, pod.Name, pod.Namespace, string(pod.UID)[:8])
}

func (p *provider) labels(pod *corev1.Pod, c string) map[string]string {
	l := maps.Clone(pod.Labels)
	if l == nil {
		l = map[string]string{}
	}
	l[labelNode] = p.cluster
	l[labelNamespace] = pod.Namespace
	l[labelPod] = pod.Name
	l[labelUID] = string(pod.UID)
	if c != "" {
		l[labelContainer] = c
	}
	return l
}

// CreatePod starts the pod's containers. A pod that cannot start (an image
// missing, an unsupported field) is recorded as Failed with the reason rather
// than retried forever, so a test sees the error in the pod's status.
func (p *provider) CreatePod(ctx context.Context, pod *corev1.Pod) error {
	pod = pod.DeepCopy()
	now := metav1.Now()
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, StartTime: &now, HostIP: "127.0.0.1",
		HostIPs: []corev1.HostIP{{IP: "127.0.0.1"}}}
	p.store(pod)
	if err := p.start(ctx, pod); err != nil {
		p.log.Warn("pod failed to start", "pod", podKey(pod.Namespace, pod.Name), "err", err)
		p.update(pod.Namespace, pod.Name, func(st *corev1.Pod) {
			st.Status.Phase = corev1.PodFailed
			st.Status.Reason = "StartError"
			st.Status.Message = err.Error()
		})
		return nil
	}
	p.refresh(ctx, pod.Namespace, pod.Name)
	return nil
}

func (p *provider) start(ctx context.Context, pod *corev1.Pod) error {
	if len(pod.Spec.InitContainers) > 0 {
		return errors.New("init containers are not supported by this node")
	}
	if err := p.createVolumes(ctx, pod); err != nil {
		return err
	}
	var first string
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if err := p.ensureImage(ctx, c.Image); err != nil {
			return err
		}
		cfg, host := p.containerConfig(pod, c, first)
		resp, err := p.docker.ContainerCreate(ctx, cfg, host, nil, nil, containerName(pod, c.Name))
		if err != nil {
			return fmt.Errorf("node: creating container %s: %w", c.Name, err)
		}
		if err := p.docker.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
			return fmt.Errorf("node: starting container %s: %w", c.Name, err)
		}
		if first == "" {
			first = resp.ID
		}
	}
	return nil
}

// ensureImage pulls an image only when the engine lacks it: test images are
// built locally and no registry need be reachable.
func (p *provider) ensureImage(ctx context.Context, ref string) error {
	if _, err := p.docker.ImageInspect(ctx, ref); err == nil {
		return nil
	}
	rc, err := p.docker.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return fmt.Errorf("node: image %s is not present and cannot be pulled: %w", ref, err)
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, rc)
	return err
}

func volumeName(pod *corev1.Pod, v string) string {
	return fmt.Sprintf("k8s_%s_%s", v, pod.UID)
}

// createVolumes makes a docker volume for each emptyDir so the pod's
// containers share it; other volume kinds (the service-account token among
// them) are not mounted.
func (p *provider) createVolumes(ctx context.Context, pod *corev1.Pod) error {
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir == nil {
			continue
		}
		_, err := p.docker.VolumeCreate(ctx, volume.CreateOptions{Name: volumeName(pod, v.Name), Labels: p.labels(pod, "")})
		if err != nil {
			return fmt.Errorf("node: creating volume %s: %w", v.Name, err)
		}
	}
	return nil
}

func (p *provider) containerConfig(pod *corev1.Pod, c *corev1.Container, netOwner string) (*container.Config, *container.HostConfig) {
	env := make([]string, 0, len(c.Env))
	for _, e := range c.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	cfg := &container.Config{
		Image:      c.Image,
		Entrypoint: c.Command,
		Cmd:        c.Args,
		Env:        env,
		WorkingDir: c.WorkingDir,
		Tty:        c.TTY,
		OpenStdin:  c.Stdin,
		StdinOnce:  c.StdinOnce,
		Labels:     p.labels(pod, c.Name),
	}
	host := &container.HostConfig{Init: new(bool)}
	if netOwner == "" {
		cfg.Hostname = truncate(pod.Name, 63)
		if pod.Spec.Hostname != "" {
			cfg.Hostname = pod.Spec.Hostname
		}
		if pod.Spec.DNSConfig != nil {
			host.DNS = pod.Spec.DNSConfig.Nameservers
		}
	} else {
		host.NetworkMode = container.NetworkMode("container:" + netOwner)
	}
	if sc := c.SecurityContext; sc != nil && sc.RunAsUser != nil {
		cfg.User = fmt.Sprint(*sc.RunAsUser)
	} else if psc := pod.Spec.SecurityContext; psc != nil && psc.RunAsUser != nil {
		cfg.User = fmt.Sprint(*psc.RunAsUser)
	}
	if m := c.Resources.Limits.Memory(); m != nil && !m.IsZero() {
		host.Memory = m.Value()
	}
	if cpu := c.Resources.Limits.Cpu(); cpu != nil && !cpu.IsZero() {
		host.NanoCPUs = cpu.MilliValue() * 1_000_000
	}
	switch pod.Spec.RestartPolicy {
	case corev1.RestartPolicyAlways:
		host.RestartPolicy = container.RestartPolicy{Name: container.RestartPolicyAlways}
	case corev1.RestartPolicyOnFailure:
		host.RestartPolicy = container.RestartPolicy{Name: container.RestartPolicyOnFailure}
	}
	for _, vm := range c.VolumeMounts {
		for _, v := range pod.Spec.Volumes {
			if v.Name == vm.Name && v.EmptyDir != nil {
				host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeVolume, Source: volumeName(pod, v.Name),
					Target: vm.MountPath, ReadOnly: vm.ReadOnly})
			}
		}
	}
	return cfg, host
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// UpdatePod accepts the new spec: a running container's spec cannot change
// (only labels and annotations may, and those live in the API server).
func (p *provider) UpdatePod(_ context.Context, pod *corev1.Pod) error {
	p.update(pod.Namespace, pod.Name, func(st *corev1.Pod) {
		st.ObjectMeta = *pod.ObjectMeta.DeepCopy()
	})
	return nil
}

// DeletePod stops the pod's containers within its grace period (at once for
// grace 0) and reports it terminated. It acts on that pod only, by UID: a
// controller may have made a new pod of the same name already (Agent
// Sandbox's does, for a Sandbox whose pod was deleted).
func (p *provider) DeletePod(ctx context.Context, pod *corev1.Pod) error {
	grace := 0
	if pod.DeletionGracePeriodSeconds != nil {
		grace = int(*pod.DeletionGracePeriodSeconds)
	}
	ids, err := p.containerIDs(ctx, pod.Namespace, pod.Name, pod.UID)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if grace > 0 {
			_ = p.docker.ContainerStop(ctx, id, container.StopOptions{Timeout: &grace})
		}
		if err := p.docker.ContainerRemove(ctx, id, container.RemoveOptions{Force: true}); err != nil && !client.IsErrNotFound(err) {
			return fmt.Errorf("node: removing container %s: %w", id, err)
		}
	}
	p.removeVolumes(ctx, pod)
	p.mu.Lock()
	st, ok := p.pods[podKey(pod.Namespace, pod.Name)]
	ok = ok && st.UID == pod.UID
	if ok {
		delete(p.pods, podKey(pod.Namespace, pod.Name))
	}
	notify := p.notify
	p.mu.Unlock()
	if !ok {
		return errdefs.NotFoundf("pod %s/%s is not known", pod.Namespace, pod.Name)
	}
	now := metav1.Now()
	st.DeletionTimestamp = &now
	st.Status.Phase = corev1.PodFailed
	st.Status.Reason = "Deleted"
	for i := range st.Status.ContainerStatuses {
		cs := &st.Status.ContainerStatuses[i]
		if cs.State.Terminated == nil {
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Killed", FinishedAt: now}}
		}
		cs.Ready = false
	}
	setReady(st, false)
	if notify != nil {
		notify(st)
	}
	return nil
}

func (p *provider) removeVolumes(ctx context.Context, pod *corev1.Pod) {
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir != nil {
			_ = p.docker.VolumeRemove(ctx, volumeName(pod, v.Name), true)
		}
	}
}

// containerIDs lists the docker containers of pod uid, first container
// first.
func (p *provider) containerIDs(ctx context.Context, namespace, name string, uid types.UID) ([]string, error) {
	list, err := p.docker.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", labelNode+"="+p.cluster),
		filters.Arg("label", labelNamespace+"="+namespace),
		filters.Arg("label", labelPod+"="+name),
		filters.Arg("label", labelUID+"="+string(uid)))})
	if err != nil {
		return nil, fmt.Errorf("node: listing containers of %s/%s: %w", namespace, name, err)
	}
	// Joined containers go first so the network owner is removed last.
	var ids, owners []string
	for _, c := range list {
		if strings.HasPrefix(c.HostConfig.NetworkMode, "container:") {
			ids = append(ids, c.ID)
		} else {
			owners = append(owners, c.ID)
		}
	}
	ids = append(ids, owners...)
	return ids, nil
}

func (p *provider) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pod, ok := p.pods[podKey(namespace, name)]
	if !ok {
		return nil, errdefs.NotFoundf("pod %s/%s is not known", namespace, name)
	}
	return pod.DeepCopy(), nil
}

func (p *provider) GetPodStatus(ctx context.Context, namespace, name string) (*corev1.PodStatus, error) {
	pod, err := p.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

func (p *provider) GetPods(context.Context) ([]*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(p.pods))
	for _, pod := range p.pods {
		out = append(out, pod.DeepCopy())
	}
	return out, nil
}

// NotifyPods registers the callback that carries status changes to the API
// server; the docker event loop calls it.
func (p *provider) NotifyPods(_ context.Context, f func(*corev1.Pod)) {
	p.mu.Lock()
	p.notify = f
	p.mu.Unlock()
}

func (p *provider) store(pod *corev1.Pod) {
	p.mu.Lock()
	p.pods[podKey(pod.Namespace, pod.Name)] = pod
	p.mu.Unlock()
}

// update changes a known pod under the lock and reports it.
func (p *provider) update(namespace, name string, f func(*corev1.Pod)) {
	p.mu.Lock()
	pod, ok := p.pods[podKey(namespace, name)]
	if ok {
		f(pod)
		pod = pod.DeepCopy()
	}
	notify := p.notify
	p.mu.Unlock()
	if ok && notify != nil {
		notify(pod)
	}
}

// refresh derives the pod's status from its containers as docker reports
// them. A container that has vanished makes the pod Failed.
func (p *provider) refresh(ctx context.Context, namespace, name string) {
	pod, err := p.GetPod(ctx, namespace, name)
	if err != nil || pod.Status.Phase == corev1.PodFailed && pod.Status.Reason == "StartError" {
		return
	}
	statuses := make([]corev1.ContainerStatus, 0, len(pod.Spec.Containers))
	ip := ""
	for _, c := range pod.Spec.Containers {
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image}
		info, err := p.docker.ContainerInspect(ctx, containerName(pod, c.Name))
		switch {
		case client.IsErrNotFound(err):
			cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "ContainerMissing",
				Message: "the container was removed outside the node", FinishedAt: metav1.Now()}
		case err != nil:
			p.log.Warn("inspect failed", "container", c.Name, "err", err)
			return
		default:
			cs = containerStatus(c, info)
			if ip == "" && info.NetworkSettings != nil {
				ip = info.NetworkSettings.IPAddress
			}
		}
		statuses = append(statuses, cs)
	}
	p.update(namespace, name, func(st *corev1.Pod) {
		st.Status.ContainerStatuses = statuses
		if ip != "" {
			st.Status.PodIP = ip
			st.Status.PodIPs = []corev1.PodIP{{IP: ip}}
		}
		st.Status.Phase = podPhase(st.Spec.RestartPolicy, statuses)
		setReady(st, st.Status.Phase == corev1.PodRunning && allReady(statuses))
	})
}

func containerStatus(c corev1.Container, info container.InspectResponse) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: info.Image,
		ContainerID: "docker://" + info.ID, RestartCount: int32(info.RestartCount)}
	st := info.State
	started, _ := time.Parse(time.RFC3339Nano, st.StartedAt)
	finished, _ := time.Parse(time.RFC3339Nano, st.FinishedAt)
	switch {
	case st.Running || st.Restarting:
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}
		cs.Ready, cs.Started = true, new(bool)
		*cs.Started = true
	case st.Status == "created":
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	default:
		reason := "Completed"
		if st.ExitCode != 0 {
			reason = "Error"
		}
		if st.OOMKilled {
			reason = "OOMKilled"
		}
		cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: int32(st.ExitCode), Reason: reason,
			StartedAt: metav1.NewTime(started), FinishedAt: metav1.NewTime(finished), ContainerID: cs.ContainerID}
	}
	return cs
}

// podPhase follows the kubelet: Running while any container runs (or will be
// restarted); once all have ended, Succeeded if all exited 0, else Failed.
func podPhase(policy corev1.RestartPolicy, statuses []corev1.ContainerStatus) corev1.PodPhase {
	allDone, allZero := true, true
	for _, cs := range statuses {
		switch {
		case cs.State.Waiting != nil:
			return corev1.PodPending
		case cs.State.Running != nil:
			allDone = false
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0:
			allZero = false
		}
	}
	if !allDone {
		return corev1.PodRunning
	}
	if allZero {
		return corev1.PodSucceeded
	}
	return corev1.PodFailed
}

func allReady(statuses []corev1.ContainerStatus) bool {
	for _, cs := range statuses {
		if !cs.Ready {
			return false
		}
	}
	return len(statuses) > 0
}

func setReady(pod *corev1.Pod, ready bool) {
	now := metav1.Now()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	set := func(t corev1.PodConditionType, s corev1.ConditionStatus) {
		for i, c := range pod.Status.Conditions {
			if c.Type == t {
				if c.Status != s {
					pod.Status.Conditions[i].Status = s
					pod.Status.Conditions[i].LastTransitionTime = now
				}
				return
			}
		}
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: t, Status: s, LastTransitionTime: now})
	}
	set(corev1.PodScheduled, corev1.ConditionTrue)
	set(corev1.PodInitialized, corev1.ConditionTrue)
	set(corev1.ContainersReady, status)
	set(corev1.PodReady, status)
}

// watch follows docker's container events for this node and refreshes the
// pod each concerns. It returns when ctx ends.
func (p *provider) watch(ctx context.Context) error {
	for {
		msgs, errs := p.docker.Events(ctx, events.ListOptions{Filters: filters.NewArgs(
			filters.Arg("type", string(events.ContainerEventType)),
			filters.Arg("label", labelNode+"="+p.cluster))})
		// Statuses may have changed while the stream was down.
		p.refreshAll(ctx)
	loop:
		for {
			select {
			case <-ctx.Done():
				return nil
			case err := <-errs:
				p.log.Warn("docker event stream ended", "err", err)
				break loop
			case m := <-msgs:
				switch m.Action {
				case events.ActionStart, events.ActionDie, events.ActionDestroy, events.ActionRestart, events.ActionOOM:
					p.refresh(ctx, m.Actor.Attributes[labelNamespace], m.Actor.Attributes[labelPod])
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

func (p *provider) refreshAll(ctx context.Context) {
	pods, _ := p.GetPods(ctx)
	for _, pod := range pods {
		p.refresh(ctx, pod.Namespace, pod.Name)
	}
}

// removeAll removes every container and volume this node made: at start
// (left by an earlier run; the pods are created again from the API server)
// and at exit.
func (p *provider) removeAll(ctx context.Context) error {
	f := filters.NewArgs(filters.Arg("label", labelNode+"="+p.cluster))
	list, err := p.docker.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return fmt.Errorf("node: listing containers: %w", err)
	}
	var errs []error
	for _, c := range list {
		if err := p.docker.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil && !client.IsErrNotFound(err) {
			errs = append(errs, err)
		}
	}
	vols, err := p.docker.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err == nil {
		for _, v := range vols.Volumes {
			_ = p.docker.VolumeRemove(ctx, v.Name, true)
		}
	}
	return errors.Join(errs...)
}
