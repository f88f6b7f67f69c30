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
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/agentclient"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// TestFindDrift: of the settled objects that place something on the OSD,
// exactly those its inventory contradicts are driven; what the inventory
// holds, and objects not settled (driven every few seconds anyway), are
// left alone.
func TestFindDrift(t *testing.T) {
	volume := func(name string, phase flintv1.VolumePhase, target string, replicas ...string) *flintv1.Volume {
		v := &flintv1.Volume{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
		v.Status.Phase = phase
		if target != "" {
			v.Status.Target = &flintv1.VolumeTarget{OSD: target}
		}
		for _, r := range replicas {
			v.Status.Replicas = append(v.Status.Replicas, flintv1.ReplicaStatus{OSD: r})
		}
		return v
	}
	snapshot := func(name string, state flintv1.SnapshotCopyState, osds ...string) *flintv1.Snapshot {
		s := &flintv1.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
		for _, o := range osds {
			s.Status.Copies = append(s.Status.Copies, flintv1.SnapshotCopy{OSD: o, State: state})
		}
		return s
	}
	objects := []client.Object{
		volume("in-sync", flintv1.VolumePhaseReady, "here", "here", "b", "c"),
		volume("replica-gone", flintv1.VolumePhaseReady, "b", "here", "b", "c"),
		volume("target-gone", flintv1.VolumePhaseReady, "here", "here", "b", "c"),
		volume("target-short", flintv1.VolumePhaseReady, "here", "here", "b", "c"),
		volume("target-fenced", flintv1.VolumePhaseReady, "here", "here", "b", "c"),
		volume("elsewhere", flintv1.VolumePhaseReady, "b", "b", "c", "d"),
		volume("rebuilding", flintv1.VolumePhaseRebuilding, "here", "here", "b", "c"),
		snapshot("copy-held", flintv1.SnapshotCopyReady, "here", "b"),
		snapshot("copy-gone", flintv1.SnapshotCopyReady, "here", "b"),
		snapshot("copy-counted-lost", flintv1.SnapshotCopyLost, "here", "b"),
		snapshot("copy-elsewhere", flintv1.SnapshotCopyReady, "b", "c"),
	}
	inv := &agentv1.OSDStatus{
		Replicas: []*agentv1.Replica{{VolumeUid: "uid-in-sync"}, {VolumeUid: "uid-target-gone"}, {VolumeUid: "uid-target-short"}, {VolumeUid: "uid-target-fenced"}, {VolumeUid: "uid-rebuilding"}},
		Targets: []*agentv1.TargetSummary{
			{VolumeUid: "uid-in-sync", Members: 3, Online: 3},
			{VolumeUid: "uid-target-short", Members: 3, Online: 2},
			{VolumeUid: "uid-target-fenced", Members: 3, Online: 3},
		},
		FencedVolumes: []string{"uid-target-fenced"},
		Snapshots:     []*agentv1.Snapshot{{Name: "uid-copy-held"}},
	}
	scheme := runtime.NewScheme()
	_ = flintv1.AddToScheme(scheme)
	volumes, snapshots := make(chan event.GenericEvent, 10), make(chan event.GenericEvent, 10)
	r := &Reconciler{
		Client:        fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).WithStatusSubresource(objects...).Build(),
		ObserveVolume: volumes, ObserveSnapshot: snapshots, Inventories: &agentclient.Inventories{},
	}
	asked := time.Now()
	r.findDrift(context.Background(), &flintv1.OSD{ObjectMeta: metav1.ObjectMeta{Name: "here"}}, inv, asked)
	close(volumes)
	close(snapshots)
	names := func(ch <-chan event.GenericEvent) []string {
		var out []string
		for e := range ch {
			out = append(out, e.Object.GetName())
		}
		slices.Sort(out)
		return out
	}
	if got, want := names(volumes), []string{"replica-gone", "target-fenced", "target-gone", "target-short"}; !slices.Equal(got, want) {
		t.Errorf("Volumes driven: %v, want %v", got, want)
	}
	if got, want := names(snapshots), []string{"copy-gone"}; !slices.Equal(got, want) {
		t.Errorf("Snapshots driven: %v, want %v", got, want)
	}
	// Recorded before the Snapshots are driven, which count from it.
	if held, known := r.Inventories.HoldsCopy("here", "uid-copy-gone", asked.Add(-time.Second)); held || !known {
		t.Errorf("the inventory recorded says of the copy gone: held %v known %v, want false true", held, known)
	}
}
