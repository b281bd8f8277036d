package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// sandboxController is a small Agent Sandbox controller: warm pools keep
// their replicas of Sandboxes made from their template, claims adopt a ready
// one (or get a new Sandbox named after the claim), each Sandbox gets a pod
// of its own name, and, since the cluster has no garbage collector, objects
// whose controlling owner is gone are deleted (claim → Sandbox → pod).
//
// Informers only say which namespace changed; each pass then reads that
// namespace from the API server, so one worker never acts on a stale cache
// (no double creation while a create is still in flight).
type sandboxController struct {
	cs  kubernetes.Interface
	dyn dynamic.Interface
	log *slog.Logger
}

func (c *sandboxController) run(ctx context.Context) {
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
	df := dynamicinformer.NewDynamicSharedInformerFactory(c.dyn, 30*time.Second)
	for _, gvr := range []schema.GroupVersionResource{gvrSandbox, gvrClaim, gvrTemplate, gvrPool} {
		if _, err := df.ForResource(gvr).Informer().AddEventHandler(h); err != nil {
			c.log.Error("sandbox controller handler", "err", err)
			return
		}
	}
	kf := informers.NewSharedInformerFactory(c.cs, 30*time.Second)
	if _, err := kf.Core().V1().Pods().Informer().AddEventHandler(h); err != nil {
		c.log.Error("sandbox controller handler", "err", err)
		return
	}
	df.Start(ctx.Done())
	kf.Start(ctx.Done())
	defer df.Shutdown()
	defer kf.Shutdown()
	runQueue(ctx, q, c.log, c.reconcile)
}

// state is one namespace as read at the start of a pass.
type state struct {
	ns        string
	templates map[string]*template
	pools     []*warmPool
	claims    []*claim
	sandboxes []*sandbox
	pods      map[string]*corev1.Pod
	uids      map[types.UID]bool // every claim, pool and sandbox
}

func (c *sandboxController) reconcile(ctx context.Context, ns string) error {
	st, err := c.read(ctx, ns)
	if err != nil {
		return err
	}
	var errs []error
	errs = append(errs, c.collectGarbage(ctx, st))
	for _, p := range st.pools {
		errs = append(errs, c.reconcilePool(ctx, st, p))
	}
	for _, cl := range st.claims {
		errs = append(errs, c.reconcileClaim(ctx, st, cl))
	}
	for _, sb := range st.sandboxes {
		errs = append(errs, c.reconcileSandbox(ctx, st, sb))
	}
	return errors.Join(errs...)
}

func listAs[T any](ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns string) ([]*T, error) {
	list, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil // CRDs not installed
	}
	if err != nil {
		return nil, fmt.Errorf("node: listing %s: %w", gvr.Resource, err)
	}
	out := make([]*T, 0, len(list.Items))
	for _, u := range list.Items {
		v := new(T)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, v); err != nil {
			return nil, fmt.Errorf("node: decoding %s %s: %w", gvr.Resource, u.GetName(), err)
		}
		out = append(out, v)
	}
	return out, nil
}

func (c *sandboxController) read(ctx context.Context, ns string) (*state, error) {
	st := &state{ns: ns, templates: map[string]*template{}, pods: map[string]*corev1.Pod{}, uids: map[types.UID]bool{}}
	tpls, err := listAs[template](ctx, c.dyn, gvrTemplate, ns)
	if err != nil {
		return nil, err
	}
	for _, t := range tpls {
		st.templates[t.Name] = t
	}
	if st.pools, err = listAs[warmPool](ctx, c.dyn, gvrPool, ns); err != nil {
		return nil, err
	}
	if st.claims, err = listAs[claim](ctx, c.dyn, gvrClaim, ns); err != nil {
		return nil, err
	}
	if st.sandboxes, err = listAs[sandbox](ctx, c.dyn, gvrSandbox, ns); err != nil {
		return nil, err
	}
	pods, err := c.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("node: listing pods: %w", err)
	}
	for i := range pods.Items {
		st.pods[pods.Items[i].Name] = &pods.Items[i]
	}
	for _, o := range st.pools {
		st.uids[o.UID] = true
	}
	for _, o := range st.claims {
		st.uids[o.UID] = true
	}
	for _, o := range st.sandboxes {
		st.uids[o.UID] = true
	}
	return st, nil
}

