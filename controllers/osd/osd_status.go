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

package osd

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/agentclient"
	"github.com/flint-io/flint/controllers/conditions"
	"github.com/flint-io/flint/controllers/patch"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

func statusFromAgent(st *agentv1.OSDStatus) *flintv1.OSDStatus {
	out := &flintv1.OSDStatus{
		SPDKVersion: st.GetSpdkVersion(),
		Replicas:    int32(len(st.GetReplicas())),
		Capacity: &flintv1.OSDCapacity{
			Total: *resource.NewQuantity(int64(st.GetTotalBytes()), resource.BinarySI),
			Free:  *resource.NewQuantity(int64(st.GetFreeBytes()), resource.BinarySI),
		},
	}
	out.Device = &flintv1.DeviceInfo{WriteCache: writeCacheOf(st.GetWriteCache())}
	if e := st.GetEndpoint(); e != nil {
		out.Endpoint = &flintv1.OSDEndpoint{
			Endpoint:  flintv1.Endpoint{Transport: flintv1.Transport(e.GetTransport()), Address: e.GetAddress(), Port: int32(e.GetPort())},
			NQNPrefix: agentv1.NQNPrefix,
		}
	}
	return out
}

// writeStatus records the observation, keeping what the agent last said
// while it does not answer, and emits an Event when the phase changes.
func (r *Reconciler) writeStatus(ctx context.Context, osd *flintv1.OSD, obs observation, stop stopState) error {
	before := osd.DeepCopy()
	st := &osd.Status
	if obs.status != nil {
		st.SPDKVersion, st.Replicas, st.Capacity, st.Endpoint, st.Device = obs.status.SPDKVersion, obs.status.Replicas, obs.status.Capacity, obs.status.Endpoint, obs.status.Device
	}
	ready := metav1.ConditionFalse
	if obs.phase == flintv1.OSDPhaseReady || obs.phase == flintv1.OSDPhaseDegraded || obs.phase == flintv1.OSDPhaseDraining {
		ready = metav1.ConditionTrue
	}
	conditions.Set(osd, metav1.Condition{
		Type: flintv1.ReadyCondition, Status: ready, Reason: obs.reason, Message: obs.detail,
	})
	if obs.inventory != nil {
		r.setPreflightWarnings(osd, obs.inventory.GetPreflightWarnings())
	}
	if st.Capacity != nil {
		r.setSpaceLow(osd)
	}
	r.setStopping(osd, stop)
	conditions.Remove(osd, flintv1.DeletionBlockedCondition)
	st.ObservedGeneration = osd.Generation
	if st.Phase != obs.phase {
		kind := corev1.EventTypeNormal
		if ready == metav1.ConditionFalse && obs.phase != flintv1.OSDPhasePending {
			kind = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(osd, nil, kind, obs.reason, "Observe", "%s: %s", obs.phase, obs.detail)
	}
	st.Phase = obs.phase
	_, err := patch.Status(ctx, r.Client, before, osd)
	return err
}

// setStopping records whether the pod runs the current spec and whether
// the Pool's rollout stops the OSD; a stop that starts is an Event.
func (r *Reconciler) setStopping(osd *flintv1.OSD, stop stopState) {
	upToDate := metav1.Condition{Type: flintv1.UpToDateCondition, Status: metav1.ConditionTrue, Reason: flintv1.OSDPodCurrentReason,
		Message: "the pod runs the OSD's current spec"}
	if stop.outdated {
		upToDate.Status, upToDate.Reason = metav1.ConditionFalse, flintv1.OSDPodOutdatedReason
		upToDate.Message = "the pod runs an older spec; it is replaced once the Pool's rollout reaches the OSD's failure domain and the OSD stopped cleanly"
	}
	conditions.Set(osd, upToDate)
	if stop.reason == "" {
		conditions.Remove(osd, flintv1.StoppingCondition)
		return
	}
	if !osd.Stopping() {
		r.Recorder.Eventf(osd, nil, corev1.EventTypeNormal, stop.reason, "Stop", "%s", stop.message)
	}
	conditions.Set(osd, metav1.Condition{
		Type: flintv1.StoppingCondition, Status: metav1.ConditionTrue, Reason: stop.reason, Message: stop.message,
	})
}

// setPreflightWarnings sets a condition per warning the agent reports and
// removes those it no longer reports; each new one is also an Event.
func (r *Reconciler) setPreflightWarnings(osd *flintv1.OSD, warnings []*agentv1.PreflightWarning) {
	for _, kind := range flintv1.OSDPreflightWarningConditions {
		i := slices.IndexFunc(warnings, func(w *agentv1.PreflightWarning) bool { return w.GetReason() == kind })
		if i < 0 {
			conditions.Remove(osd, kind)
			continue
		}
		if conditions.Set(osd, metav1.Condition{
			Type: kind, Status: metav1.ConditionTrue, Reason: kind, Message: warnings[i].GetMessage(),
		}) {
			r.Recorder.Eventf(osd, nil, corev1.EventTypeWarning, kind, "Preflight", "%s", warnings[i].GetMessage())
		}
	}
}

// setSpaceLow says whether the lvstore has less than the reserve free; the
// change to low is also an Event.
func (r *Reconciler) setSpaceLow(osd *flintv1.OSD) {
	c := osd.Status.Capacity
	cond := metav1.Condition{
		Type: flintv1.SpaceLowCondition, Status: metav1.ConditionFalse, Reason: flintv1.OSDSpaceAvailableReason,
		Message: fmt.Sprintf("%s free of %s", c.Free.String(), c.Total.String()),
	}
	if c.Low() {
		cond.Status, cond.Reason = metav1.ConditionTrue, flintv1.OSDSpaceLowReason
		cond.Message = fmt.Sprintf("only %s free of %s, under the %d%% reserve: new replicas go to other OSDs, and thin replicas that grow further will fail writes once it is full; "+
			"delete Volumes or Snapshots with replicas here, drain the OSD, or add OSDs", c.Free.String(), c.Total.String(), flintv1.SpaceReservePercent)
	}
	was := meta.IsStatusConditionTrue(osd.Status.Conditions, flintv1.SpaceLowCondition)
	conditions.Set(osd, cond)
	if cond.Status == metav1.ConditionTrue && !was {
		r.Recorder.Eventf(osd, nil, corev1.EventTypeWarning, cond.Reason, "Observe", "%s", cond.Message)
	}
}

// finalize lets a deleted OSD go only once no Volume keeps a replica or a
// target on it and no Snapshot a copy.
func (r *Reconciler) finalize(ctx context.Context, osd *flintv1.OSD) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(osd, Finalizer) {
		return ctrl.Result{}, nil
	}
	if err := r.refreshHeld(ctx, osd); err != nil {
		return ctrl.Result{}, err
	}
	reason, msg, err := r.deletionBlocked(ctx, osd)
	if err != nil {
		return ctrl.Result{}, err
	}
	if reason != "" {
		before := osd.DeepCopy()
		changed := conditions.Set(osd, metav1.Condition{
			Type: flintv1.DeletionBlockedCondition, Status: metav1.ConditionTrue, Reason: reason, Message: msg,
		})
		osd.Status.Phase = flintv1.OSDPhaseDraining
		if changed {
			r.Recorder.Eventf(osd, nil, corev1.EventTypeWarning, reason, "Delete", "%s", msg)
		}
		if _, err := patch.Status(ctx, r.Client, before, osd); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: r.Resync}, nil
	}
	controllerutil.RemoveFinalizer(osd, Finalizer)
	r.Agents.Forget(osd.Name)
	r.orphans.forget(osd.Name)
	return ctrl.Result{}, r.Update(ctx, osd)
}

