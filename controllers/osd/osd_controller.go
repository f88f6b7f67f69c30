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

// Package osd reconciles an OSD into the pod that runs it, and fills the
// OSD's status from the pod and from its agent.
package osd

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/agentclient"
	"github.com/flint-io/flint/controllers/certs"
	"github.com/flint-io/flint/controllers/patch"
	"github.com/flint-io/flint/internal/pki"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// Finalizer keeps an OSD that still holds replicas.
const Finalizer = "flint.io/osd-replicas"

// Reconciler reconciles OSDs.
type Reconciler struct {
	client.Client
	// APIReader reads past the cache, to confirm an orphan.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Pods      PodConfig
	Authority *certs.Authority
	Agents    *agentclient.Agents
	// Leases records which OSDs' leases are renewed: those whose agent
	// answered ready at the last observation.
	Leases *agentclient.Leases
	// Renewer renews the lease of an OSD found serving again at once.
	Renewer *LeaseRenewer
	// Observe carries OSDs to observe at once (a lease renewal failed).
	Observe <-chan event.GenericEvent
	// ObserveVolume and ObserveSnapshot carry the Volumes and Snapshots
	// the OSD's inventory contradicts to their controllers (findDrift).
	ObserveVolume, ObserveSnapshot chan<- event.GenericEvent
	// Inventories keeps each OSD's latest inventory for the Snapshot
	// controller, which counts copies from it.
	Inventories *agentclient.Inventories
	// Resync is how often a healthy OSD's status is read from its agent.
	Resync time.Duration
	// OrphanGrace is how long an lvol no Volume or Snapshot claims is kept
	// before it is deleted; zero deletes it at once.
	OrphanGrace time.Duration
	// Now is the clock; tests move it.
	Now func() time.Time

	orphans quarantine
}

// +kubebuilder:rbac:groups=flint.io,resources=osds,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=flint.io,resources=osds/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=flint.io,resources=osds/finalizers,verbs=update
// +kubebuilder:rbac:groups=flint.io,resources=volumes;snapshots;pools,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=flint-system,resources=pods;secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile runs the phases of one OSD; a status write that lost to
// another writer is no error: the OSD is observed again from a fresh read.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return patch.OnConflict(r.reconcile(ctx, req))
}

// reconcile runs the phases of one OSD top-down.
func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var osd flintv1.OSD
	if err := r.Get(ctx, req.NamespacedName, &osd); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !osd.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, &osd)
	}
	finalizerAdded := controllerutil.AddFinalizer(&osd, Finalizer)
	if labelled := labelPoolAndNode(&osd); finalizerAdded || labelled {
		if err := r.Update(ctx, &osd); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.ensureCertificate(ctx, &osd); err != nil {
		return ctrl.Result{}, fmt.Errorf("issue the agent's certificate: %w", err)
	}
	pod, outdated, err := r.ensurePod(ctx, &osd)
	if err != nil {
		return ctrl.Result{}, err
	}
	obs := r.observe(ctx, &osd, pod)
	stop, err := r.stop(ctx, &osd, pod, outdated, obs.inventory)
	if err != nil {
		return ctrl.Result{}, err
	}
	wasServing := r.Leases.Serving(osd.Name)
	r.Leases.SetServing(osd.Name, obs.agent != nil)
	if obs.agent != nil && !wasServing && r.Renewer != nil {
		// Renewed now, not at the renewer's next round: the OSD takes
		// volume targets as soon as its status says it serves.
		r.Renewer.renew(ctx, &osd)
	}
	if err := r.writeStatus(ctx, &osd, obs, stop); err != nil {
		return ctrl.Result{}, err
	}
	if obs.agent != nil {
		// Before the orphans: a deletion SPDK refuses there must not hide
		// drift here.
		r.findDrift(ctx, &osd, obs.inventory, obs.asked)
		if err := r.collectOrphans(ctx, &osd, obs.agent, obs.inventory); err != nil {
			return ctrl.Result{}, err
		}
	}
	switch {
	case obs.agent == nil:
		// Its lease is not renewed meanwhile: look again soon, so that an
		// agent that restarted is renewed before its lease lapses.
		return ctrl.Result{RequeueAfter: min(r.Resync, notServingResync)}, nil
	case stop.reason != "":
		return ctrl.Result{RequeueAfter: min(r.Resync, stopPoll)}, nil
	}
	return ctrl.Result{RequeueAfter: r.Resync}, nil
}

