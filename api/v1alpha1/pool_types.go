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

// PoolSpec is the desired state of a Pool.
// +kubebuilder:validation:XValidation:rule="self.devices.driver != 'pcie' || has(self.osd.hugepages)",message="devices.driver pcie needs osd.hugepages: SPDK's user-space NVMe driver only does DMA from hugepage memory"
type PoolSpec struct {
	// replicas is the number of copies of every volume, each on a distinct
	// failure domain. Optional; defaults to 3. Immutable.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="replicas is immutable: create a new Pool for a different number of copies"
	Replicas int32 `json:"replicas,omitempty"`

	// failureDomain is the node label key whose values must differ between
	// the replicas of a volume. Optional; defaults to kubernetes.io/hostname.
	// Immutable.
	// +optional
	// +kubebuilder:default="kubernetes.io/hostname"
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="failureDomain is immutable: existing replicas were placed by it"
	FailureDomain string `json:"failureDomain,omitempty"`

	// nodeSelector picks the nodes that run this Pool's OSDs. Optional;
	// empty selects every node.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// devices says which devices become OSDs. Required.
	// +required
	Devices PoolDevices `json:"devices"`

	// osd is given to every OSD of the Pool: dedicated cores, hugepages,
	// memory and SPDK settings. Optional; every field has a default.
	// +optional
	// +kubebuilder:default={}
	OSD OSDTemplate `json:"osd"`

	// network is how OSDs are reached. Optional; defaults to TCP on the pod
	// network.
	// +optional
	// +kubebuilder:default={}
	Network Network `json:"network"`

	// nvmf tunes SPDK's NVMe-oF transport. Optional.
	// +optional
	NVMf NVMfTuning `json:"nvmf,omitempty"`

	// overcommitPercent caps the sum of the sizes of the Pool's volumes at
	// this percentage of its usable capacity: volumes are thin, so more than
	// 100 promises space that may not exist when it is written. Optional;
	// defaults to 100 (no overcommit).
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=1000
	OvercommitPercent int32 `json:"overcommitPercent,omitempty"`

	// rollout says how a change to the OSD pods (a new OSD image, a
	// changed osd or network setting) and a node drain reach running
	// OSDs: a failure domain at a time, each OSD stopped cleanly.
	// Optional.
	// +optional
	// +kubebuilder:default={}
	Rollout RolloutPolicy `json:"rollout"`

	// rebuild bounds what resynchronising replicas costs the OSDs.
	// Optional.
	// +optional
	// +kubebuilder:default={}
	Rebuild RebuildPolicy `json:"rebuild"`
}

// RebuildPolicy bounds rebuilds: how many an OSD takes part in at once,
// and how fast each copies.
type RebuildPolicy struct {
	// maxPerOSD is how many rebuilds an OSD takes part in at once, as the
	// target that copies or as the OSD of the replica copied to. A
	// replica whose rebuild would exceed it waits, out of the raid, for a
	// slot. Optional; defaults to 4.
	// +optional
	// +kubebuilder:default=4
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	MaxPerOSD int32 `json:"maxPerOSD,omitempty"`

	// maxBandwidthMiBps caps each rebuild's copy, in MiB/s; a Volume's
	// spec.rebuildMaxBandwidthMiBps overrides it. A rebuild keeps the cap
	// it started with. Optional; 0, the default, sets no cap.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	MaxBandwidthMiBps int32 `json:"maxBandwidthMiBps,omitempty"`
}

// RolloutPolicy bounds how many failure domains stop their OSDs at once,
// for a rolling update or a drain.
type RolloutPolicy struct {
	// maxUnavailableDomains is how many failure domains may have OSDs
	// stopped at once. A domain stops only while every Volume with a
	// replica there keeps, outside the stopped domains, at least replicas
	// minus this many in-sync replicas (and at least one); the next domain
	// starts once every replica in the last one is back in sync. Optional;
	// defaults to 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4
	MaxUnavailableDomains int32 `json:"maxUnavailableDomains,omitempty"`
}

