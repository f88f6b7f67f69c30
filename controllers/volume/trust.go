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
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// trustRecorded says whether this pass may take vol's status as what its
// agents hold and skip the drive: the first look of this process at a
// Volume that no OSD inventory contradicts, that was settled when last
// written, and that this pass decided nothing for (read is its
// resourceVersion as read). A new operator then makes no agent call per
// Volume at start: a restart at 10,000 Volumes drove 40,000 agent calls
// before it had seen them all. What a trusted status misses, an OSD's
// inventory shows within a resync, and findDrift has the Volume driven.
func (r *Reconciler) trustRecorded(vol *flintv1.Volume, w *world, read string) bool {
	if _, told := r.contradicted.LoadAndDelete(vol.Name); told {
		return false
	}
	if _, seen := r.seen.LoadOrStore(vol.Name, true); seen {
		return false
	}
	return vol.ResourceVersion == read && recordedSettled(vol, w) && r.settled(vol)
}

// recordedSettled says whether vol's status records a Volume with
// nothing left to do: Ready for its current generation, every replica
// Online in its target's raid, on OSDs that serve and stay, and the
// target serving with the hosts and limits the spec asks for read back.
func recordedSettled(vol *flintv1.Volume, w *world) bool {
	st, t := vol.Status, vol.Status.Target
	if st.Phase != flintv1.VolumePhaseReady || st.ObservedGeneration != vol.Generation || t == nil || len(t.Endpoints) == 0 {
		return false
	}
	if !stays(w, t.OSD) || !sameSet(t.AllowedHosts, vol.Spec.PublishedHosts) || !equality.Semantic.DeepEqual(t.QoS, vol.Spec.QoS) {
		return false
	}
	var replicas []string
	for _, rep := range st.Replicas {
		if rep.State != flintv1.ReplicaStateOnline || !stays(w, rep.OSD) {
			return false
		}
		replicas = append(replicas, rep.OSD)
	}
	return len(replicas) == replicasOf(vol, w.pool) && sameSet(t.Members, replicas)
}

// stays says whether the OSD serves and is not on its way out.
func stays(w *world, name string) bool {
	o := w.osds[name]
	return o != nil && o.Status.Phase.Serving() && !o.Leaving()
}

func sameSet(a, b []string) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(x string) bool { return !slices.Contains(b, x) })
}
