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
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/conditions"
	"github.com/flint-io/flint/controllers/patch"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// resumeTimeout bounds the resume of a paused Volume: it runs even when
// the reconcile's context ended, since the hosts wait for it.
const resumeTimeout = 10 * time.Second

// cut takes the Snapshot, in phases: undo what an unfinished cut left,
// check the Volume serves, record where the copies go, then pause its
// target, snapshot every replica in sync at the pause, and resume. A
// failure leaves the copies recorded as Cutting: the next reconcile
// removes them and cuts again, so no partial cut is ever presented as a
// Snapshot.
func (r *Reconciler) cut(ctx context.Context, snap *flintv1.Snapshot) (ctrl.Result, error) {
	// The cache can be behind a cut that just finished (a reconcile queued
	// by its Cutting write): undo only what a fresh read shows unfinished.
	var live flintv1.Snapshot
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(snap), &live); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if live.ResourceVersion != snap.ResourceVersion {
		return ctrl.Result{RequeueAfter: patch.ConflictRetry}, nil
	}
	before := snap.DeepCopy()
	if err := r.undoUnfinishedCut(ctx, snap); err != nil {
		return r.wait(ctx, before, snap, flintv1.SnapshotCutFailedReason, fmt.Sprintf("remove what an unfinished cut left: %v", err))
	}
	// Read live: the Volume controller may have just moved the target.
	var vol flintv1.Volume
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: snap.Spec.Volume}, &vol); err != nil {
		if apierrors.IsNotFound(err) {
			return r.wait(ctx, before, snap, flintv1.SnapshotVolumeNotFoundReason, fmt.Sprintf("Volume %s does not exist: snapshot a Volume that exists", snap.Spec.Volume))
		}
		return ctrl.Result{}, err
	}
	if why := notServing(&vol); why != "" {
		return r.wait(ctx, before, snap, flintv1.SnapshotVolumeNotServingReason, why)
	}
	osds, err := r.volumeOSDs(ctx, &vol)
	if err != nil {
		return ctrl.Result{}, err
	}
	target := osds[vol.Status.Target.OSD]
	if target == nil || !target.Status.Phase.Serving() {
		return r.wait(ctx, before, snap, flintv1.SnapshotVolumeNotServingReason, fmt.Sprintf("the target of Volume %s, on OSD %s, does not serve: the cut waits for it to serve again (or move)", vol.Name, vol.Status.Target.OSD))
	}

	// Record, then act.
	snap.Status.VolumeUID = string(vol.UID)
	snap.Status.Size = vol.Status.Capacity
	snap.Status.Copies = nil
	for _, rep := range vol.Status.Replicas {
		if rep.State == flintv1.ReplicaStateOnline && osds[rep.OSD] != nil {
			snap.Status.Copies = append(snap.Status.Copies, flintv1.SnapshotCopy{OSD: rep.OSD, State: flintv1.SnapshotCopyCutting})
		}
	}
	snap.Status.Phase = flintv1.SnapshotPhasePending
	if err := r.writeStatus(ctx, before, snap); err != nil {
		return ctrl.Result{}, err
	}
	before = snap.DeepCopy()

	taken, paused, err := r.cutCopies(ctx, snap, &vol, osds)
	if err != nil {
		return r.wait(ctx, before, snap, flintv1.SnapshotCutFailedReason, fmt.Sprintf("cut Volume %s: %v; what was taken is removed and the cut tried again", vol.Name, err))
	}
	now := metav1.NewTime(paused.start)
	snap.Status.Copies = taken
	snap.Status.CreationTime = &now
	snap.Status.PauseDuration = &metav1.Duration{Duration: paused.length}
	snap.Status.Phase = flintv1.SnapshotPhaseReady
	snap.Status.ReadyToUse = true
	msg := fmt.Sprintf("cut %d copies of Volume %s on OSDs %s; its I/O paused for %s", len(taken), vol.Name, strings.Join(copyOSDs(taken), ", "), paused.length.Round(time.Microsecond))
	conditions.Set(snap, metav1.Condition{Type: flintv1.ReadyCondition, Status: metav1.ConditionTrue, Reason: flintv1.SnapshotCutReason, Message: msg})
	conditions.Set(snap, metav1.Condition{Type: flintv1.DegradedCondition, Status: metav1.ConditionFalse, Reason: flintv1.SnapshotAllCopiesReason, Message: "every copy taken at the cut is there"})
	r.Recorder.Eventf(snap, nil, corev1.EventTypeNormal, flintv1.SnapshotCutReason, "Cut", "%s", msg)
	if err := r.writeStatus(ctx, before, snap); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// pause is when and for how long a Volume's I/O was paused.
type pause struct {
	start  time.Time
	length time.Duration
}

