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

// OSDDevice is the one device an OSD owns.
// +kubebuilder:validation:XValidation:rule="self.driver != 'pcie' || has(self.pciAddress) != has(self.resourceName)",message="device.driver pcie needs exactly one of device.pciAddress and device.resourceName"
// +kubebuilder:validation:XValidation:rule="(self.driver == 'aio' || self.driver == 'uring') == has(self.path)",message="device.path is required for, and only valid with, drivers aio and uring"
// +kubebuilder:validation:XValidation:rule="(self.driver == 'malloc') == has(self.malloc)",message="device.malloc is required for, and only valid with, driver malloc"
// +kubebuilder:validation:XValidation:rule="self.driver == 'pcie' || (!has(self.pciAddress) && !has(self.resourceName))",message="device.pciAddress and device.resourceName are only valid with driver pcie"
type OSDDevice struct {
	// driver is the SPDK bdev module that claims the device. Required.
	// +required
	Driver DeviceDriver `json:"driver"`
	// pciAddress is the NVMe controller's PCI address, for a pcie device
	// listed explicitly.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$`
	PCIAddress string `json:"pciAddress,omitempty"`
	// resourceName is the device plugin resource the OSD pod requests one
	// device of; the address is learnt from the plugin at start.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9.-]+/[a-zA-Z0-9_.-]+$`
	ResourceName string `json:"resourceName,omitempty"`
	// path is the block device or file, for aio and uring.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^/`
	Path string `json:"path,omitempty"`
	// malloc makes a RAM-backed device. Development only.
	// +optional
	Malloc *MallocDevice `json:"malloc,omitempty"`
}

// OSDSpec is the desired state of an OSD.
// +kubebuilder:validation:XValidation:rule="self.device.driver != 'pcie' || has(self.resources.hugepages)",message="device.driver pcie needs resources.hugepages: SPDK's user-space NVMe driver only does DMA from hugepage memory"
type OSDSpec struct {
	// pool is the name of the Pool the OSD serves. Required. Immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="pool is immutable: an OSD's lvstore belongs to one Pool"
	Pool string `json:"pool"`
	// nodeName is the node the OSD runs on. Required. Immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="nodeName is immutable: the OSD's data lives on that node's device"
	NodeName string `json:"nodeName"`
	// device is the device the OSD owns. Required. Immutable.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="device is immutable: create a new OSD for another device"
	Device OSDDevice `json:"device"`
	// resources are the OSD pod's cores, hugepages and memory. Optional.
	// +optional
	// +kubebuilder:default={}
	Resources OSDResources `json:"resources"`
	// spdk tunes the SPDK application. Optional.
	// +optional
	// +kubebuilder:default={}
	SPDK SPDKSettings `json:"spdk"`
	// network is how the OSD is reached. Optional; defaults to TCP on the
	// pod network.
	// +optional
	// +kubebuilder:default={}
	Network Network `json:"network"`
	// nvmf tunes SPDK's NVMe-oF transport. Optional.
	// +optional
	NVMf NVMfTuning `json:"nvmf,omitempty"`
	// scheduling holds the OSD pod's tolerations and PriorityClass.
	// Optional.
	// +optional
	Scheduling OSDScheduling `json:"scheduling,omitempty"`
	// drain asks for the OSD's replicas to be moved to other OSDs; the OSD
	// takes no new replicas. Optional; defaults to false.
	// +optional
	Drain bool `json:"drain,omitempty"`
	// cordon keeps the replicas and targets the OSD has, and places no new
	// replica on it (neither a new Volume's nor a replacement). A target
	// may still move onto it: it already holds that Volume's data.
	// Optional; defaults to false.
	// +optional
	Cordon bool `json:"cordon,omitempty"`
	// powerLossProtection declares that the device keeps its volatile
	// write cache through a power loss, so the agent leaves the cache on;
	// without it a pcie OSD turns the cache off. Optional; defaults to
	// false.
	// +optional
	PowerLossProtection bool `json:"powerLossProtection,omitempty"`
}

// OSDPhase is the coarse state of an OSD.
// +kubebuilder:validation:Enum=Pending;Starting;Ready;Degraded;Failed;Draining
type OSDPhase string

