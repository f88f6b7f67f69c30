/*
Copyright 2026 The Flint Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package pool reconciles a Pool into one OSD per device of its nodes,
// checks first that the nodes can run them, and sums up their state.
package pool

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/conditions"
	"github.com/flint-io/flint/controllers/metrics"
	"github.com/flint-io/flint/controllers/patch"
)

// volumeSettle is how long Volume changes collect before their Pool's
// counts are recomputed.
const volumeSettle = time.Second

// Finalizer keeps a Pool while Volumes use it: their replicas live on its
// OSDs and the Volume controller reads its settings.
const Finalizer = "flint.io/pool-volumes"

// Reconciler reconciles Pools.
type Reconciler struct {
	client.Client
	Recorder events.EventRecorder
	// Namespace is the operator's: a NetworkAttachmentDefinition named
	// without a namespace is looked up there.
	Namespace string
}

// +kubebuilder:rbac:groups=flint.io,resources=pools,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=flint.io,resources=pools/finalizers,verbs=update
// +kubebuilder:rbac:groups=flint.io,resources=pools/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=flint.io,resources=osds,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=flint.io,resources=volumes;snapshots,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy,namespace=flint-system,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=network-attachment-definitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile runs the phases of one Pool; a status write that lost to
// another writer is no error: the Pool is decided again from a fresh read.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return patch.OnConflict(r.reconcile(ctx, req))
}

// reconcile runs the phases of one Pool top-down.
func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var pool flintv1.Pool
	if err := r.Get(ctx, req.NamespacedName, &pool); err != nil {
		if apierrors.IsNotFound(err) {
			metrics.ForgetPool(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pool.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, &pool)
	}
	if controllerutil.AddFinalizer(&pool, Finalizer) {
		if err := r.Update(ctx, &pool); err != nil {
			return ctrl.Result{}, err
		}
	}
	var nodeList corev1.NodeList
	if err := r.List(ctx, &nodeList); err != nil {
		return ctrl.Result{}, err
	}
	nodes := selectedNodes(&pool, nodeList.Items)
	want := desiredOSDs(&pool, nodes)
	pf := checkNodes(&pool, nodes, want)
	if err := checkAttachment(ctx, r, &pool, r.Namespace, pf); err != nil {
		return ctrl.Result{}, err
	}
	checkFailureDomains(&pool, nodes, want, pf)

	w, err := r.observe(ctx, &pool)
	if err != nil {
		return ctrl.Result{}, err
	}
	w.nodes = byName(nodeList.Items)
	if err := r.createOrUpdateOSDs(ctx, &pool, want, pf, w); err != nil {
		return ctrl.Result{}, err
	}
	draining, err := r.retireOSDs(ctx, &pool, want, w)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.ensureDisruptionBudget(ctx, &pool); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.ensureReplicaAuth(ctx, &pool); err != nil {
		return ctrl.Result{}, err
	}
	plan := planRollout(&pool, w.osds, w.volumes, w.nodes)
	if err := r.writeStatus(ctx, &pool, pf, w, draining, plan); err != nil {
		return ctrl.Result{}, err
	}
	if pf.allBlocked {
		// Nothing is watched that says the attachment came (its kind may
		// not even exist yet): look again.
		return ctrl.Result{RequeueAfter: attachmentRecheck}, nil
	}
	return ctrl.Result{}, nil
}

func byName(nodes []corev1.Node) map[string]*corev1.Node {
	out := make(map[string]*corev1.Node, len(nodes))
	for i := range nodes {
		out[nodes[i].Name] = &nodes[i]
	}
	return out
}

// attachmentRecheck is how often a Pool whose NetworkAttachmentDefinition
// is missing looks for it.
const attachmentRecheck = 10 * time.Second

// world is what exists of the Pool: its OSDs and Volumes.
type world struct {
	osds map[string]*flintv1.OSD
	// volumes are the cache's own objects: read them, never write.
	volumes []flintv1.Volume
	// nodes are the cluster's nodes by name: their labels say the OSDs'
	// failure domains.
	nodes map[string]*corev1.Node
}

func (r *Reconciler) observe(ctx context.Context, pool *flintv1.Pool) (world, error) {
	var osds flintv1.OSDList
	if err := r.List(ctx, &osds, client.MatchingLabels{flintv1.LabelPool: pool.Name}); err != nil {
		return world{}, err
	}
	// The cache's Volumes are read, not copied: a Pool is counted on
	// every change of its OSDs, and a copy of 10,000 Volumes each time
	// was most of what provisioning cost.
	var vols flintv1.VolumeList
	if err := r.List(ctx, &vols, client.UnsafeDisableDeepCopy); err != nil {
		return world{}, err
	}
	w := world{osds: map[string]*flintv1.OSD{}}
	for i := range osds.Items {
		w.osds[osds.Items[i].Name] = &osds.Items[i]
	}
	for _, v := range vols.Items {
		if v.Spec.Pool == pool.Name {
			w.volumes = append(w.volumes, v)
		}
	}
	return w, nil
}

// createOrUpdateOSDs creates the missing OSDs, except on nodes that fail
// preflight, and keeps existing ones' settings in line with the Pool.
func (r *Reconciler) createOrUpdateOSDs(ctx context.Context, pool *flintv1.Pool, want []desiredOSD, pf *preflight, w world) error {
	for _, d := range want {
		spec := osdSpec(pool, d)
		have, ok := w.osds[d.name]
		if ok {
			if have.Spec.NodeName != spec.NodeName {
				nameConflict(pf, pool, d, have)
				continue
			}
			if !equality.Semantic.DeepEqual(have.Spec.Device, spec.Device) {
				continue // immutable; a changed device is a new OSD name
			}
			spec.Drain = have.Spec.Drain   // a drain, by a person or by retireOSDs, stays until a person clears it
			spec.Cordon = have.Spec.Cordon // a person's
			if equality.Semantic.DeepEqual(have.Spec, spec) {
				continue
			}
			before := have.DeepCopy()
			have.Spec = spec
			if err := r.Patch(ctx, have, client.MergeFrom(before)); err != nil {
				return fmt.Errorf("update OSD %s: %w", d.name, err)
			}
			continue
		}
		if pf.blocked(d.node) {
			continue
		}
		osd := &flintv1.OSD{
			ObjectMeta: metav1.ObjectMeta{Name: d.name, Labels: map[string]string{flintv1.LabelPool: pool.Name, flintv1.LabelNode: d.node}},
			Spec:       spec,
		}
		if err := controllerutil.SetControllerReference(pool, osd, r.Scheme()); err != nil {
			return err
		}
		if err := r.Create(ctx, osd); apierrors.IsAlreadyExists(err) {
			// Not among the Pool's OSDs: another Pool's, or made by hand.
			other := &flintv1.OSD{}
			if err := r.Get(ctx, client.ObjectKey{Name: d.name}, other); err != nil {
				return fmt.Errorf("read OSD %s, which exists: %w", d.name, err)
			}
			if other.Spec.Pool != pool.Name || other.Spec.NodeName != d.node {
				nameConflict(pf, pool, d, other)
			}
			continue
		} else if err != nil {
			return fmt.Errorf("create OSD %s: %w", d.name, err)
		}
		r.Recorder.Eventf(pool, osd, corev1.EventTypeNormal, flintv1.EventOSDCreated, "CreateOSD", "created OSD %s for %s on node %s", d.name, deviceOf(d.device), d.node)
	}
	return nil
}

// nameConflict records that the OSD d would be is taken by other.
func nameConflict(pf *preflight, pool *flintv1.Pool, d desiredOSD, other *flintv1.OSD) {
	pf.fail(flintv1.PoolOSDNameConflictCondition, "%s on node %s gets no OSD: its name %s is taken by the OSD of Pool %s on node %s (OSD names are <pool>-<node>-<n>, with dots as dashes): rename one of the Pools, or give Pool %s its devices on another node",
		deviceOf(d.device), d.node, d.name, other.Spec.Pool, other.Spec.NodeName, pool.Name)
}

func deviceOf(d flintv1.OSDDevice) string {
	switch {
	case d.PCIAddress != "":
		return d.PCIAddress
	case d.ResourceName != "":
		return "a " + d.ResourceName + " device"
	case d.Path != "":
		return d.Path
	}
	return "a RAM-backed device"
}

// retireOSDs deletes the OSDs the Pool made whose device or node left it,
// unless they hold replicas or Snapshot copies: those are marked for
// drain, and go once the replicas moved and the Snapshots are deleted. It
// returns them.
// OSDs made by hand are a person's to remove.
func (r *Reconciler) retireOSDs(ctx context.Context, pool *flintv1.Pool, want []desiredOSD, w world) ([]string, error) {
	wanted := map[string]bool{}
	for _, d := range want {
		wanted[d.name] = true
	}
	var draining []string
	// Snapshots are read only when an OSD is to go: their copies hold it.
	var snapshots *flintv1.SnapshotList
	for name, osd := range w.osds {
		if wanted[name] || !osd.DeletionTimestamp.IsZero() || !metav1.IsControlledBy(osd, pool) {
			continue
		}
		if snapshots == nil {
			snapshots = &flintv1.SnapshotList{}
			if err := r.List(ctx, snapshots, client.UnsafeDisableDeepCopy); err != nil {
				return nil, err
			}
		}
		if held, snaps := osd.ReplicasHeld(w.volumes), osd.SnapshotsHeld(snapshots.Items); held > 0 || len(snaps) > 0 {
			what := fmt.Sprintf("%d replicas", held)
			if len(snaps) > 0 {
				what += fmt.Sprintf(", the last copies of %d Snapshots", len(snaps))
			}
			draining = append(draining, fmt.Sprintf("%s (%s)", name, what))
			if !osd.Spec.Drain {
				before := osd.DeepCopy()
				osd.Spec.Drain = true
				if err := r.Patch(ctx, osd, client.MergeFrom(before)); err != nil {
					return nil, err
				}
				r.Recorder.Eventf(pool, osd, corev1.EventTypeWarning, flintv1.EventOSDDraining, "DrainOSD", "OSD %s left the Pool's devices but holds %s: it drains, and is deleted once the replicas moved and the Snapshots with copies there are deleted", name, what)
			}
			continue
		}
		if err := r.Delete(ctx, osd); client.IgnoreNotFound(err) != nil {
			return nil, err
		}
		r.Recorder.Eventf(pool, osd, corev1.EventTypeNormal, flintv1.EventOSDDeleted, "DeleteOSD", "deleted OSD %s: its device or node left the Pool and it held no replicas", name)
	}
	return draining, nil
}

// finalize lets a deleted Pool go once no Volume uses it; its OSDs then go
// by garbage collection, each held by its own finalizer while it holds
// replicas.
func (r *Reconciler) finalize(ctx context.Context, pool *flintv1.Pool) error {
	if !controllerutil.ContainsFinalizer(pool, Finalizer) {
		return nil
	}
	w, err := r.observe(ctx, pool)
	if err != nil {
		return err
	}
	if n := len(w.volumes); n > 0 {
		var names []string
		for _, v := range w.volumes[:min(n, 5)] {
			names = append(names, v.Name)
		}
		if n > len(names) {
			names = append(names, "…")
		}
		msg := fmt.Sprintf("%d Volumes use the Pool (%s); delete them (or their PersistentVolumeClaims) first", n, strings.Join(names, ", "))
		before := pool.DeepCopy()
		if conditions.Set(pool, metav1.Condition{
			Type: flintv1.DeletionBlockedCondition, Status: metav1.ConditionTrue, Reason: flintv1.PoolVolumesExistReason, Message: msg,
		}) {
			r.Recorder.Eventf(pool, nil, corev1.EventTypeWarning, flintv1.PoolVolumesExistReason, "Delete", "%s", msg)
		}
		_, err := patch.Status(ctx, r.Client, before, pool)
		return err
	}
	controllerutil.RemoveFinalizer(pool, Finalizer)
	return r.Update(ctx, pool)
}

// SetupWithManager registers the controller: Pools, their OSDs, every
// Node (devices and labels change what a Pool wants) and Volumes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	allPools := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var pools flintv1.PoolList
		if err := r.List(ctx, &pools); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(pools.Items))
		for _, p := range pools.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
		}
		return reqs
	})
	// Volume changes collect for volumeSettle before their Pool is counted
	// again: a burst of provisioning costs a reconcile, not one per change.
	poolOf := func(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if v, ok := o.(*flintv1.Volume); ok {
			q.AddAfter(reconcile.Request{NamespacedName: client.ObjectKey{Name: v.Spec.Pool}}, volumeSettle)
		}
	}
	volumePool := handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			poolOf(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			poolOf(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			poolOf(e.Object, q)
		},
	}
	// An OSD counts for the Pool its spec names, whether the Pool made it
	// or a person did.
	osdPool := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if osd, ok := o.(*flintv1.OSD); ok {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: osd.Spec.Pool}}}
		}
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("pool").
		For(&flintv1.Pool{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&corev1.Secret{}).
		Watches(&flintv1.OSD{}, osdPool).
		Watches(&corev1.Node{}, allPools).
		Watches(&flintv1.Volume{}, volumePool).
		Complete(r)
}
