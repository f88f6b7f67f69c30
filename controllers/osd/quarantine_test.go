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
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/metrics"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// deletingAgent records what it is asked to delete.
type deletingAgent struct {
	agentv1.OSDAgentClient
	replicas, snapshots []string
}

func (a *deletingAgent) DeleteReplica(_ context.Context, req *agentv1.DeleteReplicaRequest, _ ...grpc.CallOption) (*agentv1.DeleteReplicaResponse, error) {
	a.replicas = append(a.replicas, req.GetVolumeUid())
	return &agentv1.DeleteReplicaResponse{}, nil
}

func (a *deletingAgent) DeleteSnapshot(_ context.Context, req *agentv1.DeleteSnapshotRequest, _ ...grpc.CallOption) (*agentv1.DeleteSnapshotResponse, error) {
	a.snapshots = append(a.snapshots, req.GetSnapshot())
	return &agentv1.DeleteSnapshotResponse{}, nil
}

// An lvol no object claims (as after the objects were restored with new
// uids) is kept for the orphan grace, found with an Event and counted,
// and deleted only once the grace is over; one claimed meanwhile is kept.
func TestOrphansAreQuarantined(t *testing.T) {
	const (
		orphanVolume   = "6b3c1f0e-2a4d-4c8e-9f10-1a2b3c4d5e6f"
		claimedLater   = "7c4d2a1f-3b5e-4d9f-8a21-2b3c4d5e6f70"
		orphanSnapshot = "8d5e3b2a-4c6f-4ea0-9b32-3c4d5e6f7081"
	)
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = flintv1.AddToScheme(scheme)
	uidOf := func(o client.Object) []string { return []string{string(o.GetUID())} }
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&flintv1.Volume{}, indexUID, uidOf).WithIndex(&flintv1.Snapshot{}, indexUID, uidOf).Build()
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	recorder := events.NewFakeRecorder(10)
	r := &Reconciler{Client: c, APIReader: c, Recorder: recorder, OrphanGrace: time.Hour, Now: func() time.Time { return now }}
	osd := &flintv1.OSD{ObjectMeta: metav1.ObjectMeta{Name: "osd-q"}}
	inv := &agentv1.OSDStatus{
		Replicas:  []*agentv1.Replica{{VolumeUid: orphanVolume}, {VolumeUid: claimedLater}},
		Snapshots: []*agentv1.Snapshot{{Name: orphanSnapshot}},
	}
	agent := &deletingAgent{}
	collect := func() {
		t.Helper()
		if err := r.collectOrphans(context.Background(), osd, agent, inv); err != nil {
			t.Fatal(err)
		}
	}

	collect()
	if len(agent.replicas)+len(agent.snapshots) != 0 {
		t.Fatalf("deleted at once: replicas %v, copies %v", agent.replicas, agent.snapshots)
	}
	if n := len(recorder.Events); n != 3 {
		t.Fatalf("%d Events for three orphans found, want 3", n)
	}
	for range 3 {
		if e := <-recorder.Events; !strings.Contains(e, "OrphanFound") || !strings.Contains(e, "2026-11-27T13:00:00Z") {
			t.Errorf("Event %q, want OrphanFound saying when it is deleted", e)
		}
	}
	if got := testutil.ToFloat64(metrics.OSDOrphans.WithLabelValues("osd-q", orphanReplica)); got != 2 {
		t.Errorf("flint_osd_orphans{kind=replica} = %v, want 2", got)
	}

	now = now.Add(59 * time.Minute)
	if err := c.Create(context.Background(), &flintv1.Volume{
		ObjectMeta: metav1.ObjectMeta{Name: "claims", UID: claimedLater},
		Status:     flintv1.VolumeStatus{Replicas: []flintv1.ReplicaStatus{{OSD: "osd-q"}}},
	}); err != nil {
		t.Fatal(err)
	}
	collect()
	if len(agent.replicas)+len(agent.snapshots) != 0 || len(recorder.Events) != 0 {
		t.Fatalf("within the grace: deleted replicas %v, copies %v, %d more Events", agent.replicas, agent.snapshots, len(recorder.Events))
	}

	now = now.Add(time.Minute)
	collect()
	if len(agent.replicas) != 1 || agent.replicas[0] != orphanVolume || len(agent.snapshots) != 1 || agent.snapshots[0] != orphanSnapshot {
		t.Fatalf("after the grace: deleted replicas %v, copies %v; want %s and %s", agent.replicas, agent.snapshots, orphanVolume, orphanSnapshot)
	}
	if got := testutil.ToFloat64(metrics.OSDOrphans.WithLabelValues("osd-q", orphanReplica)); got != 0 {
		t.Errorf("flint_osd_orphans{kind=replica} = %v after the deletion, want 0", got)
	}
}

