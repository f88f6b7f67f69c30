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

package agentv1

import (
	"encoding/json"
	"strings"
)

// The SPDK container checks the node before it starts SPDK (osd-agent
// exec-spdk). A fatal finding keeps SPDK from starting and is left, as
// JSON, in the container's termination message, where the operator reads
// it from the pod's status; a warning rides with the launch hand-off and
// the agent reports it (OSDStatus.preflight_warnings). Each reason becomes
// the reason of the OSD's condition.
const (
	// PreflightDeviceNotBoundToVFIO: the NVMe controller is bound to a
	// kernel driver (or none), so SPDK's user-space driver cannot take it.
	PreflightDeviceNotBoundToVFIO = "DeviceNotBoundToVFIO"
	// PreflightIOMMUUnavailable: vfio-pci cannot isolate the device.
	PreflightIOMMUUnavailable = "IOMMUUnavailable"
	// PreflightHugePagesInsufficient: the node has fewer free hugepages than
	// the SPDK container's limit, which SPDK allocates at start.
	PreflightHugePagesInsufficient = "HugePagesInsufficient"
	// PreflightMemlockTooLow: SPDK could not pin its memory for DMA.
	PreflightMemlockTooLow = "MemlockTooLow"
	// PreflightNoRDMADevice: the transport is RDMA and the pod has no RDMA
	// device.
	PreflightNoRDMADevice = "NoRDMADevice"
	// PreflightSharedCores: SPDK polls cores that are not the container's
	// alone. A warning: SPDK runs, slowly and in other pods' way.
	PreflightSharedCores = "SharedCores"
	// PreflightDeviceInUse: another holder (an OSD's SPDK, a mounted
	// filesystem) has the block device open exclusively.
	PreflightDeviceInUse = "DeviceInUse"
	// PreflightFencePortInUse: the port the SPDK container serves its
	// probes on is taken (host network).
	PreflightFencePortInUse = "FencePortInUse"
)

// PreflightFinding is a check of the node that did not pass.
type PreflightFinding struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Fatal findings keep SPDK from starting: it would fail with an EAL
	// or driver error that names none of this.
	Fatal bool `json:"fatal"`
}

func (f PreflightFinding) Error() string { return f.Reason + ": " + f.Message }

// TerminationMessage is f as the SPDK container's termination message.
func (f PreflightFinding) TerminationMessage() []byte {
	b, _ := json.Marshal(f)
	return b
}

// ParsePreflightTermination reads a fatal finding from a termination
// message; false for any other message (SPDK's own exit, say).
func ParsePreflightTermination(msg string) (PreflightFinding, bool) {
	var f PreflightFinding
	if err := json.Unmarshal([]byte(strings.TrimSpace(msg)), &f); err != nil || f.Reason == "" || !f.Fatal {
		return PreflightFinding{}, false
	}
	return f, true
}
