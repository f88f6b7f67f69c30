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
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// rebuildSlots bounds how many rebuilds each OSD takes part in at once
// (the Pool's rebuild.maxPerOSD): as the target that copies, or as the
// OSD of the replica copied to. A rebuild counts from the Volume status
// that shows it running, and, before that status is written, from the
// grant this process made: decisions are made one at a time, so two
// Volumes cannot both take an OSD's last slot.
type rebuildSlots struct {
	mu sync.Mutex
	// granted holds, per Volume name, the OSDs of the rebuild it may run.
	granted map[string]rebuild
	// waiting holds, per Volume name, the replica OSDs last told waiting.
	waiting map[string]map[string]bool
}

// rebuild is one Volume's rebuild: the target's OSD copies to the
// replica's.
type rebuild struct{ target, replica string }

// admitRebuild grants at most one replica of vol that is not in sync
// (inSync, by replica index) a rebuild, and only while neither its OSD
// nor the target's takes part in the Pool's most rebuilds elsewhere. It
// returns the granted replica's index, -1 for none: every other replica
// not in sync waits (drive tells the target so), and why says, by
// replica index, why each that could rebuild waits. A candidate's agent
// must have confirmed it this pass (confirmed); the one already
// rebuilding keeps its slot, then Stale replicas go before others.
func (r *Reconciler) admitRebuild(ctx context.Context, vol *flintv1.Volume, w *world, inSync, confirmed []bool) (granted int, why map[int]string, err error) {
	s := &r.rebuilds
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.granted == nil {
		s.granted, s.waiting = map[string]rebuild{}, map[string]map[string]bool{}
	}
	var candidates []int
	for i, rep := range vol.Status.Replicas {
		if o := w.osds[rep.OSD]; !inSync[i] && confirmed[i] && o != nil && o.Status.Phase.Serving() && !o.Stopping() {
			candidates = append(candidates, i)
		}
	}
	if len(candidates) == 0 {
		delete(s.granted, vol.Name)
		delete(s.waiting, vol.Name)
		return -1, nil, nil
	}
	slices.SortStableFunc(candidates, func(a, b int) int {
		return cmp.Compare(rebuildOrder(vol.Status.Replicas[a].State), rebuildOrder(vol.Status.Replicas[b].State))
	})
	busy, err := r.rebuildsElsewhere(ctx, vol)
	if err != nil {
		return -1, nil, err
	}
	target, most := vol.Status.Target.OSD, w.pool.MaxRebuildsPerOSD()
	why = map[int]string{}
	granted = -1
	if vol.Status.Replicas[candidates[0]].State == flintv1.ReplicaStateRebuilding {
		granted = candidates[0] // already copying: it keeps its slot
	}
	for _, i := range candidates {
		osd := vol.Status.Replicas[i].OSD
		switch {
		case granted == i:
		case granted >= 0:
			why[i] = fmt.Sprintf("the Volume rebuilds one replica at a time, now the one on OSD %s", vol.Status.Replicas[granted].OSD)
		case busy[target] >= most:
			why[i] = fmt.Sprintf("the target's OSD %s takes part in %d rebuilds, the Pool's rebuild.maxPerOSD", target, busy[target])
		case busy[osd] >= most:
			why[i] = fmt.Sprintf("OSD %s takes part in %d rebuilds, the Pool's rebuild.maxPerOSD", osd, busy[osd])
		default:
			granted = i
		}
	}
	if granted >= 0 {
		s.granted[vol.Name] = rebuild{target: target, replica: vol.Status.Replicas[granted].OSD}
	} else {
		delete(s.granted, vol.Name)
	}
	r.tellWaiting(vol, why)
	return granted, why, nil
}

// rebuildOrder ranks the states of replicas that may rebuild: the one
// already rebuilding, then Stale ones (whole, behind by some writes),
// then the rest.
func rebuildOrder(s flintv1.ReplicaState) int {
	switch s {
	case flintv1.ReplicaStateRebuilding:
		return 0
	case flintv1.ReplicaStateStale:
		return 1
	}
	return 2
}

// rebuildsElsewhere counts, per OSD, the rebuilds of the Pool's other
// Volumes it takes part in: running as their status shows, or granted.
func (r *Reconciler) rebuildsElsewhere(ctx context.Context, vol *flintv1.Volume) (map[string]int, error) {
	var vols flintv1.VolumeList
	if err := r.List(ctx, &vols); err != nil {
		return nil, fmt.Errorf("list Volumes to count rebuilds: %w", err)
	}
	uses := map[string]map[string]bool{} // OSD → Volumes rebuilding on it
	use := func(osd, name string) {
		if uses[osd] == nil {
			uses[osd] = map[string]bool{}
		}
		uses[osd][name] = true
	}
	// A Volume being deleted, in sync, or gone holds no slot any more.
	done := map[string]bool{}
	for name := range r.rebuilds.granted {
		done[name] = true
	}
	for _, v := range vols.Items {
		if v.Name == vol.Name || v.Spec.Pool != vol.Spec.Pool || v.Status.Target == nil || !v.DeletionTimestamp.IsZero() {
			continue
		}
		done[v.Name] = true
		for _, rep := range v.Status.Replicas {
			done[v.Name] = done[v.Name] && rep.State == flintv1.ReplicaStateOnline
			if rep.State == flintv1.ReplicaStateRebuilding {
				use(v.Status.Target.OSD, v.Name)
				use(rep.OSD, v.Name)
			}
		}
	}
	// A grant holds until its Volume's next pass, unless the cache shows
	// that it is spent.
	for name, b := range r.rebuilds.granted {
		if name != vol.Name && !done[name] {
			use(b.target, name)
			use(b.replica, name)
		}
	}
	busy := map[string]int{}
	for osd, names := range uses {
		busy[osd] = len(names)
	}
	return busy, nil
}

// tellWaiting emits an Event for each replica that starts waiting for a
// rebuild slot.
func (r *Reconciler) tellWaiting(vol *flintv1.Volume, why map[int]string) {
	was := r.rebuilds.waiting[vol.Name]
	now := map[string]bool{}
	for i, reason := range why {
		osd := vol.Status.Replicas[i].OSD
		now[osd] = true
		if !was[osd] {
			r.Recorder.Eventf(vol, nil, corev1.EventTypeNormal, flintv1.VolumeRebuildWaitingReason, "Rebuild",
				"the replica on OSD %s waits to be rebuilt: %s", osd, reason)
		}
	}
	r.rebuilds.waiting[vol.Name] = now
}

// forgetRebuild releases a deleted Volume's rebuild slot.
func (r *Reconciler) forgetRebuild(name string) {
	r.rebuilds.mu.Lock()
	defer r.rebuilds.mu.Unlock()
	delete(r.rebuilds.granted, name)
	delete(r.rebuilds.waiting, name)
}
