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

package snapshot

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/conditions"
	"github.com/flint-io/flint/controllers/patch"
)

// countCopies marks the copies whose OSD is gone, or whose OSD answers
// without them, Lost; an OSD that does not answer keeps its copy's state
// until it does. The phase follows: Ready with every copy, Degraded with
// some, Lost with none.
func (r *Reconciler) countCopies(ctx context.Context, snap *flintv1.Snapshot) {
	var lost []string
	for i := range snap.Status.Copies {
		c := &snap.Status.Copies[i]
		if c.State != flintv1.SnapshotCopyReady {
			continue
		}
		if held, known := r.holdsCopy(ctx, snap, c.OSD); known && !held {
			c.State = flintv1.SnapshotCopyLost
			lost = append(lost, c.OSD)
		}
	}
	if len(lost) > 0 {
		r.Recorder.Eventf(snap, nil, corev1.EventTypeWarning, flintv1.SnapshotCopiesLostReason, "Count", "the copies on OSDs %s are lost: the OSD is gone or no longer holds its copy", strings.Join(lost, ", "))
	}
	ready := 0
	for _, c := range snap.Status.Copies {
		if c.State == flintv1.SnapshotCopyReady {
			ready++
		}
	}
	total := len(snap.Status.Copies)
	switch {
	case ready == total:
		snap.Status.Phase = flintv1.SnapshotPhaseReady
		conditions.Set(snap, metav1.Condition{Type: flintv1.DegradedCondition, Status: metav1.ConditionFalse, Reason: flintv1.SnapshotAllCopiesReason, Message: "every copy taken at the cut is there"})
	case ready > 0:
		snap.Status.Phase = flintv1.SnapshotPhaseDegraded
		msg := fmt.Sprintf("%d of the %d copies taken at the cut are left; the others were lost with their OSDs", ready, total)
		conditions.Set(snap, metav1.Condition{Type: flintv1.DegradedCondition, Status: metav1.ConditionTrue, Reason: flintv1.SnapshotCopiesLostReason, Message: msg})
	default:
		snap.Status.Phase = flintv1.SnapshotPhaseLost
		snap.Status.ReadyToUse = false
		msg := fmt.Sprintf("all %d copies taken at the cut were lost with their OSDs: nothing can be restored from this Snapshot; delete it", total)
		conditions.Set(snap, metav1.Condition{Type: flintv1.DegradedCondition, Status: metav1.ConditionTrue, Reason: flintv1.SnapshotCopiesLostReason, Message: msg})
		conditions.Set(snap, metav1.Condition{Type: flintv1.ReadyCondition, Status: metav1.ConditionFalse, Reason: flintv1.SnapshotCopiesLostReason, Message: msg})
	}
}

// wait records that the Snapshot cannot proceed, and why, with an Event
// when the reason is new; it is looked at again shortly.
func (r *Reconciler) wait(ctx context.Context, before, snap *flintv1.Snapshot, reason, msg string) (ctrl.Result, error) {
	snap.Status.Phase = flintv1.SnapshotPhasePending
	snap.Status.ReadyToUse = false
	if conditions.Set(snap, metav1.Condition{Type: flintv1.ReadyCondition, Status: metav1.ConditionFalse, Reason: reason, Message: msg}) {
		r.Recorder.Eventf(snap, nil, corev1.EventTypeWarning, reason, "Cut", "%s", msg)
	}
	if err := r.writeStatus(ctx, before, snap); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: retry}, nil
}

// writeStatus writes snap's status when it changed.
func (r *Reconciler) writeStatus(ctx context.Context, before, snap *flintv1.Snapshot) error {
	snap.Status.ObservedGeneration = snap.Generation
	_, err := patch.Status(ctx, r.Client, before, snap)
	return err
}
