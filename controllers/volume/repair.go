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
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/conditions"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// usable reports whether o can hold a target or a new replica: it serves
// and is not on its way out (draining, deleted, or stopping).
func usable(o *flintv1.OSD) bool {
	return o != nil && o.Status.Phase.Serving() && !o.Leaving()
}

// notServingFor is how long o has not served, zero while it serves.
func notServingFor(o *flintv1.OSD, now time.Time) time.Duration {
	if o.Status.Phase.Serving() {
		return 0
	}
	if c := meta.FindStatusCondition(o.Status.Conditions, flintv1.ReadyCondition); c != nil && c.Status != metav1.ConditionTrue {
		return now.Sub(c.LastTransitionTime.Time)
	}
	return now.Sub(o.CreationTimestamp.Time)
}

func setState(rep *flintv1.ReplicaStatus, state flintv1.ReplicaState, now time.Time) {
	if rep.State == state {
		return
	}
	t := metav1.NewTime(now)
	rep.State, rep.LastTransitionTime = state, &t
	if state != flintv1.ReplicaStateRebuilding {
		rep.RebuildPercent = nil
	}
}

// inSync says a replica holds every write the volume acknowledged: an
// Online member. A replica still Creating is in sync only while the volume
// never served (see drive): once it did, a replica made since holds none
// of its data.
func inSync(s flintv1.ReplicaState) bool {
	return s == flintv1.ReplicaStateOnline
}

// newTarget picks the OSD of an Online replica, other than the current
// target's, that can take the target: of those that reach every replica
// if there are any (reachesAll), else of all, the nearest to the
// Volume's nearNode.
func newTarget(vol *flintv1.Volume, w *world) string {
	var candidates, all []string
	for _, rep := range vol.Status.Replicas {
		all = append(all, rep.OSD)
		if rep.OSD != vol.Status.Target.OSD && rep.State == flintv1.ReplicaStateOnline && usable(w.osds[rep.OSD]) {
			candidates = append(candidates, rep.OSD)
		}
	}
	return nearestReaching(w, candidates, all, vol.Spec.NearNode)
}