// orphaned reports whether obj's controller is one of kinds and no longer
// exists.
func orphaned(obj metav1.Object, uids map[types.UID]bool, kinds ...string) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && slices.Contains(kinds, ref.Kind) && !uids[ref.UID]
}

func (c *sandboxController) collectGarbage(ctx context.Context, st *state) error {
	var errs []error
	zero := int64(0)
	for _, sb := range st.sandboxes {
		if sb.DeletionTimestamp == nil && orphaned(sb, st.uids, "SandboxClaim", "SandboxWarmPool") {
			err := c.dyn.Resource(gvrSandbox).Namespace(st.ns).Delete(ctx, sb.Name, metav1.DeleteOptions{})
			errs = append(errs, ignoreNotFound(err))
			delete(st.uids, sb.UID)
		}
	}
	st.sandboxes = slices.DeleteFunc(st.sandboxes, func(sb *sandbox) bool { return !st.uids[sb.UID] })
	for _, pod := range st.pods {
		if pod.DeletionTimestamp == nil && orphaned(pod, st.uids, "Sandbox") {
			err := c.cs.CoreV1().Pods(st.ns).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
			errs = append(errs, ignoreNotFound(err))
		}
	}
	return errors.Join(errs...)
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func ownerRef(kind, apiVersion string, o metav1.Object) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: o.GetName(), UID: o.GetUID(),
		Controller: &yes, BlockOwnerDeletion: &yes}
}

func ownedBy(obj metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == uid
}

func isReady(sb *sandbox) bool {
	return meta.IsStatusConditionTrue(sb.Status.Conditions, condReady)
}

// newSandboxFromTemplate builds the Sandbox a pool or a cold claim creates,
// with the secure default the real controller applies (no service-account
// token unless the template asks for one).
func newSandboxFromTemplate(t *template) *sandbox {
	sb := &sandbox{TypeMeta: metav1.TypeMeta{APIVersion: gvrSandbox.GroupVersion().String(), Kind: "Sandbox"}}
	bp := t.Spec.blueprint
	raw, _ := json.Marshal(bp)
	_ = json.Unmarshal(raw, &sb.Spec.blueprint) // deep copy
	if sb.Spec.PodTemplate.Spec.AutomountServiceAccountToken == nil {
		no := false
		sb.Spec.PodTemplate.Spec.AutomountServiceAccountToken = &no
	}
	if sb.Spec.PodTemplate.ObjectMeta.Labels == nil {
		sb.Spec.PodTemplate.ObjectMeta.Labels = map[string]string{}
	}
	sb.Labels = map[string]string{labelTemplateRefHash: nameHash(t.Name)}
	sb.Annotations = map[string]string{annTemplateRef: t.Name}
	sb.Spec.PodTemplate.ObjectMeta.Labels[labelTemplateRefHash] = nameHash(t.Name)
	return sb
}

func (c *sandboxController) create(ctx context.Context, sb *sandbox) (*sandbox, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(sb)
	if err != nil {
		return nil, err
	}
	delete(obj, "status")
	u, err := c.dyn.Resource(gvrSandbox).Namespace(sb.Namespace).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("node: creating sandbox: %w", err)
	}
	out := new(sandbox)
	return out, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out)
}

func (c *sandboxController) patch(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, patch any, sub ...string) error {
	raw, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = c.dyn.Resource(gvr).Namespace(ns).Patch(ctx, name, types.MergePatchType, raw, metav1.PatchOptions{}, sub...)
	if err != nil {
		return fmt.Errorf("node: patching %s %s: %w", gvr.Resource, name, err)
	}
	return nil
}

