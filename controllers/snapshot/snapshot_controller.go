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

// Package snapshot reconciles Snapshots: it cuts every in-sync replica of
// the Volume at one instant (the Volume's I/O paused at its target), keeps
// count of the copies as OSDs come and go, and removes them when the
// Snapshot is deleted. The Snapshot's status records where each copy is
// before any agent makes it.
package snapshot

import (
	"context"
	"time"

	"k8s.io/client-go/tools/events"
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
	"github.com/flint-io/flint/controllers/patch"
	"github.com/flint-io/flint/internal/keylock"
)

// Field indexes of Snapshots.
const (
	indexVolume = "spec.volume"
	// indexOSD lists the OSDs holding a Snapshot's copies.
	indexOSD = "status.copies.osd"
)

// retry is how soon a Snapshot that cannot proceed is looked at again.
const retry = 2 * time.Second

// Reconciler reconciles Snapshots.
type Reconciler struct {
	client.Client
	// APIReader reads past the cache: the cut acts on the Volume as the
	// apiserver has it, not as the cache last saw it.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Agents    *agentclient.Agents
	// Locks keeps one Volume's Snapshots, and the Volume controller, off
	// the Volume while a Snapshot of it is cut or removed: a cut pauses
	// the target, and SPDK refuses a snapshot of an lvol whose other
	// snapshot it is deleting.
	Locks *keylock.Locks
	// Workers is how many Snapshots reconcile at once.
	Workers int
	// Resync is how soon a deletion SPDK refuses is tried again. A taken
	// Snapshot's copies are counted on change: its OSDs', or a copy an
	// OSD's inventory lacks (Observe).
	Resync time.Duration
	// Observe carries Snapshots to count again at once.
	Observe <-chan event.GenericEvent
	// ObserveVolume has the Volume controller drive a Volume whose target
	// did not resume after a cut.
	ObserveVolume chan<- event.GenericEvent
	// Inventories are the OSDs' latest inventories, which copies are
	// counted from.
	Inventories *agentclient.Inventories
	// Now is the clock; tests move it.
	Now func() time.Time
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// +kubebuilder:rbac:groups=flint.io,resources=snapshots,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=flint.io,resources=snapshots/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=flint.io,resources=snapshots/finalizers,verbs=update
// +kubebuilder:rbac:groups=flint.io,resources=volumes;osds,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile runs the phases of one Snapshot; a write that lost to another
// writer is no error: the Snapshot is decided again from a fresh read.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return patch.OnConflict(r.reconcile(ctx, req))
}

// reconcile runs the phases of one Snapshot top-down, its Volume locked:
// deletion, the cut until it is taken, then the count of its copies.
func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var snap flintv1.Snapshot
	if err := r.Get(ctx, req.NamespacedName, &snap); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	unlock, err := r.Locks.Lock(ctx, snap.Spec.Volume)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer unlock()
	if !snap.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, &snap)
	}
	if controllerutil.AddFinalizer(&snap, flintv1.SnapshotFinalizer) {
		if err := r.Update(ctx, &snap); err != nil {
			return ctrl.Result{}, err
		}
	}
	if !cutTaken(&snap) {
		return r.cut(ctx, &snap)
	}
	before := snap.DeepCopy()
	r.countCopies(ctx, &snap)
	if err := r.writeStatus(ctx, before, &snap); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// cutTaken says the cut finished: copies are recorded and none is still
// being cut.
func cutTaken(snap *flintv1.Snapshot) bool {
	for _, c := range snap.Status.Copies {
		if c.State == flintv1.SnapshotCopyCutting {
			return false
		}
	}
	return len(snap.Status.Copies) > 0
}

// SetupWithManager registers the controller: a Snapshot is reconciled on
// its own changes, on those of its Volume and of the Volumes made from it,
// and on those of the OSDs holding its copies.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &flintv1.Snapshot{}, indexVolume, func(o client.Object) []string {
		return []string{o.(*flintv1.Snapshot).Spec.Volume}
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &flintv1.Snapshot{}, indexOSD, func(o client.Object) []string {
		var osds []string
		for _, c := range o.(*flintv1.Snapshot).Status.Copies {
			osds = append(osds, c.OSD)
		}
		return osds
	}); err != nil {
		return err
	}
	snapshotsBy := func(field string) handler.MapFunc {
		return func(ctx context.Context, o client.Object) []reconcile.Request {
			var l flintv1.SnapshotList
			_ = r.List(ctx, &l, client.MatchingFields{field: o.GetName()}, client.UnsafeDisableDeepCopy)
			reqs := make([]reconcile.Request, 0, len(l.Items))
			for _, s := range l.Items {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&s)})
			}
			return reqs
		}
	}
	ofVolume := snapshotsBy(indexVolume)
	// A Volume's Snapshots wait for it to serve; the Snapshot a Volume is
	// made from waits for its replicas to be cloned before it goes.
	volumeSnapshots := func(ctx context.Context, o client.Object) []reconcile.Request {
		reqs := ofVolume(ctx, o)
		if v, ok := o.(*flintv1.Volume); ok && v.SourceSnapshot() != "" {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Name: v.SourceSnapshot()}})
		}
		return reqs
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("snapshot").
		For(&flintv1.Snapshot{}).
		Watches(&flintv1.Volume{}, handler.EnqueueRequestsFromMapFunc(volumeSnapshots)).
		// Only an OSD that goes or stops serving can lose a copy at once;
		// a copy missing from a serving OSD's inventory comes by Observe.
		Watches(&flintv1.OSD{}, handler.EnqueueRequestsFromMapFunc(snapshotsBy(indexOSD)), builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool {
				old, oldOK := e.ObjectOld.(*flintv1.OSD)
				osd, ok := e.ObjectNew.(*flintv1.OSD)
				return !oldOK || !ok || old.Status.Phase != osd.Status.Phase || !old.DeletionTimestamp.Equal(osd.DeletionTimestamp)
			},
		})).
		WatchesRawSource(source.Channel(r.Observe, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).
		Complete(r)
}
