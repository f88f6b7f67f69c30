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

package v1alpha1

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
)

// SpaceReservePercent is the share of an OSD's lvstore kept free: below
// it the OSD takes no new replica (SpaceLowCondition), long before a thin
// replica's write finds no cluster to allocate. Ceph warns at 85 % used
// and stops backfill at 90 %; Flint stops placement at 80 %, because its
// rebuilds and snapshots allocate with no further stop.
const SpaceReservePercent = 20

// Low reports whether the free space is under SpaceReservePercent of the
// total.
func (c *OSDCapacity) Low() bool {
	return c.Free.Value()*100 < c.Total.Value()*SpaceReservePercent
}

// ReplicasHeld counts what still lives on the OSD: the replicas its agent
// last reported, or the Volumes of vols that place a replica or their
// target on it, whichever is more. The Pool controller drains and the OSD
// controller keeps an OSD by this one count.
func (o *OSD) ReplicasHeld(vols []Volume) int {
	return max(o.ReplicasPlaced(vols), int(o.Status.Replicas))
}

// ReplicasPlaced counts the Volumes of vols that place a replica or their
// target on the OSD.
func (o *OSD) ReplicasPlaced(vols []Volume) int {
	n := 0
	for _, v := range vols {
		onTarget := v.Status.Target != nil && v.Status.Target.OSD == o.Name
		if onTarget || slices.ContainsFunc(v.Status.Replicas, func(r ReplicaStatus) bool { return r.OSD == o.Name }) {
			n++
		}
	}
	return n
}

// SnapshotsHeld names the Snapshots of snaps whose last copy that is not
// Lost is on the OSD. A copy cannot move with its replica (it is a
// snapshot in the replica's lvstore), so the OSD holds the Snapshot until
// it is deleted; a Snapshot with a copy elsewhere only loses one of its
// copies (Degraded, Event CopiesLost).
func (o *OSD) SnapshotsHeld(snaps []Snapshot) []string {
	var names []string
	for _, s := range snaps {
		here, elsewhere := false, false
		for _, c := range s.Status.Copies {
			if c.State == SnapshotCopyLost {
				continue
			}
			if c.OSD == o.Name {
				here = true
			} else {
				elsewhere = true
			}
		}
		if here && !elsewhere {
			names = append(names, s.Name)
		}
	}
	return names
}

// Serving reports whether an OSD in phase p serves I/O: Ready, Degraded,
// or Draining (it still serves what it holds while that moves away).
func (p OSDPhase) Serving() bool {
	return p == OSDPhaseReady || p == OSDPhaseDegraded || p == OSDPhaseDraining
}

// Stopping reports whether the Pool's rollout stops the OSD
// (StoppingCondition): it still serves, but takes no target and no new
// replica, and its replicas are let go.
func (o *OSD) Stopping() bool {
	return meta.IsStatusConditionTrue(o.Status.Conditions, StoppingCondition)
}

// Leaving reports whether the OSD is on its way out, for good (it drains
// or is deleted) or for a while (it stops).
func (o *OSD) Leaving() bool {
	return o.Spec.Drain || !o.DeletionTimestamp.IsZero() || o.Stopping()
}