// reconcilePool keeps spec.replicas unclaimed Sandboxes (default 1) and
// reports replicas, readyReplicas, selector and observedGeneration.
func (c *sandboxController) reconcilePool(ctx context.Context, st *state, p *warmPool) error {
	if p.DeletionTimestamp != nil {
		return nil
	}
	hash := nameHash(p.Name)
	var members []*sandbox
	for _, sb := range st.sandboxes {
		if ownedBy(sb, p.UID) && sb.DeletionTimestamp == nil {
			members = append(members, sb)
		}
	}
	want := int32(1)
	if p.Spec.Replicas != nil {
		want = *p.Spec.Replicas
	}
	t := st.templates[p.Spec.TemplateRef.Name]
	for int32(len(members)) < want && t != nil {
		sb := newSandboxFromTemplate(t)
		sb.GenerateName = p.Name + "-"
		sb.Namespace = st.ns
		sb.Labels[labelWarmPool] = hash
		sb.Labels[labelLaunchType] = "warm"
		sb.Labels[labelCreatedBy] = "controller"
		sb.Spec.PodTemplate.ObjectMeta.Labels[labelWarmPool] = hash
		sb.OwnerReferences = []metav1.OwnerReference{ownerRef("SandboxWarmPool", gvrPool.GroupVersion().String(), p)}
		created, err := c.create(ctx, sb)
		if err != nil {
			return err
		}
		members = append(members, created)
		st.sandboxes = append(st.sandboxes, created)
		st.uids[created.UID] = true
	}
	// Excess members go, those not ready first.
	slices.SortStableFunc(members, func(a, b *sandbox) int {
		ra, rb := isReady(a), isReady(b)
		if ra == rb {
			return 0
		} else if ra {
			return 1
		}
		return -1
	})
	for int32(len(members)) > want {
		if err := c.dyn.Resource(gvrSandbox).Namespace(st.ns).Delete(ctx, members[0].Name, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
			return err
		}
		members = members[1:]
	}
	status := warmPoolStatus{Replicas: int32(len(members)), Selector: labelWarmPool + "=" + hash, ObservedGeneration: p.Generation}
	for _, sb := range members {
		if isReady(sb) {
			status.ReadyReplicas++
		}
	}
	if status == p.Status {
		return nil
	}
	// A merge patch omits zero counts; set them explicitly.
	return c.patch(ctx, gvrPool, st.ns, p.Name, map[string]any{"status": map[string]any{
		"replicas": status.Replicas, "readyReplicas": status.ReadyReplicas, "selector": status.Selector,
		"observedGeneration": status.ObservedGeneration}}, "status")
}

// reconcileClaim finds or makes the claim's Sandbox and mirrors its status:
// status.sandbox.name, status.sandbox.podIPs, and the Sandbox's Ready and
// Finished conditions.
func (c *sandboxController) reconcileClaim(ctx context.Context, st *state, cl *claim) error {
	if cl.DeletionTimestamp != nil {
		return nil
	}
	sb, cond, err := c.claimSandbox(ctx, st, cl)
	if err != nil {
		return err
	}
	status := claimStatus{Conditions: slices.Clone(cl.Status.Conditions)}
	if sb != nil {
		status.Sandbox.Name = sb.Name
		status.Sandbox.PodIPs = sb.Status.PodIPs
		if cond == nil {
			if r := meta.FindStatusCondition(sb.Status.Conditions, condReady); r != nil {
				cond = r
			} else {
				cond = &metav1.Condition{Type: condReady, Status: metav1.ConditionFalse, Reason: "SandboxNotReady", Message: "Sandbox is not ready"}
			}
		}
		if f := meta.FindStatusCondition(sb.Status.Conditions, condFinished); f != nil {
			meta.SetStatusCondition(&status.Conditions, *f)
		} else {
			meta.RemoveStatusCondition(&status.Conditions, condFinished)
		}
	}
	ready := *cond
	ready.ObservedGeneration = cl.Generation
	meta.SetStatusCondition(&status.Conditions, ready)
	if reflect.DeepEqual(status, cl.Status) {
		return nil
	}
	return c.patch(ctx, gvrClaim, st.ns, cl.Name, map[string]any{"status": map[string]any{
		"conditions": status.Conditions,
		"sandbox":    map[string]any{"name": status.Sandbox.Name, "podIPs": status.Sandbox.PodIPs}}}, "status")
}

