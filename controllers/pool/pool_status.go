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

package pool

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/conditions"
	"github.com/flint-io/flint/controllers/metrics"
	"github.com/flint-io/flint/controllers/patch"
)

// writeStatus sums up the Pool's OSDs and Volumes, sets a condition per
// failed preflight and Ready/Degraded, and emits an Event for every
// condition that starts failing.
func (r *Reconciler) writeStatus(ctx context.Context, pool *flintv1.Pool, pf *preflight, w world, draining []string, plan rollout) error {
	before := pool.DeepCopy()
	st := &pool.Status
	st.ObservedGeneration = pool.Generation
	st.OSDs = flintv1.OSDCounts{}
	raw := resource.NewQuantity(0, resource.BinarySI)
	phases := map[flintv1.OSDPhase]int{}
	for _, o := range w.osds {
		st.OSDs.Total++
		phase := o.Status.Phase
		if phase == "" {
			phase = flintv1.OSDPhasePending
		}
		phases[phase]++
		switch phase {
		case flintv1.OSDPhaseStarting:
			st.OSDs.Starting++
		case flintv1.OSDPhaseReady:
			st.OSDs.Ready++
		case flintv1.OSDPhaseDegraded:
			st.OSDs.Degraded++
		case flintv1.OSDPhaseFailed:
			st.OSDs.Failed++
		case flintv1.OSDPhaseDraining:
			st.OSDs.Draining++
		default:
			st.OSDs.Pending++
		}
		if o.Status.Phase.Serving() && o.Status.Capacity != nil {
			raw.Add(o.Status.Capacity.Total)
		}
	}
	allocated := resource.NewQuantity(0, resource.BinarySI)
	volPhases := map[flintv1.VolumePhase]int{}
	for _, v := range w.volumes {
		allocated.Add(v.Spec.Size)
		volPhases[v.Status.Phase]++
	}
	usable := resource.NewQuantity(raw.Value()/int64(max(pool.Spec.Replicas, 1)), resource.BinarySI)
	st.Capacity = &flintv1.PoolCapacity{Raw: *raw, Usable: *usable, Allocated: *allocated}
	st.Volumes = int32(len(w.volumes))

	for _, reason := range flintv1.PoolPreflightConditions {
		if msg := pf.message(reason); msg != "" {
			r.setCondition(pool, reason, metav1.ConditionTrue, reason, msg)
		} else {
			conditions.Remove(pool, reason)
		}
	}
	r.setReady(pool, pf, w)
	r.setDegraded(pool, draining)
	announce := setRollout(pool, plan, r.Recorder)
	r.exportMetrics(pool, pf, phases, volPhases)
	// Locked: the rollout is a decision read back from this status, and a
	// pass from a stale cache must not start a second domain.
	if written, err := patch.Status(ctx, r.Client, before, pool); err != nil || !written {
		return err
	}
	announce()
	return nil
}

// setCondition sets a condition and emits an Event when it turns True for
// a failure.
func (r *Reconciler) setCondition(pool *flintv1.Pool, typ string, status metav1.ConditionStatus, reason, msg string) {
	changed := conditions.Set(pool, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg})
	failing := (typ == flintv1.ReadyCondition) == (status == metav1.ConditionFalse)
	if failing && changed {
		r.Recorder.Eventf(pool, nil, corev1.EventTypeWarning, reason, "Preflight", "%s", msg)
	}
}

// setReady: a Pool is Ready when it can place a volume: serving OSDs in
// at least replicas failure domains, and no preflight failure. As for
// placement, an OSD on a node without the failure-domain label is in no
// domain.
func (r *Reconciler) setReady(pool *flintv1.Pool, pf *preflight, w world) {
	for _, reason := range flintv1.PoolPreflightConditions {
		if msg := pf.message(reason); msg != "" {
			r.setCondition(pool, flintv1.ReadyCondition, metav1.ConditionFalse, reason, msg)
			return
		}
	}
	key := pool.FailureDomainKey()
	domains := map[string]bool{}
	for _, o := range w.osds {
		n := w.nodes[o.Spec.NodeName]
		if o.Status.Phase.Serving() && o.Status.Phase != flintv1.OSDPhaseDraining && n != nil && n.Labels[key] != "" {
			domains[n.Labels[key]] = true
		}
	}
	if int32(len(domains)) < pool.Spec.Replicas {
		r.setCondition(pool, flintv1.ReadyCondition, metav1.ConditionFalse, flintv1.PoolOSDsNotReadyReason,
			fmt.Sprintf("%d of %d OSDs are ready, in %d failure domains (%s); volumes need %d: see the OSDs' Ready conditions (kubectl get osds -l %s=%s -o wide) and their nodes' %s labels",
				pool.Status.OSDs.Ready+pool.Status.OSDs.Degraded, pool.Status.OSDs.Total, len(domains), key, pool.Spec.Replicas, flintv1.LabelPool, pool.Name, key))
		return
	}
	conditions.Set(pool, metav1.Condition{
		Type: flintv1.ReadyCondition, Status: metav1.ConditionTrue, Reason: flintv1.PoolProvisionableReason,
		Message: fmt.Sprintf("%d OSDs serve %s usable", pool.Status.OSDs.Ready+pool.Status.OSDs.Degraded, pool.Status.Capacity.Usable.String()),
	})
}

