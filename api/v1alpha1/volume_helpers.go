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

// CloneSnapshotName is the Snapshot taken for a Volume that copies
// another (spec.source.volume). It is owned by the copy and deleted once
// the copy's replicas are cloned from it.
func (v *Volume) CloneSnapshotName() string { return "clone-" + string(v.UID) }

// SourceSnapshot is the Snapshot v starts from: spec.source.snapshot, or
// the one taken for a copy of another Volume; "" without a source.
func (v *Volume) SourceSnapshot() string {
	switch s := v.Spec.Source; {
	case s == nil:
		return ""
	case s.Snapshot != "":
		return s.Snapshot
	}
	return v.CloneSnapshotName()
}

// Restoring says whether v starts from a source and some replica of it is
// not placed or not created yet: the source Snapshot must stay.
func (v *Volume) Restoring() bool {
	if v.Spec.Source == nil {
		return false
	}
	if len(v.Status.Replicas) == 0 {
		return v.DeletionTimestamp.IsZero()
	}
	for _, rep := range v.Status.Replicas {
		if rep.State == ReplicaStateCreating {
			return true
		}
	}
	return false
}

// RebuildMaxBandwidthMiBps is the bandwidth cap of the Volume's rebuilds
// in MiB/s, 0 for none: its own, else its Pool's.
func (v *Volume) RebuildMaxBandwidthMiBps(pool *Pool) int32 {
	if v.Spec.RebuildMaxBandwidthMiBps != nil {
		return *v.Spec.RebuildMaxBandwidthMiBps
	}
	if pool == nil {
		return 0
	}
	return pool.Spec.Rebuild.MaxBandwidthMiBps
}

// OrNone is q, or nil when it limits nothing: a Volume without limits
// has no spec.qos, and a target that enforces none reports none.
func (q VolumeQoS) OrNone() *VolumeQoS {
	if q == (VolumeQoS{}) {
		return nil
	}
	return &q
}