// moveTarget moves the target off an OSD that drains, stops or is deleted,
// or to a replica nearer the Volume's nearNode (planned moves: the old
// target is stopped cleanly first, so every replica stays in sync), or off
// an OSD that stopped serving for longer than TargetGrace or whose pod
// the kubelet confirmed stopped (an unplanned one: the new target assembles from its own replica alone and
// resynchronises the others, which may differ in the writes that were in
// flight; the old target is fenced from them when they are exported to
// the new one).
func (r *Reconciler) moveTarget(ctx context.Context, vol *flintv1.Volume, w *world) error {
	t := vol.Status.Target
	old := w.osds[t.OSD]
	if usable(old) {
		next := nearerTarget(vol, w)
		if next == "" {
			return nil
		}
		err := r.movePlanned(ctx, vol, w, old, next, func(next string) string {
			return fmt.Sprintf("OSD %s is nearer node %s, where the Volume is used", next, vol.Spec.NearNode)
		})
		if err != nil {
			// A move for locality is worth no outage: the target stays
			// where it serves, and a later pass tries again.
			log.FromContext(ctx).Error(err, "The target stays: it could not move nearer its node", "nearNode", vol.Spec.NearNode)
		}
		return nil
	}
	now := r.now()
	planned := old != nil && old.Status.Phase.Serving()
	stopped := !planned && r.Leases.StoppedForCertain(t.OSD, now, r.TargetGrace)
	// How long the OSD has been silent: not serving, and its lease not
	// renewed since.
	silent := r.Leases.SinceLastTry(t.OSD, now)
	if old != nil {
		silent = min(silent, notServingFor(old, now))
	}
	// The old target fences itself once its lease lapsed, its lease
	// renewed last by the last try, unless its members still answer it
	// (docs/volumes.md, "The hold"): the move cuts it off the new
	// target's replica, and the new target serves once the hold and the
	// grace have both run out (awaitCut). It is decided a hold's wait
	// before the grace ends, but never before the old lease lapsed for
	// certain: a target cut off before its lapse could be renewed, and
	// serve on with its lease.
	decide := max(r.TargetGrace-r.HoldWait, r.LeaseBound)
	if !planned && !stopped && silent < decide {
		return nil
	}
	next := newTarget(vol, w)
	if next == "" {
		return nil // observeTarget says why the Volume cannot be served
	}
	if planned {
		return r.movePlanned(ctx, vol, w, old, next, func(string) string { return fmt.Sprintf("OSD %s is leaving (%s)", old.Name, leavingWhy(old)) })
	}
	for i := range vol.Status.Replicas {
		rep := &vol.Status.Replicas[i]
		switch {
		case rep.OSD == t.OSD:
			setState(rep, flintv1.ReplicaStateFaulted, now)
		case rep.OSD != next && rep.State == flintv1.ReplicaStateOnline:
			setState(rep, flintv1.ReplicaStateStale, now)
		}
	}
	// What was waited for, not the grace: the move is decided before it.
	lost := fmt.Sprintf("the target's OSD %s has not served for %s", t.OSD, silent.Round(time.Second))
	if stopped {
		lost = fmt.Sprintf("the target's OSD %s stopped: the kubelet reported every container of its pod terminated", t.OSD)
	}
	r.Recorder.Eventf(vol, nil, corev1.EventTypeWarning, flintv1.EventTargetMoved, "MoveTarget",
		"%s: the target moves to OSD %s, which fences %s from the replicas; the other replicas resynchronise from %s",
		lost, next, t.OSD, next)
	recordMove(ctx, vol, next, false)
	if !stopped {
		// A stopped pod's agent holds nothing: it restarts without the
		// members it counted (lease.New).
		vol.Status.Target.Cut = &flintv1.VolumeTargetCut{From: t.OSD, NotBefore: metav1.NewTime(now.Add(max(r.TargetGrace-r.Leases.SinceLastTry(t.OSD, now), 0)))}
	}
	return nil
}

// movePlanned stops the target on old, which serves, and records its move
// to next (or to another replica the stopped target held in sync), for
// the reason why says of the OSD it moves to.
func (r *Reconciler) movePlanned(ctx context.Context, vol *flintv1.Volume, w *world, old *flintv1.OSD, next string, why func(next string) string) error {
	if r.awaitStandby(vol, w, next) {
		return nil
	}
	w.calledAgent = true
	agent, err := r.Agents.For(ctx, old)
	if err != nil {
		return err
	}
	began := r.now()
	stopped, err := agent.DeleteTarget(ctx, &agentv1.DeleteTargetRequest{
		VolumeUid: string(vol.UID), MemberOsds: memberUIDs(vol, w, nil), OutOfSyncOsds: memberUIDs(vol, w, notInSync),
	})
	if held := agentv1.MembersHeldOf(err); held != nil {
		// Replicas the target lost and waits for: they are recorded out
		// of sync first, the target lets them go, and the move follows.
		r.dropHeld(vol, w, held, r.now())
		return nil
	}
	if err != nil {
		return fmt.Errorf("stop the target on OSD %s before moving it: %w", old.Name, err)
	}
	stopTook := r.now().Sub(began)
	r.point(ctx, vol, PointTargetStopped)
	next = r.keepInSync(vol, w, stopped, next)
	if next == "" {
		return nil
	}
	w.movePlanned, w.stopTook = began, stopTook
	r.Recorder.Eventf(vol, nil, corev1.EventTypeNormal, flintv1.EventTargetMoved, "MoveTarget", "%s: the target moves to OSD %s; %s", why(next), next, standbyHosts(vol, next))
	recordMove(ctx, vol, next, true)
	return nil
}

