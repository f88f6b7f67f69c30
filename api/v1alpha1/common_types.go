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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// DeviceDriver names the SPDK bdev module that claims an OSD's device.
// +kubebuilder:validation:Enum=pcie;aio;uring;malloc
type DeviceDriver string

const (
	// DriverPCIe is SPDK's user-space NVMe driver over vfio-pci: the
	// production default, 12-38% faster than the kernel paths in the field.
	DriverPCIe DeviceDriver = "pcie"
	// DriverAIO uses a kernel block device or file through Linux AIO: the
	// fallback where the device cannot be handed to vfio.
	DriverAIO DeviceDriver = "aio"
	// DriverURing uses a kernel block device or file through io_uring.
	DriverURing DeviceDriver = "uring"
	// DriverMalloc is a RAM-backed bdev. Development only: its data is lost
	// whenever the OSD restarts.
	DriverMalloc DeviceDriver = "malloc"
)

// Transport is the NVMe-oF transport an OSD listens on.
// +kubebuilder:validation:Enum=rdma;tcp
type Transport string

const (
	// TransportRDMA is NVMe over RDMA (RoCE v2 on an SR-IOV virtual function).
	TransportRDMA Transport = "rdma"
	// TransportTCP is NVMe over TCP.
	TransportTCP Transport = "tcp"
)

// HugePageSize is the size of the hugepages an OSD's SPDK allocates from.
// +kubebuilder:validation:Enum="2Mi";"1Gi"
type HugePageSize string

const (
	// HugePageSize2Mi selects 2 MiB pages (resource hugepages-2Mi).
	HugePageSize2Mi HugePageSize = "2Mi"
	// HugePageSize1Gi selects 1 GiB pages (resource hugepages-1Gi).
	HugePageSize1Gi HugePageSize = "1Gi"
)

// LogLevel is SPDK's log level. Anything above warning logs on the I/O path,
// which in the field cost more latency than anything else.
// +kubebuilder:validation:Enum=error;warning;notice;info;debug
type LogLevel string

// MallocDevice is a RAM-backed device for development and CI.
type MallocDevice struct {
	// size is the capacity of the RAM-backed bdev. Required.
	// Development only: everything on it is lost when the OSD restarts.
	// +required
	Size resource.Quantity `json:"size"`
}

// HugePages is the hugepage memory given to SPDK.
// +kubebuilder:validation:XValidation:rule="quantity(string(self.amount)).isInteger() && quantity(string(self.amount)).asInteger() > 0 && quantity(string(self.amount)).asInteger() % (self.size == '2Mi' ? 2097152 : 1073741824) == 0",message="hugepages.amount must be a positive whole number of hugepages.size pages (for example 2Gi of 2Mi pages)"
type HugePages struct {
	// size is the page size. Optional; defaults to 2Mi.
	// +optional
	// +kubebuilder:default="2Mi"
	Size HugePageSize `json:"size,omitempty"`
	// amount is the hugepage memory per OSD, a whole number of pages.
	// SPDK with the TCP transport needs about 1Gi. Required.
	// +required
	Amount resource.Quantity `json:"amount"`
}

