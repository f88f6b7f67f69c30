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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// collectOrphans deletes what the OSD holds for Volumes that no longer
// place it here: a replica whose Volume is gone or moved it elsewhere, a
// target whose Volume's target is on another OSD. That is how a Volume
// deleted, or a replica replaced, while this OSD was down leaves no lvol
// behind. A candidate is confirmed by a read from the API server, not the
// cache: a Volume records a placement before the replica is made, so a
// live read never takes a fresh replica for an orphan.
func (r *Reconciler) collectOrphans(ctx context.Context, osd *flintv1.OSD, agent agentv1.OSDAgentClient, inv *agentv1.OSDStatus) error {
	var members []string // every OSD's uid, listed at the first orphan target
	for _, t := range inv.GetTargets() {
		// A stray target goes even while its Volume is deleted: it would hold
		// the replica the Volume's finalizer deletes.
		if r.holds(ctx, t.GetVolume(), false, func(v *flintv1.Volume) bool { return v.Status.Target != nil && v.Status.Target.OSD == osd.Name }) {
			continue
		}
		if members == nil {
			var err error
			if members, err = r.allOSDUIDs(ctx); err != nil {
				return err
			}
		}
		if _, err := agent.DeleteTarget(ctx, &agentv1.DeleteTargetRequest{Volume: t.GetVolume(), MemberOsds: members}); err != nil {
			return fmt.Errorf("delete the orphan target of %s: %w", t.GetVolume(), err)
		}
		r.Recorder.Eventf(osd, nil, corev1.EventTypeNormal, "OrphanDeleted", "DeleteTarget", "deleted the target of volume %s: its target is on another OSD now, or it is gone", t.GetVolume())
	}
	for _, rep := range inv.GetReplicas() {
		if r.holds(ctx, rep.GetVolume(), true, func(v *flintv1.Volume) bool { return placedOn(v, osd.Name) }) {
			continue
		}
		if _, err := agent.DeleteReplica(ctx, &agentv1.DeleteReplicaRequest{Volume: rep.GetVolume()}); err != nil {
			return fmt.Errorf("delete the orphan replica of %s: %w", rep.GetVolume(), err)
		}
		r.Recorder.Eventf(osd, nil, corev1.EventTypeNormal, "OrphanDeleted", "DeleteReplica", "deleted the replica of volume %s: the volume is gone or keeps its replicas elsewhere", rep.GetVolume())
	}
	return nil
}

// holds reports whether Volume name still wants what keep looks for; with
// whileDeleted, a Volume being deleted keeps it until its own finalizer is
// done. Any doubt (a failed read) keeps it too.
func (r *Reconciler) holds(ctx context.Context, name string, whileDeleted bool, keep func(*flintv1.Volume) bool) bool {
	wants := func(v *flintv1.Volume) bool { return keep(v) || whileDeleted && !v.DeletionTimestamp.IsZero() }
	var v flintv1.Volume
	if err := r.Get(ctx, client.ObjectKey{Name: name}, &v); err == nil && wants(&v) {
		return true
	}
	err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, &v)
	switch {
	case apierrors.IsNotFound(err):
		return false
	case err != nil:
		return true
	}
	return wants(&v)
}

func placedOn(v *flintv1.Volume, osd string) bool {
	for _, rep := range v.Status.Replicas {
		if rep.OSD == osd {
			return true
		}
	}
	return false
}

// allOSDUIDs names every OSD a target may have attached a replica from.
func (r *Reconciler) allOSDUIDs(ctx context.Context) ([]string, error) {
	var l flintv1.OSDList
	if err := r.List(ctx, &l); err != nil {
		return nil, err
	}
	uids := make([]string, 0, len(l.Items))
	for _, o := range l.Items {
		uids = append(uids, string(o.UID))
	}
	return uids, nil
}
