package main

import (
	"context"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// The cluster has no kube-scheduler and no kube-controller-manager. This file
// does the few jobs of theirs that tests rely on:
//   - scheduling: every pod without a node is bound to this node;
//   - service accounts: each namespace gets its "default" account (the
//     ServiceAccount admission plugin refuses pods without it);
//   - namespace deletion: a deleted namespace's pods and Agent Sandbox
//     objects are removed and the namespace finalized, so it does not stay
//     Terminating;
//   - garbage collection (gc.go).

// runQueue drains q with handle until ctx ends, requeueing failed keys with
// the queue's backoff.
func runQueue(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], log *slog.Logger, handle func(context.Context, string) error) {
	go func() {
		<-ctx.Done()
		q.ShutDown()
	}()
	for {
		key, quit := q.Get()
		if quit {
			return
		}
		if err := handle(ctx, key); err != nil && ctx.Err() == nil {
			log.Warn("retrying", "key", key, "err", err)
			q.AddRateLimited(key)
		} else {
			q.Forget(key)
		}
		q.Done(key)
	}
}

func newQueue() workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 5*time.Second))
}

func enqueueAll(q workqueue.TypedRateLimitingInterface[string]) cache.ResourceEventHandlerFuncs {
	add := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			q.Add(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }}
}

// runScheduler binds each unscheduled pod to node through the Binding
// subresource, as kube-scheduler does.
func runScheduler(ctx context.Context, cs kubernetes.Interface, node string, log *slog.Logger) {
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", "").String()
	}))
	inf := f.Core().V1().Pods()
	q := newQueue()
	if _, err := inf.Informer().AddEventHandler(enqueueAll(q)); err != nil {
		log.Error("scheduler handler", "err", err)
		return
	}
	f.Start(ctx.Done())
	defer f.Shutdown()
	runQueue(ctx, q, log, func(ctx context.Context, key string) error {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		pod, err := inf.Lister().Pods(ns).Get(name)
		if apierrors.IsNotFound(err) || (err == nil && (pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil)) {
			return nil
		}
		if err != nil {
			return err
		}
		err = cs.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node},
		}, metav1.CreateOptions{})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // bound already, or gone
		}
		return err
	})
}

// runNamespaces gives every namespace its default service account and
// finalizes deleted namespaces once their pods are gone.
func runNamespaces(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, log *slog.Logger) {
	f := informers.NewSharedInformerFactory(cs, 0)
	inf := f.Core().V1().Namespaces()
	q := newQueue()
	if _, err := inf.Informer().AddEventHandler(enqueueAll(q)); err != nil {
		log.Error("namespace handler", "err", err)
		return
	}
	f.Start(ctx.Done())
	defer f.Shutdown()
	runQueue(ctx, q, log, func(ctx context.Context, name string) error {
		ns, err := inf.Lister().Get(name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if ns.DeletionTimestamp != nil {
			return finalizeNamespace(ctx, cs, dyn, ns)
		}
		_, err = cs.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{
			ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) || apierrors.IsForbidden(err) {
			return nil // a namespace being deleted forbids creation
		}
		return err
	})
}

// finalizeNamespace deletes what in the namespace would otherwise keep
// acting (the Agent Sandbox objects, which make pods, and the pods), then
// lets the namespace go. Other objects stay in etcd unseen.
func finalizeNamespace(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, ns *corev1.Namespace) error {
	if len(ns.Spec.Finalizers) == 0 {
		return nil
	}
	for _, gvr := range []schema.GroupVersionResource{gvrClaim, gvrPool, gvrTemplate, gvrSandbox} {
		err := dyn.Resource(gvr).Namespace(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	zero := int64(0)
	if err := cs.CoreV1().Pods(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
		return err
	}
	ns = ns.DeepCopy()
	ns.Spec.Finalizers = nil
	_, err := cs.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