// claimSandbox returns the claim's Sandbox, adopting a ready one from the
// warm pool or creating one named after the claim. A non-nil condition says
// why the claim has none.
func (c *sandboxController) claimSandbox(ctx context.Context, st *state, cl *claim) (*sandbox, *metav1.Condition, error) {
	for _, sb := range st.sandboxes {
		if ownedBy(sb, cl.UID) {
			return sb, nil, c.annotateClaim(ctx, st, cl, sb)
		}
	}
	notReady := func(reason, msg string) *metav1.Condition {
		return &metav1.Condition{Type: condReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	}
	var pool *warmPool
	for _, p := range st.pools {
		if p.Name == cl.Spec.WarmPoolRef.Name {
			pool = p
		}
	}
	if pool == nil {
		return nil, notReady("WarmPoolNotFound", fmt.Sprintf("SandboxWarmPool %q not found", cl.Spec.WarmPoolRef.Name)), nil
	}
	t := st.templates[pool.Spec.TemplateRef.Name]
	if t == nil {
		return nil, notReady("TemplateNotFound", fmt.Sprintf("SandboxTemplate %q not found", pool.Spec.TemplateRef.Name)), nil
	}
	if len(cl.Spec.Env) == 0 {
		for _, sb := range st.sandboxes {
			if ownedBy(sb, pool.UID) && sb.DeletionTimestamp == nil && isReady(sb) {
				if err := c.adopt(ctx, st, cl, sb); err != nil {
					return nil, nil, err
				}
				return sb, nil, c.annotateClaim(ctx, st, cl, sb)
			}
		}
	}
	sb := newSandboxFromTemplate(t)
	sb.Name, sb.Namespace = cl.Name, st.ns
	sb.Labels[labelClaimUID] = string(cl.UID)
	sb.Labels[labelLaunchType] = "cold"
	pt := &sb.Spec.PodTemplate
	pt.ObjectMeta.Labels[labelClaimUID] = string(cl.UID)
	mergeMetadata(&pt.ObjectMeta, cl.Spec.AdditionalPodMetadata)
	if len(cl.Spec.Env) > 0 {
		policy := t.Spec.EnvVarsInjectionPolicy
		if policy != "Allowed" && policy != "Overrides" {
			return nil, notReady("EnvVarsInjectionRejected", "environment variable injection is not allowed by the template policy"), nil
		}
		for _, e := range cl.Spec.Env {
			for i := range pt.Spec.Containers {
				ct := &pt.Spec.Containers[i]
				if ct.Name == e.ContainerName || (e.ContainerName == "" && i == 0) {
					ct.Env = append(slices.DeleteFunc(ct.Env, func(v corev1.EnvVar) bool { return v.Name == e.Name && policy == "Overrides" }),
						corev1.EnvVar{Name: e.Name, Value: e.Value})
				}
			}
		}
	}
	sb.OwnerReferences = []metav1.OwnerReference{ownerRef("SandboxClaim", gvrClaim.GroupVersion().String(), cl)}
	created, err := c.create(ctx, sb)
	if err != nil {
		return nil, nil, err
	}
	st.sandboxes = append(st.sandboxes, created)
	st.uids[created.UID] = true
	return created, nil, c.annotateClaim(ctx, st, cl, created)
}

func mergeMetadata(dst *podMetadata, add podMetadata) {
	if len(add.Labels) > 0 {
		if dst.Labels == nil {
			dst.Labels = map[string]string{}
		}
		maps.Copy(dst.Labels, add.Labels)
	}
	if len(add.Annotations) > 0 {
		if dst.Annotations == nil {
			dst.Annotations = map[string]string{}
		}
		maps.Copy(dst.Annotations, add.Annotations)
	}
}

// adopt moves a warm Sandbox from its pool to the claim, as the real
// controller does: pool labels removed, launch type warm, the claim's UID
// label on the Sandbox and its pod template, the claim as controller.
func (c *sandboxController) adopt(ctx context.Context, st *state, cl *claim, sb *sandbox) error {
	podLabels := maps.Clone(sb.Spec.PodTemplate.ObjectMeta.Labels)
	if podLabels == nil {
		podLabels = map[string]string{}
	}
	delete(podLabels, labelWarmPool)
	podLabels[labelClaimUID] = string(cl.UID)
	meta := podMetadata{Labels: podLabels, Annotations: sb.Spec.PodTemplate.ObjectMeta.Annotations}
	mergeMetadata(&meta, cl.Spec.AdditionalPodMetadata)
	patch := map[string]any{
		"metadata": map[string]any{
			"resourceVersion": sb.ResourceVersion, // fails rather than adopting twice
			"labels": map[string]any{labelWarmPool: nil, labelTemplateHash: nil,
				labelLaunchType: "warm", labelClaimUID: string(cl.UID)},
			"annotations":     map[string]any{annPodName: sb.Name},
			"ownerReferences": []metav1.OwnerReference{ownerRef("SandboxClaim", gvrClaim.GroupVersion().String(), cl)},
		},
		"spec": map[string]any{"podTemplate": map[string]any{"metadata": meta}},
	}
	if err := c.patch(ctx, gvrSandbox, st.ns, sb.Name, patch); err != nil {
		return err
	}
	sb.OwnerReferences = []metav1.OwnerReference{ownerRef("SandboxClaim", gvrClaim.GroupVersion().String(), cl)}
	sb.Spec.PodTemplate.ObjectMeta = meta
	return nil
}

// annotateClaim records the Sandbox's name on the claim
// (agents.x-k8s.io/sandbox-name), as the real controller does.
func (c *sandboxController) annotateClaim(ctx context.Context, st *state, cl *claim, sb *sandbox) error {
	if cl.Annotations[annSandboxName] == sb.Name {
		return nil
	}
	return c.patch(ctx, gvrClaim, st.ns, cl.Name, map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{annSandboxName: sb.Name}}})
}

