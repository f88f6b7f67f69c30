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
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// findDrift has the Volume and Snapshot controllers drive, now, each
// settled object that the OSD's inventory contradicts: a replica or a
// Snapshot copy placed here that the OSD does not hold, or a target here
// that is missing, short of members or fenced. Settled objects are not polled:
// this inventory, one call per OSD per resync whatever the number of
// Volumes, is how drift (an lvol deleted by hand, a target SPDK lost) is
// found. Objects not settled are driven every few seconds anyway.
// The Snapshot copies it lists are recorded first, as asked then, for
// the Snapshot controller to count them from.
func (r *Reconciler) findDrift(ctx context.Context, osd *flintv1.OSD, inv *agentv1.OSDStatus, asked time.Time) {
	copies := map[string]bool{}
	for _, sn := range inv.GetSnapshots() {
		copies[sn.GetName()] = true
	}
	r.Inventories.Record(osd.Name, asked, copies)
	replicas, targets := map[string]bool{}, map[string]bool{}
	for _, rep := range inv.GetReplicas() {
		replicas[rep.GetVolumeUid()] = true
	}
	for _, t := range inv.GetTargets() {
		if t.GetState() != agentv1.TargetStateStandby {
			targets[t.GetVolumeUid()] = t.GetOnline() == t.GetMembers()
		}
	}
	// A fenced or held target serves its hosts as before only once
	// confirmed: its Volume's drive confirms it.
	for _, uid := range slices.Concat(inv.GetFencedVolumes(), inv.GetHeldVolumes()) {
		targets[uid] = false
	}
	var vols flintv1.VolumeList
	if err := r.List(ctx, &vols, client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	for i := range vols.Items {
		v := &vols.Items[i]
		if v.Status.Phase == flintv1.VolumePhaseReady && volumeDrifted(v, osd.Name, replicas, targets) {
			r.tell(ctx, r.ObserveVolume, v)
		}
	}
	var snaps flintv1.SnapshotList
	if err := r.List(ctx, &snaps, client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	for i := range snaps.Items {
		s := &snaps.Items[i]
		if s.DeletionTimestamp.IsZero() && copyDrifted(s, osd.Name, copies) {
			r.tell(ctx, r.ObserveSnapshot, s)
		}
	}
}

// volumeDrifted says whether the Ready Volume v places something on osd
// that the OSD's inventory lacks.
func volumeDrifted(v *flintv1.Volume, osd string, replicas, targets map[string]bool) bool {
	uid := string(v.UID)
	if t := v.Status.Target; t != nil && t.OSD == osd && !targets[uid] {
		return true
	}
	return placedOn(v, osd) && !replicas[uid]
}

// copyDrifted says whether s counts a copy on osd as ready that the OSD's
// inventory lacks.
func copyDrifted(s *flintv1.Snapshot, osd string, copies map[string]bool) bool {
	for _, c := range s.Status.Copies {
		if c.OSD == osd && c.State == flintv1.SnapshotCopyReady && !copies[string(s.UID)] {
			return true
		}
	}
	return false
}

// tell hands obj to the controller listening on ch.
func (r *Reconciler) tell(ctx context.Context, ch chan<- event.GenericEvent, obj client.Object) {
	select {
	case ch <- event.GenericEvent{Object: obj}:
	case <-ctx.Done():
	}
}