// labelPoolAndNode gives an OSD the labels its Pool and Volumes find it by,
// from its immutable spec: an OSD made by hand has none. It says whether
// it changed any.
func labelPoolAndNode(osd *flintv1.OSD) bool {
	if osd.Labels[flintv1.LabelPool] == osd.Spec.Pool && osd.Labels[flintv1.LabelNode] == osd.Spec.NodeName {
		return false
	}
	if osd.Labels == nil {
		osd.Labels = map[string]string{}
	}
	osd.Labels[flintv1.LabelPool] = osd.Spec.Pool
	osd.Labels[flintv1.LabelNode] = osd.Spec.NodeName
	return true
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// notServingResync is how often an OSD that does not serve is observed.
const notServingResync = 2 * time.Second

func (r *Reconciler) ensureCertificate(ctx context.Context, osd *flintv1.OSD) error {
	ca, err := r.Authority.CA(ctx)
	if err != nil {
		return err
	}
	owner := metav1.NewControllerRef(osd, flintv1.GroupVersion.WithKind("OSD"))
	if _, err = r.Authority.EnsureLeaf(ctx, ca, TLSSecretName(osd.Name), pki.Leaf{Name: osd.Name, Server: true, DNSNames: []string{agentclient.ServerName(osd.Name)}}, owner); err != nil {
		return err
	}
	// Scrapers of the agents' /metrics present this one (config/prometheus).
	_, err = r.Authority.EnsureLeaf(ctx, ca, certs.MetricsClientSecret, pki.Leaf{Name: agentv1.MetricsClientName}, nil)
	return err
}

// ensurePod creates the OSD's pod, and says whether the one there was
// rendered from an older spec; stop replaces it when its turn comes.
func (r *Reconciler) ensurePod(ctx context.Context, osd *flintv1.OSD) (*corev1.Pod, bool, error) {
	want, err := RenderPod(osd, r.Pods)
	if err != nil {
		return nil, false, err
	}
	var have corev1.Pod
	err = r.Get(ctx, client.ObjectKeyFromObject(want), &have)
	switch {
	case apierrors.IsNotFound(err):
		if err := controllerutil.SetControllerReference(osd, want, r.Scheme()); err != nil {
			return nil, false, err
		}
		if err := r.Create(ctx, want); err != nil {
			return nil, false, fmt.Errorf("create pod %s: %w", want.Name, err)
		}
		r.Recorder.Eventf(osd, want, corev1.EventTypeNormal, flintv1.EventPodCreated, "CreatePod", "created pod %s/%s on node %s", want.Namespace, want.Name, osd.Spec.NodeName)
		return want, false, nil
	case err != nil:
		return nil, false, err
	}
	return &have, have.Annotations[annotationSpecHash] != want.Annotations[annotationSpecHash], nil
}

// observation is what the pod and the agent say about the OSD.
type observation struct {
	phase           flintv1.OSDPhase
	reason, detail  string
	status          *flintv1.OSDStatus // from the agent, when it answered ready
	targetsDegraded int
	agent           agentv1.OSDAgentClient // when it answered ready
	inventory       *agentv1.OSDStatus
	// asked is when the agent was asked for the inventory: it holds what
	// existed then, or later.
	asked time.Time
}

// observe reads the OSD's state from its pod and, once the pod runs,
// from its agent.
func (r *Reconciler) observe(ctx context.Context, osd *flintv1.OSD, pod *corev1.Pod) observation {
	if obs, running := observePod(pod); !running {
		return obs
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	agent, err := r.Agents.ForPod(ctx, osd, pod)
	if err != nil {
		return observation{phase: flintv1.OSDPhaseStarting, reason: flintv1.OSDAgentUnreachableReason, detail: err.Error()}
	}
	asked := time.Now()
	st, err := agent.GetStatus(ctx, &agentv1.GetStatusRequest{})
	if err != nil {
		return observation{phase: flintv1.OSDPhaseStarting, reason: flintv1.OSDAgentUnreachableReason, detail: fmt.Sprintf("the agent in pod %s does not answer at %s: %v", pod.Name, pod.Status.PodIP, err)}
	}
	obs := observeAgent(osd, pod.Name, st)
	if obs.status != nil {
		obs.agent, obs.asked = agent, asked
	}
	return obs
}

// observePod is what the pod alone says of the OSD; running is true when
// the pod runs and its agent is to be asked.
func observePod(pod *corev1.Pod) (obs observation, running bool) {
	switch {
	case !pod.DeletionTimestamp.IsZero():
		return observation{phase: flintv1.OSDPhasePending, reason: flintv1.OSDPodTerminatingReason, detail: fmt.Sprintf("pod %s is terminating; its successor starts when it is gone", pod.Name)}, false
	case pod.Status.Phase == corev1.PodFailed:
		return observation{phase: flintv1.OSDPhaseFailed, reason: flintv1.OSDPodFailedReason, detail: fmt.Sprintf("pod %s failed: %s %s", pod.Name, pod.Status.Reason, pod.Status.Message)}, false
	}
	if f, ok := preflightFailure(pod); ok {
		return observation{phase: flintv1.OSDPhaseFailed, reason: f.Reason, detail: fmt.Sprintf("the SPDK container of pod %s does not start SPDK: %s (it checks again at each restart)", pod.Name, f.Message)}, false
	}
	if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
		return pendingObservation(pod), false
	}
	return observation{}, true
}

// observeAgent is what the agent in pod podName says of the OSD: ready
// or not, and, when it serves, whether it drains or runs degraded targets.
func observeAgent(osd *flintv1.OSD, podName string, st *agentv1.OSDStatus) observation {
	if !st.GetReady() {
		return notReadyObservation(st)
	}
	if err := st.GetEndpoint().Validate(); err != nil {
		return observation{phase: flintv1.OSDPhaseFailed, reason: flintv1.OSDBadEndpointReason, detail: fmt.Sprintf("the agent in pod %s reports an endpoint no host can connect to (%v); check the agent's --transport, --port and storage network", podName, err)}
	}
	out := observation{phase: flintv1.OSDPhaseReady, reason: flintv1.OSDServingReason, detail: "SPDK serves the device's lvstore", status: statusFromAgent(st), inventory: st}
	for _, t := range st.GetTargets() {
		if t.GetOnline() < t.GetMembers() {
			out.targetsDegraded++
		}
	}
	switch {
	case osd.Spec.Drain:
		out.phase, out.reason, out.detail = flintv1.OSDPhaseDraining, flintv1.OSDDrainingReason, "the OSD takes no new replicas while its replicas move away"
	case out.targetsDegraded > 0:
		out.phase, out.reason, out.detail = flintv1.OSDPhaseDegraded, flintv1.OSDTargetsDegradedReason, fmt.Sprintf("%d volume targets on this OSD run with missing or rebuilding replicas", out.targetsDegraded)
	}
	return out
}

// preflightFailure is the check of the node that keeps the SPDK container
// from starting SPDK, from its termination message (osd-agent exec-spdk
// writes it). The container checks again at each restart, so once it runs
// the node was fixed.
func preflightFailure(pod *corev1.Pod) (agentv1.PreflightFinding, bool) {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != spdkName || cs.State.Running != nil {
			continue
		}
		for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			if t == nil {
				continue
			}
			if f, ok := agentv1.ParsePreflightTermination(t.Message); ok {
				return f, true
			}
		}
	}
	return agentv1.PreflightFinding{}, false
}

