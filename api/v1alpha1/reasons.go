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

// Reasons of Volume conditions and of the Events that go with them.
const (
	// VolumeTargetUnavailableReason says the target's OSD does not serve; the target moves after --target-grace.
	VolumeTargetUnavailableReason = "TargetUnavailable"
	// VolumeTargetErrorReason says the target's agent failed or reported what cannot be recorded.
	VolumeTargetErrorReason = "TargetError"
	// VolumeTargetLostReason says SPDK on the target lost the raid and no in-sync replica is confirmed yet.
	VolumeTargetLostReason = "TargetLost"
	// VolumeTargetFencedReason says the target's OSD fenced it when its lease lapsed.
	VolumeTargetFencedReason = "TargetFenced"
	// VolumeServingReason says the target serves the Volume.
	VolumeServingReason = "Serving"
	// VolumeNoPlacementReason says no OSDs in distinct failure domains can take the replicas.
	VolumeNoPlacementReason = "NoPlacement"
	// VolumeReplicasNeedPollingReason says the Pool's OSDs run in
	// interrupt mode, where a target cannot attach remote replicas.
	VolumeReplicasNeedPollingReason = "ReplicasNeedPolling"
	// VolumePoolNotFoundReason says the Volume's Pool does not exist.
	VolumePoolNotFoundReason = "PoolNotFound"
	// VolumeAllReplicasInSyncReason says every replica is in sync.
	VolumeAllReplicasInSyncReason = "AllReplicasInSync"
	// VolumeReplicasNotInSyncReason says fewer replicas than asked for are in sync.
	VolumeReplicasNotInSyncReason = "ReplicasNotInSync"
	// VolumePublishedReason says deletion waits: the Volume is published to hosts.
	VolumePublishedReason = "Published"
	// VolumeRebuildWaitingReason says a replica's rebuild waits for a slot
	// (the Pool's rebuild.maxPerOSD) or for the Volume's running rebuild.
	VolumeRebuildWaitingReason = "RebuildWaiting"
	// VolumeKeysUnavailableReason says the DH-HMAC-CHAP keys of the
	// Volume's links cannot be read or made.
	VolumeKeysUnavailableReason = "KeysUnavailable"
)

// Reasons of OSD conditions and of the Events that go with them.
const (
	// OSDPodTerminatingReason says the OSD's pod is terminating.
	OSDPodTerminatingReason = "PodTerminating"
	// OSDPodFailedReason says the OSD's pod failed.
	OSDPodFailedReason = "PodFailed"
	// OSDPodNotRunningReason says the OSD's pod does not run yet.
	OSDPodNotRunningReason = "PodNotRunning"
	// OSDUnschedulableReason says the OSD's pod cannot be scheduled.
	OSDUnschedulableReason = "Unschedulable"
	// OSDContainerWaitingReason says a container of the OSD's pod waits.
	OSDContainerWaitingReason = "ContainerWaiting"
	// OSDAgentUnreachableReason says the agent does not answer the operator.
	OSDAgentUnreachableReason = "AgentUnreachable"
	// OSDAgentNotReadyReason says the agent answers but is not ready.
	OSDAgentNotReadyReason = "AgentNotReady"
	// OSDSPDKDownReason says the agent answers, SPDK does not.
	OSDSPDKDownReason = "SPDKDown"
	// OSDForeignDeviceReason says the device holds data this OSD does not own.
	OSDForeignDeviceReason = "ForeignDevice"
	// OSDConflictReason says SPDK runs with settings the OSD cannot change without a restart.
	OSDConflictReason = "Conflict"
	// OSDWriteCacheOnReason says the device keeps a volatile write cache on
	// that the agent cannot turn off.
	OSDWriteCacheOnReason = "VolatileWriteCacheOn"
	// OSDBlockSizeReason says the device is formatted with logical blocks
	// of another size than every OSD's (4096 bytes).
	OSDBlockSizeReason = "DeviceBlockSize"
	// OSDBadEndpointReason says the agent reports an endpoint no host can connect to.
	OSDBadEndpointReason = "BadEndpoint"
	// OSDServingReason says SPDK serves the device's lvstore.
	OSDServingReason = "Serving"
	// OSDDrainingReason says the OSD serves while its replicas move away.
	OSDDrainingReason = "Draining"
	// OSDTargetsDegradedReason says targets on the OSD run with missing or
	// rebuilding replicas.
	OSDTargetsDegradedReason = "TargetsDegraded"
	// OSDSpaceLowReason says the lvstore has less than the reserve free.
	OSDSpaceLowReason = "ThinSpaceLow"
	// OSDSpaceAvailableReason says the lvstore has the reserve free.
	OSDSpaceAvailableReason = "SpaceAvailable"
	// OSDHoldsReplicasReason says deletion waits: the OSD holds replicas.
	OSDHoldsReplicasReason = "HoldsReplicas"
	// OSDPodCurrentReason says the OSD's pod runs its current spec.
	OSDPodCurrentReason = "PodCurrent"
	// OSDPodOutdatedReason says the OSD's pod runs an older spec and waits
	// for the Pool's rollout to reach it.
	OSDPodOutdatedReason = "PodOutdated"
	// OSDRollingUpdateReason says the OSD stops to have its pod replaced.
	OSDRollingUpdateReason = "RollingUpdate"
	// OSDNodeCordonedReason says the OSD stops for its node's drain.
	OSDNodeCordonedReason = "NodeCordoned"
	// OSDHoldsSnapshotCopiesReason says deletion waits: the OSD holds
	// copies of Snapshots, which cannot move.
	OSDHoldsSnapshotCopiesReason = "HoldsSnapshotCopies"
)

