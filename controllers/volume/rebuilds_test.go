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
	"maps"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// rebuildingVolume is another Volume of Pool p whose target on target
// copies to a replica on replica.
func rebuildingVolume(name, target, replica string) client.Object {
	return &flintv1.Volume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       flintv1.VolumeSpec{Pool: "p"},
		Status: flintv1.VolumeStatus{Target: &flintv1.VolumeTarget{OSD: target}, Replicas: []flintv1.ReplicaStatus{
			{OSD: target, State: flintv1.ReplicaStateOnline}, {OSD: replica, State: flintv1.ReplicaStateRebuilding},
		}},
	}
}

func TestAdmitRebuild(t *testing.T) {
	const on, stale, rebuilding, faulted = flintv1.ReplicaStateOnline, flintv1.ReplicaStateStale, flintv1.ReplicaStateRebuilding, flintv1.ReplicaStateFaulted
	for _, tc := range []struct {
		name     string
		states   []flintv1.ReplicaState // of replicas on osd-0 (the target's), osd-1, osd-2
		stopping string
		others   []client.Object
		// unconfirmed are replicas whose agent failed this pass.
		unconfirmed []int
		// waiting maps the replicas told to wait to a word of why.
		waiting map[int]string
		granted *rebuild
	}{
		{name: "every replica in sync", states: []flintv1.ReplicaState{on, on, on}},
		{name: "a stale replica on idle OSDs rebuilds", states: []flintv1.ReplicaState{on, on, stale}, granted: &rebuild{"osd-0", "osd-2"}},
		{name: "the target's own replica rebuilds", states: []flintv1.ReplicaState{stale, on, on}, granted: &rebuild{"osd-0", "osd-0"}},
		{name: "two stale replicas rebuild one at a time", states: []flintv1.ReplicaState{on, stale, stale},
			waiting: map[int]string{2: "one replica at a time"}, granted: &rebuild{"osd-0", "osd-1"}},
		{name: "a running rebuild keeps its place", states: []flintv1.ReplicaState{on, stale, rebuilding},
			waiting: map[int]string{1: "one replica at a time"}, granted: &rebuild{"osd-0", "osd-2"}},
		{name: "the target's OSD at the cap", states: []flintv1.ReplicaState{on, on, stale},
			others:  []client.Object{rebuildingVolume("a", "osd-0", "osd-3"), rebuildingVolume("b", "osd-4", "osd-0")},
			waiting: map[int]string{2: "target's OSD osd-0 takes part in 2"}},
		{name: "the replica's OSD at the cap", states: []flintv1.ReplicaState{on, on, stale},
			others:  []client.Object{rebuildingVolume("a", "osd-3", "osd-2"), rebuildingVolume("b", "osd-2", "osd-4")},
			waiting: map[int]string{2: "OSD osd-2 takes part in 2"}},
		{name: "another OSD's cap lets the other stale replica go first", states: []flintv1.ReplicaState{on, stale, stale},
			others:  []client.Object{rebuildingVolume("a", "osd-3", "osd-1"), rebuildingVolume("b", "osd-1", "osd-4")},
			waiting: map[int]string{1: "OSD osd-1 takes part in 2"}, granted: &rebuild{"osd-0", "osd-2"}},
		{name: "one rebuild elsewhere leaves a slot", states: []flintv1.ReplicaState{on, on, stale},
			others: []client.Object{rebuildingVolume("a", "osd-0", "osd-2")}, granted: &rebuild{"osd-0", "osd-2"}},
		{name: "another Pool's rebuilds do not count", states: []flintv1.ReplicaState{on, on, stale},
			others: []client.Object{otherPool(rebuildingVolume("a", "osd-0", "osd-3")), otherPool(rebuildingVolume("b", "osd-4", "osd-0"))}, granted: &rebuild{"osd-0", "osd-2"}},
		{name: "a replica on a stopping OSD is no candidate", states: []flintv1.ReplicaState{on, on, stale}, stopping: "osd-2"},
		{name: "a replica its agent did not confirm is no candidate", states: []flintv1.ReplicaState{on, faulted, stale}, unconfirmed: []int{1},
			granted: &rebuild{"osd-0", "osd-2"}},
		{name: "a Stale replica goes before a Faulted one", states: []flintv1.ReplicaState{on, faulted, stale},
			waiting: map[int]string{1: "one replica at a time, now the one on OSD osd-2"}, granted: &rebuild{"osd-0", "osd-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, vol := servingOSDs(nil, []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}[:len(tc.states)])
			w.pool.Spec.Rebuild.MaxPerOSD = 2
			inSync, confirmed := make([]bool, len(tc.states)), make([]bool, len(tc.states))
			for i, s := range tc.states {
				vol.Status.Replicas[i].State = s
				inSync[i], confirmed[i] = s == on, !slices.Contains(tc.unconfirmed, i)
			}
			if tc.stopping != "" {
				w.osds[tc.stopping].Status.Conditions = []metav1.Condition{{Type: flintv1.StoppingCondition, Status: metav1.ConditionTrue, Reason: flintv1.OSDRollingUpdateReason}}
			}
			r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(testScheme()).WithObjects(tc.others...).WithStatusSubresource(&flintv1.Volume{}).Build(), Recorder: events.NewFakeRecorder(10)}
			granted, waits, err := r.admitRebuild(context.Background(), vol, w, inSync, confirmed)
			if err != nil {
				t.Fatal(err)
			}
			if tc.granted == nil && granted >= 0 || tc.granted != nil && (granted < 0 || vol.Status.Replicas[granted].OSD != tc.granted.replica) {
				t.Errorf("granted replica %d, want %+v", granted, tc.granted)
			}
			if got, want := slices.Sorted(maps.Keys(waits)), slices.Sorted(maps.Keys(tc.waiting)); !slices.Equal(got, want) {
				t.Fatalf("waiting replicas %v (%v), want %v", got, waits, want)
			}
			for i, word := range tc.waiting {
				if !strings.Contains(waits[i], word) {
					t.Errorf("replica %d waits because %q, want it to say %q", i, waits[i], word)
				}
			}
			got, ok := r.rebuilds.granted["v"]
			switch {
			case tc.granted == nil && ok:
				t.Errorf("granted %+v, want no rebuild", got)
			case tc.granted != nil && got != *tc.granted:
				t.Errorf("granted %+v, want %+v", got, *tc.granted)
			}
		})
	}
}

