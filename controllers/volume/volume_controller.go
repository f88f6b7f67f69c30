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

// Package volume reconciles Volumes: it places replicas on OSDs of the
// Volume's Pool, has their agents create and export them, builds the raid1
// target, and keeps it whole through replica and target loss. The
// Volume's status is the only record of where its data lives: every
// decision is written there before an agent acts on it.
package volume

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/agentclient"
	"github.com/flint-io/flint/controllers/metrics"
	"github.com/flint-io/flint/controllers/patch"
	"github.com/flint-io/flint/internal/keylock"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// Field indexes of Volumes.
const (
	indexPool = "spec.pool"
	// indexOSD lists the OSDs a Volume has a replica or its target on.
	indexOSD = "status.osds"
	// indexCutting lists, under their Volume's name, the Snapshots with a
	// copy being cut.
	indexCutting = "status.copies.cutting"
)

// Reconciler reconciles Volumes.
type Reconciler struct {
	client.Client
	// APIReader reads past the cache: a fenced target is re-driven only
	// once a live read confirms it is still the Volume's.
	APIReader client.Reader
	// Namespace is the operator's: it holds the Secrets of the keys the
	// Volumes' links authenticate with.
	Namespace string
	Recorder  events.EventRecorder
	Agents    *agentclient.Agents
	// Leases says when the operator last tried to renew each OSD's lease:
	// a target moves only once its OSD's lease lapsed and it fenced.
	Leases *agentclient.Leases
	// ReplicaGrace is how long a Faulted replica may come back (and be
	// rebuilt in place) before a replacement is placed elsewhere.
	ReplicaGrace time.Duration
	// TargetGrace is how long the target's OSD may stop serving before the
	// target moves to another replica's OSD.
	TargetGrace time.Duration
	// StandbyWait bounds how long a planned move waits for the published
	// hosts to connect to its standby; zero makes moves without one.
	StandbyWait time.Duration
	// HoldWait is how long after an unplanned move cut the old target off
	// a member that target may still let hosts in: the hold its agent was
	// promised, a quarter more, and the fence's margin.
	HoldWait time.Duration
	// LeaseBound is how long after its last renewal an OSD's lease has
	// lapsed for certain: the lease and a quarter (the nodes' clocks).
	LeaseBound time.Duration
	// Resync caps how soon a Volume that is not Ready is driven again
	// (every 2 s at most); a Ready one is driven on change only.
	Resync time.Duration
	// Workers is how many Volumes reconcile at once.
	Workers int
	// Observe has a Volume driven now, ahead of its resync: one whose
	// target reported a member out of its raid.
	Observe <-chan event.GenericEvent
	// Locks keeps a reconcile off a Volume whose target another controller
	// acts on (a snapshot's cut pauses it).
	Locks *keylock.Locks
	// Now is the clock; tests move it.
	Now func() time.Time
	// Interrupt, when set, is called at each Point of a reconcile; it may
	// block until ctx ends, as if the operator died there: nothing the
	// reconcile does after it takes effect. Only tests set it.
	Interrupt func(ctx context.Context, vol *flintv1.Volume, point Point)

	// placeMu makes placement decisions one at a time; committed holds
	// the bytes placed per OSD, with this process's placements ahead of
	// the cache.
	placeMu   sync.Mutex
	committed ledger
	// rebuilds holds the rebuild slots this process granted.
	rebuilds rebuildSlots
	// lastReplicaErrors holds, per Volume uid, the replica errors last
	// told in an Event.
	lastReplicaErrors sync.Map
	// wrote holds, per Volume name, the resourceVersion of this process's
	// last write of it: the event that write causes brings nothing new.
	wrote sync.Map
	// seen holds the names of the Volumes this process has reconciled;
	// contradicted those an OSD's inventory or target report says must
	// be driven (Observe).
	seen, contradicted sync.Map
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// +kubebuilder:rbac:groups=flint.io,resources=volumes,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=flint.io,resources=volumes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=flint.io,resources=volumes/finalizers,verbs=update
// +kubebuilder:rbac:groups=flint.io,resources=pools;osds,verbs=get;list;watch
// +kubebuilder:rbac:groups=flint.io,resources=snapshots,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile runs the phases of one Volume; a status write that lost to
// another writer is no error: the Volume is decided again from a fresh
// read.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	unlock, err := r.Locks.Lock(ctx, req.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer unlock()
	return patch.OnConflict(r.reconcile(ctx, req))
}

