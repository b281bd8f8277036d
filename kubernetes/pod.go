package kubernetes

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// keepAlive is the container's command: it does nothing, for as long as
// the pod lives, and ends at once on SIGTERM (as PID 1, a shell would
// otherwise ignore it and hold the deletion for its grace period).
var keepAlive = []string{"sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait; done"}

// keptCaps are the only capabilities the container keeps: what the
// agent's tree kill, file ownership and a command's own su need; the
// runtime's other defaults (NET_RAW, MKNOD, SYS_CHROOT, …) are dropped.
var keptCaps = []corev1.Capability{"CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID", "KILL"}

// podSpec is the plain pod for o: one container that idles, the limits,
// no service-account token, no service links, labels saying whose it is.
func podSpec(o Options, holder string) *corev1.Pod {
	lb := baseLabels(o)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "runbox-",
			Labels:       lb,
		},
		Spec: corev1.PodSpec{
			// Credentials stay on this machine: no token is mounted, and
			// no other service's address is put in the environment.
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name:            ContainerName,
				Image:           o.Image,
				ImagePullPolicy: corev1.PullPolicy(o.PullPolicy),
				Command:         keepAlive,
				WorkingDir:      o.Dir,
				Resources:       resources(o),
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: keptCaps},
				},
			}},
		},
	}
	if o.Task == "" {
		pod.Annotations = map[string]string{AnnotationHolder: holder}
	}
	if o.RuntimeClass != "" {
		pod.Spec.RuntimeClassName = ptr.To(o.RuntimeClass)
	}
	if o.NonRoot {
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{
			RunAsNonRoot: ptr.To(true),
			RunAsUser:    ptr.To[int64](NonRootUser),
			RunAsGroup:   ptr.To[int64](NonRootUser),
		}
		pod.Spec.Containers[0].SecurityContext.Capabilities.Add = nil
	}
	return pod
}

// baseLabels are the labels of everything runbox makes for o.
func baseLabels(o Options) map[string]string {
	lb := map[string]string{LabelManaged: managedValue, LabelOwner: labelValue(o.Owner)}
	if o.Task != "" {
		lb[LabelTask] = labelValue(o.Task)
	}
	return lb
}

// labelValue makes s a valid label value: at most 63 characters of
// [A-Za-z0-9._-], starting and ending with a letter or digit.
func labelValue(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	v := string(b)
	if len(v) > 63 {
		v = v[:63]
	}
	v = strings.Trim(v, "._-")
	if v == "" {
		v = "x"
	}
	return v
}

// resources are the pod's requests and limits: the same value for both,
// so the pod is what it asked for (Guaranteed when both are set).
func resources(o Options) corev1.ResourceRequirements {
	rl := corev1.ResourceList{}
	if o.CPU > 0 {
		rl[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(o.CPU*1000), resource.DecimalSI)
	}
	if o.MemoryBytes > 0 {
		rl[corev1.ResourceMemory] = *resource.NewQuantity(o.MemoryBytes, resource.BinarySI)
	}
	if len(rl) == 0 {
		return corev1.ResourceRequirements{}
	}
	return corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}
}

// denyAll is the NetworkPolicy that cuts pod's ingress and egress: it
// selects the pod and allows nothing.
func denyAll(o Options, pod *corev1.Pod) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name:   pod.Name,
			Labels: baseLabels(o),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
			}},
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelPod: pod.Name}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
}

// createPod creates the plain pod (with its network policy when the
// network is none) and waits until it runs. A pod that does not come up
// is deleted.
func (c *cluster) createPod(ctx context.Context, o Options, holder string) (*corev1.Pod, error) {
	spec := podSpec(o, holder)
	if o.NetworkNone {
		// The policy must be in force before the pod runs anything: it
		// selects the pod by a label the pod gets from its own name,
		// which is only known once it exists, so the pod is created with
		// a name chosen here.
		spec.GenerateName = ""
		spec.Name = "runbox-" + randomSuffix()
		spec.Labels[LabelPod] = spec.Name
		np := denyAll(o, spec)
		np.OwnerReferences = nil
		if _, err := c.networking.NetworkPolicies(c.ns).Create(ctx, np, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("kubernetes: create the deny-all network policy %s: %w", np.Name, err)
		}
	}
	pod, err := c.core.Pods(c.ns).Create(ctx, spec, metav1.CreateOptions{})
	if err != nil {
		if o.NetworkNone {
			c.deletePolicy(context.WithoutCancel(ctx), spec.Name)
		}
		return nil, fmt.Errorf("kubernetes: create pod in namespace %s: %w", c.ns, err)
	}
	if o.NetworkNone {
		c.adoptPolicy(ctx, pod)
	}
	ready, err := c.waitRunning(ctx, pod, o.ReadyTimeout)
	if err != nil {
		c.deletePod(context.WithoutCancel(ctx), pod.Name)
		return nil, err
	}
	return ready, nil
}

// adoptPolicy makes the pod own its network policy, so the cluster's
// garbage collector removes the policy with the pod however the pod goes.
// Failing that, Release deletes it by name.
func (c *cluster) adoptPolicy(ctx context.Context, pod *corev1.Pod) {
	np, err := c.networking.NetworkPolicies(c.ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		return
	}
	np.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}
	c.networking.NetworkPolicies(c.ns).Update(ctx, np, metav1.UpdateOptions{})
}