// tellMoveServed says, once a move's new target serves and its
// endpoints are recorded for the hosts to follow, how long that took: a
// planned move holds the hosts' I/O from the old target's stop until
// they connect to the new one (docs/proposals/planned-move-handover.md);
// an unplanned one from the old target's loss, the new one serving once
// the old one's hold ran out after the cut (awaitCut).
func (r *Reconciler) tellMoveServed(vol *flintv1.Volume, w *world) {
	t := vol.Status.Target
	if cut := w.cutServed; cut != nil && cut.ServesAfter != nil {
		r.Recorder.Eventf(vol, nil, corev1.EventTypeNormal, flintv1.EventTargetMoved, "MoveTarget",
			"the target serves from OSD %s (epoch %d), %s after the old target on OSD %s could no longer let a host in",
			t.OSD, t.Epoch, r.now().Sub(cut.ServesAfter.Time).Round(time.Millisecond), cut.From)
	}
	if w.movePlanned.IsZero() {
		return
	}
	r.Recorder.Eventf(vol, nil, corev1.EventTypeNormal, flintv1.EventTargetMoved, "MoveTarget",
		"the target serves from OSD %s (epoch %d) and its endpoints are recorded %s after the old target's stop began; the stop took %s",
		t.OSD, t.Epoch, r.now().Sub(w.movePlanned).Round(time.Millisecond), w.stopTook.Round(time.Millisecond))
}

// nextEpoch is the epoch t's next incarnation takes on OSD next: the one
// after the current, or a planned move's standby's there (its subsystem
// has that epoch's controller ids); past a standby's elsewhere, whose ids
// the hosts may still hold.
func nextEpoch(t *flintv1.VolumeTarget, next string) int32 {
	e := epoch(t) + 1
	switch sb := t.Standby; {
	case sb == nil:
	case sb.OSD == next:
		e = max(e, sb.Epoch)
	default:
		e = max(e, sb.Epoch+1)
	}
	return e
}

// recordMove records the target's next incarnation, on OSD next.
func recordMove(ctx context.Context, vol *flintv1.Volume, next string, planned bool) {
	t := vol.Status.Target
	vol.Status.Target = &flintv1.VolumeTarget{OSD: next, NQN: t.NQN, Epoch: nextEpoch(t, next)}
	log.FromContext(ctx).Info("Target moves", "from", t.OSD, "to", next, "planned", planned, "epoch", vol.Status.Target.Epoch)
}

// nearerTarget is the OSD that a served Volume's target, on an OSD that
// stays, moves to because it is nearer the Volume's nearNode; "" to stay.
// A Volume moves only while its target lets no host in (between an
// unpublish and the next publish, when a Pod moved), so that a move
// holds no host's I/O, and only while its replicas are all Online, so
// that it never restarts a rebuild. The new target reaches every replica.
func nearerTarget(vol *flintv1.Volume, w *world) string {
	t := vol.Status.Target
	if vol.Spec.NearNode == "" || len(t.Endpoints) == 0 || len(t.AllowedHosts) > 0 {
		return ""
	}
	var all []string
	for _, rep := range vol.Status.Replicas {
		if rep.State != flintv1.ReplicaStateOnline {
			return ""
		}
		all = append(all, rep.OSD)
	}
	next := newTarget(vol, w)
	if next == "" || !reachesAll(w, next, all) || nearness(w, next, vol.Spec.NearNode) <= nearness(w, t.OSD, vol.Spec.NearNode) {
		return ""
	}
	return next
}

// leavingWhy says why a serving OSD takes no target.
func leavingWhy(o *flintv1.OSD) string {
	switch {
	case !o.DeletionTimestamp.IsZero():
		return "deleted"
	case o.Spec.Drain:
		return "it drains"
	}
	return "it stops for the Pool's rollout"
}