// refreshHeld reads, while the OSD's agent answers, how many replicas it
// holds, and collects its orphans as for a serving OSD. That count blocks
// the OSD's deletion: without it, a Volume deleted after the OSD's last
// observation (its last PVC, then the Pool) left the count where it was,
// and the OSD Draining for good.
func (r *Reconciler) refreshHeld(ctx context.Context, osd *flintv1.OSD) error {
	pod := &corev1.Pod{}
	err := r.Get(ctx, client.ObjectKey{Namespace: r.Pods.Namespace, Name: agentclient.PodName(osd)}, pod)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	obs := r.observe(ctx, osd, pod)
	if obs.agent == nil {
		return nil
	}
	if osd.Status.Replicas != obs.status.Replicas {
		before := osd.DeepCopy()
		osd.Status.Replicas = obs.status.Replicas
		if _, err := patch.Status(ctx, r.Client, before, osd); err != nil {
			return err
		}
	}
	return r.collectOrphans(ctx, osd, obs.agent, obs.inventory)
}

// deletionBlocked says why the OSD cannot go yet, with what to do; no
// reason when it can: what still lives on it are replicas, which the
// Volume controller moves away, and Snapshot copies, which only go with
// their Snapshots.
func (r *Reconciler) deletionBlocked(ctx context.Context, osd *flintv1.OSD) (reason, msg string, err error) {
	var vols flintv1.VolumeList
	if err := r.List(ctx, &vols); err != nil {
		return "", "", err
	}
	var snaps flintv1.SnapshotList
	if err := r.List(ctx, &snaps); err != nil {
		return "", "", err
	}
	// Orphans waiting out their grace are no Volume's: the OSD goes
	// without them, leaving them on its device as all it held.
	reported := int(osd.Status.Replicas) - r.orphans.count(osd.Name, orphanReplica)
	replicas, held := max(osd.ReplicasPlaced(vols.Items), reported), osd.SnapshotsHeld(snaps.Items)
	switch {
	case replicas > 0:
		return flintv1.OSDHoldsReplicasReason, fmt.Sprintf("the OSD holds %d replicas and the last copies of %d Snapshots; it is deleted once the Volume controller has moved the replicas (set spec.drain to move them first) and those Snapshots are deleted", replicas, len(held)), nil
	case len(held) > 0:
		return flintv1.OSDHoldsSnapshotCopiesReason, fmt.Sprintf("the OSD holds the last copies of %d Snapshots, which cannot move: it is deleted once they are deleted: %s", len(held), strings.Join(held[:min(len(held), 5)], ", ")), nil
	}
	return "", "", nil
}

