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

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Condition types shared by the Flint resources. Each resource documents
// which it reports; the controllers own them and stamp observedGeneration.
const (
	// ReadyCondition is True when the resource does its job: a Pool can
	// provision volumes, an OSD serves I/O, a Volume's target serves I/O.
	// False carries the reason; Unknown means not yet observed.
	ReadyCondition = "Ready"
	// DegradedCondition is True when the resource works with less
	// redundancy or fewer members than asked for.
	DegradedCondition = "Degraded"
	// DeletionBlockedCondition is True while a deleted resource waits for
	// what still holds data on it to move or go: an OSD for its replicas, a
	// Pool for its Volumes.
	DeletionBlockedCondition = "DeletionBlocked"
	// ReplacementBlockedCondition is True on a Volume while a replica that
	// must be replaced finds no OSD to go to.
	ReplacementBlockedCondition = "ReplacementBlocked"
	// UpToDateCondition is True on an OSD whose pod runs the pod spec its
	// OSD renders today; False while an older one runs and waits for the
	// Pool's rollout.
	UpToDateCondition = "UpToDate"
	// StoppingCondition is True on an OSD that the Pool's rollout stops:
	// its targets move off and its replicas are let go before its pod is
	// replaced or evicted. Volumes place nothing on it meanwhile.
	StoppingCondition = "Stopping"
	// RollingOutCondition is True on a Pool while OSDs wait to stop or
	// stop (a rolling update, a drain); its reason says whether the
	// rollout progresses or waits, and why.
	RollingOutCondition = "RollingOut"
)

// SpaceLowCondition is True on an OSD whose lvstore has less than
// SpaceReservePercent of its capacity free: thin lvols allocate on write,
// and a replica that cannot allocate fails writes (ENOSPC). No new replica
// is placed there; its reason is SpaceLowReason.
const SpaceLowCondition = "SpaceLow"

// OSD preflight warning condition types: each is True while the SPDK
// container reports that check failing (SPDK started despite it), with a
// message that says what to do; its reason is its type. A check that keeps
// SPDK from starting is the Ready condition's reason instead.
const (
	OSDSharedCoresCondition = "SharedCores"
)

// OSDPreflightWarningConditions lists the OSD's preflight warning types.
var OSDPreflightWarningConditions = []string{OSDSharedCoresCondition}

// Pool preflight condition types: each is True while its check fails,
// with a message that says what to do; its reason is its type.
const (
	PoolNoNodesSelectedCondition            = "NoNodesSelected"
	PoolHugePagesInsufficientCondition      = "HugePagesInsufficient"
	PoolDeviceResourceMissingCondition      = "DeviceResourceMissing"
	PoolRDMAResourceMissingCondition        = "RDMAResourceMissing"
	PoolNetworkAttachmentMissingCondition   = "NetworkAttachmentMissing"
	PoolInsufficientFailureDomainsCondition = "InsufficientFailureDomains"
	// PoolOSDNameConflictCondition: an OSD the Pool would make has the
	// name of an OSD of another Pool or node (<pool>-<node>-<n> can spell
	// the same name twice), so that device gets none.
	PoolOSDNameConflictCondition = "OSDNameConflict"
)

// PoolPreflightConditions lists the preflight condition types in the order
// they are reported.
var PoolPreflightConditions = []string{
	PoolNoNodesSelectedCondition, PoolDeviceResourceMissingCondition, PoolHugePagesInsufficientCondition,
	PoolRDMAResourceMissingCondition, PoolNetworkAttachmentMissingCondition, PoolInsufficientFailureDomainsCondition,
	PoolOSDNameConflictCondition,
}

// StatusConditions gives the helpers that set conditions the Pool's.
func (p *Pool) StatusConditions() *[]metav1.Condition { return &p.Status.Conditions }

// StatusConditions gives the helpers that set conditions the OSD's.
func (o *OSD) StatusConditions() *[]metav1.Condition { return &o.Status.Conditions }

// StatusConditions gives the helpers that set conditions the Volume's.
func (v *Volume) StatusConditions() *[]metav1.Condition { return &v.Status.Conditions }

// StatusConditions gives the helpers that set conditions the Snapshot's.
func (s *Snapshot) StatusConditions() *[]metav1.Condition { return &s.Status.Conditions }