// cutCopies pauses vol's target, snapshots the recorded copies whose
// replicas were in sync at the pause (at once), and resumes the target
// whatever happened. It returns the copies taken.
func (r *Reconciler) cutCopies(ctx context.Context, snap *flintv1.Snapshot, vol *flintv1.Volume, osds map[string]*flintv1.OSD) ([]flintv1.SnapshotCopy, pause, error) {
	target, err := r.Agents.For(ctx, osds[vol.Status.Target.OSD])
	if err != nil {
		return nil, pause{}, err
	}
	var members []string
	for _, rep := range vol.Status.Replicas {
		if o := osds[rep.OSD]; o != nil {
			members = append(members, string(o.UID))
		}
	}
	p := pause{start: r.now()}
	defer r.resume(ctx, target, snap, vol)
	paused, err := target.PauseTarget(ctx, &agentv1.PauseTargetRequest{VolumeUid: string(vol.UID), MemberOsds: members})
	if err != nil {
		return nil, p, fmt.Errorf("pause its target on OSD %s: %w", vol.Status.Target.OSD, err)
	}
	var (
		mu    sync.Mutex
		taken []flintv1.SnapshotCopy
		errs  []error
		wg    sync.WaitGroup
	)
	for _, c := range snap.Status.Copies {
		o := osds[c.OSD]
		if !slices.Contains(paused.GetInSyncOsds(), string(o.UID)) {
			continue // out of sync at the pause: its data is not the Volume's
		}
		wg.Go(func() {
			lvol, err := r.snapshotReplica(ctx, o, vol, snap)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("snapshot the replica on OSD %s: %w", o.Name, err))
				return
			}
			taken = append(taken, flintv1.SnapshotCopy{OSD: o.Name, Lvol: lvol, State: flintv1.SnapshotCopyReady})
		})
	}
	wg.Wait()
	p.length = r.now().Sub(p.start)
	if err := errors.Join(errs...); err != nil {
		return nil, p, err
	}
	if len(taken) == 0 {
		return nil, p, fmt.Errorf("no replica recorded in sync was in sync at the pause")
	}
	slices.SortFunc(taken, func(a, b flintv1.SnapshotCopy) int { return strings.Compare(a.OSD, b.OSD) })
	return taken, p, nil
}

// resume lets vol's hosts back in after the cut, whatever happened. The
// hosts wait for this; a failure is healed by the Volume controller's
// EnsureTarget, which lets them back in too: a Ready Volume is not
// driven on a timer, so it is driven now.
func (r *Reconciler) resume(ctx context.Context, target agentv1.OSDAgentClient, snap *flintv1.Snapshot, vol *flintv1.Volume) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resumeTimeout)
	defer cancel()
	if _, err := target.ResumeTarget(ctx, &agentv1.ResumeTargetRequest{VolumeUid: string(vol.UID)}); err != nil {
		r.Recorder.Eventf(snap, vol, corev1.EventTypeWarning, flintv1.EventResumeFailed, "Cut", "resume Volume %s after the cut: %v; the Volume controller drives it again now", vol.Name, err)
		select {
		case r.ObserveVolume <- event.GenericEvent{Object: vol}:
		case <-ctx.Done():
		}
	}
}

// snapshotReplica snapshots vol's replica on o as the Snapshot's uid; it
// returns the copy's lvol.
func (r *Reconciler) snapshotReplica(ctx context.Context, o *flintv1.OSD, vol *flintv1.Volume, snap *flintv1.Snapshot) (string, error) {
	agent, err := r.Agents.For(ctx, o)
	if err != nil {
		return "", err
	}
	s, err := agent.CreateSnapshot(ctx, &agentv1.CreateSnapshotRequest{VolumeUid: string(vol.UID), Snapshot: string(snap.UID)})
	if err != nil {
		return "", err
	}
	return s.GetLvol(), nil
}

// undoUnfinishedCut removes the copies of a cut that did not finish: they
// may hold data from different instants. A copy whose OSD is gone went
// with it; one whose OSD does not serve must go before the next cut, which
// would otherwise take it for its own.
func (r *Reconciler) undoUnfinishedCut(ctx context.Context, snap *flintv1.Snapshot) error {
	for _, c := range snap.Status.Copies {
		done, err := r.deleteCopy(ctx, snap, c)
		if err != nil {
			return err
		}
		if !done {
			return fmt.Errorf("OSD %s, which may hold a copy of it, does not serve: the cut waits for it to serve (or be deleted)", c.OSD)
		}
	}
	snap.Status.Copies = nil
	return nil
}

// notServing says why vol cannot be cut now; empty when it can.
func notServing(vol *flintv1.Volume) string {
	switch {
	case !vol.DeletionTimestamp.IsZero():
		return fmt.Sprintf("Volume %s is being deleted", vol.Name)
	case vol.Status.Target == nil:
		return fmt.Sprintf("Volume %s has no target yet: the cut waits until it serves I/O", vol.Name)
	}
	switch vol.Status.Phase {
	case flintv1.VolumePhaseReady, flintv1.VolumePhaseDegraded, flintv1.VolumePhaseRebuilding:
		return ""
	}
	return fmt.Sprintf("Volume %s is %s: the cut waits until its target serves I/O", vol.Name, vol.Status.Phase)
}

// volumeOSDs reads the OSDs of vol's replicas and target, by name; an OSD
// that does not exist is left out.
func (r *Reconciler) volumeOSDs(ctx context.Context, vol *flintv1.Volume) (map[string]*flintv1.OSD, error) {
	names := []string{vol.Status.Target.OSD}
	for _, rep := range vol.Status.Replicas {
		names = append(names, rep.OSD)
	}
	osds := map[string]*flintv1.OSD{}
	for _, n := range names {
		var o flintv1.OSD
		if err := r.Get(ctx, client.ObjectKey{Name: n}, &o); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		osds[n] = &o
	}
	return osds, nil
}

func copyOSDs(copies []flintv1.SnapshotCopy) []string {
	out := make([]string, 0, len(copies))
	for _, c := range copies {
		out = append(out, c.OSD)
	}
	return out
}
