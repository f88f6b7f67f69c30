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

package volume

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/conditions"
	"github.com/flint-io/flint/controllers/metrics"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// unsettled is how soon a Volume that is not Ready is looked at again:
// rebuilds progress and grace periods run out.
const unsettled = 2 * time.Second

// observeTarget reads the replicas' states from the target's report (or,
// without one, from their OSDs) and sets the phase and conditions.
func (r *Reconciler) observeTarget(vol *flintv1.Volume, w *world, ts *agentv1.TargetStatus, p *problem) {
	now := r.now()
	st := &vol.Status
	if ts != nil {
		byUID := map[string]*agentv1.MemberStatus{}
		for _, m := range ts.GetMembers() {
			byUID[m.GetOsd()] = m
		}
		st.Target.Members = nil
		for i := range st.Replicas {
			rep := &st.Replicas[i]
			o := w.osds[rep.OSD]
			if o == nil {
				continue
			}
			m, ok := byUID[string(o.UID)]
			if !ok {
				continue
			}
			switch m.GetState() {
			case agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_REBUILDING, agentv1.MemberState_MEMBER_STATE_HELD:
				st.Target.Members = append(st.Target.Members, rep.OSD)
			}
			switch m.GetState() {
			case agentv1.MemberState_MEMBER_STATE_ONLINE:
				setState(rep, flintv1.ReplicaStateOnline, now)
			case agentv1.MemberState_MEMBER_STATE_REBUILDING:
				r.dropOut(vol, rep, flintv1.ReplicaStateRebuilding, now, "")
				rep.RebuildPercent = ptr.To(int32(m.GetRebuildPercent()))
			case agentv1.MemberState_MEMBER_STATE_PENDING:
				r.dropOut(vol, rep, flintv1.ReplicaStateStale, now, "")
			case agentv1.MemberState_MEMBER_STATE_MISSING:
				r.dropOut(vol, rep, flintv1.ReplicaStateFaulted, now, "")
			case agentv1.MemberState_MEMBER_STATE_HELD:
				// A held member waits for this record: the next drive
				// tells the target it is not in sync, and the target
				// lets it go.
				r.dropOut(vol, rep, flintv1.ReplicaStateFaulted, now, cmp.Or(m.GetHeldReason(), heldUnexplained))
			}
		}
		st.Target.AllowedHosts, st.Target.QoS = ts.GetAllowedHosts(), volumeQoS(ts.GetQos())
		st.Target.Endpoints = endpointsOf(ts.GetExport())
		st.Capacity = resource.NewQuantity(int64(ts.GetSizeBytes()), resource.BinarySI)
	} else if st.Target == nil || servingOSD(w, st.Target.OSD) {
		for i := range st.Replicas {
			rep := &st.Replicas[i]
			// With the target's OSD not serving no replica is recorded
			// stale by observation: the target acknowledges no write
			// without a member until a drive tells it the member is out
			// of sync, and none can reach it. The target's own replica is
			// the source it is re-assembled from once SPDK there
			// restarted, and another the source a move takes, which
			// records the others Stale; the target reports its members
			// when it answers again.
			if st.Target != nil && rep.OSD == st.Target.OSD {
				continue
			}
			if rep.State != flintv1.ReplicaStateCreating && !servingOSD(w, rep.OSD) {
				setState(rep, flintv1.ReplicaStateFaulted, now)
			}
		}
	}
	r.setPhase(vol, w, ts, p)
}

// endpointsOf is where hosts reach an export an agent reported.
func endpointsOf(e *agentv1.Export) []flintv1.Endpoint {
	return []flintv1.Endpoint{{Transport: flintv1.Transport(e.GetTransport()), Address: e.GetAddress(), Port: int32(e.GetPort())}}
}

// heldUnexplained stands for the reason of a held member whose agent gave
// none (one from before held reasons).
const heldUnexplained = "the target cannot complete I/O on it"

// dropOut records that the target no longer holds rep in sync; the move
// from Online is told in an Event, since the raid dropped it silently.
// held, when set, says why the target holds writes for it: they complete
// on the other replicas once this is recorded.
func (r *Reconciler) dropOut(vol *flintv1.Volume, rep *flintv1.ReplicaStatus, state flintv1.ReplicaState, now time.Time, held string) {
	switch {
	case rep.State != flintv1.ReplicaStateOnline:
	case held != "":
		r.Recorder.Eventf(vol, nil, corev1.EventTypeWarning, flintv1.EventReplicaOutOfSync, "ObserveTarget",
			"the target holds writes for the replica on OSD %s: %s; recorded %s, so that the writes complete on the other replicas; it is rebuilt when it is back", rep.OSD, held, state)
	default:
		r.Recorder.Eventf(vol, nil, corev1.EventTypeWarning, flintv1.EventReplicaOutOfSync, "ObserveTarget",
			"the target reports the replica on OSD %s out of its raid (now %s): it is not trusted as in sync until it is rebuilt", rep.OSD, state)
	}
	setState(rep, state, now)
}

func servingOSD(w *world, name string) bool {
	o, ok := w.osds[name]
	return ok && o.Status.Phase.Serving()
}