const (
	// OSDPhasePending means the OSD's pod is not running yet.
	OSDPhasePending OSDPhase = "Pending"
	// OSDPhaseStarting means the pod runs but SPDK, the device or the
	// lvstore is not up yet.
	OSDPhaseStarting OSDPhase = "Starting"
	// OSDPhaseReady means the OSD serves I/O and takes replicas.
	OSDPhaseReady OSDPhase = "Ready"
	// OSDPhaseDegraded means the OSD serves I/O with a problem worth a look.
	OSDPhaseDegraded OSDPhase = "Degraded"
	// OSDPhaseFailed means the OSD does not serve I/O.
	OSDPhaseFailed OSDPhase = "Failed"
	// OSDPhaseDraining means the OSD's replicas are being moved away.
	OSDPhaseDraining OSDPhase = "Draining"
)

// OSDEndpoint is where an OSD's NVMe-oF subsystems are reached.
type OSDEndpoint struct {
	Endpoint `json:",inline"`
	// nqnPrefix is the prefix of every subsystem NQN the OSD exports.
	NQNPrefix string `json:"nqnPrefix,omitempty"`
}

// DeviceInfo identifies a claimed device.
type DeviceInfo struct {
	// pciAddress is the PCI address of the claimed NVMe controller.
	// +optional
	PCIAddress string `json:"pciAddress,omitempty"`
	// serial is the device's serial number.
	// +optional
	Serial string `json:"serial,omitempty"`
	// model is the device's model.
	// +optional
	Model string `json:"model,omitempty"`
	// writeCache is the state of the device's volatile write cache: Absent
	// or Disabled (every acknowledged write is on media), Enabled (left on
	// because powerLossProtection is declared), or Unknown for aio, uring
	// and malloc devices, whose cache the kernel owns.
	// +optional
	WriteCache WriteCacheState `json:"writeCache,omitempty"`
}

// WriteCacheState is the state of a device's volatile write cache.
// +kubebuilder:validation:Enum=Unknown;Absent;Disabled;Enabled
type WriteCacheState string

// The write cache states.
const (
	WriteCacheUnknown  WriteCacheState = "Unknown"
	WriteCacheAbsent   WriteCacheState = "Absent"
	WriteCacheDisabled WriteCacheState = "Disabled"
	WriteCacheEnabled  WriteCacheState = "Enabled"
)

// OSDCapacity is the space of an OSD's lvstore.
type OSDCapacity struct {
	// total is the lvstore's data capacity.
	Total resource.Quantity `json:"total"`
	// free is the lvstore's unallocated capacity.
	Free resource.Quantity `json:"free"`
}

// OSDStatus is the observed state of an OSD.
type OSDStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// phase is the OSD's coarse state.
	// +optional
	Phase OSDPhase `json:"phase,omitempty"`
	// endpoint is the OSD's NVMe-oF listener.
	// +optional
	Endpoint *OSDEndpoint `json:"endpoint,omitempty"`
	// device identifies the claimed device.
	// +optional
	Device *DeviceInfo `json:"device,omitempty"`
	// capacity is the lvstore's total and free space.
	// +optional
	Capacity *OSDCapacity `json:"capacity,omitempty"`
	// replicas is the number of volume replicas the OSD holds.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// spdkVersion is the version the OSD's SPDK reports.
	// +optional
	SPDKVersion string `json:"spdkVersion,omitempty"`
	// conditions: Ready (serves I/O and takes replicas), SpaceLow (less
	// than the reserve free: no new replica goes here) and one per failed
	// step of bringing the OSD up.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// OSD is one SPDK storage daemon bound to one device on one node.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=fosd,categories=flint
// +kubebuilder:printcolumn:name="Pool",type=string,JSONPath=`.spec.pool`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.nodeName`
// +kubebuilder:printcolumn:name="Driver",type=string,JSONPath=`.spec.device.driver`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Free",type=string,JSONPath=`.status.capacity.free`
// +kubebuilder:printcolumn:name="Total",type=string,JSONPath=`.status.capacity.total`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.status.endpoint.address`,priority=1
// +kubebuilder:printcolumn:name="SPDK",type=string,JSONPath=`.status.spdkVersion`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OSD struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the OSD.
	// +required
	Spec OSDSpec `json:"spec"`
	// status is the observed state of the OSD.
	// +optional
	Status OSDStatus `json:"status,omitempty"`
}

// OSDList is a list of OSDs.
// +kubebuilder:object:root=true
type OSDList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OSD `json:"items"`
}
