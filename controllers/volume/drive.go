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
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/dhchap"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// problem is why the target does not serve, for the Ready condition.
type problem struct{ reason, message string }

// drive makes the agents hold what the status records: every replica
// whose OSD serves exists at the Volume's size and is exported to the
// target alone (which fences any other), and the target assembles them
// and exports the volume to spec.publishedHosts.
func (r *Reconciler) drive(ctx context.Context, vol *flintv1.Volume, w *world) (*agentv1.TargetStatus, *problem) {
	t := w.osds[vol.Status.Target.OSD]
	if t == nil || !t.Status.Phase.Serving() {
		phase := "gone"
		if t != nil {
			phase = orUnknown(string(t.Status.Phase))
		}
		return nil, &problem{flintv1.VolumeTargetUnavailableReason, fmt.Sprintf("the target's OSD %s is %s; the target moves to an OSD with an in-sync replica after %s", vol.Status.Target.OSD, phase, r.TargetGrace)}
	}
	if p := r.awaitCut(ctx, vol, t); p != nil {
		return nil, p
	}
	targetHost := agentv1.HostNQN(string(t.UID))
	keys, err := r.linkKeys(ctx, vol, w)
	if err != nil {
		return nil, &problem{flintv1.VolumeKeysUnavailableReason, err.Error()}
	}
	var members []*agentv1.Member
	var memberReplica []int // the index in the status of each member's replica
	var failures []string
	// This incarnation of the target served once its endpoints are
	// recorded: its raid must still be there. A target of a later epoch
	// (moved, or re-assembled) follows one that may have served, so only
	// a first target that never served proves no replica holds a write.
	servedHere := len(vol.Status.Target.Endpoints) > 0
	neverServed := !servedHere && epoch(vol.Status.Target) == 1
	// The target lets a member that holds writes go only when told it is
	// not in sync, so that is told from the states already recorded, not
	// from what this pass finds before it records it.
	recorded := make([]bool, len(vol.Status.Replicas))
	for i, rep := range vol.Status.Replicas {
		recorded[i] = inSync(rep.State)
	}
	ensured := r.ensureReplicas(ctx, vol, w, t, targetHost, keys.replicas)
	r.point(ctx, vol, PointReplicasEnsured)
	for i := range vol.Status.Replicas {
		rep := &vol.Status.Replicas[i]
		o := w.osds[rep.OSD]
		if o == nil {
			continue // replaced by replaceReplicas
		}
		m := &agentv1.Member{Osd: string(o.UID), Export: ensured[i].export}
		// A replica let go for its OSD's stop is detached, its slot kept
		// for when it returns (letGoStopping).
		m.Leaving = o.Stopping() && o != t
		if ensured[i].err != nil {
			failures = append(failures, ensured[i].err.Error())
		}
		// A member without an export (its OSD does not serve) is listed
		// all the same: the target may hold writes for it.
		// A Volume whose target never served holds no acknowledged write:
		// every replica is in sync, whatever a restart made of its state;
		// but a restored Volume's only where it is a clone of its source.
		m.InSync = recorded[i] || neverServed && (vol.Spec.Source == nil || rep.State == flintv1.ReplicaStateCreating)
		members = append(members, m)
		memberReplica = append(memberReplica, i)
	}
	r.replicaErrors(vol, failures)
	inSyncReplicas, confirmedReplicas := make([]bool, len(vol.Status.Replicas)), make([]bool, len(vol.Status.Replicas))
	for j, m := range members {
		i := memberReplica[j]
		inSyncReplicas[i], confirmedReplicas[i] = m.InSync, ensured[i].asked && ensured[i].err == nil
	}
	granted, waits, err := r.admitRebuild(ctx, vol, w, inSyncReplicas, confirmedReplicas)
	if err != nil {
		return nil, &problem{flintv1.VolumeTargetErrorReason, err.Error()}
	}
	// Every member not in sync waits but the granted one: a rebuild
	// starts only with a slot.
	w.rebuildWaits = map[string]string{}
	for j, m := range members {
		i := memberReplica[j]
		m.WaitRebuild = !m.InSync && i != granted
		if why, ok := waits[i]; ok {
			w.rebuildWaits[vol.Status.Replicas[i].OSD] = why
		}
	}
	agent, err := r.Agents.For(ctx, t)
	if err != nil {
		return nil, &problem{flintv1.VolumeTargetUnavailableReason, err.Error()}
	}
	req := &agentv1.EnsureTargetRequest{
		VolumeUid: string(vol.UID), Epoch: uint32(epoch(vol.Status.Target)),
		Members: members, Hosts: vol.Spec.PublishedHosts, Resume: servedHere,
		RebuildMaxMibPerSec: uint32(vol.RebuildMaxBandwidthMiBps(w.pool)), Qos: agentQoS(vol.Spec.QoS),
		MemberKeys: keys.replicas, HostKeys: keys.hosts,
	}
	ts, err := r.ensureTarget(ctx, vol, agent, req)
	if status.Code(err) == codes.Aborted {
		// SPDK on the target restarted: its raid is gone and the replicas
		// may differ in the writes that were in flight. Only an answer
		// given after the loss counts: the restart may have come after
		// this pass ensured the replicas, and taken the target's own
		// replica with it (a device that comes back empty).
		ok, rerr := r.reassembleFromOneSource(ctx, vol, t.Name, confirmed(vol, r.ensureReplicas(ctx, vol, w, t, targetHost, keys.replicas)))
		if rerr != nil {
			return nil, &problem{flintv1.VolumeTargetErrorReason, fmt.Sprintf("record the replica the lost target is re-assembled from: %v", rerr)}
		}
		if !ok {
			return nil, &problem{flintv1.VolumeTargetLostReason, "SPDK on the target's OSD lost the raid, and no in-sync replica was confirmed on its OSD yet; the target is re-assembled once one is"}
		}
		r.point(ctx, vol, PointTargetReassembled)
		// The replicas now Stale rebuild once a later pass grants them
		// a slot.
		for j, m := range req.Members {
			m.InSync = inSync(vol.Status.Replicas[memberReplica[j]].State)
			m.WaitRebuild = !m.InSync
		}
		req.Resume, req.Epoch = false, uint32(epoch(vol.Status.Target))
		ts, err = r.ensureTarget(ctx, vol, agent, req)
	}
	switch {
	case agentv1.ReasonOf(err) == agentv1.ReasonLeaseLapsed:
		return nil, &problem{flintv1.VolumeTargetFencedReason, fmt.Sprintf("OSD %s fenced the target when its lease lapsed; it serves hosts again once the operator renewed the lease: %s", t.Name, status.Convert(err).Message())}
	case err != nil:
		return nil, &problem{flintv1.VolumeTargetErrorReason, fmt.Sprintf("the target on OSD %s: %v", t.Name, status.Convert(err).Message())}
	}
	if err := ts.GetExport().Validate(); err != nil {
		return nil, &problem{flintv1.VolumeTargetErrorReason, fmt.Sprintf("the target on OSD %s reports an export no host can connect to (%v); it is not recorded", t.Name, err)}
	}
	if cut := vol.Status.Target.Cut; cut != nil {
		w.cutServed, vol.Status.Target.Cut = cut, nil // served: the move is done
	}
	return ts, nil
}