func (r *Reconciler) setPhase(vol *flintv1.Volume, w *world, ts *agentv1.TargetStatus, p *problem) {
	st := &vol.Status
	want := replicasOf(vol, w.pool)
	var online int
	var lagging []string
	rebuilding, creating := false, true
	for _, rep := range st.Replicas {
		if rep.State != flintv1.ReplicaStateCreating {
			creating = false
		}
		switch rep.State {
		case flintv1.ReplicaStateOnline:
			online++
			continue
		case flintv1.ReplicaStateRebuilding:
			rebuilding = true
			lagging = append(lagging, fmt.Sprintf("%s Rebuilding %d%%", rep.OSD, ptr.Deref(rep.RebuildPercent, 0)))
			continue
		}
		entry := fmt.Sprintf("%s %s", rep.OSD, rep.State)
		if why, ok := w.rebuildWaits[rep.OSD]; ok {
			entry += " (its rebuild waits: " + why + ")"
		}
		lagging = append(lagging, entry)
	}
	degraded := metav1.Condition{Type: flintv1.DegradedCondition, Status: metav1.ConditionFalse, Reason: flintv1.VolumeAllReplicasInSyncReason}
	if online < want && !creating {
		degraded.Status, degraded.Reason = metav1.ConditionTrue, flintv1.VolumeReplicasNotInSyncReason
		degraded.Message = fmt.Sprintf("%d of %d replicas in sync; %s", online, want, strings.Join(lagging, ", "))
	}
	conditions.Set(vol, degraded)

	var ready metav1.Condition
	if ts == nil {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, p.reason, p.message
		st.Phase = flintv1.VolumePhaseFailed
		if creating {
			st.Phase = flintv1.VolumePhaseCreating
		}
	} else {
		ready.Status, ready.Reason = metav1.ConditionTrue, flintv1.VolumeServingReason
		e := st.Target.Endpoints[0]
		ready.Message = fmt.Sprintf("OSD %s serves %s at %s:%d over %s to %d hosts", st.Target.OSD, st.Capacity.String(), e.Address, e.Port, e.Transport, len(vol.Spec.PublishedHosts))
		switch {
		case online >= want:
			st.Phase = flintv1.VolumePhaseReady
		case rebuilding:
			st.Phase = flintv1.VolumePhaseRebuilding
		default:
			st.Phase = flintv1.VolumePhaseDegraded
		}
	}
	r.setReady(vol, ready)
}

// setReady sets the Ready condition, with an Event when the Volume stops
// being Ready or stays not Ready for a new reason.
func (r *Reconciler) setReady(vol *flintv1.Volume, c metav1.Condition) {
	old := meta.FindStatusCondition(vol.Status.Conditions, flintv1.ReadyCondition)
	c.Type = flintv1.ReadyCondition
	conditions.Set(vol, c)
	if c.Status == metav1.ConditionFalse && (old == nil || old.Reason != c.Reason) {
		r.Recorder.Eventf(vol, nil, corev1.EventTypeWarning, c.Reason, "Reconcile", "%s", c.Message)
	}
}

// setPending says why the Volume cannot be placed.
func (r *Reconciler) setPending(vol *flintv1.Volume, reason, msg string) {
	vol.Status.Phase = flintv1.VolumePhasePending
	r.setReady(vol, metav1.Condition{Status: metav1.ConditionFalse, Reason: reason, Message: msg})
}

// writeStatus writes what changed since before and says when to look
// again.
func (r *Reconciler) writeStatus(ctx context.Context, before, vol *flintv1.Volume) (ctrl.Result, error) {
	vol.Status.ObservedGeneration = vol.Generation
	if err := r.patchStatus(ctx, before, vol); err != nil {
		return ctrl.Result{}, err
	}
	names := metrics.Volume{Name: vol.Name, UID: string(vol.UID), Pool: vol.Spec.Pool}
	if c := vol.Spec.Claim; c != nil {
		names.ClaimNamespace, names.Claim = c.Namespace, c.Name
	}
	metrics.ObserveVolume(names, rebuilding(vol))
	return r.nextDrive(before, vol), nil
}

// nextDrive says when vol, written from before, is driven again without
// a change.
func (r *Reconciler) nextDrive(before, vol *flintv1.Volume) ctrl.Result {
	switch {
	case vol.Status.Phase != flintv1.VolumePhaseReady:
		return ctrl.Result{RequeueAfter: min(unsettled, r.Resync)}
	case before.Status.Phase != flintv1.VolumePhaseReady:
		// Looked at once more from the settled state: the decisions that
		// wait for every replica in sync (a nearer target) come after
		// this write, and the Volume's own writes do not drive it.
		return ctrl.Result{RequeueAfter: min(unsettled, r.Resync)}
	case !r.settled(vol):
		return ctrl.Result{RequeueAfter: r.Resync}
	}
	// Driven again on a change of its own or of its OSDs, or when an
	// OSD's inventory contradicts it: polling every Ready Volume would
	// cost the agents in proportion to size, not to change.
	return ctrl.Result{}
}

// settled says whether a Ready Volume waits for nothing that only a later
// pass brings: it has its size, no replica failed to be ensured, and no
// replacement waits for room (which an OSD elsewhere may free without
// touching this Volume).
func (r *Reconciler) settled(vol *flintv1.Volume) bool {
	if c := vol.Status.Capacity; c == nil || c.Cmp(vol.Spec.Size) < 0 {
		return false
	}
	if failures, _ := r.lastReplicaErrors.Load(vol.UID); failures != nil && failures.(string) != "" {
		return false
	}
	return !meta.IsStatusConditionTrue(vol.Status.Conditions, flintv1.ReplacementBlockedCondition)
}

// rebuilding maps the OSDs of vol's replicas being rebuilt to their
// progress.
func rebuilding(vol *flintv1.Volume) map[string]int32 {
	out := map[string]int32{}
	for _, rep := range vol.Status.Replicas {
		if rep.State == flintv1.ReplicaStateRebuilding {
			out[rep.OSD] = ptr.Deref(rep.RebuildPercent, 0)
		}
	}
	return out
}
