package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/runbox/runbox/envs"
)

// Task is a task's pod or claim, as [Tasks] finds it.
type Task struct {
	// Name is the task (the runbox.task label).
	Name string
	// Kind is "pod" or "sandboxclaim"; Object is its name.
	Kind, Object string
	// Phase is the pod's phase (a claim: "claimed").
	Phase string
	// Created is when the object was made.
	Created time.Time
}

// taskSelector selects the objects of o's owner that belong to a task
// (task "": to any task).
func taskSelector(o Options, task string) (string, error) {
	set := map[string]string{LabelManaged: managedValue, LabelOwner: labelValue(o.Owner)}
	if task != "" {
		set[LabelTask] = labelValue(task)
		return labels.SelectorFromSet(set).String(), nil
	}
	req, err := labels.NewRequirement(LabelTask, selection.Exists, nil)
	if err != nil {
		return "", err
	}
	return labels.SelectorFromSet(set).Add(*req).String(), nil
}

// Tasks lists the owner's task pods and claims in the namespace (opts as
// for [New]: kubeconfig, context, namespace, owner).
func Tasks(ctx context.Context, opts Options) ([]Task, error) {
	c, o, err := dial(opts)
	if err != nil {
		return nil, err
	}
	defer c.close()
	sel, err := taskSelector(o, "")
	if err != nil {
		return nil, err
	}
	pods, err := c.core.Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: list task pods in %s: %w", c.ns, err)
	}
	var out []Task
	for _, p := range pods.Items {
		if _, claimed := p.Labels["agents.x-k8s.io/claim-uid"]; claimed {
			continue // listed as its claim
		}
		out = append(out, Task{Name: p.Labels[LabelTask], Kind: "pod", Object: p.Name, Phase: string(p.Status.Phase), Created: p.CreationTimestamp.Time})
	}
	if c.agentSandbox(ctx) != nil {
		return out, nil
	}
	claims, err := c.dyn.Resource(claimGVR).Namespace(c.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return out, fmt.Errorf("kubernetes: list task claims in %s: %w", c.ns, err)
	}
	for _, it := range claims.Items {
		out = append(out, Task{Name: it.GetLabels()[LabelTask], Kind: "sandboxclaim", Object: it.GetName(), Phase: "claimed", Created: it.GetCreationTimestamp().Time})
	}
	return out, nil
}

// RemoveTask deletes the owner's pods and claims of task (grace 0) and
// returns "pod/NAME" and "sandboxclaim/NAME" for each. A task with none
// is an error that matches [envs.ErrNotFound].
func RemoveTask(ctx context.Context, opts Options, task string) ([]string, error) {
	if task == "" {
		return nil, fmt.Errorf("kubernetes: remove task: no task named: %w", envs.ErrBadCommand)
	}
	ts, err := Tasks(ctx, opts)
	if err != nil {
		return nil, err
	}
	o, _ := fill(opts)
	c, err := connect(o)
	if err != nil {
		return nil, err
	}
	defer c.close()
	var done []string
	var errs []error
	for _, t := range ts {
		if t.Name != labelValue(task) {
			continue
		}
		if t.Kind == "pod" {
			err = c.deletePod(ctx, t.Object)
		} else {
			err = c.deleteClaim(ctx, t.Object)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, t.Kind+"/"+t.Object)
	}
	if len(done) == 0 && len(errs) == 0 {
		return nil, fmt.Errorf("kubernetes: task %s has no pod or claim in namespace %s: %w", task, c.ns, envs.ErrNotFound)
	}
	return done, errors.Join(errs...)
}