// reconcileSandbox keeps the Sandbox's pod (named after the Sandbox) and
// headless Service when asked for, and computes its status as the real
// controller does.
func (c *sandboxController) reconcileSandbox(ctx context.Context, st *state, sb *sandbox) error {
	if sb.DeletionTimestamp != nil {
		return nil
	}
	hash := nameHash(sb.Name)
	podName := sb.Name
	if n := sb.Annotations[annPodName]; n != "" {
		podName = n
	}
	pod := st.pods[podName]
	if pod != nil && !ownedBy(pod, sb.UID) {
		pod = nil // a stranger's pod is never adopted
	}
	suspended := sb.Spec.OperatingMode == "Suspended"
	var err error
	switch {
	case suspended && pod != nil:
		zero := int64(0)
		err = ignoreNotFound(c.cs.CoreV1().Pods(st.ns).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}))
	case !suspended && pod == nil && st.pods[podName] == nil:
		pod, err = c.createPod(ctx, st, sb, hash)
	case pod != nil:
		err = c.syncPodMetadata(ctx, st, sb, pod)
	}
	if err != nil {
		return err
	}
	if sb.Annotations[annPodName] != podName && !suspended {
		if err := c.patch(ctx, gvrSandbox, st.ns, sb.Name, map[string]any{"metadata": map[string]any{
			"annotations": map[string]any{annPodName: podName}}}); err != nil {
			return err
		}
	}
	svc, err := c.reconcileService(ctx, st, sb, hash)
	if err != nil {
		return err
	}
	status := computeSandboxStatus(sb, pod, svc, hash)
	if reflect.DeepEqual(status, sb.Status) {
		return nil
	}
	return c.patch(ctx, gvrSandbox, st.ns, sb.Name, map[string]any{"status": map[string]any{
		"conditions": status.Conditions, "selector": status.LabelSelector, "podIPs": status.PodIPs,
		"nodeName": status.NodeName, "service": status.Service, "serviceFQDN": status.ServiceFQDN}}, "status")
}