func pendingObservation(pod *corev1.Pod) observation {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return observation{phase: flintv1.OSDPhasePending, reason: flintv1.OSDUnschedulableReason, detail: fmt.Sprintf("pod %s cannot be scheduled: %s", pod.Name, c.Message)}
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" {
			return observation{phase: flintv1.OSDPhaseStarting, reason: flintv1.OSDContainerWaitingReason, detail: fmt.Sprintf("container %s of pod %s waits: %s %s", cs.Name, pod.Name, w.Reason, w.Message)}
		}
	}
	return observation{phase: flintv1.OSDPhasePending, reason: flintv1.OSDPodNotRunningReason, detail: fmt.Sprintf("pod %s is %s", pod.Name, pod.Status.Phase)}
}

// notReadyObservation: an agent that refuses the device or SPDK's settings
// will not recover by waiting; anything else is a start in progress.
func notReadyObservation(st *agentv1.OSDStatus) observation {
	switch st.GetNotReadyCode() {
	case agentv1.NotReadyCode_NOT_READY_CODE_FOREIGN_DEVICE:
		return observation{phase: flintv1.OSDPhaseFailed, reason: flintv1.OSDForeignDeviceReason, detail: st.GetNotReadyReason()}
	case agentv1.NotReadyCode_NOT_READY_CODE_CONFLICT:
		return observation{phase: flintv1.OSDPhaseFailed, reason: flintv1.OSDConflictReason, detail: st.GetNotReadyReason()}
	case agentv1.NotReadyCode_NOT_READY_CODE_WRITE_CACHE:
		return observation{phase: flintv1.OSDPhaseFailed, reason: flintv1.OSDWriteCacheOnReason, detail: st.GetNotReadyReason()}
	case agentv1.NotReadyCode_NOT_READY_CODE_BLOCK_SIZE:
		return observation{phase: flintv1.OSDPhaseFailed, reason: flintv1.OSDBlockSizeReason, detail: st.GetNotReadyReason()}
	case agentv1.NotReadyCode_NOT_READY_CODE_SPDK_DOWN:
		return observation{phase: flintv1.OSDPhaseStarting, reason: flintv1.OSDSPDKDownReason, detail: st.GetNotReadyReason()}
	}
	return observation{phase: flintv1.OSDPhaseStarting, reason: flintv1.OSDAgentNotReadyReason, detail: st.GetNotReadyReason()}
}
