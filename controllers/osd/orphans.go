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
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// collectOrphans deletes what the OSD holds for Volumes that no longer
// place it here: a replica whose Volume is gone or moved it elsewhere, a
// target whose Volume's target (or planned move's standby) is on another
// OSD; and the copies of
// Snapshots that are gone or do not record a copy here. What holds data
// (replicas and copies) is first kept for OrphanGrace (quarantine). That is how a Volume
// deleted, or a replica replaced, while this OSD was down leaves no lvol
// behind; a Volume re-created under the same name has another uid, so it
// never takes the old one's lvol for its own. A candidate is confirmed by a
// read from the API server, not the cache: a Volume records a placement
// before the replica is made, so a live read never takes a fresh replica
// for an orphan. What is not keyed by a uid was not made by the operator
// and is left alone.
func (r *Reconciler) collectOrphans(ctx context.Context, osd *flintv1.OSD, agent agentv1.OSDAgentClient, inv *agentv1.OSDStatus) error {
	volumes := volumesByUID(r.Client, r.APIReader)
	kept := map[orphan]bool{}
	var members []string // every OSD's uid, listed at the first orphan target
	for _, t := range inv.GetTargets() {
		// A stray target goes even while its Volume is deleted: it would hold
		// the replica the Volume's finalizer deletes.
		uid := t.GetVolumeUid()
		if !isUID(uid) || volumes.hold(ctx, uid, false, func(v *flintv1.Volume) bool { return targetsOn(v, osd.Name) }) {
			continue
		}
		if members == nil {
			var err error
			if members, err = r.allOSDUIDs(ctx); err != nil {
				return err
			}
		}
		// The target serves no Volume any more. If members hold writes
		// for it and its Volume remains (its target moved), it lets them
		// go only once its hosts have dropped their connections to it
		// (heldOrphanWait): the writes then complete on the members left,
		// and the Volume's target lacks them, but SPDK sends a completion
		// on a connection it is disconnecting.
		_, err := agent.DeleteTarget(ctx, &agentv1.DeleteTargetRequest{VolumeUid: uid, MemberOsds: members})
		if agentv1.MembersHeldOf(err) != nil {
			o := orphan{osd.Name, orphanHeldTarget, uid}
			if since, _ := r.orphans.found(o, r.now()); volumes.remains(uid) && r.now().Sub(since) < heldOrphanWait {
				kept[o] = true
				continue
			}
			_, err = agent.DeleteTarget(ctx, &agentv1.DeleteTargetRequest{VolumeUid: uid, MemberOsds: members, OutOfSyncOsds: members})
		}
		if err != nil {
			return fmt.Errorf("delete the orphan target of the Volume with uid %s: %w", uid, err)
		}
		r.Recorder.Eventf(osd, gone("Volume", uid), corev1.EventTypeNormal, flintv1.EventOrphanDeleted, "DeleteTarget", "deleted the target of the Volume with uid %s: its target is on another OSD now, or it is gone", uid)
	}
	for _, rep := range inv.GetReplicas() {
		uid := rep.GetVolumeUid()
		if !isUID(uid) || volumes.hold(ctx, uid, true, func(v *flintv1.Volume) bool { return placedOn(v, osd.Name) }) {
			continue
		}
		if !r.graceOver(osd, orphan{osd.Name, orphanReplica, uid}, kept) {
			continue
		}
		if _, err := agent.DeleteReplica(ctx, &agentv1.DeleteReplicaRequest{VolumeUid: uid}); err != nil {
			return fmt.Errorf("delete the orphan replica of the Volume with uid %s: %w", uid, err)
		}
		r.Recorder.Eventf(osd, gone("Volume", uid), corev1.EventTypeNormal, flintv1.EventOrphanDeleted, "DeleteReplica", "deleted the replica of the Volume with uid %s: the Volume is gone or keeps its replicas elsewhere", uid)
	}
	snapshots := snapshotsByUID(r.Client, r.APIReader)
	for _, sn := range inv.GetSnapshots() {
		// A Snapshot records each copy before it is cut.
		uid := sn.GetName()
		if !isUID(uid) || snapshots.hold(ctx, uid, true, func(s *flintv1.Snapshot) bool { return copiedOn(s, osd.Name) }) {
			continue
		}
		if !r.graceOver(osd, orphan{osd.Name, orphanSnapshot, uid}, kept) {
			continue
		}
		if _, err := agent.DeleteSnapshot(ctx, &agentv1.DeleteSnapshotRequest{Snapshot: uid}); err != nil {
			return fmt.Errorf("delete the orphan copy of the Snapshot with uid %s: %w", uid, err)
		}
		r.Recorder.Eventf(osd, gone("Snapshot", uid), corev1.EventTypeNormal, flintv1.EventOrphanDeleted, "DeleteSnapshot", "deleted the copy of the Snapshot with uid %s: the Snapshot is gone or keeps no copy here", uid)
	}
	// Only a pass that went through knows what is no longer orphan.
	r.orphans.settle(osd.Name, kept)
	return nil
}