// PoolDevices says which devices of the selected nodes become OSDs: either
// the devices a device plugin hands out (resourceName), or an explicit list
// per node (nodes), or RAM-backed devices for development (malloc).
// +kubebuilder:validation:XValidation:rule="self.driver != 'malloc' || has(self.malloc)",message="devices.driver malloc needs devices.malloc.size"
// +kubebuilder:validation:XValidation:rule="self.driver == 'malloc' || !has(self.malloc)",message="devices.malloc is only valid with devices.driver malloc"
// +kubebuilder:validation:XValidation:rule="self.driver == 'malloc' || has(self.resourceName) != has(self.nodes)",message="set exactly one of devices.resourceName (devices from a device plugin) and devices.nodes (devices listed per node)"
// +kubebuilder:validation:XValidation:rule="self.driver != 'malloc' || !has(self.nodes)",message="devices.nodes lists real devices; remove it for driver malloc"
// +kubebuilder:validation:XValidation:rule="!has(self.resourceName) || self.driver == 'pcie'",message="devices.resourceName hands out PCI devices and needs driver pcie; for aio or uring list device paths in devices.nodes"
// +kubebuilder:validation:XValidation:rule="!has(self.nodes) || self.nodes.all(n, n.devices.all(d, self.driver == 'pcie' ? d.matches('^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}[.][0-7]$') : d.startsWith('/')))",message="devices.nodes[].devices must be PCI addresses such as 0000:3b:00.0 for driver pcie, and absolute paths such as /dev/nvme0n1 for aio and uring"
// +kubebuilder:validation:XValidation:rule="!has(self.maxPerNode) || has(self.resourceName) || self.driver == 'malloc'",message="devices.maxPerNode bounds devices from a device plugin or malloc devices; remove it when devices.nodes lists the devices"
type PoolDevices struct {
	// driver is the SPDK bdev module that claims the devices. Required.
	// pcie (user-space NVMe over vfio) is the production choice; aio and
	// uring use the kernel's block layer; malloc is development only.
	// +required
	Driver DeviceDriver `json:"driver"`

	// resourceName is the device plugin resource that hands out NVMe
	// devices (for example flint.io/nvme); every allocatable device of a
	// selected node becomes an OSD, up to maxPerNode. Only for driver pcie.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9.-]+/[a-zA-Z0-9_.-]+$`
	ResourceName string `json:"resourceName,omitempty"`

	// maxPerNode bounds the OSDs per node for device-plugin and malloc
	// devices. Optional; defaults to every allocatable device, and to 1 for
	// malloc.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	MaxPerNode *int32 `json:"maxPerNode,omitempty"`

	// nodes lists the devices of each node explicitly: PCI addresses for
	// pcie, block device or file paths for aio and uring.
	// +optional
	// +listType=map
	// +listMapKey=node
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=128
	Nodes []NodeDevices `json:"nodes,omitempty"`

	// malloc makes RAM-backed devices. Development only: data is lost when
	// an OSD restarts. Required for, and only valid with, driver malloc.
	// +optional
	Malloc *MallocDevice `json:"malloc,omitempty"`

	// powerLossProtection declares that the devices keep what their
	// volatile write cache holds through a power loss (capacitor-backed
	// caches). Without it every OSD of a pcie Pool turns its controller's
	// volatile write cache off: SPDK's lvols do not pass a host's Flush
	// down, so a cached write could be lost after fsync returned.
	// Optional; defaults to false.
	// +optional
	PowerLossProtection bool `json:"powerLossProtection,omitempty"`
}

// NodeDevices lists the devices of one node that become OSDs.
type NodeDevices struct {
	// node is the node's name. Required.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Node string `json:"node"`
	// devices are PCI addresses (pcie) or absolute paths (aio, uring), one
	// OSD each. Required.
	// +required
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=64
	Devices []string `json:"devices"`
}

