package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// The garbage collector stands in for kube-controller-manager's: an object
// whose owners (metadata.ownerReferences) are all gone is deleted, in the
// background, as with propagationPolicy Background. Agent Sandbox's
// controller relies on it: a deleted SandboxClaim or SandboxWarmPool leaves
// its Sandboxes to it, and a deleted Sandbox its pod and Service.
//
// Unlike the real one it watches a fixed list of resources, knows owners
// only among them, and does not honour foreground deletion or orphaning
// (nothing in the tests asks for either). An owner counts as gone when a
// live read finds no object of its name with its UID, never from a cache, so
// a dependent created just before its owner is seen is not collected.
var (
	gvrPod      = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	gvrService  = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	gvrSandbox  = schema.GroupVersionResource{Group: "agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxes"}
	gvrClaim    = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxclaims"}
	gvrTemplate = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxtemplates"}
	gvrPool     = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxwarmpools"}
)

// collected are the resources whose objects the collector deletes, and
// owners the kinds it can look an owner up as (by apiVersion and kind).
var (
	collected = []schema.GroupVersionResource{gvrPod, gvrService, gvrSandbox}
	owners    = map[schema.GroupVersionKind]schema.GroupVersionResource{
		gvrSandbox.GroupVersion().WithKind("Sandbox"):      gvrSandbox,
		gvrClaim.GroupVersion().WithKind("SandboxClaim"):   gvrClaim,
		gvrPool.GroupVersion().WithKind("SandboxWarmPool"): gvrPool,
	}
)

// gcResync is how often every namespace is looked at again even without an
// event (a missed watch event delays a collection by at most this).
const gcResync = 30 * time.Second

type garbageCollector struct {
	dyn dynamic.Interface
	log *slog.Logger
}

// run collects garbage until ctx ends. Any change to a collected object or
// an owner queues its namespace; a pass reads that namespace's dependents
// from the API server.
func (g *garbageCollector) run(ctx context.Context) {
	q := newQueue()
	byNamespace := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if m, err := meta.Accessor(obj); err == nil {
			q.Add(m.GetNamespace())
		}
	}
	h := cache.ResourceEventHandlerFuncs{AddFunc: byNamespace, UpdateFunc: func(_, o any) { byNamespace(o) }, DeleteFunc: byNamespace}
	f := dynamicinformer.NewDynamicSharedInformerFactory(g.dyn, gcResync)
	seen := map[schema.GroupVersionResource]bool{}
	for _, gvr := range collected {
		seen[gvr] = true
	}
	for _, gvr := range owners {
		seen[gvr] = true
	}
	for gvr := range seen {
		if _, err := f.ForResource(gvr).Informer().AddEventHandler(h); err != nil {
			g.log.Error("garbage collector handler", "err", err)
			return
		}
	}
	f.Start(ctx.Done())
	defer f.Shutdown()
	runQueue(ctx, q, g.log, g.collect)
}

// collect deletes the objects of namespace ns whose owners are all gone.
func (g *garbageCollector) collect(ctx context.Context, ns string) error {
	gone := map[types.UID]bool{} // owner UID → gone, read once per pass
	var errs []error
	for _, gvr := range collected {
		list, err := g.dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			continue // a CRD not installed
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("node: gc: listing %s: %w", gvr.Resource, err))
			continue
		}
		for i := range list.Items {
			obj := &list.Items[i]
			refs := obj.GetOwnerReferences()
			if len(refs) == 0 || obj.GetDeletionTimestamp() != nil {
				continue
			}
			orphan := true
			for _, ref := range refs {
				dead, err := g.ownerGone(ctx, ns, ref, gone)
				if err != nil {
					errs = append(errs, err)
				}
				if err != nil || !dead {
					orphan = false
					break
				}
			}
			if !orphan {
				continue
			}
			g.log.Info("gc: deleting an orphan", "resource", gvr.Resource, "namespace", ns, "name", obj.GetName())
			uid := obj.GetUID()
			opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
			if gvr == gvrPod {
				// The pods of the tests' sandboxes hold nothing worth a grace period.
				opts.GracePeriodSeconds = new(int64)
			}
			err := g.dyn.Resource(gvr).Namespace(ns).Delete(ctx, obj.GetName(), opts)
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				errs = append(errs, fmt.Errorf("node: gc: deleting %s %s/%s: %w", gvr.Resource, ns, obj.GetName(), err))
			}
		}
	}
	return errors.Join(errs...)
}

// ownerGone reports whether ref names an object that no longer exists (by
// name and UID). An owner of a kind it does not know is never gone.
func (g *garbageCollector) ownerGone(ctx context.Context, ns string, ref metav1.OwnerReference, gone map[types.UID]bool) (bool, error) {
	if v, ok := gone[ref.UID]; ok {
		return v, nil
	}
	gvr, ok := owners[schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)]
	if !ok {
		return false, nil
	}
	u, err := g.dyn.Resource(gvr).Namespace(ns).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		gone[ref.UID] = true
	case err != nil:
		return false, fmt.Errorf("node: gc: reading owner %s %s/%s: %w", ref.Kind, ns, ref.Name, err)
	default:
		gone[ref.UID] = u.GetUID() != ref.UID
	}
	return gone[ref.UID], nil
}