// ensureTarget drives the target, and re-drives it confirmed when its OSD
// fenced it. A fenced target answers nothing else, so only the confirmed
// call shows whether its raid is still there: an OSD whose lease lapsed
// may also have had SPDK restarted by its liveness probe, and that lost
// raid must reach the re-assembly, not stop the Volume for good.
func (r *Reconciler) ensureTarget(ctx context.Context, vol *flintv1.Volume, agent agentv1.OSDAgentClient, req *agentv1.EnsureTargetRequest) (*agentv1.TargetStatus, error) {
	ts, err := agent.EnsureTarget(ctx, req)
	if agentv1.ReasonOf(err) == agentv1.ReasonTargetFenced && !req.Confirmed {
		return r.confirmFenced(ctx, vol, agent, req)
	}
	return ts, err
}

// confirmFenced re-drives a target its OSD fenced when its lease lapsed,
// once a read from the apiserver (not the cache, which may be stale
// while another reconcile already moved the target) shows that the OSD
// is still the Volume's target at the same epoch.
func (r *Reconciler) confirmFenced(ctx context.Context, vol *flintv1.Volume, agent agentv1.OSDAgentClient, req *agentv1.EnsureTargetRequest) (*agentv1.TargetStatus, error) {
	var live flintv1.Volume
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(vol), &live); err != nil {
		return nil, fmt.Errorf("read the Volume to confirm its fenced target: %w", err)
	}
	lt, t := live.Status.Target, vol.Status.Target
	if live.UID != vol.UID || lt == nil || lt.OSD != t.OSD || lt.Epoch != t.Epoch {
		return nil, fmt.Errorf("the fenced target on OSD %s (epoch %d) is no longer the Volume's: it stays fenced", t.OSD, t.Epoch)
	}
	req.Confirmed = true
	ts, err := agent.EnsureTarget(ctx, req)
	if err == nil {
		r.Recorder.Eventf(vol, nil, corev1.EventTypeNormal, flintv1.EventTargetUnfenced, "EnsureTarget", "OSD %s fenced the target when its lease lapsed; confirmed still the Volume's target (epoch %d), it serves the published hosts again", t.OSD, t.Epoch)
	}
	return ts, err
}