// SetupWithManager registers the controller: OSDs, and the pods and
// Secrets they own.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	for _, obj := range []client.Object{&flintv1.Volume{}, &flintv1.Snapshot{}} {
		if err := mgr.GetFieldIndexer().IndexField(ctx, obj, indexUID, func(o client.Object) []string {
			return []string{string(o.GetUID())}
		}); err != nil {
			return err
		}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("osd").
		For(&flintv1.OSD{}).
		Owns(&corev1.Pod{}).
		Watches(&corev1.Pod{}, recordStoppedPods(r.Leases)).
		Owns(&corev1.Secret{}).
		Watches(&flintv1.Pool{}, rolloutOSDs()).
		WatchesRawSource(source.Channel(r.Observe, &handler.EnqueueRequestForObject{})).
		Complete(r)
}

// rolloutOSDs enqueues the OSDs a Pool's rollout lists, before and after
// a change: one it starts to stop, and one it lets go.
func rolloutOSDs() handler.Funcs {
	enqueue := func(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if p, ok := o.(*flintv1.Pool); ok && p.Status.Rollout != nil {
			for _, name := range p.Status.Rollout.OSDs {
				q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
			}
		}
	}
	return handler.Funcs{
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.ObjectOld, q)
			enqueue(e.ObjectNew, q)
		},
	}
}

// writeCacheOf is the status' name of the agent's write cache state.
func writeCacheOf(w agentv1.WriteCache) flintv1.WriteCacheState {
	switch w {
	case agentv1.WriteCache_WRITE_CACHE_ABSENT:
		return flintv1.WriteCacheAbsent
	case agentv1.WriteCache_WRITE_CACHE_DISABLED:
		return flintv1.WriteCacheDisabled
	case agentv1.WriteCache_WRITE_CACHE_ENABLED:
		return flintv1.WriteCacheEnabled
	}
	return flintv1.WriteCacheUnknown
}
