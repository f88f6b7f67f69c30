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

package osd

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// stopState is where the OSD stands in its Pool's rollout.
type stopState struct {
	// outdated: the pod runs an older spec than the OSD renders.
	outdated bool
	// reason is why the OSD stops (OSDRollingUpdateReason,
	// OSDNodeCordonedReason), empty while it does not.
	reason, message string
}

// stopPoll is how often an OSD that stops looks whether its targets and
// replicas are gone yet.
const stopPoll = time.Second

// stop replaces a pod that runs an older spec, or readies one on a
// cordoned node for its eviction, once the OSD stopped cleanly: the
// Pool's rollout chose it (a failure domain at a time), the Volume
// controller moved its targets off and had them let go of its replicas.
// A pod whose OSD does not serve is replaced at once: it has nothing to
// hand over.
func (r *Reconciler) stop(ctx context.Context, osd *flintv1.OSD, pod *corev1.Pod, outdated bool, inv *agentv1.OSDStatus) (stopState, error) {
	st := stopState{outdated: outdated}
	if !pod.DeletionTimestamp.IsZero() {
		return st, nil
	}
	// Not serving by this pass (no inventory: the agent did not answer
	// ready) nor by the last: a moment's silence of a serving agent does
	// not skip the rollout.
	if outdated && inv == nil && !osd.Status.Phase.Serving() {
		return st, r.replacePod(ctx, osd, pod, "the OSD does not serve, so nothing waits for it")
	}
	chosen, cordoned, err := r.rolloutReached(ctx, osd)
	if err != nil {
		return st, err
	}
	switch {
	case chosen && outdated:
		st.reason = flintv1.OSDRollingUpdateReason
	case chosen && cordoned:
		st.reason = flintv1.OSDNodeCordonedReason
	default:
		return st, r.markStopReady(ctx, pod, false)
	}
	holds, err := r.stillHolds(ctx, osd, inv)
	if err != nil {
		return st, err
	}
	if holds != "" {
		st.message = fmt.Sprintf("the Pool's rollout stops the OSD: %s move off or are let go first", holds)
		return st, r.markStopReady(ctx, pod, false)
	}
	if outdated {
		st.message = "stopped cleanly: its pod is replaced to run the OSD's current spec"
		return st, r.replacePod(ctx, osd, pod, "the Pool's rolling update reached the OSD, which stopped cleanly (no target, no replica in a raid)")
	}
	st.message = fmt.Sprintf("stopped cleanly for the drain of node %s: pod %s may be evicted; uncordon the node to have its replicas rebuilt", osd.Spec.NodeName, pod.Name)
	return st, r.markStopReady(ctx, pod, true)
}

// rolloutReached says whether the Pool's rollout lists the OSD, and
// whether the OSD's node is cordoned.
func (r *Reconciler) rolloutReached(ctx context.Context, osd *flintv1.OSD) (chosen, cordoned bool, err error) {
	var pool flintv1.Pool
	if err := r.Get(ctx, client.ObjectKey{Name: osd.Spec.Pool}, &pool); err != nil {
		return false, false, client.IgnoreNotFound(err)
	}
	if pool.Status.Rollout == nil || !slices.Contains(pool.Status.Rollout.OSDs, osd.Name) {
		return false, false, nil
	}
	var node corev1.Node
	if err := r.Get(ctx, client.ObjectKey{Name: osd.Spec.NodeName}, &node); err != nil && !apierrors.IsNotFound(err) {
		return false, false, err
	}
	return true, node.Spec.Unschedulable, nil
}

// stillHolds says what of the Volumes' still needs the OSD: targets on
// it (in a Volume's status, or still running on its agent), and replicas
// that a Volume counts in sync or whose target's raid last reported
// them; empty when nothing does.
func (r *Reconciler) stillHolds(ctx context.Context, osd *flintv1.OSD, inv *agentv1.OSDStatus) (string, error) {
	var vols flintv1.VolumeList
	if err := r.List(ctx, &vols); err != nil {
		return "", err
	}
	targets, replicas := 0, 0
	for _, t := range inv.GetTargets() {
		// A standby serves nothing, and its orphan collection or move
		// settles it.
		if t.GetState() != agentv1.TargetStateStandby {
			targets++
		}
	}
	for _, v := range vols.Items {
		t := v.Status.Target
		if t != nil && t.OSD == osd.Name {
			targets = max(targets, 1)
			continue
		}
		for _, rep := range v.Status.Replicas {
			inRaid := t != nil && slices.Contains(t.Members, osd.Name)
			if rep.OSD == osd.Name && (rep.State == flintv1.ReplicaStateOnline || rep.State == flintv1.ReplicaStateRebuilding || inRaid) {
				replicas++
			}
		}
	}
	var held []string
	if targets > 0 {
		held = append(held, fmt.Sprintf("%d targets", targets))
	}
	if replicas > 0 {
		held = append(held, fmt.Sprintf("%d replicas in a target's raid", replicas))
	}
	return strings.Join(held, " and "), nil
}

// replacePod deletes the OSD's pod; the next reconcile creates it from
// the OSD's current spec once the old one is gone, so that at most one
// SPDK ever claims the device.
func (r *Reconciler) replacePod(ctx context.Context, osd *flintv1.OSD, pod *corev1.Pod, why string) error {
	if err := r.Delete(ctx, pod); client.IgnoreNotFound(err) != nil {
		return err
	}
	r.Agents.Forget(osd.Name)
	r.Recorder.Eventf(osd, pod, corev1.EventTypeNormal, flintv1.EventPodReplaced, "DeletePod", "pod %s runs an older spec and is replaced: %s", pod.Name, why)
	return nil
}

// markStopReady sets or clears LabelStopReady on the pod: the Pool's
// PodDisruptionBudget lets a drain evict only a pod that carries it.
func (r *Reconciler) markStopReady(ctx context.Context, pod *corev1.Pod, ready bool) error {
	if _, has := pod.Labels[flintv1.LabelStopReady]; has == ready {
		return nil
	}
	before := pod.DeepCopy()
	if ready {
		pod.Labels[flintv1.LabelStopReady] = "true"
	} else {
		delete(pod.Labels, flintv1.LabelStopReady)
	}
	return r.Patch(ctx, pod, client.MergeFrom(before))
}
