package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// holder is AnnotationHolder's value for this process: the host, the pid
// and the process's start time (so a recycled pid is not taken for it).
func holder() string {
	host, _ := os.Hostname()
	pid := os.Getpid()
	return fmt.Sprintf("%s/%d/%s", host, pid, startTime(pid))
}

// startTime is process pid's start time in clock ticks since boot, from
// /proc ("" where it cannot be read).
func startTime(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name may hold spaces and parentheses: fields count from
	// the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19] // field 22 of stat, the 20th after the name
}

// holderGone says whether the process an annotation names is gone. Only a
// holder on this host can be judged; another host's is never gone.
func holderGone(h string) bool {
	host, rest, ok := strings.Cut(h, "/")
	if !ok {
		return false
	}
	me, _ := os.Hostname()
	if host != me {
		return false
	}
	pidS, start, _ := strings.Cut(rest, "/")
	pid, err := strconv.Atoi(pidS)
	if err != nil {
		return false
	}
	now := startTime(pid)
	return now == "" || start != "" && now != start
}

// Reap deletes owner's ephemeral pods and claims ("" means the current
// user's, as [Options].Owner) whose runbox process is gone: those a
// crashed or killed runbox on this host left behind. Task pods and
// claims are kept (runbox tasks removes them), and so is what a runbox
// on another host holds. It returns the names it deleted.
func Reap(ctx context.Context, opts Options) ([]string, error) {
	c, o, err := dial(opts)
	if err != nil {
		return nil, err
	}
	defer c.close()
	req, err := labels.NewRequirement(LabelTask, selection.DoesNotExist, nil)
	if err != nil {
		return nil, err
	}
	sel := labels.SelectorFromSet(map[string]string{LabelManaged: managedValue, LabelOwner: labelValue(o.Owner)}).Add(*req).String()
	var reaped []string
	var errs []error
	pods, err := c.core.Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: reap: list pods: %w", err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || !holderGone(p.Annotations[AnnotationHolder]) {
			continue
		}
		err := c.deletePod(ctx, p.Name)
		if err == nil {
			err = c.deletePolicy(ctx, p.Name)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		reaped = append(reaped, "pod/"+p.Name)
	}
	if c.agentSandbox(ctx) != nil {
		return reaped, errors.Join(errs...)
	}
	claims, err := c.dyn.Resource(claimGVR).Namespace(c.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return reaped, errors.Join(append(errs, fmt.Errorf("kubernetes: reap: list claims: %w", err))...)
	}
	for _, it := range claims.Items {
		if it.GetDeletionTimestamp() != nil || !holderGone(it.GetAnnotations()[AnnotationHolder]) {
			continue
		}
		if err := c.deleteClaim(ctx, it.GetName()); err != nil {
			errs = append(errs, err)
			continue
		}
		reaped = append(reaped, "sandboxclaim/"+it.GetName())
	}
	return reaped, errors.Join(errs...)
}
