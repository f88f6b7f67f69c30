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

// VolumeSpec is the desired state of a Volume.
// +kubebuilder:validation:XValidation:rule="has(self.replicas) == has(oldSelf.replicas)",message="replicas is immutable: it cannot be added or removed after creation"
// +kubebuilder:validation:XValidation:rule="has(self.source) == has(oldSelf.source)",message="source is immutable: it cannot be added or removed after creation"
// +kubebuilder:validation:XValidation:rule="has(self.claim) == has(oldSelf.claim)",message="claim is immutable: it cannot be added or removed after creation"
// +kubebuilder:validation:XValidation:rule="has(self.hostAuthentication) == has(oldSelf.hostAuthentication)",message="hostAuthentication is immutable: it cannot be added or removed after creation"
type VolumeSpec struct {
	// pool is the name of the Pool the Volume is provisioned from.
	// Required. Immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="pool is immutable: a Volume's replicas live in one Pool"
	Pool string `json:"pool"`

	// size is the Volume's capacity, 1Mi to 1Pi. Required. It may grow
	// (online resize) but never shrink.
	// +required
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity('1Mi')) >= 0",message="size must be at least 1Mi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity('1Pi')) <= 0",message="size must be at most 1Pi, the largest volume Flint makes"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity(string(oldSelf))) >= 0",message="size cannot shrink: shrinking a block device under a filesystem loses data"
	Size resource.Quantity `json:"size"`

	// replicas overrides the Pool's number of copies. Optional; defaults to
	// the Pool's replicas. Immutable.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="replicas is immutable"
	Replicas *int32 `json:"replicas,omitempty"`

	// source is the content the Volume starts from: a Snapshot's, or
	// another Volume's now. Optional; without it a Volume starts with
	// zeroes. Immutable. size must be at least the source's.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="source is immutable"
	Source *VolumeSource `json:"source,omitempty"`

	// claim is the PersistentVolumeClaim the Volume was provisioned for,
	// as the CSI provisioner names it: the name people know the Volume by.
	// Optional (a Volume made by hand has none). Immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="claim is immutable: it names the claim the Volume was provisioned for"
	Claim *ClaimReference `json:"claim,omitempty"`

	// rebuildMaxBandwidthMiBps caps this Volume's rebuilds, in MiB/s, in
	// place of its Pool's rebuild.maxBandwidthMiBps; 0 sets no cap. A
	// rebuild keeps the cap it started with. Optional.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	RebuildMaxBandwidthMiBps *int32 `json:"rebuildMaxBandwidthMiBps,omitempty"`

	// publishedHosts are the NVMe host NQNs allowed to connect to the
	// Volume's subsystem: the nodes it is published to. Optional.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=223
	// +kubebuilder:validation:items:Pattern=`^nqn\.[0-9]{4}-[0-9]{2}\.[a-z0-9.-]+(:.+)?$`
	PublishedHosts []string `json:"publishedHosts,omitempty"`

	// qos limits the Volume's I/O at its target, for every host together.
	// Optional: without it nothing is limited. It may change at any time
	// (a PVC's VolumeAttributesClass through ControllerModifyVolume) and
	// takes effect without a reconnect; a target that moves, or whose
	// SPDK restarts, is limited again before it serves.
	// +optional
	QoS *VolumeQoS `json:"qos,omitempty"`

	// nearNode is the node whose Pods use the Volume. Its target goes to
	// a replica on an OSD of that node when one can take it, else to one
	// in the node's zone (topology.kubernetes.io/zone), so that a
	// hyperconverged read never crosses the network; a served target
	// that is farther moves there by a planned move while it lets no host
	// in and every replica is Online. Optional: without it the target is
	// the least committed replica. The CSI controller sets it from CreateVolume's preferred
	// topology (the node a WaitForFirstConsumer claim's Pod was scheduled
	// to) and from ControllerPublishVolume to a Volume published nowhere
	// else (its Pod moved).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	NearNode string `json:"nearNode,omitempty"`

	// hostAuthentication is what a host must prove to connect to the
	// Volume's target. None (the default) lets in any host it is
	// published to that presents that node's host NQN. DHHMACCHAP asks
	// for NVMe in-band authentication, both ways: the host proves the
	// Volume's host secret, the target its controller secret. The
	// operator makes both, once, in the Secret flint-host-auth-<name> of
	// its namespace; the CSI node plugin gets them from the kubelet
	// through the StorageClass's node-stage secret (docs/security.md).
	// The node's kernel needs NVMe host authentication
	// (CONFIG_NVME_HOST_AUTH, Linux 6.7 or later in most distributions).
	// Optional. Immutable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="hostAuthentication is immutable: hosts connected with it would be refused at their next reconnect"
	HostAuthentication HostAuthentication `json:"hostAuthentication,omitempty"`
}

// HostAuthentication is what a host proves to connect to a Volume.
// +kubebuilder:validation:Enum=None;DHHMACCHAP
type HostAuthentication string

