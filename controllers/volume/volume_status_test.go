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
	"reflect"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// A status written from a read that another writer has since overtaken is
// refused, not merged over the other writer's decisions; from the latest
// read (or this reconcile's own last write) it goes through.
func TestStatusWritesLoseToNewerWrites(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := flintv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&flintv1.Volume{}).
		WithObjects(&flintv1.Volume{ObjectMeta: metav1.ObjectMeta{Name: "v"}}).Build()
	r := &Reconciler{Client: c}
	read := func() *flintv1.Volume {
		var v flintv1.Volume
		if err := c.Get(ctx, client.ObjectKey{Name: "v"}, &v); err != nil {
			t.Fatal(err)
		}
		return &v
	}
	stale, other := read(), read()

	before := other.DeepCopy()
	other.Status.Replicas = []flintv1.ReplicaStatus{{OSD: "osd-a", State: flintv1.ReplicaStateOnline}}
	if err := r.patchStatus(ctx, before, other); err != nil {
		t.Fatal(err)
	}
	before = stale.DeepCopy()
	stale.Status.Replicas = []flintv1.ReplicaStatus{{OSD: "osd-b", State: flintv1.ReplicaStateCreating}}
	if err := r.patchStatus(ctx, before, stale); !apierrors.IsConflict(err) {
		t.Fatalf("a write from a stale read: err = %v, want a conflict", err)
	}
	if got := read().Status.Replicas; len(got) != 1 || got[0].OSD != "osd-a" {
		t.Fatalf("replicas = %+v, want the newer write's", got)
	}
	// The writer that won writes again from its own last write.
	before = other.DeepCopy()
	other.Status.Phase = flintv1.VolumePhaseReady
	if err := r.patchStatus(ctx, before, other); err != nil {
		t.Fatalf("a second write from the writer's own last write: %v", err)
	}
}

// A replica error that lasts is told once; a change, or its return after
// it cleared, is told again.
func TestReplicaErrorsAreToldOnTransitions(t *testing.T) {
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Recorder: rec}
	vol := &flintv1.Volume{ObjectMeta: metav1.ObjectMeta{Name: "v", UID: "uid-v"}}
	for _, failures := range [][]string{{"a"}, {"a"}, {"a", "b"}, nil, nil, {"a"}} {
		r.replicaErrors(vol, failures)
	}
	close(rec.Events)
	var told []string
	for e := range rec.Events {
		told = append(told, e)
	}
	want := []string{"Warning ReplicaError a", "Warning ReplicaError a; b", "Warning ReplicaError a"}
	if !reflect.DeepEqual(told, want) {
		t.Fatalf("events = %q, want %q", told, want)
	}
}

// TestNextDrive: a Ready Volume is not polled once settled; one that is
// Ready but waits for something only a later pass brings (its size, a
// replica that failed, room for a replacement) still is, as is one not
// Ready, and one just turned Ready gets one more pass.
func TestNextDrive(t *testing.T) {
	const resync = 30 * time.Second
	volume := func(phase flintv1.VolumePhase, capacity string, mutate ...func(*flintv1.Volume)) *flintv1.Volume {
		v := &flintv1.Volume{ObjectMeta: metav1.ObjectMeta{UID: "uid-1"}, Spec: flintv1.VolumeSpec{Size: resource.MustParse("1Gi")}}
		v.Status.Phase = phase
		if capacity != "" {
			v.Status.Capacity = ptr.To(resource.MustParse(capacity))
		}
		for _, m := range mutate {
			m(v)
		}
		return v
	}
	blocked := func(v *flintv1.Volume) {
		meta.SetStatusCondition(&v.Status.Conditions, metav1.Condition{Type: flintv1.ReplacementBlockedCondition, Status: metav1.ConditionTrue, Reason: flintv1.VolumeNoPlacementReason})
	}
	ready := volume(flintv1.VolumePhaseReady, "1Gi")
	for _, tc := range []struct {
		name          string
		before, vol   *flintv1.Volume
		replicaErrors string
		want          time.Duration
	}{
		{"not Ready", ready, volume(flintv1.VolumePhaseDegraded, "1Gi"), "", unsettled},
		{"Ready just now", volume(flintv1.VolumePhaseRebuilding, "1Gi"), ready, "", unsettled},
		{"settled", ready, ready, "", 0},
		{"growing", ready, volume(flintv1.VolumePhaseReady, "512Mi"), "", resync},
		{"a replica failed", ready, ready, "the replica on OSD a: no space", resync},
		{"replacement blocked", ready, volume(flintv1.VolumePhaseReady, "1Gi", blocked), "", resync},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{Resync: resync}
			r.lastReplicaErrors.Store(tc.vol.UID, tc.replicaErrors)
			if got := r.nextDrive(tc.before, tc.vol).RequeueAfter; got != tc.want {
				t.Errorf("driven again after %s, want %s (0: on change only)", got, tc.want)
			}
		})
	}
}

// The storm of 2026-11-30 (seed 981210): a new leader saw the target's
// OSD (its SPDK restarting) and the replica's (its agent restarting) not
// serving at once, recorded both replicas Faulted, and the Volume could
// never be re-assembled (TargetLost: no in-sync replica). The target's own
// replica holds every write the target acknowledged, so its OSD not
// serving leaves it in sync; the other replica's is recorded Faulted.
func TestATargetOSDNotServingKeepsItsReplicaInSync(t *testing.T) {
	r := &Reconciler{Recorder: events.NewFakeRecorder(10)}
	w := &world{pool: &flintv1.Pool{}, osds: map[string]*flintv1.OSD{
		"osd-a": {Status: flintv1.OSDStatus{Phase: flintv1.OSDPhasePending}},
		"osd-b": {Status: flintv1.OSDStatus{Phase: flintv1.OSDPhasePending}},
	}}
	vol := &flintv1.Volume{Status: flintv1.VolumeStatus{
		Target:   &flintv1.VolumeTarget{OSD: "osd-a", Epoch: 1},
		Replicas: []flintv1.ReplicaStatus{{OSD: "osd-a", State: flintv1.ReplicaStateOnline}, {OSD: "osd-b", State: flintv1.ReplicaStateOnline}},
	}}
	r.observeTarget(vol, w, nil, &problem{flintv1.VolumeTargetUnavailableReason, "the target's OSD osd-a is Pending"})
	if got := vol.Status.Replicas; got[0].State != flintv1.ReplicaStateOnline || got[1].State != flintv1.ReplicaStateOnline {
		t.Fatalf("replicas = %+v, want both Online: the unreachable target acknowledged nothing without either", got)
	}
	// With the target's OSD serving, a replica whose OSD does not is
	// recorded Faulted, and the next drive lets it go.
	w.osds["osd-a"].Status.Phase = flintv1.OSDPhaseReady
	r.observeTarget(vol, w, nil, &problem{flintv1.VolumeTargetErrorReason, "the target failed"})
	if got := vol.Status.Replicas; got[0].State != flintv1.ReplicaStateOnline || got[1].State != flintv1.ReplicaStateFaulted {
		t.Fatalf("replicas = %+v, want the target's Online and the other Faulted", got)
	}
}
