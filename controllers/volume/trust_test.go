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
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// settledVolume is a Volume whose status records it settled on OSDs a, b
// and c of w, with w's Pool asking for 3 replicas.
func settledVolume() (*flintv1.Volume, *world) {
	w := &world{pool: &flintv1.Pool{Spec: flintv1.PoolSpec{Replicas: 3}}, osds: map[string]*flintv1.OSD{}}
	vol := &flintv1.Volume{
		ObjectMeta: metav1.ObjectMeta{Name: "v", Generation: 2, ResourceVersion: "7"},
		Spec:       flintv1.VolumeSpec{Pool: "p", Size: resource.MustParse("1Gi"), PublishedHosts: []string{"h1", "h2"}, QoS: &flintv1.VolumeQoS{IOPS: 1000}},
	}
	for _, o := range []string{"a", "b", "c"} {
		w.osds[o] = &flintv1.OSD{ObjectMeta: metav1.ObjectMeta{Name: o}, Status: flintv1.OSDStatus{Phase: flintv1.OSDPhaseReady}}
		vol.Status.Replicas = append(vol.Status.Replicas, flintv1.ReplicaStatus{OSD: o, State: flintv1.ReplicaStateOnline})
	}
	vol.Status.ObservedGeneration, vol.Status.Phase = 2, flintv1.VolumePhaseReady
	vol.Status.Capacity = ptr.To(resource.MustParse("1Gi"))
	vol.Status.Target = &flintv1.VolumeTarget{
		OSD: "a", Epoch: 1, Endpoints: []flintv1.Endpoint{{Transport: "tcp", Address: "127.0.0.1", Port: 4420}},
		AllowedHosts: []string{"h2", "h1"}, Members: []string{"c", "a", "b"}, QoS: &flintv1.VolumeQoS{IOPS: 1000},
	}
	return vol, w
}

// TestTrustRecorded checks which first looks a new operator takes as
// recorded, skipping the drive, and that it does so once per Volume.
func TestTrustRecorded(t *testing.T) {
	cutting := &flintv1.Snapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: flintv1.SnapshotSpec{Volume: "v"},
		Status: flintv1.SnapshotStatus{Copies: []flintv1.SnapshotCopy{{OSD: "a", State: flintv1.SnapshotCopyReady}, {OSD: "b", State: flintv1.SnapshotCopyCutting}}},
	}
	cut := cutting.DeepCopy()
	cut.Name, cut.Status.Copies[1].State = "done", flintv1.SnapshotCopyReady
	for _, tc := range []struct {
		name   string
		change func(*flintv1.Volume, *world)
		others []client.Object
		told   bool
		want   bool
	}{
		{name: "settled", others: []client.Object{cut}, want: true},
		{name: "spec changed since the status", change: func(v *flintv1.Volume, _ *world) { v.Generation++ }},
		{name: "this pass wrote it", change: func(v *flintv1.Volume, _ *world) { v.ResourceVersion = "8" }},
		{name: "a decision called an agent", change: func(_ *flintv1.Volume, w *world) { w.calledAgent = true }},
		{name: "an inventory contradicts it", told: true},
		{name: "a Snapshot is being cut from it", others: []client.Object{cutting}},
		{name: "not Ready", change: func(v *flintv1.Volume, _ *world) { v.Status.Phase = flintv1.VolumePhaseDegraded }},
		{name: "a replica rebuilding", change: func(v *flintv1.Volume, _ *world) { v.Status.Replicas[1].State = flintv1.ReplicaStateRebuilding }},
		{name: "a replica out of the raid", change: func(v *flintv1.Volume, _ *world) { v.Status.Target.Members = []string{"a", "b"} }},
		{name: "fewer replicas than asked", change: func(_ *flintv1.Volume, w *world) { w.pool.Spec.Replicas = 4 }},
		{name: "a host not let in yet", change: func(v *flintv1.Volume, _ *world) { v.Spec.PublishedHosts = append(v.Spec.PublishedHosts, "h3") }},
		{name: "limits not applied", change: func(v *flintv1.Volume, _ *world) { v.Status.Target.QoS = nil }},
		{name: "not grown yet", change: func(v *flintv1.Volume, _ *world) { v.Spec.Size = resource.MustParse("2Gi") }},
		{name: "the target not serving", change: func(v *flintv1.Volume, _ *world) { v.Status.Target.Endpoints = nil }},
		{name: "a replica's OSD stopping", change: func(_ *flintv1.Volume, w *world) {
			w.osds["b"].Status.Conditions = []metav1.Condition{{Type: flintv1.StoppingCondition, Status: metav1.ConditionTrue}}
		}},
		{name: "the target's OSD not serving", change: func(_ *flintv1.Volume, w *world) { w.osds["a"].Status.Phase = flintv1.OSDPhaseFailed }},
		{name: "a replica's OSD gone", change: func(_ *flintv1.Volume, w *world) { delete(w.osds, "c") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vol, w := settledVolume()
			if tc.change != nil {
				tc.change(vol, w)
			}
			c := fake.NewClientBuilder().WithScheme(testScheme()).WithObjects(tc.others...).WithIndex(&flintv1.Snapshot{}, indexCutting, cuttingFrom).Build()
			r := &Reconciler{Client: c}
			if tc.told {
				r.contradicted.Store(vol.Name, true)
			}
			got, err := r.trustRecorded(context.Background(), vol, w, "7")
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("trusted = %v, want %v", got, tc.want)
			}
			if got, _ := r.trustRecorded(context.Background(), vol, w, "7"); got {
				t.Fatal("trusted at a second look: only a new process's first look skips the drive")
			}
		})
	}
}
