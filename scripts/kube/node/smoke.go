package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
)

// runSmoke proves the cluster end to end: a pod is scheduled, started and
// Ready, `true` runs in it through the API server's exec, and it is deleted.
func runSmoke(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("smoke", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "admin kubeconfig")
	img := fs.String("image", "runbox-test-busybox:latest", "image of the smoke pod")
	timeout := fs.Duration("timeout", 3*time.Minute, "bound on the whole check")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := waitNodeReady(ctx, cs); err != nil {
		return err
	}
	// Pods are refused until the namespace has its default service account.
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("smoke: no default service account: %w", err)
	}
	name := fmt.Sprintf("smoke-%d", time.Now().UnixNano()%1_000_000)
	pod, err := cs.CoreV1().Pods("default").Create(ctx, sleeperPod(name, *img), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("smoke: creating pod: %w", err)
	}
	zero := int64(0)
	defer cs.CoreV1().Pods("default").Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err := waitRunning(ctx, cs, "default", name); err != nil {
		return err
	}
	var out bytes.Buffer
	if err := execIn(ctx, cfg, cs, "default", name, []string{"true"}, nil, &out, false); err != nil {
		return fmt.Errorf("smoke: exec true: %w", err)
	}
	fmt.Println("smoke: pod", name, "ran `true` through exec")
	return nil
}

func waitNodeReady(ctx context.Context, cs kubernetes.Interface) error {
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("smoke: no node became Ready: %w", err)
	}
	return nil
}

func sleeperPod(name, img string) *corev1.Pod {
	no := false
	zero := int64(0)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "runbox-smoke"}},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken:  &no,
			TerminationGracePeriodSeconds: &zero,
			RestartPolicy:                 corev1.RestartPolicyNever,
			Containers:                    []corev1.Container{{Name: "main", Image: img, Command: []string{"sleep", "3600"}}},
		},
	}
}

// waitRunning waits until the pod is Running and Ready, failing early if it
// ends or fails to start.
func waitRunning(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
	var last *corev1.Pod
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pod, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = pod
		switch pod.Status.Phase {
		case corev1.PodFailed, corev1.PodSucceeded:
			return false, fmt.Errorf("pod %s ended: %s %s %s", name, pod.Status.Phase, pod.Status.Reason, pod.Status.Message)
		case corev1.PodRunning:
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("pod %s not running (phase %q, node %q): %w", name, last.Status.Phase, last.Spec.NodeName, err)
	}
	return err
}

// execIn runs cmd in the pod's first container through the API server, over
// websockets with SPDY as the fallback (as kubectl does).
func execIn(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, ns, name string, cmd []string,
	stdin io.Reader, stdout io.Writer, tty bool) error {
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: cmd, Stdin: stdin != nil, Stdout: true, Stderr: !tty, TTY: tty}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
	if err != nil {
		return err
	}
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return err
	}
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return !errors.As(err, new(interface{ ExitStatus() int }))
	})
	if err != nil {
		return err
	}
	// Stdout and stderr are copied concurrently: they must not share a
	// writer that is not safe for that.
	opts := remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Tty: tty}
	if !tty {
		opts.Stderr = io.Discard
	}
	return exec.StreamWithContext(ctx, opts)
}