// setDegraded: some OSD does not serve, or drains.
func (r *Reconciler) setDegraded(pool *flintv1.Pool, draining []string) {
	c := pool.Status.OSDs
	var problems []string
	if n := c.Total - c.Ready; n > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d OSDs are not Ready (pending %d, starting %d, degraded %d, failed %d, draining %d)", n, c.Total, c.Pending, c.Starting, c.Degraded, c.Failed, c.Draining))
	}
	if len(draining) > 0 {
		slices.Sort(draining)
		problems = append(problems, "left the Pool's devices and drain before deletion: "+strings.Join(draining, ", "))
	}
	if len(problems) == 0 {
		reason := flintv1.PoolAllOSDsReadyReason
		if c.Total == 0 {
			reason = flintv1.PoolNoOSDsReason // nothing to be degraded; Ready says why there are none
		}
		conditions.Set(pool, metav1.Condition{Type: flintv1.DegradedCondition, Status: metav1.ConditionFalse, Reason: reason})
		return
	}
	reason := flintv1.PoolOSDsNotReadyReason
	if len(draining) > 0 {
		reason = flintv1.PoolOSDsDrainingReason
	}
	conditions.Set(pool, metav1.Condition{
		Type: flintv1.DegradedCondition, Status: metav1.ConditionTrue, Reason: reason, Message: strings.Join(problems, "; "),
	})
}

func (r *Reconciler) exportMetrics(pool *flintv1.Pool, pf *preflight, osds map[flintv1.OSDPhase]int, vols map[flintv1.VolumePhase]int) {
	metrics.ForgetPool(pool.Name)
	c := pool.Status.Capacity
	for kind, q := range map[string]resource.Quantity{"raw": c.Raw, "usable": c.Usable, "allocated": c.Allocated} {
		metrics.PoolCapacity.WithLabelValues(pool.Name, kind).Set(float64(q.Value()))
	}
	for _, p := range []flintv1.OSDPhase{flintv1.OSDPhasePending, flintv1.OSDPhaseStarting, flintv1.OSDPhaseReady, flintv1.OSDPhaseDegraded, flintv1.OSDPhaseFailed, flintv1.OSDPhaseDraining} {
		metrics.PoolOSDs.WithLabelValues(pool.Name, string(p)).Set(float64(osds[p]))
	}
	for p, n := range vols {
		metrics.PoolVolumes.WithLabelValues(pool.Name, string(p)).Set(float64(n))
	}
	var stopping, waiting, blocked float64
	if r := pool.Status.Rollout; r != nil {
		stopping, waiting = float64(len(r.OSDs)), float64(r.Pending)
	}
	if c := meta.FindStatusCondition(pool.Status.Conditions, flintv1.RollingOutCondition); c != nil && c.Reason == flintv1.PoolRolloutBlockedReason {
		blocked = 1
	}
	metrics.PoolRolloutOSDs.WithLabelValues(pool.Name, "stopping").Set(stopping)
	metrics.PoolRolloutOSDs.WithLabelValues(pool.Name, "waiting").Set(waiting)
	metrics.PoolRolloutBlocked.WithLabelValues(pool.Name).Set(blocked)
	for _, reason := range flintv1.PoolPreflightConditions {
		v := 0.0
		if pf.message(reason) != "" {
			v = 1
		}
		metrics.PreflightFailures.WithLabelValues(pool.Name, reason).Set(v)
	}
}
