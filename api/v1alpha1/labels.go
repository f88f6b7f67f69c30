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

// Labels the operator puts on what it creates, and selects by.
const (
	// LabelPool names the Pool an OSD, or an OSD's pod, belongs to.
	LabelPool = "flint.io/pool"
	// LabelNode names the node an OSD's device is on.
	LabelNode = "flint.io/node"
	// LabelOSD names the OSD a pod or Secret belongs to.
	LabelOSD = "flint.io/osd"
	// LabelStopReady is set on an OSD pod once its OSD stopped cleanly
	// (no target, no replica in any raid): the Pool's
	// PodDisruptionBudget then lets a drain evict it.
	LabelStopReady = "flint.io/stop-ready"
)

// AnnotationPlaced is set on a Volume, to when its replicas were first
// recorded, right after they are and before any of them is made. A backup
// (Velero, an etcd restore) brings metadata back but not status: a Volume
// that carries it and whose status names no replica was restored without
// its status, and is not placed again on empty replicas a host would
// format (VolumeRestoredWithoutStatusReason).
const AnnotationPlaced = "flint.io/placed"

// VolumeFinalizer keeps a Volume until the operator has torn down its
// target and replicas. The CSI controller sets it when it creates a
// Volume, saving the operator a write; the operator adds it to a Volume
// created without it.
const VolumeFinalizer = "flint.io/volume-data"

// SnapshotFinalizer keeps a Snapshot until the operator has removed its
// copies.
const SnapshotFinalizer = "flint.io/snapshot-data"