// linkKeys are the DH-HMAC-CHAP keys of a Volume's links: its Pool's for
// the replica links, and its own for its hosts when it asks hosts to
// authenticate (nil otherwise).
type linkKeys struct{ replicas, hosts *agentv1.DhchapKeys }

// linkKeys reads the Pool's replica-link keys, which the Pool controller
// makes, and makes the Volume's host keys on its first pass.
func (r *Reconciler) linkKeys(ctx context.Context, vol *flintv1.Volume, w *world) (linkKeys, error) {
	var keys linkKeys
	var s corev1.Secret
	name := flintv1.ReplicaAuthSecretName(w.pool.Name)
	if err := r.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: name}, &s); err != nil {
		return keys, fmt.Errorf("read the replica-link keys of Pool %s (Secret %s/%s, which the Pool's controller makes): %w", w.pool.Name, r.Namespace, name, err)
	}
	var err error
	if keys.replicas, err = dhchap.Read(&s); err != nil {
		return keys, err
	}
	if vol.AuthenticatesHosts() {
		key := client.ObjectKey{Namespace: r.Namespace, Name: flintv1.HostAuthSecretName(vol.Name)}
		keys.hosts, err = dhchap.Ensure(ctx, r.Client, r.Scheme(), key, vol, nil)
	}
	return keys, err
}

// ensured is what one replica's agent answered in a pass; asked is false
// when its OSD does not serve and no agent was called.
type ensured struct {
	asked  bool
	export *agentv1.Export
	err    error
}

// ensureReplicas ensures, at once, every replica whose OSD serves: each
// agent call has its own budget (agentclient.CallTimeout), so an agent
// that accepts connections and never answers costs the pass one budget,
// not one per replica after it. Each call changes only its own replica's
// entry of the status.
func (r *Reconciler) ensureReplicas(ctx context.Context, vol *flintv1.Volume, w *world, target *flintv1.OSD, targetHost string, keys *agentv1.DhchapKeys) []ensured {
	out := make([]ensured, len(vol.Status.Replicas))
	var wg sync.WaitGroup
	for i := range vol.Status.Replicas {
		rep := &vol.Status.Replicas[i]
		o := w.osds[rep.OSD]
		if o == nil || !o.Status.Phase.Serving() || o.Stopping() && o != target {
			continue
		}
		wg.Go(func() {
			exp, err := r.ensureReplica(ctx, vol, rep, w.origin, o, target, targetHost, keys)
			out[i] = ensured{asked: true, export: exp, err: err}
		})
	}
	wg.Wait()
	return out
}