func (c *sandboxController) createPod(ctx context.Context, st *state, sb *sandbox, hash string) (*corev1.Pod, error) {
	pt := sb.Spec.PodTemplate
	labels := maps.Clone(pt.ObjectMeta.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[labelSandboxNameHash] = hash
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: sb.Name, Namespace: st.ns, Labels: labels, Annotations: pt.ObjectMeta.Annotations,
			OwnerReferences: []metav1.OwnerReference{ownerRef("Sandbox", gvrSandbox.GroupVersion().String(), sb)}},
		Spec: *pt.Spec.DeepCopy(),
	}
	created, err := c.cs.CoreV1().Pods(st.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("node: creating pod for sandbox %s: %w", sb.Name, err)
	}
	st.pods[created.Name] = created
	return created, nil
}

// syncPodMetadata carries the template's labels and annotations to the
// running pod (an adopted pod gains its claim's UID label this way).
func (c *sandboxController) syncPodMetadata(ctx context.Context, st *state, sb *sandbox, pod *corev1.Pod) error {
	want := podMetadata{Labels: map[string]string{}, Annotations: map[string]string{}}
	for k, v := range sb.Spec.PodTemplate.ObjectMeta.Labels {
		if pod.Labels[k] != v {
			want.Labels[k] = v
		}
	}
	for k, v := range sb.Spec.PodTemplate.ObjectMeta.Annotations {
		if pod.Annotations[k] != v {
			want.Annotations[k] = v
		}
	}
	// The pool's label leaves the pod once the pod is claimed.
	patchLabels := map[string]any{}
	for k, v := range want.Labels {
		patchLabels[k] = v
	}
	if _, ok := sb.Spec.PodTemplate.ObjectMeta.Labels[labelWarmPool]; !ok {
		if _, has := pod.Labels[labelWarmPool]; has {
			patchLabels[labelWarmPool] = nil
		}
	}
	if len(patchLabels) == 0 && len(want.Annotations) == 0 {
		return nil
	}
	raw, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": patchLabels, "annotations": want.Annotations}})
	_, err := c.cs.CoreV1().Pods(st.ns).Patch(ctx, pod.Name, types.MergePatchType, raw, metav1.PatchOptions{})
	return ignoreNotFound(err)
}

// reconcileService makes a headless Service when spec.service is true and
// removes it when false; unset leaves an existing one alone.
func (c *sandboxController) reconcileService(ctx context.Context, st *state, sb *sandbox, hash string) (*corev1.Service, error) {
	svcs := c.cs.CoreV1().Services(st.ns)
	svc, err := svcs.Get(ctx, sb.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		svc, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	want := sb.Spec.Service
	switch {
	case want != nil && !*want && svc != nil:
		return nil, ignoreNotFound(svcs.Delete(ctx, sb.Name, metav1.DeleteOptions{}))
	case want != nil && *want && svc == nil:
		return svcs.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: sb.Name, Labels: map[string]string{labelSandboxNameHash: hash},
				OwnerReferences: []metav1.OwnerReference{ownerRef("Sandbox", gvrSandbox.GroupVersion().String(), sb)}},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{labelSandboxNameHash: hash}},
		}, metav1.CreateOptions{})
	}
	return svc, nil
}