// waitRunning watches pod until it runs, and fails at once when it cannot
// (an image that cannot be had, a pod that ended or was deleted), or
// after timeout.
func (c *cluster) waitRunning(ctx context.Context, pod *corev1.Pod, timeout time.Duration) (*corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pods := c.core.Pods(c.ns)
	last := pod
	for {
		if done, err := podReady(last); done || err != nil {
			return last, err
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", pod.Name).String(),
			ResourceVersion: last.ResourceVersion,
		})
		if err != nil {
			return nil, c.notRunning(pod.Name, last, err)
		}
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Deleted:
				w.Stop()
				return nil, fmt.Errorf("kubernetes: pod %s/%s was deleted before it ran", c.ns, pod.Name)
			case watch.Added, watch.Modified:
				if p, ok := ev.Object.(*corev1.Pod); ok {
					last = p
				}
			}
			if done, err := podReady(last); done || err != nil {
				w.Stop()
				return last, err
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return nil, c.notRunning(pod.Name, last, ctx.Err())
		}
		// The watch ended (the server closes them now and then): look
		// again and watch from there.
		p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return nil, c.notRunning(pod.Name, last, err)
		}
		last = p
	}
}

// notRunning is the error of a pod that did not come up: why, from its
// last known state.
func (c *cluster) notRunning(name string, last *corev1.Pod, err error) error {
	return fmt.Errorf("kubernetes: pod %s/%s did not start (%s): %w", c.ns, name, podState(last), err)
}

// podReady says whether pod runs (true, nil), cannot run (an error saying
// why), or may still come up (false, nil).
func podReady(pod *corev1.Pod) (bool, error) {
	if pod.DeletionTimestamp != nil {
		return false, fmt.Errorf("kubernetes: pod %s is being deleted", pod.Name)
	}
	switch pod.Status.Phase {
	case corev1.PodRunning:
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.State.Running == nil {
				return false, nil
			}
		}
		return len(pod.Status.ContainerStatuses) > 0 || len(pod.Spec.Containers) > 0, nil
	case corev1.PodFailed, corev1.PodSucceeded:
		return false, fmt.Errorf("kubernetes: pod %s ended before it could be used (%s)", pod.Name, podState(pod))
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && fatalWaiting[w.Reason] {
			return false, fmt.Errorf("kubernetes: pod %s cannot start: %s: %s", pod.Name, w.Reason, w.Message)
		}
	}
	return false, nil
}

// fatalWaiting are the waiting reasons that do not resolve by waiting
// (an image that cannot be pulled or is not present under pull policy
// Never, a spec the runtime refuses).
var fatalWaiting = map[string]bool{
	"ErrImagePull":               true,
	"ImagePullBackOff":           true,
	"ErrImageNeverPull":          true,
	"InvalidImageName":           true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
}

// podState is a pod's state in a few words: its phase, reason and
// message, and its container's waiting or terminated state.
func podState(pod *corev1.Pod) string {
	if pod == nil {
		return "unknown state"
	}
	parts := []string{"phase " + string(pod.Status.Phase)}
	if pod.Status.Phase == "" {
		parts[0] = "phase Pending"
	}
	if pod.Status.Reason != "" {
		parts = append(parts, "reason "+pod.Status.Reason)
	}
	if pod.Status.Message != "" {
		parts = append(parts, pod.Status.Message)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			parts = append(parts, "container waiting: "+cs.State.Waiting.Reason)
		case cs.State.Terminated != nil:
			t := cs.State.Terminated
			s := "container exited with code " + strconv.Itoa(int(t.ExitCode))
			if t.Reason != "" {
				s += " (" + t.Reason + ")"
			}
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ", ")
}

// deletePod deletes pod name at once (grace 0): nothing in it is kept,
// and the agent has already ended its commands. One already gone is no
// error.
func (c *cluster) deletePod(ctx context.Context, name string) error {
	err := c.core.Pods(c.ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kubernetes: delete pod %s/%s: %w", c.ns, name, err)
	}
	return nil
}

// deletePolicy deletes the network policy of pod name (one already gone,
// or never made, is no error).
func (c *cluster) deletePolicy(ctx context.Context, name string) error {
	err := c.networking.NetworkPolicies(c.ns).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kubernetes: delete network policy %s/%s: %w", c.ns, name, err)
	}
	return nil
}

// findTaskPod is the running pod of o's task, found by its labels; nil
// when there is none. A task pod that ended (evicted, failed) is deleted,
// so a new one takes its place.
func (c *cluster) findTaskPod(ctx context.Context, o Options) (*corev1.Pod, error) {
	sel := labels.SelectorFromSet(baseLabels(o)).String()
	list, err := c.core.Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: find the pod of task %s: %w", o.Task, err)
	}
	var found *corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		switch {
		case p.DeletionTimestamp != nil:
		case p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded:
			c.deletePod(ctx, p.Name)
		case found == nil || p.CreationTimestamp.After(found.CreationTimestamp.Time):
			found = p
		}
	}
	return found, nil
}