// ensureReplica makes rep exist at the Volume's size on o and, unless o
// runs the target, exports it to the target alone, which must prove keys.
// A replica that should hold data is never re-created empty: if it is
// gone, it is Faulted.
func (r *Reconciler) ensureReplica(ctx context.Context, vol *flintv1.Volume, rep *flintv1.ReplicaStatus, from *origin, o, target *flintv1.OSD, targetHost string, keys *agentv1.DhchapKeys) (*agentv1.Export, error) {
	agent, err := r.Agents.For(ctx, o)
	if err != nil {
		return nil, err
	}
	size := uint64(vol.Spec.Size.Value())
	if vol.Spec.Source != nil && rep.State == flintv1.ReplicaStateCreating {
		if err := r.cloneReplica(ctx, agent, vol, rep, from, o); err != nil {
			return nil, err
		}
	}
	if rep.State == flintv1.ReplicaStateOnline || rep.State == flintv1.ReplicaStateRebuilding || from.cloneOf(rep) != "" {
		_, err = agent.ResizeReplica(ctx, &agentv1.ResizeReplicaRequest{VolumeUid: string(vol.UID), SizeBytes: size})
		if status.Code(err) == codes.NotFound {
			setState(rep, flintv1.ReplicaStateFaulted, r.now())
			return nil, fmt.Errorf("the replica on OSD %s is gone from its device; it is Faulted and will be rebuilt or replaced", o.Name)
		}
	} else {
		_, err = agent.CreateReplica(ctx, &agentv1.CreateReplicaRequest{VolumeUid: string(vol.UID), SizeBytes: size})
		if status.Code(err) == codes.AlreadyExists {
			_, err = agent.ResizeReplica(ctx, &agentv1.ResizeReplicaRequest{VolumeUid: string(vol.UID), SizeBytes: size})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the replica on OSD %s: %s", o.Name, status.Convert(err).Message())
	}
	if o == target {
		return nil, nil
	}
	exp, err := agent.ExportReplica(ctx, &agentv1.ExportReplicaRequest{VolumeUid: string(vol.UID), TargetHostNqn: targetHost, Epoch: uint32(epoch(vol.Status.Target)), Keys: keys})
	if err != nil {
		return nil, fmt.Errorf("export the replica on OSD %s: %s", o.Name, status.Convert(err).Message())
	}
	return exp, nil
}

// cloneReplica makes rep, a replica of a restored Volume being created, a
// thin clone of the source Snapshot's copy on o; the caller grows it to
// the Volume's size. Where there is no copy (any more), the replica is
// Stale: it starts empty and is rebuilt from the clones.
func (r *Reconciler) cloneReplica(ctx context.Context, agent agentv1.OSDAgentClient, vol *flintv1.Volume, rep *flintv1.ReplicaStatus, from *origin, o *flintv1.OSD) error {
	snapshot := from.cloneOf(rep)
	if snapshot != "" {
		_, err := agent.CloneSnapshot(ctx, &agentv1.CloneSnapshotRequest{Snapshot: snapshot, VolumeUid: string(vol.UID)})
		if status.Code(err) != codes.NotFound {
			if err != nil {
				return fmt.Errorf("clone the copy of Snapshot %s on OSD %s: %s", from.snapshot.Name, o.Name, status.Convert(err).Message())
			}
			return nil
		}
	}
	setState(rep, flintv1.ReplicaStateStale, r.now())
	r.Recorder.Eventf(vol, nil, corev1.EventTypeWarning, flintv1.EventCopyMissing, "Restore", "OSD %s holds no copy of the source Snapshot any more: its replica starts empty and is rebuilt from the others", o.Name)
	return nil
}

// confirmed is the set of OSDs whose agents confirmed their replica.
func confirmed(vol *flintv1.Volume, ensured []ensured) map[string]bool {
	present := map[string]bool{}
	for i, e := range ensured {
		if e.asked && e.err == nil {
			present[vol.Status.Replicas[i].OSD] = true
		}
	}
	return present
}

// reassembleFromOneSource keeps one in-sync replica that its agent just
// confirmed (present), the target's own when it is, marks the others
// Stale, and records that before the target is assembled again; false
// when no such replica is known. An in-sync replica whose OSD restarted
// may be gone with its device, so the status alone does not choose.
func (r *Reconciler) reassembleFromOneSource(ctx context.Context, vol *flintv1.Volume, target string, present map[string]bool) (bool, error) {
	before := vol.DeepCopy()
	source := ""
	for _, rep := range vol.Status.Replicas {
		if rep.State == flintv1.ReplicaStateOnline && present[rep.OSD] && (source == "" || rep.OSD == target) {
			source = rep.OSD
		}
	}
	if source == "" {
		return false, nil
	}
	now := r.now()
	for i := range vol.Status.Replicas {
		if rep := &vol.Status.Replicas[i]; rep.OSD != source && inSync(rep.State) {
			setState(rep, flintv1.ReplicaStateStale, now)
		}
	}
	// The raid assembled anew is a new incarnation of the target: hosts
	// reconnecting to it get controller ids of their own. It has not
	// served yet, so a pass that finds it unbuilt (this one failed or
	// died) assembles it, rather than re-assemble it again.
	vol.Status.Target.Epoch = epoch(vol.Status.Target) + 1
	vol.Status.Target.Endpoints, vol.Status.Target.AllowedHosts, vol.Status.Target.QoS = nil, nil, nil
	if err := r.recordIntent(ctx, before, vol); err != nil {
		return false, err
	}
	log.FromContext(ctx).Info("Target re-assembled from one replica", "target", target, "source", source, "epoch", vol.Status.Target.Epoch)
	r.Recorder.Eventf(vol, nil, corev1.EventTypeWarning, flintv1.EventTargetReassembled, "EnsureTarget",
		"SPDK on the target's OSD %s restarted and lost the raid: it is assembled from the replica on %s alone; the others resynchronise from it", target, source)
	return true, nil
}

// replicaErrors tells in an Event the replicas an agent could not ensure,
// when that changed since the last pass: a fault that lasts is one Event,
// not one per reconcile.
func (r *Reconciler) replicaErrors(vol *flintv1.Volume, failures []string) {
	msg := strings.Join(failures, "; ")
	if last, _ := r.lastReplicaErrors.Swap(vol.UID, msg); last == msg || msg == "" {
		return
	}
	r.Recorder.Eventf(vol, nil, corev1.EventTypeWarning, flintv1.EventReplicaError, "EnsureReplica", "%s", msg)
}

// agentQoS is a Volume's limits as its target's agent takes them.
func agentQoS(q *flintv1.VolumeQoS) *agentv1.QoS {
	if q == nil {
		return nil
	}
	return &agentv1.QoS{RwIosPerSec: uint64(q.IOPS), RwMibPerSec: uint64(q.ReadWriteMiBps), RMibPerSec: uint64(q.ReadMiBps), WMibPerSec: uint64(q.WriteMiBps)}
}

// volumeQoS is what a target reports it enforces; nil when nothing.
func volumeQoS(q *agentv1.QoS) *flintv1.VolumeQoS {
	return flintv1.VolumeQoS{IOPS: int64(q.GetRwIosPerSec()), ReadWriteMiBps: int64(q.GetRwMibPerSec()), ReadMiBps: int64(q.GetRMibPerSec()), WriteMiBps: int64(q.GetWMibPerSec())}.OrNone()
}