const (
	// HostAuthenticationNone asks nothing beyond the node's host NQN.
	HostAuthenticationNone HostAuthentication = "None"
	// HostAuthenticationDHHMACCHAP asks for NVMe in-band authentication
	// (DH-HMAC-CHAP), bidirectional.
	HostAuthenticationDHHMACCHAP HostAuthentication = "DHHMACCHAP"
)

// VolumeQoS are a Volume's I/O limits; a limit left out or 0 limits
// nothing. The target's SPDK enforces them in 1 ms time slices.
type VolumeQoS struct {
	// iops limits reads and writes together, in I/Os per second: a
	// multiple of 1000, the step SPDK limits in.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000000
	// +kubebuilder:validation:MultipleOf=1000
	IOPS int64 `json:"iops,omitempty"`
	// readWriteMiBps limits reads and writes together, in MiB/s.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	ReadWriteMiBps int64 `json:"readWriteMiBps,omitempty"`
	// readMiBps limits reads, in MiB/s.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	ReadMiBps int64 `json:"readMiBps,omitempty"`
	// writeMiBps limits writes, in MiB/s.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	WriteMiBps int64 `json:"writeMiBps,omitempty"`
}

// ClaimReference names a PersistentVolumeClaim.
type ClaimReference struct {
	// namespace of the claim.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// name of the claim.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// String is the claim as namespace/name.
func (c *ClaimReference) String() string {
	if c == nil {
		return ""
	}
	return c.Namespace + "/" + c.Name
}

// VolumeSource is the content a Volume starts from: exactly one of a
// Snapshot or another Volume.
// +kubebuilder:validation:XValidation:rule="has(self.snapshot) != has(self.volume)",message="set exactly one of source.snapshot and source.volume"
type VolumeSource struct {
	// snapshot is the name of a Snapshot to start from.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Snapshot string `json:"snapshot,omitempty"`
	// volume is the name of a Volume to copy.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Volume string `json:"volume,omitempty"`
}

// VolumePhase is the coarse state of a Volume.
// +kubebuilder:validation:Enum=Pending;Creating;Ready;Degraded;Rebuilding;Failed;Deleting
type VolumePhase string

const (
	// VolumePhasePending means no placement is possible yet; a condition
	// says why.
	VolumePhasePending VolumePhase = "Pending"
	// VolumePhaseCreating means replicas and the target are being built.
	VolumePhaseCreating VolumePhase = "Creating"
	// VolumePhaseReady means every replica is in sync and the target serves
	// I/O.
	VolumePhaseReady VolumePhase = "Ready"
	// VolumePhaseDegraded means I/O is served with fewer in-sync replicas
	// than asked for.
	VolumePhaseDegraded VolumePhase = "Degraded"
	// VolumePhaseRebuilding means a replica is being resynchronised.
	VolumePhaseRebuilding VolumePhase = "Rebuilding"
	// VolumePhaseFailed means no I/O can be served.
	VolumePhaseFailed VolumePhase = "Failed"
	// VolumePhaseDeleting means the Volume's target and replicas are being
	// removed.
	VolumePhaseDeleting VolumePhase = "Deleting"
)

// ReplicaState is the state of one replica of a Volume.
// +kubebuilder:validation:Enum=Creating;Online;Rebuilding;Faulted;Stale
type ReplicaState string

const (
	// ReplicaStateCreating means the replica's lvol or export is being made.
	ReplicaStateCreating ReplicaState = "Creating"
	// ReplicaStateOnline means the replica is an in-sync raid member.
	ReplicaStateOnline ReplicaState = "Online"
	// ReplicaStateRebuilding means the replica is being resynchronised.
	ReplicaStateRebuilding ReplicaState = "Rebuilding"
	// ReplicaStateFaulted means the replica's OSD or lvol failed.
	ReplicaStateFaulted ReplicaState = "Faulted"
	// ReplicaStateStale means the replica is no raid member and must be
	// resynchronised before it is one again.
	ReplicaStateStale ReplicaState = "Stale"
)

// ReplicaStatus is one copy of a Volume.
type ReplicaStatus struct {
	// osd is the OSD holding the replica.
	OSD string `json:"osd"`
	// lvol is the replica's lvol, as lvstore/<Volume uid>.
	Lvol string `json:"lvol"`
	// state is the replica's state.
	State ReplicaState `json:"state"`
	// rebuildPercent is the resynchronisation progress while rebuilding.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	RebuildPercent *int32 `json:"rebuildPercent,omitempty"`
	// lastTransitionTime is when state last changed: a replica Faulted for
	// longer than the operator's grace period is replaced.
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
}

// VolumeTarget is where hosts reach a Volume.
type VolumeTarget struct {
	// osd is the OSD that runs the Volume's raid1 and exports it.
	OSD string `json:"osd"`
	// nqn is the Volume's subsystem NQN; it never changes, so a host's
	// multipath joins a moved target to the same namespace.
	NQN string `json:"nqn"`
	// endpoints are the target's NVMe-oF listeners.
	// +optional
	Endpoints []Endpoint `json:"endpoints,omitempty"`
	// epoch counts the target's incarnations: placing the Volume starts it
	// at 1, and every target built anew (a move, a re-assembly after the
	// target's SPDK lost the raid) takes the next, recorded before the
	// target is built. It picks the range of controller ids the target
	// hands hosts, so a host still holding a dead path to the previous
	// target is never given an id that path holds.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Epoch int32 `json:"epoch,omitempty"`
	// allowedHosts are the host NQNs the target lets connect, as its agent
	// read them back from SPDK: a host not listed cannot connect. It lags
	// spec.publishedHosts until the target applied them.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	AllowedHosts []string `json:"allowedHosts,omitempty"`
	// members are the OSDs whose replicas the target's raid holds, as it
	// last reported: one left out holds none of the writes since. An OSD
	// that stops waits until its replicas are out of every raid.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	Members []string `json:"members,omitempty"`
	// qos are the limits the target enforces, as its agent read them
	// back from SPDK. It lags spec.qos until the target applied it.
	// +optional
	QoS *VolumeQoS `json:"qos,omitempty"`
	// standby is where a planned move takes the target: its subsystem
	// is made there first, without a namespace, so that the hosts
	// connect to it before the target stops here and the move costs
	// them no connect (docs/proposals/planned-move-handover.md).
	// +optional
	Standby *VolumeStandby `json:"standby,omitempty"`
	// cut is set by an unplanned move: the old target may keep its
	// hosts while its members answer it, so the new target serves only
	// once the move cut the old one off this target's own replica and
	// waited out that hold (docs/volumes.md, "Fencing").
	// +optional
	Cut *VolumeTargetCut `json:"cut,omitempty"`
}

// VolumeTargetCut is when an unplanned move's new target may serve.
type VolumeTargetCut struct {
	// from is the OSD of the target the move left.
	From string `json:"from"`
	// notBefore is when the old target's lease has lapsed and it fenced,
	// as the operator counts it: the last renewal it tried, plus the
	// target grace.
	NotBefore metav1.Time `json:"notBefore"`
	// servesAfter is when the old target's hold has run out: the cut's
	// answer plus the hold and the fence's margin, or notBefore if later.
	// Unset until the cut is made.
	// +optional
	ServesAfter *metav1.Time `json:"servesAfter,omitempty"`
}

// VolumeStandby is the next target of a planned move, prepared before the
// current one stops: the Volume's subsystem on that OSD, letting the
// published hosts connect, serving nothing until the move.
type VolumeStandby struct {
	// osd is the OSD the target moves to.
	OSD string `json:"osd"`
	// epoch is the one the target takes there: the current one plus one.
	// +kubebuilder:validation:Minimum=1
	Epoch int32 `json:"epoch"`
	// since is when the move was decided; it waits for the hosts to
	// connect for a bounded time from then.
	Since metav1.Time `json:"since"`
	// endpoints are the standby's NVMe-oF listeners, once prepared.
	// +optional
	Endpoints []Endpoint `json:"endpoints,omitempty"`
	// allowedHosts are the host NQNs the standby lets connect, as its
	// agent read them back: unpublishing waits for these too.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	AllowedHosts []string `json:"allowedHosts,omitempty"`
	// connectedHosts are the host NQNs with a controller on the standby,
	// as its agent last read them.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	ConnectedHosts []string `json:"connectedHosts,omitempty"`
	// problem says why the standby could not be made; the move then goes
	// on without waiting for it.
	// +optional
	Problem string `json:"problem,omitempty"`
	// switching says the move waits no longer: the old target is being
	// stopped, and a pass that finds this goes on with the move.
	// +optional
	Switching bool `json:"switching,omitempty"`
}

// VolumeStatus is the observed state of a Volume.
type VolumeStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// phase is the Volume's coarse state.
	// +optional
	Phase VolumePhase `json:"phase,omitempty"`
	// capacity is the size the target currently exports.
	// +optional
	Capacity *resource.Quantity `json:"capacity,omitempty"`
	// replicas are the Volume's copies and their state; raid membership is
	// kept here, not in on-disk superblocks.
	// +optional
	// +listType=map
	// +listMapKey=osd
	Replicas []ReplicaStatus `json:"replicas,omitempty"`
	// target is where hosts reach the Volume.
	// +optional
	Target *VolumeTarget `json:"target,omitempty"`
	// conditions: Ready (the target serves I/O), Degraded (fewer in-sync
	// replicas than asked for) and one per reason the Volume cannot
	// proceed.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Volume is one replicated block volume: the object behind a
// PersistentVolume (its name is the CSI volume id).
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=fvol,categories=flint
// +kubebuilder:printcolumn:name="Claim",type=string,JSONPath=`.spec.claim.name`
// +kubebuilder:printcolumn:name="Claim-Namespace",type=string,JSONPath=`.spec.claim.namespace`,priority=1
// +kubebuilder:printcolumn:name="Pool",type=string,JSONPath=`.spec.pool`
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.spec.size`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.status.target.osd`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="NQN",type=string,JSONPath=`.status.target.nqn`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Volume struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the Volume.
	// +required
	Spec VolumeSpec `json:"spec"`
	// status is the observed state of the Volume.
	// +optional
	Status VolumeStatus `json:"status,omitempty"`
}

// VolumeList is a list of Volumes.
// +kubebuilder:object:root=true
type VolumeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Volume `json:"items"`
}