func computeSandboxStatus(sb *sandbox, pod *corev1.Pod, svc *corev1.Service, hash string) sandboxStatus {
	st := sandboxStatus{Conditions: slices.Clone(sb.Status.Conditions)}
	gen := sb.Generation
	if pod != nil {
		st.LabelSelector = labelSandboxNameHash + "=" + hash
		for _, ip := range pod.Status.PodIPs {
			st.PodIPs = append(st.PodIPs, ip.IP)
		}
		st.NodeName = pod.Spec.NodeName
	}
	if svc != nil {
		st.Service = svc.Name
		st.ServiceFQDN = svc.Name + "." + svc.Namespace + ".svc.cluster.local"
	}
	suspended := metav1.Condition{Type: condSuspended, Status: metav1.ConditionFalse, Reason: "NotSuspended",
		Message: "Sandbox is not suspended", ObservedGeneration: gen}
	if sb.Spec.OperatingMode == "Suspended" {
		if pod == nil {
			suspended.Status, suspended.Reason, suspended.Message = metav1.ConditionTrue, "PodTerminated", "Pod has been terminated. Sandbox is suspended"
		} else {
			suspended.Reason, suspended.Message = "PodTerminating", "Pod is terminating. Sandbox is suspending"
		}
	}
	meta.SetStatusCondition(&st.Conditions, suspended)
	// Conditions present only while they apply are removed when they do
	// not, and otherwise set in place, so an unchanged one keeps its
	// transition time (and an unchanged status is not written again).
	finished := pod != nil && (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed)
	if !finished {
		meta.RemoveStatusCondition(&st.Conditions, condFinished)
	}
	if pod == nil {
		meta.RemoveStatusCondition(&st.Conditions, condPodScheduled)
	}
	if pod != nil {
		switch pod.Status.Phase {
		case corev1.PodSucceeded:
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: condFinished, Status: metav1.ConditionTrue,
				Reason: "PodSucceeded", Message: "Pod completed successfully", ObservedGeneration: gen})
		case corev1.PodFailed:
			meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: condFinished, Status: metav1.ConditionTrue,
				Reason: "PodFailed", Message: "Pod failed", ObservedGeneration: gen})
		}
		sched := metav1.Condition{Type: condPodScheduled, Status: metav1.ConditionUnknown, Reason: "PodSchedulingUnknown",
			Message: "Pod has not reported a PodScheduled condition yet", ObservedGeneration: gen}
		for _, pc := range pod.Status.Conditions {
			if pc.Type == corev1.PodScheduled {
				sched.Status, sched.Reason, sched.Message = metav1.ConditionStatus(pc.Status), pc.Reason, pc.Message
				if sched.Reason == "" {
					sched.Reason = "PodScheduled"
					if sched.Status != metav1.ConditionTrue {
						sched.Reason = "PodSchedulingUnknown"
					}
				}
			}
		}
		meta.SetStatusCondition(&st.Conditions, sched)
	}
	meta.SetStatusCondition(&st.Conditions, readyCondition(sb, pod, svc, gen))
	return st
}

// readyCondition is the real controller's Ready: True only for a Running
// pod whose Ready condition is True and that has an IP (and the Service,
// when one is wanted).
func readyCondition(sb *sandbox, pod *corev1.Pod, svc *corev1.Service, gen int64) metav1.Condition {
	c := metav1.Condition{Type: condReady, Status: metav1.ConditionFalse, Reason: "DependenciesNotReady", ObservedGeneration: gen}
	if sb.Spec.OperatingMode == "Suspended" {
		c.Reason, c.Message = "SandboxSuspended", "Sandbox is suspended"
		if pod != nil {
			c.Message = "Sandbox is suspending"
		}
		return c
	}
	podReady := false
	if pod == nil {
		c.Message = "Pod does not exist"
	} else {
		switch pod.Status.Phase {
		case corev1.PodSucceeded:
			c.Reason, c.Message = "PodSucceeded", "Pod completed successfully"
			return c
		case corev1.PodFailed:
			c.Reason, c.Message = "PodFailed", "Pod failed"
			return c
		case corev1.PodRunning:
			c.Message = "Pod is Running but not Ready"
			for _, pc := range pod.Status.Conditions {
				if pc.Type == corev1.PodReady && pc.Status == corev1.ConditionTrue {
					if len(pod.Status.PodIPs) == 0 {
						c.Message = "Pod is Ready but has no podIPs yet"
					} else {
						c.Message, podReady = "Pod is Ready", true
					}
				}
			}
		default:
			c.Message = "Pod exists with phase: " + string(pod.Status.Phase)
		}
	}
	svcReady := true
	if (sb.Spec.Service != nil && *sb.Spec.Service) || (sb.Spec.Service == nil && svc != nil) {
		if svc != nil {
			c.Message += "; Service Exists"
		} else {
			c.Message += "; Service does not exist"
			svcReady = false
		}
	}
	if podReady && svcReady {
		c.Status, c.Reason = metav1.ConditionTrue, "DependenciesReady"
	}
	return c
}