func otherPool(o client.Object) client.Object {
	o.(*flintv1.Volume).Spec.Pool = "q"
	return o
}

// Two Volumes deciding before either status shows its rebuild cannot both
// take an OSD's last slot: the first one's grant counts for the second.
func TestAGrantCountsBeforeItsStatus(t *testing.T) {
	// Both Volumes are in the cache with a Stale replica.
	stale := func(name string) (*world, *flintv1.Volume) {
		w, vol := servingOSDs(nil, []string{"127.0.0.2", "127.0.0.3"})
		w.pool.Spec.Rebuild.MaxPerOSD = 1
		vol.Name = name
		vol.Status.Replicas[1].State = flintv1.ReplicaStateStale
		return w, vol
	}
	_, first := stale("first")
	_, second := stale("second")
	c := fake.NewClientBuilder().WithScheme(testScheme()).WithObjects(first, second).WithStatusSubresource(&flintv1.Volume{}).Build()
	r := &Reconciler{Client: c, Recorder: events.NewFakeRecorder(10)}
	decide := func(name string) map[int]string {
		w, vol := stale(name)
		_, waits, err := r.admitRebuild(context.Background(), vol, w, []bool{true, false}, []bool{true, true})
		if err != nil {
			t.Fatal(err)
		}
		return waits
	}
	if waits := decide("first"); len(waits) != 0 {
		t.Fatalf("the first Volume waits: %v", waits)
	}
	if waits := decide("second"); len(waits) != 1 {
		t.Fatalf("the second Volume took the slot the first was granted: waits %v", waits)
	}
	r.forgetRebuild("first")
	if waits := decide("second"); len(waits) != 0 {
		t.Fatalf("the slot of a deleted Volume was not released: waits %v", waits)
	}
	// A grant whose Volume is gone from the cache, though this process
	// never saw it go, holds no slot either.
	if err := c.Delete(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	if waits := decide("first"); len(waits) != 0 {
		t.Fatalf("a gone Volume's grant still holds its slot: waits %v", waits)
	}
}

// A grant whose Volume the cache shows in sync no longer counts, though
// that Volume's next pass, which drops it, is a resync away.
func TestASpentGrantFreesItsSlot(t *testing.T) {
	w, first := servingOSDs(nil, []string{"127.0.0.2", "127.0.0.3"})
	w.pool.Spec.Rebuild.MaxPerOSD = 1
	first.Name = "first"
	c := fake.NewClientBuilder().WithScheme(testScheme()).WithObjects(first.DeepCopy()).WithStatusSubresource(&flintv1.Volume{}).Build()
	r := &Reconciler{Client: c, Recorder: events.NewFakeRecorder(10)}
	r.rebuilds.granted = map[string]rebuild{"first": {target: "osd-0", replica: "osd-1"}}
	r.rebuilds.waiting = map[string]map[string]bool{}
	second := first.DeepCopy()
	second.Name = "second"
	second.Status.Replicas[1].State = flintv1.ReplicaStateStale
	granted, waits, err := r.admitRebuild(context.Background(), second, w, []bool{true, false}, []bool{true, true})
	if err != nil || granted != 1 || len(waits) != 0 {
		t.Fatalf("the second Volume waits for a slot the first, in sync, holds no more: %v, %v", waits, err)
	}
}