// Reasons of Pool conditions and of the Events that go with them.
const (
	// PoolProvisionableReason says the Pool can provision volumes.
	PoolProvisionableReason = "Provisionable"
	// PoolOSDsNotReadyReason says some OSDs are not ready.
	PoolOSDsNotReadyReason = "OSDsNotReady"
	// PoolOSDsDrainingReason says some OSDs drain.
	PoolOSDsDrainingReason = "OSDsDraining"
	// PoolAllOSDsReadyReason says every OSD is ready.
	PoolAllOSDsReadyReason = "AllOSDsReady"
	// PoolNoOSDsReason says the Pool has no OSDs.
	PoolNoOSDsReason = "NoOSDs"
	// PoolVolumesExistReason says deletion waits: Volumes use the Pool.
	PoolVolumesExistReason = "VolumesExist"
	// PoolRollingReason says OSDs of the rollout's domains stop now.
	PoolRollingReason = "Rolling"
	// PoolRolloutBlockedReason says OSDs wait to stop: stopping the next
	// domain would leave a Volume with too few in-sync replicas.
	PoolRolloutBlockedReason = "RolloutBlocked"
	// PoolUpToDateReason says every OSD runs its current spec on an
	// uncordoned node.
	PoolUpToDateReason = "UpToDate"
)

// Reasons of Snapshot conditions and of the Events that go with them.
const (
	// SnapshotVolumeNotFoundReason says the Snapshot's Volume does not exist, or is being deleted.
	SnapshotVolumeNotFoundReason = "VolumeNotFound"
	// SnapshotVolumeNotServingReason says the cut waits for the Volume's target to serve I/O.
	SnapshotVolumeNotServingReason = "VolumeNotServing"
	// SnapshotCutFailedReason says a cut failed; what it took is removed and the cut is tried again.
	SnapshotCutFailedReason = "CutFailed"
	// SnapshotCutReason says the cut is taken.
	SnapshotCutReason = "Cut"
	// SnapshotAllCopiesReason says every copy taken at the cut is there.
	SnapshotAllCopiesReason = "AllCopies"
	// SnapshotCopiesLostReason says copies were lost with their OSDs.
	SnapshotCopiesLostReason = "CopiesLost"
	// SnapshotInUseReason says deletion waits: SPDK keeps a snapshot while more than one lvol is its clone.
	SnapshotInUseReason = "InUse"
)