// reconcile runs the phases of one Volume top-down. No deadline covers
// it whole: every agent call has its own (agentclient.CallTimeout), so an
// agent that stops answering holds a worker for a bounded number of calls
// and never leaves the status write that follows without time.
func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var vol flintv1.Volume
	if err := r.Get(ctx, req.NamespacedName, &vol); err != nil {
		if apierrors.IsNotFound(err) {
			r.contradicted.Delete(req.Name) // told after it went
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !vol.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, &vol)
	}
	if controllerutil.AddFinalizer(&vol, flintv1.VolumeFinalizer) {
		if err := r.Update(ctx, &vol); err != nil {
			return ctrl.Result{}, err
		}
		r.wrote.Store(vol.Name, vol.ResourceVersion)
	}
	w, err := r.observe(ctx, &vol)
	if err != nil {
		return ctrl.Result{}, err
	}
	read := vol.ResourceVersion
	before := vol.DeepCopy()
	if w.pool == nil {
		r.setPending(&vol, flintv1.VolumePoolNotFoundReason, fmt.Sprintf("Pool %s does not exist: create it, or recreate the Volume in an existing Pool", vol.Spec.Pool))
		return r.writeStatus(ctx, before, &vol)
	}
	if why, err := r.observeSource(ctx, &vol, w); err != nil || why != "" {
		// Nothing is made before the source is known: a replica made
		// empty would count as holding the source's data.
		if err != nil {
			return ctrl.Result{}, err
		}
		r.setPending(&vol, flintv1.VolumeSourceNotReadyReason, why)
		return r.writeStatus(ctx, before, &vol)
	}
	if len(vol.Status.Replicas) > 0 && vol.Status.Target == nil {
		// Replicas recorded without a target (by hand): the first runs it.
		vol.Status.Target = &flintv1.VolumeTarget{OSD: vol.Status.Replicas[0].OSD, NQN: agentv1.VolumeNQN(string(vol.UID)), Epoch: 1}
	}
	if len(vol.Status.Replicas) == 0 {
		vol.Status.Target = nil // nothing to serve from
		if placed := vol.Annotations[flintv1.AnnotationPlaced]; placed != "" {
			r.refuseReplacing(&vol, placed)
			return r.writeStatus(ctx, before, &vol)
		}
		if ok, err := r.place(&vol, w); err != nil || !ok {
			if err != nil {
				return ctrl.Result{}, err
			}
			return r.writeStatus(ctx, before, &vol)
		}
	}

	// Decide, record, then act: the status is written before any agent
	// call that depends on a decision.
	if err := r.moveTarget(ctx, &vol, w); err != nil {
		return ctrl.Result{}, err
	}
	dropUnusedStandby(&vol, w)
	r.letGoStopping(&vol, w)
	if err := r.replaceReplicas(ctx, &vol, w); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.recordIntent(ctx, before, &vol); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.markPlaced(ctx, &vol); err != nil {
		return ctrl.Result{}, err
	}
	r.point(ctx, &vol, PointIntentRecorded)
	before = vol.DeepCopy()
	if trusted, err := r.trustRecorded(ctx, &vol, w, read); err != nil || trusted {
		if err != nil {
			return ctrl.Result{}, err
		}
		return r.writeStatus(ctx, before, &vol)
	}
	ts, problem := r.drive(ctx, &vol, w)
	r.point(ctx, &vol, PointTargetEnsured)
	r.prepareStandby(ctx, &vol, w)
	r.observeTarget(&vol, w, ts, problem)
	if err := r.releaseCloneSnapshot(ctx, &vol); err != nil {
		return ctrl.Result{}, err
	}
	res, err := r.writeStatus(ctx, before, &vol)
	if err == nil && ts != nil {
		r.tellMoveServed(&vol, w)
	}
	return r.cutResult(&vol, standbyResult(&vol, res)), err
}

// Point is a place in a reconcile between two steps that leave state
// behind, in the apiserver or on the agents. The operator may die at any
// of them; the next reconcile, in a new process, converges from what was
// written and what the agents hold.
type Point string