// heldTargetAgent holds a target whose member holds writes: DeleteTarget
// is refused unless the member is let go.
type heldTargetAgent struct {
	agentv1.OSDAgentClient
	deleted []*agentv1.DeleteTargetRequest
}

func (a *heldTargetAgent) DeleteTarget(_ context.Context, req *agentv1.DeleteTargetRequest, _ ...grpc.CallOption) (*agentv1.DeleteTargetResponse, error) {
	if len(req.GetOutOfSyncOsds()) == 0 {
		return nil, agentv1.MembersHeldError([]string{"uid-osd-b"}, "members hold writes")
	}
	a.deleted = append(a.deleted, req)
	return &agentv1.DeleteTargetResponse{}, nil
}

// An orphan target of a Volume that moved its target, whose member
// holds writes, keeps them held until its hosts have dropped their
// connections to it: SPDK would send the writes' completions, which the
// Volume's target lacks, on a connection it is disconnecting. One of a
// Volume that is gone goes at once.
func TestAnOrphanTargetKeepsItsHeldWritesUntilItsHostsAreGone(t *testing.T) {
	const (
		orphanVolume = "9e6f4c3b-5d70-4fb1-8c43-4d5e6f708192"
		goneVolume   = "0a7f5d4c-6e81-4ac2-9d54-5e6f708192a3"
	)
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = flintv1.AddToScheme(scheme)
	uidOf := func(o client.Object) []string { return []string{string(o.GetUID())} }
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&flintv1.Volume{}, indexUID, uidOf).WithIndex(&flintv1.Snapshot{}, indexUID, uidOf).
		WithObjects(&flintv1.OSD{ObjectMeta: metav1.ObjectMeta{Name: "osd-b", UID: "uid-osd-b"}},
			&flintv1.Volume{ObjectMeta: metav1.ObjectMeta{Name: "moved", UID: orphanVolume},
				Status: flintv1.VolumeStatus{Target: &flintv1.VolumeTarget{OSD: "osd-b"}}}).Build()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	r := &Reconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(10), OrphanGrace: time.Hour, Now: func() time.Time { return now }}
	osd := &flintv1.OSD{ObjectMeta: metav1.ObjectMeta{Name: "osd-h"}}
	inv := &agentv1.OSDStatus{Targets: []*agentv1.TargetSummary{{VolumeUid: orphanVolume}, {VolumeUid: goneVolume}}}
	agent := &heldTargetAgent{}
	collect := func() {
		t.Helper()
		if err := r.collectOrphans(context.Background(), osd, agent, inv); err != nil {
			t.Fatal(err)
		}
	}
	collect()
	if len(agent.deleted) != 1 || agent.deleted[0].GetVolumeUid() != goneVolume {
		t.Fatalf("at once: deleted %v, want the gone Volume's target alone", agent.deleted)
	}
	inv.Targets, agent.deleted = inv.Targets[:1], nil
	now = now.Add(heldOrphanWait - time.Second)
	collect()
	if len(agent.deleted) != 0 {
		t.Fatalf("the orphan target let its held member go %s after it was found", heldOrphanWait-time.Second)
	}
	now = now.Add(time.Second)
	collect()
	if len(agent.deleted) != 1 || agent.deleted[0].GetVolumeUid() != orphanVolume {
		t.Fatalf("after %s: deleted %v, want the orphan target, its members let go", heldOrphanWait, agent.deleted)
	}
}