// VolumeRestoredWithoutStatusReason says the Volume was placed before
// (AnnotationPlaced) but its status names no replica: it is not placed
// again empty.
const VolumeRestoredWithoutStatusReason = "RestoredWithoutStatus"

// VolumeSourceNotReadyReason says the Volume waits for what it starts from (spec.source).
const VolumeSourceNotReadyReason = "SourceNotReady"

// SnapshotRestoringReason says deletion waits: a Volume is being created from the Snapshot.
const SnapshotRestoringReason = "Restoring"

// Reasons of Events that go with no condition.
const (
	// EventPlaced says where a new Volume's replicas and target went.
	EventPlaced = "Placed"
	// EventRestoring says a Volume starts from a Snapshot or a Volume.
	EventRestoring = "Restoring"
	// EventCopyMissing says a restored Volume's replica starts empty: its
	// OSD holds no copy of the source any more.
	EventCopyMissing = "CopyMissing"
	// EventTargetMoved says a Volume's target moved to another OSD.
	EventTargetMoved = "TargetMoved"
	// EventTargetUnfenced says a fenced target, confirmed still the
	// Volume's, serves its hosts again.
	EventTargetUnfenced = "TargetUnfenced"
	// EventTargetReassembled says a target whose SPDK lost the raid was
	// assembled from one replica.
	EventTargetReassembled = "TargetReassembled"
	// EventReplicaOutOfSync says the target reports a replica out of its
	// raid.
	EventReplicaOutOfSync = "ReplicaOutOfSync"
	// EventReplicaStale says replicas the stopped target did not hold in
	// sync are rebuilt from the new one.
	EventReplicaStale = "ReplicaStale"
	// EventReplicaStopped says a replica is let go for its OSD's stop.
	EventReplicaStopped = "ReplicaStopped"
	// EventReplicaReplaced says a replica was replaced by one elsewhere.
	EventReplicaReplaced = "ReplicaReplaced"
	// EventReplacementBlocked says a replica cannot be replaced, and why
	// (condition ReplacementBlocked).
	EventReplacementBlocked = "ReplacementBlocked"
	// EventReplicaError says an agent failed to ensure a replica.
	EventReplicaError = "ReplicaError"
	// EventCleanupDeferred says OSDs that do not serve delete what they
	// hold of a deleted Volume or Snapshot when they return.
	EventCleanupDeferred = "CleanupDeferred"
	// EventRolloutStarted says a Pool's rollout stops the OSDs of more
	// failure domains.
	EventRolloutStarted = "RolloutStarted"
	// EventOSDCreated says a Pool created an OSD for a device.
	EventOSDCreated = "OSDCreated"
	// EventPodCreated says an OSD's pod was created.
	EventPodCreated = "PodCreated"
	// EventPodReplaced says an OSD's pod, running an older spec, was
	// replaced.
	EventPodReplaced = "PodReplaced"
	// EventOrphanFound says an OSD holds an lvol no object claims, kept
	// until the orphan grace ends.
	EventOrphanFound = "OrphanFound"
	// EventOrphanDeleted says an OSD deleted what no object claims.
	EventOrphanDeleted = "OrphanDeleted"
	// EventOSDDraining says an OSD that left the Pool's devices drains
	// before it is deleted.
	EventOSDDraining = "OSDDraining"
	// EventOSDDeleted says the Pool deleted an OSD that held nothing.
	EventOSDDeleted = "OSDDeleted"
	// EventCloneSnapshotReleased says the Snapshot a Volume's copy was
	// cloned from is deleted.
	EventCloneSnapshotReleased = "CloneSnapshotReleased"
	// EventResumeFailed says a Volume paused for a Snapshot's cut could
	// not be resumed at once.
	EventResumeFailed = "ResumeFailed"
)