// OSDCounts counts a Pool's OSDs by phase.
type OSDCounts struct {
	// total is the number of OSDs of the Pool.
	Total int32 `json:"total"`
	// pending OSDs wait for a pod to be scheduled.
	Pending int32 `json:"pending,omitempty"`
	// starting OSDs have a pod whose SPDK or device is not up yet.
	Starting int32 `json:"starting,omitempty"`
	// ready OSDs serve I/O.
	Ready int32 `json:"ready,omitempty"`
	// degraded OSDs serve I/O with a problem worth a look.
	Degraded int32 `json:"degraded,omitempty"`
	// failed OSDs do not serve I/O.
	Failed int32 `json:"failed,omitempty"`
	// draining OSDs are moving their replicas away.
	Draining int32 `json:"draining,omitempty"`
}

// PoolCapacity is the space of a Pool.
type PoolCapacity struct {
	// raw is the sum of the capacity of the Pool's Ready OSDs.
	Raw resource.Quantity `json:"raw"`
	// usable is raw divided by replicas: what volumes can hold.
	Usable resource.Quantity `json:"usable"`
	// allocated is the sum of the sizes of the Pool's volumes.
	Allocated resource.Quantity `json:"allocated"`
}

// PoolStatus is the observed state of a Pool.
type PoolStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// osds counts the Pool's OSDs by phase.
	// +optional
	OSDs OSDCounts `json:"osds,omitempty"`
	// capacity is the Pool's raw, usable and allocated space.
	// +optional
	Capacity *PoolCapacity `json:"capacity,omitempty"`
	// volumes is the number of Volumes in the Pool.
	// +optional
	Volumes int32 `json:"volumes,omitempty"`
	// rollout is the OSD stops under way: pods replaced to run a changed
	// spec, and OSDs of cordoned nodes readied for their drain. Absent
	// when none is.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`
	// conditions: Ready (volumes can be provisioned), Degraded (some OSDs
	// or volumes need attention), and one per failed precondition.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RolloutStatus is the progress of stopping a Pool's OSDs a failure domain
// at a time.
type RolloutStatus struct {
	// domains are the failure domains whose OSDs stop now.
	// +optional
	// +listType=set
	Domains []string `json:"domains,omitempty"`
	// osds are the OSDs that stop now: their targets move off and their
	// replicas are let go, then the pod is replaced (or, on a cordoned
	// node, may be evicted). Each stays listed until it serves again, runs
	// its current spec on an uncordoned node, and every replica on it is
	// back in sync.
	// +optional
	// +listType=set
	OSDs []string `json:"osds,omitempty"`
	// pending counts the OSDs still to stop: their pods run an older spec,
	// or their node is cordoned.
	Pending int32 `json:"pending"`
}

// Pool is a set of OSDs on NVMe devices of the selected nodes, and the
// replication policy of the volumes provisioned from it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=fpool,categories=flint
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Driver",type=string,JSONPath=`.spec.devices.driver`
// +kubebuilder:printcolumn:name="Transport",type=string,JSONPath=`.spec.network.transport`
// +kubebuilder:printcolumn:name="OSDs",type=integer,JSONPath=`.status.osds.total`
// +kubebuilder:printcolumn:name="Ready OSDs",type=integer,JSONPath=`.status.osds.ready`
// +kubebuilder:printcolumn:name="Usable",type=string,JSONPath=`.status.capacity.usable`
// +kubebuilder:printcolumn:name="Allocated",type=string,JSONPath=`.status.capacity.allocated`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`,priority=1
// +kubebuilder:printcolumn:name="Rolling",type=string,JSONPath=`.status.rollout.domains`,priority=1
// +kubebuilder:printcolumn:name="Volumes",type=integer,JSONPath=`.status.volumes`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Pool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the Pool.
	// +required
	Spec PoolSpec `json:"spec"`
	// status is the observed state of the Pool.
	// +optional
	Status PoolStatus `json:"status,omitempty"`
}

// PoolList is a list of Pools.
// +kubebuilder:object:root=true
type PoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Pool `json:"items"`
}