// letGoStopping records out of sync each replica on an OSD that stops (a
// rolling update or a drain reached it) but the target's: the drive that
// follows leaves it out of the target's raid, which detaches it, so the
// OSD's stop holds no write; it is rebuilt once the OSD serves again. The
// last in-sync replica elsewhere is never let go (the Pool's rollout does
// not stop a domain that would need it).
func (r *Reconciler) letGoStopping(vol *flintv1.Volume, w *world) {
	now := r.now()
	for i := range vol.Status.Replicas {
		rep := &vol.Status.Replicas[i]
		o := w.osds[rep.OSD]
		if o == nil || !o.Stopping() || rep.OSD == vol.Status.Target.OSD {
			continue
		}
		switch rep.State {
		case flintv1.ReplicaStateOnline:
			if inSyncElsewhere(vol, w) == 0 {
				continue
			}
		case flintv1.ReplicaStateRebuilding:
		default:
			continue
		}
		setState(rep, flintv1.ReplicaStateStale, now)
		r.Recorder.Eventf(vol, nil, corev1.EventTypeNormal, flintv1.EventReplicaStopped, "LetGo",
			"OSD %s stops for the Pool's rollout: the target lets its replica go, and it is rebuilt once the OSD serves again", rep.OSD)
	}
}

// inSyncElsewhere counts the in-sync replicas on OSDs that serve and do
// not stop.
func inSyncElsewhere(vol *flintv1.Volume, w *world) int {
	n := 0
	for _, rep := range vol.Status.Replicas {
		if o := w.osds[rep.OSD]; inSync(rep.State) && o != nil && o.Status.Phase.Serving() && !o.Stopping() {
			n++
		}
	}
	return n
}

// epoch is the incarnation of target t: a target recorded before epochs
// were (0) is in its first. Every reader goes through here, so the agent
// is driven with the epoch the next incarnation counts on from.
func epoch(t *flintv1.VolumeTarget) int32 { return max(t.Epoch, 1) }

// keepInSync trusts, after a planned stop, only what the stopped target
// said was in sync when its hosts were cut off: an Online replica that is
// not among them (it dropped out of the raid since the status was last
// written) is Stale and rebuilt. Without a raid to read (an earlier pass
// stopped the target and the operator went down before recording), only
// the chosen new target's replica is trusted. It returns the new target:
// next if it is still in sync, else another in-sync replica's OSD.
func (r *Reconciler) keepInSync(vol *flintv1.Volume, w *world, stopped *agentv1.DeleteTargetResponse, next string) string {
	now := r.now()
	trusted := func(rep *flintv1.ReplicaStatus) bool {
		if !stopped.GetRaidFound() {
			return rep.OSD == next
		}
		o := w.osds[rep.OSD]
		return o != nil && slices.Contains(stopped.GetInSyncOsds(), string(o.UID))
	}
	var dropped []string
	for i := range vol.Status.Replicas {
		if rep := &vol.Status.Replicas[i]; rep.State == flintv1.ReplicaStateOnline && !trusted(rep) {
			setState(rep, flintv1.ReplicaStateStale, now)
			dropped = append(dropped, rep.OSD)
		}
	}
	if len(dropped) > 0 {
		r.Recorder.Eventf(vol, nil, corev1.EventTypeWarning, flintv1.EventReplicaStale, "MoveTarget",
			"the stopped target did not hold replicas on %s in sync: they are rebuilt from the new target, not assembled as in sync", strings.Join(dropped, ", "))
	}
	return newTarget(vol, w)
}