// OSDResources are the resources of one OSD pod. The pod is Guaranteed QoS
// so that, under the kubelet's static CPU manager, SPDK's polling reactors
// get whole dedicated cores.
type OSDResources struct {
	// cpus is the number of dedicated cores per OSD; SPDK's core mask is
	// exactly these cores. Optional; defaults to 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	CPUs int32 `json:"cpus,omitempty"`
	// hugepages is SPDK's DMA memory. Optional, but required for the pcie
	// driver; without it SPDK runs with --no-huge out of ordinary memory
	// (development and CI).
	// +optional
	HugePages *HugePages `json:"hugepages,omitempty"`
	// memory is the ordinary memory of the OSD pod (agent, SPDK heap, and
	// SPDK's whole memory when hugepages are not set). Optional; defaults
	// to 1Gi.
	// +optional
	// +kubebuilder:default="1Gi"
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// SPDKSettings tune the SPDK application of an OSD.
type SPDKSettings struct {
	// logLevel is SPDK's log level. Optional; defaults to warning. Levels
	// above warning log on the I/O path and cost latency.
	// +optional
	// +kubebuilder:default=warning
	LogLevel LogLevel `json:"logLevel,omitempty"`
	// interruptMode runs SPDK's reactors in interrupt mode instead of busy
	// polling: for nodes where cores cannot be dedicated. It costs about
	// 2.5x the latency at queue depth 1. Optional; defaults to false.
	// +optional
	InterruptMode bool `json:"interruptMode,omitempty"`
}

// OSDTemplate is what a Pool gives every OSD it creates.
type OSDTemplate struct {
	OSDResources  `json:",inline"`
	SPDKSettings  `json:",inline"`
	OSDScheduling `json:",inline"`
}

// OSDScheduling is how an OSD pod is scheduled onto its node and kept
// there: storage nodes are often tainted for storage alone, and OSD pods
// outrank the workloads they serve.
type OSDScheduling struct {
	// tolerations are the OSD pod's tolerations, for taints of the
	// Pool's nodes. Optional.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// priorityClassName is the OSD pod's PriorityClass, in place of the
	// one the operator is given (--priority-class, the chart's
	// operator.osdPriorityClass). It must exist. Optional.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// Network is how an OSD is reached over NVMe-oF. Its rules tolerate absent
// fields because the apiserver also checks them against the {} default.
// +kubebuilder:validation:XValidation:rule="!has(self.transport) || self.transport != 'rdma' || (has(self.hostNetwork) && self.hostNetwork) || has(self.attachment)",message="network.transport rdma needs network.attachment, the Multus NetworkAttachmentDefinition of the RDMA VFs (or set network.hostNetwork)"
// +kubebuilder:validation:XValidation:rule="!has(self.transport) || self.transport != 'rdma' || has(self.resourceName)",message="network.transport rdma needs network.resourceName: the SR-IOV device plugin resource of the RDMA VFs, or with network.hostNetwork the resource of the nodes' RDMA devices (osd-agent rdma-device-plugin, flint.io/rdma)"
// +kubebuilder:validation:XValidation:rule="!has(self.hostNetwork) || !self.hostNetwork || !has(self.attachment)",message="network.hostNetwork uses the node's own interfaces: remove network.attachment"
type Network struct {
	// transport is the NVMe-oF transport. Optional; defaults to tcp.
	// +optional
	// +kubebuilder:default=tcp
	Transport Transport `json:"transport,omitempty"`
	// attachment is the Multus NetworkAttachmentDefinition ("name" or
	// "namespace/name") of the storage network. Required for rdma unless
	// hostNetwork is set.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Attachment string `json:"attachment,omitempty"`
	// resourceName is the device plugin resource that gives the OSD pod
	// its RDMA device: on a Multus network the SR-IOV device plugin's RDMA
	// virtual function (for example nvidia.com/rdma_vf); with hostNetwork
	// a node's RDMA device shared by host-network pods (osd-agent
	// rdma-device-plugin, flint.io/rdma). Required for rdma.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9.-]+/[a-zA-Z0-9_.-]+$`
	ResourceName string `json:"resourceName,omitempty"`
	// hostNetwork runs the OSD pod in the node's network namespace.
	// Optional; defaults to false.
	// +optional
	HostNetwork bool `json:"hostNetwork,omitempty"`
	// port is the NVMe-oF listener port. Optional; defaults to 4420.
	// +optional
	// +kubebuilder:default=4420
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`
}

// NVMfTuning sizes SPDK's NVMe-oF transport. Every field is optional and
// defaults to SPDK's own default for the transport. The buffer pool decides
// whether deep queues keep wire bandwidth.
// +kubebuilder:validation:XValidation:rule="!has(self.inCapsuleDataSize) || !has(self.ioUnitSize) || self.inCapsuleDataSize <= self.ioUnitSize",message="nvmf.inCapsuleDataSize must not exceed nvmf.ioUnitSize"
// +kubebuilder:validation:XValidation:rule="!has(self.bufCacheSize) || !has(self.numSharedBuffers) || self.bufCacheSize <= self.numSharedBuffers",message="nvmf.bufCacheSize (buffers cached per poll group) must not exceed nvmf.numSharedBuffers"
type NVMfTuning struct {
	// ioUnitSize is the transport's I/O unit in bytes (io_unit_size).
	// +optional
	// +kubebuilder:validation:Minimum=4096
	// +kubebuilder:validation:Maximum=131072
	IOUnitSize *int32 `json:"ioUnitSize,omitempty"`
	// inCapsuleDataSize is the largest write carried in the command
	// capsule, in bytes (in_capsule_data_size).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=131072
	InCapsuleDataSize *int32 `json:"inCapsuleDataSize,omitempty"`
	// numSharedBuffers is the size of the transport's shared data buffer
	// pool (num_shared_buffers).
	// +optional
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=131072
	NumSharedBuffers *int32 `json:"numSharedBuffers,omitempty"`
	// bufCacheSize is the number of buffers each poll group caches
	// (buf_cache_size).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=131072
	BufCacheSize *int32 `json:"bufCacheSize,omitempty"`
	// maxQueueDepth is the deepest queue a host may open (max_queue_depth).
	// +optional
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=4096
	MaxQueueDepth *int32 `json:"maxQueueDepth,omitempty"`
}

// Endpoint is an NVMe-oF listener.
type Endpoint struct {
	// transport is the NVMe-oF transport.
	Transport Transport `json:"transport"`
	// address is the IP address the listener is bound to.
	Address string `json:"address"`
	// port is the listener's TCP port (trsvcid).
	Port int32 `json:"port"`
}