// The points of a reconcile.
const (
	// PointTargetStopped: a planned move stopped the old target; the move
	// is not recorded.
	PointTargetStopped Point = "target-stopped"
	// PointIntentRecorded: the decisions are written; no agent has acted
	// on them.
	PointIntentRecorded Point = "intent-recorded"
	// PointTargetReassembled: the target's lost raid is recorded (one
	// source replica, the others Stale, a new epoch); it is not assembled.
	PointTargetReassembled Point = "target-reassembled"
	// PointReplicasEnsured: the replicas exist and are exported to the
	// target (fencing any other); the target is not built.
	PointReplicasEnsured Point = "replicas-ensured"
	// PointTargetEnsured: the target is built and exported; its status is
	// not written.
	PointTargetEnsured Point = "target-ensured"
)

func (r *Reconciler) point(ctx context.Context, vol *flintv1.Volume, p Point) {
	if r.Interrupt != nil {
		r.Interrupt(ctx, vol, p)
	}
}

// world is what a Volume's decisions depend on.
type world struct {
	pool  *flintv1.Pool
	osds  map[string]*flintv1.OSD // the Pool's, by name
	nodes map[string]*corev1.Node
	// committed sums volume sizes per OSD; filled when placing.
	committed map[string]int64
	// origin is what the Volume starts from while its replicas are made.
	origin *origin
	// rebuildWaits says, per replica OSD, why its rebuild waits; filled
	// by drive.
	rebuildWaits map[string]string
	// calledAgent says whether a decision of this pass called an agent
	// (a planned move stops the old target first).
	calledAgent bool
	// movePlanned is when this pass began a planned move, and stopTook
	// how long the old target took to stop: what its hosts wait before
	// the new target is built (tellMoveServed).
	movePlanned time.Time
	stopTook    time.Duration
	// keepStandby says a planned move of this pass waits for the
	// recorded standby (awaitStandby); any other is dropped.
	keepStandby bool
	// cutServed is the cut of an unplanned move whose new target this
	// pass built (tellMoveServed).
	cutServed *flintv1.VolumeTargetCut
}

func (r *Reconciler) observe(ctx context.Context, vol *flintv1.Volume) (*world, error) {
	w := &world{osds: map[string]*flintv1.OSD{}, nodes: map[string]*corev1.Node{}}
	var pool flintv1.Pool
	if err := r.Get(ctx, client.ObjectKey{Name: vol.Spec.Pool}, &pool); err != nil {
		if apierrors.IsNotFound(err) {
			return w, nil
		}
		return nil, err
	}
	w.pool = &pool
	var osds flintv1.OSDList
	if err := r.List(ctx, &osds, client.MatchingLabels{flintv1.LabelPool: pool.Name}); err != nil {
		return nil, err
	}
	for i := range osds.Items {
		w.osds[osds.Items[i].Name] = &osds.Items[i]
	}
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes); err != nil {
		return nil, err
	}
	for i := range nodes.Items {
		w.nodes[nodes.Items[i].Name] = &nodes.Items[i]
	}
	return w, nil
}

// recordIntent writes the decisions taken so far (placement, the target,
// its epoch, which replicas are in sync) before agents act on them.
func (r *Reconciler) recordIntent(ctx context.Context, before, vol *flintv1.Volume) error {
	return r.patchStatus(ctx, before, vol)
}

// patchStatus writes vol's status, changed from before (patch.Status),
// and remembers a write for the events and placements that follow it.
func (r *Reconciler) patchStatus(ctx context.Context, before, vol *flintv1.Volume) error {
	if written, err := patch.Status(ctx, r.Client, before, vol); err != nil || !written {
		return err
	}
	r.wrote.Store(vol.Name, vol.ResourceVersion)
	r.remember(vol)
	return nil
}

// remember keeps the replica OSDs just written, for placements that read
// the cache before it catches up.
func (r *Reconciler) remember(vol *flintv1.Volume) {
	r.placeMu.Lock()
	defer r.placeMu.Unlock()
	r.committed.place(vol)
}

func (r *Reconciler) forget(name string) {
	metrics.ForgetVolume(name)
	r.wrote.Delete(name)
	r.forgetRebuild(name)
	r.committed.release(name)
	r.seen.Delete(name)
	r.contradicted.Delete(name)
}

