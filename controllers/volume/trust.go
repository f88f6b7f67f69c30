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
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// trustRecorded says whether this pass may take vol's status as what its
// agents hold and skip the drive: the first look of this process at a
// Volume that no OSD inventory contradicts, that was settled when last
// written, that no Snapshot is being cut from, and that this pass decided
// nothing for and called no agent for (read is its resourceVersion as
// read). A new operator then makes no agent call per Volume at start: a
// restart at 10,000 Volumes drove 40,000 agent calls before it had seen
// them all. What a trusted status misses, an OSD's inventory shows within
// a resync, and findDrift has the Volume driven.
func (r *Reconciler) trustRecorded(ctx context.Context, vol *flintv1.Volume, w *world, read string) (bool, error) {
	_, seen := r.seen.LoadOrStore(vol.Name, true)
	_, told := r.contradicted.LoadAndDelete(vol.Name)
	if seen || told || w.calledAgent || vol.ResourceVersion != read || !recordedSettled(vol, w) || !r.settled(vol) {
		return false, nil
	}
	// A cut the previous process left unfinished may have left the
	// target paused, which no inventory shows; the drive lets the hosts
	// back in.
	var cutting flintv1.SnapshotList
	if err := r.List(ctx, &cutting, client.MatchingFields{indexCutting: vol.Name}); err != nil {
		return false, err
	}
	return len(cutting.Items) == 0, nil
}

// cuttingFrom indexes a Snapshot under its Volume while one of its copies
// is being cut.
func cuttingFrom(o client.Object) []string {
	s := o.(*flintv1.Snapshot)
	for _, c := range s.Status.Copies {
		if c.State == flintv1.SnapshotCopyCutting {
			return []string{s.Spec.Volume}
		}
	}
	return nil
}

// recordedSettled says whether vol's status records a Volume with
// nothing left to do: Ready for its current generation, every replica
// Online in its target's raid, on usable OSDs, and the
// target serving with the hosts and limits the spec asks for read back.
func recordedSettled(vol *flintv1.Volume, w *world) bool {
	st, t := vol.Status, vol.Status.Target
	if st.Phase != flintv1.VolumePhaseReady || st.ObservedGeneration != vol.Generation || t == nil || len(t.Endpoints) == 0 {
		return false
	}
	if !usable(w.osds[t.OSD]) || !sameSet(t.AllowedHosts, vol.Spec.PublishedHosts) || !equality.Semantic.DeepEqual(t.QoS, vol.Spec.QoS) {
		return false
	}
	var replicas []string
	for _, rep := range st.Replicas {
		if rep.State != flintv1.ReplicaStateOnline || !usable(w.osds[rep.OSD]) {
			return false
		}
		replicas = append(replicas, rep.OSD)
	}
	return len(replicas) == replicasOf(vol, w.pool) && sameSet(t.Members, replicas)
}

func sameSet(a, b []string) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(x string) bool { return !slices.Contains(b, x) })
}