// replaceReplicas places a replacement for one replica that cannot stay:
// its OSD is gone, drains or is deleted (once another replica is in sync
// and nothing rebuilds), or it has been Faulted for longer than
// ReplicaGrace. The old replica leaves the status; its OSD deletes it when
// it serves (see the OSD controller's orphan collection).
func (r *Reconciler) replaceReplicas(ctx context.Context, vol *flintv1.Volume, w *world) error {
	online, settling := 0, false
	for _, rep := range vol.Status.Replicas {
		switch rep.State {
		case flintv1.ReplicaStateOnline:
			online++
		case flintv1.ReplicaStateRebuilding, flintv1.ReplicaStateStale, flintv1.ReplicaStateCreating:
			settling = true
		}
	}
	now := r.now()
	for i, rep := range vol.Status.Replicas {
		if rep.OSD == vol.Status.Target.OSD {
			continue // the target moves first
		}
		o := w.osds[rep.OSD]
		var why string
		switch {
		case o == nil:
			why = "its OSD is gone"
		case o.Spec.Drain || !o.DeletionTimestamp.IsZero():
			if rep.State == flintv1.ReplicaStateOnline && (settling || online < 2) {
				continue // an in-sync copy stays until the others are in sync
			}
			why = "its OSD drains"
		case rep.State == flintv1.ReplicaStateFaulted && rep.LastTransitionTime != nil && now.Sub(rep.LastTransitionTime.Time) >= r.ReplicaGrace:
			why = fmt.Sprintf("it has been Faulted for more than %s", r.ReplicaGrace)
		default:
			continue
		}
		blocked, err := r.replace(ctx, vol, w, i, why)
		if err != nil || blocked == "" {
			conditions.Remove(vol, flintv1.ReplacementBlockedCondition)
			return err
		}
		if conditions.Set(vol, metav1.Condition{Type: flintv1.ReplacementBlockedCondition, Status: metav1.ConditionTrue, Reason: flintv1.VolumeNoPlacementReason, Message: blocked}) {
			r.Recorder.Eventf(vol, nil, corev1.EventTypeWarning, flintv1.EventReplacementBlocked, "ReplaceReplica", "%s", blocked)
		}
		return nil
	}
	conditions.Remove(vol, flintv1.ReplacementBlockedCondition)
	return nil
}

// replace swaps replica i for a new one on an OSD in a failure domain no
// other replica uses; when no OSD can take it, it says why.
func (r *Reconciler) replace(ctx context.Context, vol *flintv1.Volume, w *world, i int, why string) (string, error) {
	r.placeMu.Lock()
	defer r.placeMu.Unlock()
	if err := r.fillCommitted(w); err != nil {
		return "", err
	}
	old := vol.Status.Replicas[i]
	holding := map[string]bool{}
	var others []flintv1.ReplicaStatus
	for j, rep := range vol.Status.Replicas {
		holding[rep.OSD] = true
		if j != i {
			others = append(others, rep)
		}
	}
	size := vol.Spec.Size.Value()
	p := offer(w, size, holding)
	taken := domainsOf(w, p.key, others)
	chosen := p.choose(1, taken)
	if len(chosen) == 0 {
		return fmt.Sprintf("the replica on OSD %s must be replaced (%s), but no OSD can take it: %s", old.OSD, why, p.shortfall(w.pool.Name, 1, size, taken)), nil
	}
	next := chosen[0]
	vol.Status.Replicas[i] = newReplica(vol, w.osds[next], flintv1.ReplicaStateStale, r.now())
	log.FromContext(ctx).Info("Replica replaced", "from", old.OSD, "to", next, "why", why)
	r.committed.place(vol)
	r.Recorder.Eventf(vol, nil, corev1.EventTypeWarning, flintv1.EventReplicaReplaced, "ReplaceReplica", "the replica on OSD %s is replaced by one on OSD %s: %s", old.OSD, next, why)
	return "", nil
}

// memberUIDs are the uids of the OSDs holding the Volume's replicas.
// memberUIDs lists the uids of the OSDs of vol's replicas, those whose
// state ok takes when ok is set.
func memberUIDs(vol *flintv1.Volume, w *world, ok func(flintv1.ReplicaState) bool) []string {
	var uids []string
	for _, rep := range vol.Status.Replicas {
		if o, found := w.osds[rep.OSD]; found && (ok == nil || ok(rep.State)) {
			uids = append(uids, string(o.UID))
		}
	}
	return uids
}

func notInSync(s flintv1.ReplicaState) bool { return !inSync(s) }

// dropHeld marks Faulted the replicas on the OSDs (uids) a target holds
// writes for: it lost them, and lets them go once that is recorded.
func (r *Reconciler) dropHeld(vol *flintv1.Volume, w *world, uids []string, now time.Time) {
	for i := range vol.Status.Replicas {
		rep := &vol.Status.Replicas[i]
		if o, ok := w.osds[rep.OSD]; ok && slices.Contains(uids, string(o.UID)) {
			r.dropOut(vol, rep, flintv1.ReplicaStateFaulted, now, heldUnexplained)
		}
	}
}
