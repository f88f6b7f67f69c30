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

package volume

import (
	"context"
	"fmt"
	"slices"
	"strings"

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

// finalize tears a deleted Volume down: the target first (hosts lose it),
// then every replica. A Volume still published is kept: a host uses it.
// OSDs that do not serve are skipped; they delete what they hold of the
// Volume when they return (the OSD controller's orphan collection).
func (r *Reconciler) finalize(ctx context.Context, vol *flintv1.Volume) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(vol, flintv1.VolumeFinalizer) {
		return ctrl.Result{}, nil
	}
	before := vol.DeepCopy()
	if hosts := vol.Spec.PublishedHosts; len(hosts) > 0 {
		msg := fmt.Sprintf("the Volume is published to %d hosts (%s): unpublish it (stop the pods that use it) and it is deleted", len(hosts), strings.Join(hosts, ", "))
		if conditions.Set(vol, metav1.Condition{Type: flintv1.DeletionBlockedCondition, Status: metav1.ConditionTrue, Reason: flintv1.VolumePublishedReason, Message: msg}) {
			r.Recorder.Eventf(vol, nil, corev1.EventTypeWarning, flintv1.VolumePublishedReason, "Delete", "%s", msg)
		}
		return r.writeStatus(ctx, before, vol)
	}
	conditions.Remove(vol, flintv1.DeletionBlockedCondition)
	vol.Status.Phase = flintv1.VolumePhaseDeleting
	if _, err := r.writeStatus(ctx, before, vol); err != nil {
		return ctrl.Result{}, err
	}

	osds := map[string]*flintv1.OSD{}
	var uids []string
	for _, name := range volumeOSDs(vol) {
		var o flintv1.OSD
		if err := r.Get(ctx, client.ObjectKey{Name: name}, &o); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return ctrl.Result{}, err
		}
		osds[name] = &o
		uids = append(uids, string(o.UID))
	}
	var deferred []string
	agentOf := func(name string) (agentv1.OSDAgentClient, error) {
		o, ok := osds[name]
		if !ok || !o.Status.Phase.Serving() {
			if ok && !slices.Contains(deferred, name) {
				deferred = append(deferred, name)
			}
			return nil, nil
		}
		return r.Agents.For(ctx, o)
	}
	// Targets first, the Volume's own before any a target move left behind
	// (which would hold its replica), then the replicas. Deleting a target
	// that is not there is a no-op.
	withTarget := volumeOSDs(vol)
	if t := vol.Status.Target; t != nil {
		withTarget = append([]string{t.OSD}, slices.DeleteFunc(withTarget, func(n string) bool { return n == t.OSD })...)
	}
	for _, name := range withTarget {
		agent, err := agentOf(name)
		if err != nil {
			return ctrl.Result{}, err
		}
		if agent != nil {
			// The Volume goes: no replica needs to stay in sync, so the
			// target lets go of any it waits for.
			if _, err := agent.DeleteTarget(ctx, &agentv1.DeleteTargetRequest{VolumeUid: string(vol.UID), MemberOsds: uids, OutOfSyncOsds: uids}); err != nil {
				return ctrl.Result{}, fmt.Errorf("delete the target on OSD %s: %w", name, err)
			}
		}
	}
	for _, rep := range vol.Status.Replicas {
		agent, err := agentOf(rep.OSD)
		if err != nil {
			return ctrl.Result{}, err
		}
		if agent != nil {
			if _, err := agent.DeleteReplica(ctx, &agentv1.DeleteReplicaRequest{VolumeUid: string(vol.UID)}); err != nil {
				return ctrl.Result{}, fmt.Errorf("delete the replica on OSD %s: %w", rep.OSD, err)
			}
		}
	}
	if len(deferred) > 0 {
		r.Recorder.Eventf(vol, nil, corev1.EventTypeNormal, flintv1.EventCleanupDeferred, "Delete", "OSDs %s do not serve: they delete what they hold of this Volume when they return", strings.Join(deferred, ", "))
	}
	r.forget(vol.Name)
	r.lastReplicaErrors.Delete(vol.UID)
	controllerutil.RemoveFinalizer(vol, flintv1.VolumeFinalizer)
	return ctrl.Result{}, r.Update(ctx, vol)
}
