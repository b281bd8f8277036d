package kubernetes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Direct does with client-go alone what `kubectl run` and `kubectl exec`
// do — a pod that idles, an exec to its end — without runbox's agent,
// labels or checks: the baseline runbox bench measures the backend
// against, in the same run, on the same cluster and image.
type Direct struct {
	c    *cluster
	opts Options
}

// NewDirect connects as the backend would with opts (kubeconfig,
// context, namespace, image, pull policy, owner).
func NewDirect(opts Options) (*Direct, error) {
	o, err := fill(opts)
	if err != nil {
		return nil, err
	}
	c, err := connect(o)
	if err != nil {
		return nil, err
	}
	return &Direct{c: c, opts: o}, nil
}

// RunPod creates a pod of the image running `sleep infinity` (as `kubectl
// run NAME --image IMAGE -- sleep infinity`, labelled with the owner so a
// bench run's leftovers are found) and waits until it runs.
func (d *Direct) RunPod(ctx context.Context) (string, error) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "runbox-bench-", Labels: map[string]string{LabelManaged: managedValue, LabelOwner: labelValue(d.opts.Owner)}},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			RestartPolicy:                corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: ContainerName, Image: d.opts.Image, ImagePullPolicy: corev1.PullPolicy(d.opts.PullPolicy),
				Command: []string{"sleep", "infinity"},
			}},
		},
	}
	got, err := d.c.core.Pods(d.c.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("kubernetes: create pod: %w", err)
	}
	if _, err := d.c.waitRunning(ctx, got, d.opts.ReadyTimeout); err != nil {
		d.Delete(context.WithoutCancel(ctx), got.Name)
		return "", err
	}
	return got.Name, nil
}

// Exec runs argv in pod to its end (as `kubectl exec POD -- argv`) and
// fails on a non-zero exit.
func (d *Direct) Exec(ctx context.Context, pod string, argv ...string) error {
	code, stderr, err := d.c.execRun(ctx, pod, ContainerName, argv, nil)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("kubernetes: %v in pod %s exited %d: %s", argv, pod, code, stderr)
	}
	return nil
}

// Delete deletes pod with grace period 0, as runbox's own close does.
func (d *Direct) Delete(ctx context.Context, pod string) error { return d.c.deletePod(ctx, pod) }

// Close ends the client's connections.
func (d *Direct) Close() { d.c.close() }

// KubectlFlags are the kubectl flags that reach the cluster, context and
// namespace Direct uses, for a baseline that runs kubectl itself.
func (d *Direct) KubectlFlags() []string {
	var f []string
	if d.opts.Kubeconfig != "" {
		f = append(f, "--kubeconfig", d.opts.Kubeconfig)
	}
	if d.opts.Context != "" {
		f = append(f, "--context", d.opts.Context)
	}
	return append(f, "--namespace", d.c.ns)
}

// Image is the image Direct's pods run.
func (d *Direct) Image() string { return d.opts.Image }

// PullPolicy is the image pull policy of Direct's pods.
func (d *Direct) PullPolicy() string { return d.opts.PullPolicy }
