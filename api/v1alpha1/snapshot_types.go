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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SnapshotSpec is the desired state of a Snapshot.
type SnapshotSpec struct {
	// volume is the name of the Volume to snapshot. Required. Immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="volume is immutable: a Snapshot is of the Volume it was taken of"
	Volume string `json:"volume"`
}

// SnapshotPhase is the coarse state of a Snapshot.
// +kubebuilder:validation:Enum=Pending;Ready;Degraded;Lost;Deleting
type SnapshotPhase string

const (
	// SnapshotPhasePending means the cut is not taken yet; a condition
	// says why.
	SnapshotPhasePending SnapshotPhase = "Pending"
	// SnapshotPhaseReady means every copy taken at the cut is there.
	SnapshotPhaseReady SnapshotPhase = "Ready"
	// SnapshotPhaseDegraded means some copies are lost; at least one is
	// left.
	SnapshotPhaseDegraded SnapshotPhase = "Degraded"
	// SnapshotPhaseLost means no copy is left.
	SnapshotPhaseLost SnapshotPhase = "Lost"
	// SnapshotPhaseDeleting means the copies are being removed.
	SnapshotPhaseDeleting SnapshotPhase = "Deleting"
)

// SnapshotCopyState is the state of one copy of a Snapshot.
// +kubebuilder:validation:Enum=Cutting;Ready;Lost
type SnapshotCopyState string

const (
	// SnapshotCopyCutting means the copy is being taken: recorded before
	// the cut, so a cut the operator did not finish is found and undone.
	SnapshotCopyCutting SnapshotCopyState = "Cutting"
	// SnapshotCopyReady means the copy holds the Snapshot's data.
	SnapshotCopyReady SnapshotCopyState = "Ready"
	// SnapshotCopyLost means the copy's OSD is gone or no longer holds it.
	SnapshotCopyLost SnapshotCopyState = "Lost"
)

// SnapshotCopy is the snapshot of one replica: a read-only lvol on the
// replica's OSD.
type SnapshotCopy struct {
	// osd is the OSD holding the copy.
	OSD string `json:"osd"`
	// lvol is the copy's lvol, as lvstore/<Snapshot uid>.
	// +optional
	Lvol string `json:"lvol,omitempty"`
	// state is the copy's state.
	State SnapshotCopyState `json:"state"`
}

// SnapshotStatus is the observed state of a Snapshot.
type SnapshotStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// phase is the Snapshot's coarse state.
	// +optional
	Phase SnapshotPhase `json:"phase,omitempty"`
	// readyToUse is true once the cut is taken and a copy is left: a
	// Volume can start from it.
	// +optional
	ReadyToUse bool `json:"readyToUse,omitempty"`
	// volumeUID is the uid of the Volume the copies were cut from.
	// +optional
	VolumeUID string `json:"volumeUID,omitempty"`
	// size is the Volume's size at the cut: the least a Volume restored
	// from it has.
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`
	// creationTime is when the Volume's I/O was paused for the cut.
	// +optional
	CreationTime *metav1.Time `json:"creationTime,omitempty"`
	// pauseDuration is how long the Volume's I/O was paused for the cut,
	// as the operator measured it; hosts see that much plus the wait
	// before they reconnect.
	// +optional
	PauseDuration *metav1.Duration `json:"pauseDuration,omitempty"`
	// copies are the snapshots of the Volume's replicas that were in sync
	// at the cut: each holds the same data.
	// +optional
	// +listType=map
	// +listMapKey=osd
	Copies []SnapshotCopy `json:"copies,omitempty"`
	// conditions: Ready (the Snapshot can be restored), Degraded (copies
	// were lost) and one per reason it cannot proceed.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Snapshot is a crash-consistent, point-in-time copy of a Volume: one
// read-only lvol on each OSD that held an in-sync replica, all cut while
// the Volume's I/O was paused (the object behind a VolumeSnapshotContent;
// its name is the CSI snapshot id).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=fsnap,categories=flint
// +kubebuilder:printcolumn:name="Volume",type=string,JSONPath=`.spec.volume`
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.status.size`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="ReadyToUse",type=boolean,JSONPath=`.status.readyToUse`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Snapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the Snapshot.
	// +required
	Spec SnapshotSpec `json:"spec"`
	// status is the observed state of the Snapshot.
	// +optional
	Status SnapshotStatus `json:"status,omitempty"`
}

// SnapshotList is a list of Snapshots.
// +kubebuilder:object:root=true
type SnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Snapshot `json:"items"`
}
