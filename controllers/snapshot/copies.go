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
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/conditions"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// holdsCopy says whether OSD name holds snap's copy, from the OSD's
// latest inventory asked after the cut; known is false when there is none
// yet, or the OSD does not serve.
func (r *Reconciler) holdsCopy(ctx context.Context, snap *flintv1.Snapshot, name string) (held, known bool) {
	var o flintv1.OSD
	if err := r.Get(ctx, client.ObjectKey{Name: name}, &o); err != nil {
		return false, apierrors.IsNotFound(err)
	}
	if !o.Status.Phase.Serving() || snap.Status.CreationTime == nil {
		return false, false
	}
	// The copies exist once the pause ends; the creation time keeps whole
	// seconds only.
	cut := snap.Status.CreationTime.Add(time.Second)
	if p := snap.Status.PauseDuration; p != nil {
		cut = cut.Add(p.Duration)
	}
	return r.Inventories.HoldsCopy(name, string(snap.UID), cut)
}

// deleteCopy removes c from its OSD. A copy whose OSD is gone went with
// it; one whose OSD does not serve is deferred (done says so): the OSD
// controller removes it as an orphan when the OSD returns.
func (r *Reconciler) deleteCopy(ctx context.Context, snap *flintv1.Snapshot, c flintv1.SnapshotCopy) (done bool, err error) {
	if c.State == flintv1.SnapshotCopyLost {
		return true, nil
	}
	var o flintv1.OSD
	if err := r.Get(ctx, client.ObjectKey{Name: c.OSD}, &o); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
	if !o.Status.Phase.Serving() {
		return false, nil
	}
	agent, err := r.Agents.For(ctx, &o)
	if err != nil {
		return false, err
	}
	if _, err := agent.DeleteSnapshot(ctx, &agentv1.DeleteSnapshotRequest{Snapshot: string(snap.UID)}); err != nil {
		return false, fmt.Errorf("delete the copy on OSD %s: %w", c.OSD, err)
	}
	return true, nil
}

// restoringFrom names a Volume whose replicas are being made from snap;
// "" when none is.
func (r *Reconciler) restoringFrom(ctx context.Context, snap *flintv1.Snapshot) (string, error) {
	var vols flintv1.VolumeList
	if err := r.List(ctx, &vols, client.UnsafeDisableDeepCopy); err != nil {
		return "", err
	}
	for _, v := range vols.Items {
		if v.Restoring() && v.SourceSnapshot() == snap.Name {
			return v.Name, nil
		}
	}
	return "", nil
}

// finalize removes a deleted Snapshot's copies, then lets it go. A Volume
// being made from it, or a copy SPDK keeps (more than one lvol is its
// clone), blocks the deletion, said in a condition; OSDs that do not serve
// remove theirs when they return.
func (r *Reconciler) finalize(ctx context.Context, snap *flintv1.Snapshot) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(snap, flintv1.SnapshotFinalizer) {
		return ctrl.Result{}, nil
	}
	before := snap.DeepCopy()
	snap.Status.Phase = flintv1.SnapshotPhaseDeleting
	snap.Status.ReadyToUse = false
	restoring, err := r.restoringFrom(ctx, snap)
	if err != nil {
		return ctrl.Result{}, err
	}
	if restoring != "" {
		msg := fmt.Sprintf("Volume %s is being created from this Snapshot: the copies go once its replicas are cloned", restoring)
		if conditions.Set(snap, metav1.Condition{Type: flintv1.DeletionBlockedCondition, Status: metav1.ConditionTrue, Reason: flintv1.SnapshotRestoringReason, Message: msg}) {
			r.Recorder.Eventf(snap, nil, corev1.EventTypeNormal, flintv1.SnapshotRestoringReason, "Delete", "%s", msg)
		}
		if err := r.writeStatus(ctx, before, snap); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: retry}, nil
	}
	var deferred []string
	for _, c := range snap.Status.Copies {
		done, err := r.deleteCopy(ctx, snap, c)
		if status.Code(err) == codes.FailedPrecondition {
			msg := fmt.Sprintf("SPDK keeps the copy on OSD %s while more than one lvol is its clone (the replica it was cut from, a Volume made from it): it goes once one is left", c.OSD)
			if conditions.Set(snap, metav1.Condition{Type: flintv1.DeletionBlockedCondition, Status: metav1.ConditionTrue, Reason: flintv1.SnapshotInUseReason, Message: msg}) {
				r.Recorder.Eventf(snap, nil, corev1.EventTypeNormal, flintv1.SnapshotInUseReason, "Delete", "%s", msg)
			}
			if err := r.writeStatus(ctx, before, snap); err != nil {
				return ctrl.Result{}, err
			}
			return ctrl.Result{RequeueAfter: r.Resync}, nil
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		if !done {
			deferred = append(deferred, c.OSD)
		}
	}
	conditions.Remove(snap, flintv1.DeletionBlockedCondition)
	if len(deferred) > 0 {
		r.Recorder.Eventf(snap, nil, corev1.EventTypeNormal, flintv1.EventCleanupDeferred, "Delete", "OSDs %s do not serve: they delete their copies of this Snapshot when they return", strings.Join(deferred, ", "))
	}
	controllerutil.RemoveFinalizer(snap, flintv1.SnapshotFinalizer)
	return ctrl.Result{}, r.Update(ctx, snap)
}