// targetsOn says whether v's status puts its target, or the standby of
// its planned move, on OSD name.
func targetsOn(v *flintv1.Volume, name string) bool {
	t := v.Status.Target
	return t != nil && (t.OSD == name || t.Standby != nil && t.Standby.OSD == name)
}

// graceOver says whether orphan o may be deleted now. Until its grace is
// over it is kept (in kept), and found the first time with an Event.
func (r *Reconciler) graceOver(osd *flintv1.OSD, o orphan, kept map[orphan]bool) bool {
	if r.OrphanGrace <= 0 {
		return true
	}
	now := r.now()
	since, first := r.orphans.found(o, now)
	if now.Sub(since) >= r.OrphanGrace {
		return true
	}
	kept[o] = true
	if first {
		owner := map[string]string{orphanReplica: "Volume", orphanSnapshot: "Snapshot"}[o.kind]
		r.Recorder.Eventf(osd, gone(owner, o.uid), corev1.EventTypeWarning, flintv1.EventOrphanFound, "Quarantine",
			"the %s of the %s with uid %s is claimed by no %s: it is kept until %s, then deleted (objects restored from a backup get new uids and leave their old data so: see docs/volumes.md, Orphans)",
			o.kind, owner, o.uid, owner, since.Add(r.OrphanGrace).UTC().Format(time.RFC3339))
	}
	return false
}

// gone refers to the object of kind and uid an orphan was left by, as an
// Event's related object. Without it the Events of two orphans on one OSD
// are one series, which keeps only the first one's note.
func gone(kind, uid string) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: flintv1.GroupVersion.String(), Kind: kind, UID: types.UID(uid)}
}

// isUID says whether key has the shape of a Kubernetes uid.
func isUID(key string) bool {
	_, err := uuid.Parse(key)
	return err == nil && len(key) == 36
}

// indexUID finds a Volume or a Snapshot in the cache by its uid.
const indexUID = "metadata.uid"

// cachedVolume is the Volume with uid as the cache holds it; nil when the
// cache holds none (or the read failed).
func cachedVolume(ctx context.Context, cache client.Reader, uid string) *flintv1.Volume {
	var l flintv1.VolumeList
	if err := cache.List(ctx, &l, client.MatchingFields{indexUID: uid}); err != nil || len(l.Items) != 1 {
		return nil
	}
	return &l.Items[0]
}

// byUID finds objects by uid: in the cache, else in one live list (the
// API server selects custom resources by name only), read at most once
// per pass.
type byUID[T client.Object] struct {
	cache, live client.Reader
	// newList makes an empty list of T.
	newList func() client.ObjectList
	list    map[string]T
	err     error
}

func volumesByUID(cache, live client.Reader) *byUID[*flintv1.Volume] {
	return &byUID[*flintv1.Volume]{cache: cache, live: live, newList: func() client.ObjectList { return &flintv1.VolumeList{} }}
}

func snapshotsByUID(cache, live client.Reader) *byUID[*flintv1.Snapshot] {
	return &byUID[*flintv1.Snapshot]{cache: cache, live: live, newList: func() client.ObjectList { return &flintv1.SnapshotList{} }}
}

// items are the objects of l.
func (f *byUID[T]) items(l client.ObjectList) []T {
	objs, _ := meta.ExtractList(l)
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(T))
	}
	return out
}

// hold reports whether the object with uid still wants what keep looks
// for; with whileDeleted, one being deleted keeps it until its own
// finalizer is done. Any doubt (a failed read) keeps it too.
func (f *byUID[T]) hold(ctx context.Context, uid string, whileDeleted bool, keep func(T) bool) bool {
	wants := func(o T) bool { return keep(o) || whileDeleted && !o.GetDeletionTimestamp().IsZero() }
	cached := f.newList()
	if err := f.cache.List(ctx, cached, client.MatchingFields{indexUID: uid}); err == nil {
		if items := f.items(cached); len(items) == 1 && wants(items[0]) {
			return true
		}
	}
	if f.list == nil && f.err == nil {
		l := f.newList()
		if f.err = f.live.List(ctx, l); f.err == nil {
			f.list = map[string]T{}
			for _, o := range f.items(l) {
				f.list[string(o.GetUID())] = o
			}
		}
	}
	if f.err != nil {
		return true
	}
	o, ok := f.list[uid]
	return ok && wants(o)
}

// remains says whether the object with uid, an orphan's by hold, is
// still there and not being deleted, as the live list hold read has it.
func (f *byUID[T]) remains(uid string) bool {
	o, ok := f.list[uid]
	return ok && o.GetDeletionTimestamp().IsZero() || f.err != nil
}

func copiedOn(s *flintv1.Snapshot, osd string) bool {
	return slices.ContainsFunc(s.Status.Copies, func(c flintv1.SnapshotCopy) bool { return c.OSD == osd })
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