// SetupWithManager registers the controller: Volumes, and the OSDs their
// replicas and targets live on.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	volumes, err := mgr.GetCache().GetInformer(ctx, &flintv1.Volume{})
	if err != nil {
		return err
	}
	reg, err := volumes.AddEventHandler(r.committed.handler())
	if err != nil {
		return err
	}
	r.committed.synced = reg.HasSynced
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &flintv1.Volume{}, indexPool, func(o client.Object) []string {
		return []string{o.(*flintv1.Volume).Spec.Pool}
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &flintv1.Volume{}, indexOSD, func(o client.Object) []string {
		return volumeOSDs(o.(*flintv1.Volume))
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &flintv1.Snapshot{}, indexCutting, cuttingFrom); err != nil {
		return err
	}
	osdVolumes := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		osd, ok := o.(*flintv1.OSD)
		if !ok {
			return nil
		}
		var held, pending flintv1.VolumeList
		_ = r.List(ctx, &held, client.MatchingFields{indexOSD: osd.Name}, client.UnsafeDisableDeepCopy)
		_ = r.List(ctx, &pending, client.MatchingFields{indexPool: osd.Spec.Pool}, client.UnsafeDisableDeepCopy)
		var reqs []reconcile.Request
		for _, v := range held.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&v)})
		}
		for _, v := range pending.Items {
			if len(v.Status.Replicas) == 0 {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&v)})
			}
		}
		return reqs
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("volume").
		For(&flintv1.Volume{}, builder.WithPredicates(predicate.Funcs{
			// The reconcile that wrote a Volume goes on from what it wrote;
			// driving it again for that write's event would repeat every
			// agent call.
			UpdateFunc: func(e event.UpdateEvent) bool {
				rv, ok := r.wrote.Load(e.ObjectNew.GetName())
				return !ok || rv != e.ObjectNew.GetResourceVersion()
			},
		})).
		// A Volume's host keys rotated (its Secret rewritten) reach its
		// target at once.
		Owns(&corev1.Secret{}).
		Watches(&flintv1.OSD{}, osdVolumes, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool {
				old, oldOK := e.ObjectOld.(*flintv1.OSD)
				osd, ok := e.ObjectNew.(*flintv1.OSD)
				return !oldOK || !ok || osdChangeMatters(old, osd)
			},
		})).
		WatchesRawSource(source.Channel(r.Observe, handler.Funcs{
			GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				r.contradicted.Store(e.Object.GetName(), true)
				q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)})
			},
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).
		Complete(r)
}

// osdChangeMatters is whether an update of an OSD can change a decision
// for the Volumes on it or waiting for placement in its Pool. Its free
// bytes and replica count change with every replica created; were they
// to re-drive every Volume the OSD holds, provisioning N Volumes would
// cost O(N²) reconciles.
func osdChangeMatters(old, osd *flintv1.OSD) bool {
	return old.Generation != osd.Generation || // node, drain, cordon
		!old.DeletionTimestamp.Equal(osd.DeletionTimestamp) ||
		old.Labels[flintv1.LabelPool] != osd.Labels[flintv1.LabelPool] ||
		old.Status.Phase != osd.Status.Phase ||
		old.Stopping() != osd.Stopping() ||
		!equality.Semantic.DeepEqual(old.Status.Endpoint, osd.Status.Endpoint) ||
		totalBytes(old) != totalBytes(osd) ||
		readySince(old) != readySince(osd)
}

func totalBytes(o *flintv1.OSD) int64 {
	if o.Status.Capacity == nil {
		return -1
	}
	return o.Status.Capacity.Total.Value()
}

// readySince is the OSD's Ready condition's status and when it took it.
func readySince(o *flintv1.OSD) string {
	c := meta.FindStatusCondition(o.Status.Conditions, flintv1.ReadyCondition)
	if c == nil {
		return ""
	}
	return string(c.Status) + "@" + c.LastTransitionTime.UTC().String()
}

// volumeOSDs lists the OSDs a Volume keeps something on.
func volumeOSDs(v *flintv1.Volume) []string {
	out := replicaOSDs(v)
	if t := v.Status.Target; t != nil && !slices.Contains(out, t.OSD) {
		out = append(out, t.OSD)
	}
	return out
}
