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

// Package controllers wires the operator's reconcilers into a manager:
// Pool → OSDs (package pool), OSD → pod and status (package osd), with the
// agent API's certificates (package certs), Volumes (package volume),
// Snapshots (package snapshot), one at a time per Volume with the Volume
// controller (internal/keylock), and the OSD pods' NetworkPolicy
// (package netpolicy).
package controllers

import (
	"context"
	"fmt"
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/agentclient"
	"github.com/flint-io/flint/controllers/certs"
	"github.com/flint-io/flint/controllers/netpolicy"
	"github.com/flint-io/flint/controllers/osd"
	"github.com/flint-io/flint/controllers/pool"
	"github.com/flint-io/flint/controllers/snapshot"
	"github.com/flint-io/flint/controllers/volume"
	"github.com/flint-io/flint/internal/keylock"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// Options are the operator's deployment choices.
type Options struct {
	// Namespace holds OSD pods, their Secrets and the CA.
	Namespace string
	// LeaderIdentity is who this operator is in its leader election: its
	// pod's name, so that a process the kubelet restarts in the same pod
	// leads again at once instead of waiting out its predecessor's lease
	// (which, longer than the agent lease, would fence every target).
	// Empty: the host name and a random suffix, controller-runtime's.
	LeaderIdentity string
	// OSDImage holds SPDK and osd-agent.
	OSDImage string
	// OSDImagePullSecrets name the Secrets of the operator's namespace
	// that OSD pods pull OSDImage with.
	OSDImagePullSecrets []string
	// PriorityClass of OSD pods; created when missing.
	PriorityClass  string
	ServiceAccount string
	// AgentPort is where agents serve gRPC.
	AgentPort int
	// Resync is how often each OSD's status and inventory are read from
	// its agent; drift the inventory shows re-drives the Volumes and
	// Snapshots it contradicts.
	Resync time.Duration
	// ReplicaGrace is how long a lost replica may come back before it is
	// replaced; TargetGrace how long a target's OSD may stop serving
	// before the target moves.
	ReplicaGrace, TargetGrace time.Duration
	// StandbyWait bounds how long a planned move waits for the hosts to
	// connect to the new target's standby; zero makes moves without one.
	StandbyWait time.Duration
	// AgentLease is how long an OSD serves its volume targets without a
	// renewal before it fences them. TargetGrace must exceed it by a
	// quarter (the renewal's own deadline) plus the fence margin.
	AgentLease time.Duration
	// FenceProbeTimeout bounds one run of the SPDK container's fence
	// probe; it adds to the fence margin. Zero is 2 s.
	FenceProbeTimeout time.Duration
	// SPDKHangTimeout has the fence probe restart an SPDK that has not
	// answered for that long, lease or not; zero leaves a frozen SPDK to
	// the lease.
	SPDKHangTimeout time.Duration
	// HoldTargets promises the agents, in every renewal, that a target
	// is cut off a replica before it moves unplanned, so that a target
	// whose lease lapsed keeps its hosts while its members answer it.
	// The operator cuts before every unplanned move either way.
	HoldTargets bool
	// TargetHold is the hold promised and waited out after a cut;
	// agentv1.TargetHold when zero. Only tests set it: every operator
	// must wait out what any other promised.
	TargetHold time.Duration
	// AgentCPU is the CPU of each OSD pod's agent container;
	// osd.DefaultAgentCPU when zero.
	AgentCPU resource.Quantity
	// OrphanGrace is how long an OSD keeps an lvol that no Volume or
	// Snapshot claims before it is deleted; zero deletes it at once.
	OrphanGrace time.Duration
	// VolumeWorkers is how many Volumes reconcile at once.
	VolumeWorkers int
	// SnapshotWorkers is how many Snapshots reconcile at once; those of
	// one Volume still go one at a time.
	SnapshotWorkers int
	// NetworkPolicy has the operator keep the NetworkPolicy of OSD pods
	// (package netpolicy).
	NetworkPolicy bool
	// VolumeInterrupt is the Volume controller's Interrupt: tests only.
	VolumeInterrupt func(ctx context.Context, vol *flintv1.Volume, point volume.Point)
	// APIQPS and APIBurst limit the operator's requests to the apiserver;
	// zero keeps 200 and 400 (see docs/performance.md: provisioning).
	APIQPS   float32
	APIBurst int
}

// FenceMargin is what a lapsed OSD takes to fence: the agent fences before
// its lease's expiry, and failing that the SPDK container's liveness probe
// has the kubelet kill SPDK after it (osd.FenceTime: 4 s with the default
// 2 s probe timeout).
func (o Options) FenceMargin() time.Duration {
	return osd.FenceTime(osd.FenceProbe(o.FenceProbeTimeout))
}

// targetHold is the hold promised to the agents and waited out.
func (o Options) targetHold() time.Duration {
	if o.TargetHold > 0 {
		return o.TargetHold
	}
	return agentv1.TargetHold
}

// HoldWait is how long after a cut the old target may still let a host
// in: the hold, a quarter more for the clocks' rates and the Keep
// Alives' flight, and the fence's margin.
func (o Options) HoldWait() time.Duration {
	return o.targetHold() + o.targetHold()/4 + o.FenceMargin()
}

// checkTimings refuses a target grace that could move a target before the
// old one fenced itself, and a hang timeout that one slow probe could
// reach.
func (o Options) checkTimings() error {
	if o.AgentLease <= 0 {
		return fmt.Errorf("the agent lease must be positive, not %s", o.AgentLease)
	}
	if least := o.AgentLease + o.AgentLease/4 + o.FenceMargin(); o.TargetGrace < least {
		return fmt.Errorf("a target grace of %s could move a target before its old OSD fenced itself: with an agent lease of %s and a fence probe timeout of %ds it must be at least %s (lease + a quarter + the probe's period, timeout and kill, %s)",
			o.TargetGrace, o.AgentLease, osd.FenceProbe(o.FenceProbeTimeout).TimeoutSeconds, least, o.FenceMargin())
	}
	if probe := time.Duration(osd.FenceProbe(o.FenceProbeTimeout).TimeoutSeconds) * time.Second; o.SPDKHangTimeout != 0 && o.SPDKHangTimeout < 2*probe {
		return fmt.Errorf("an SPDK hang timeout of %s could restart an SPDK that is only slow to answer one probe: with a fence probe timeout of %s it must be at least %s, or 0 to leave a frozen SPDK to the lease", o.SPDKHangTimeout, probe, 2*probe)
	}
	return nil
}

// osdPriority ranks OSD pods above ordinary workloads: evicting one costs
// every volume with a replica on it a rebuild.
const osdPriority = 1_000_000

// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;create
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=flint-system,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",namespace=flint-system,resources=events,verbs=create;patch

// Setup registers the reconcilers with mgr.
func Setup(mgr manager.Manager, o Options) error {
	if err := o.checkTimings(); err != nil {
		return err
	}
	if err := osd.CheckAgentCPU(o.AgentCPU); err != nil {
		return err
	}
	authority := &certs.Authority{Client: mgr.GetClient(), Namespace: o.Namespace}
	if err := (&pool.Reconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("flint-pool"), Namespace: o.Namespace,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the Pool controller: %w", err)
	}
	leases, inventories := &agentclient.Leases{}, &agentclient.Inventories{}
	agents := &agentclient.Agents{Reader: mgr.GetClient(), Namespace: o.Namespace, Port: o.AgentPort, Dialer: &agentclient.Dialer{TLS: authority.ClientTLS}, Leases: leases}
	observe, observeVolume, observeSnapshot := make(chan event.GenericEvent), make(chan event.GenericEvent), make(chan event.GenericEvent)
	renewer := &osd.LeaseRenewer{
		Reader: mgr.GetClient(), Agents: agents, Leases: leases, Lease: o.AgentLease, Observe: observe, ObserveVolume: observeVolume, Log: ctrl.Log.WithName("leases"),
	}
	if o.HoldTargets {
		renewer.Hold = o.targetHold()
	}
	if err := (&osd.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("flint-osd"),
		Pods: osd.PodConfig{Namespace: o.Namespace, Image: o.OSDImage, ImagePullSecrets: o.OSDImagePullSecrets, PriorityClassName: o.PriorityClass, ServiceAccount: o.ServiceAccount,
			FenceProbeTimeout: o.FenceProbeTimeout, SPDKHangTimeout: o.SPDKHangTimeout, AgentCPU: o.AgentCPU},
		Authority: authority, Agents: agents, Leases: leases, Renewer: renewer, Observe: observe, Resync: o.Resync, OrphanGrace: o.OrphanGrace,
		ObserveVolume: observeVolume, ObserveSnapshot: observeSnapshot, Inventories: inventories,
	}).SetupWithManager(context.Background(), mgr); err != nil {
		return fmt.Errorf("set up the OSD controller: %w", err)
	}
	if err := mgr.Add(renewer); err != nil {
		return fmt.Errorf("set up the lease renewer: %w", err)
	}
	locks := &keylock.Locks{}
	if err := (&volume.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Namespace: o.Namespace, Recorder: mgr.GetEventRecorder("flint-volume"), Agents: agents, Leases: leases,
		ReplicaGrace: o.ReplicaGrace, TargetGrace: o.TargetGrace, StandbyWait: o.StandbyWait, HoldWait: o.HoldWait(), LeaseBound: o.AgentLease + o.AgentLease/4, Resync: o.Resync, Workers: o.VolumeWorkers,
		Observe: observeVolume, Interrupt: o.VolumeInterrupt, Locks: locks,
	}).SetupWithManager(context.Background(), mgr); err != nil {
		return fmt.Errorf("set up the Volume controller: %w", err)
	}
	if err := (&snapshot.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("flint-snapshot"), Agents: agents, Locks: locks, Resync: o.Resync,
		Workers: o.SnapshotWorkers, Observe: observeSnapshot, ObserveVolume: observeVolume, Inventories: inventories,
	}).SetupWithManager(context.Background(), mgr); err != nil {
		return fmt.Errorf("set up the Snapshot controller: %w", err)
	}
	if o.NetworkPolicy {
		if err := (&netpolicy.Reconciler{Client: mgr.GetClient(), Namespace: o.Namespace}).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up the OSD network policy controller: %w", err)
		}
	}
	if o.PriorityClass == "" {
		return nil
	}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return ensurePriorityClass(ctx, mgr.GetClient(), o.PriorityClass)
	}))
}

func ensurePriorityClass(ctx context.Context, c client.Client, name string) error {
	pc := &schedulingv1.PriorityClass{
		ObjectMeta:  metav1.ObjectMeta{Name: name},
		Value:       osdPriority,
		Description: "Flint OSD pods: evicting one makes every volume with a replica on it rebuild.",
	}
	if err := c.Create(ctx, pc); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create PriorityClass %s: %w", name, err)
	}
	ctrl.Log.WithName("setup").Info("priority class present", "name", name)
	return nil
}
