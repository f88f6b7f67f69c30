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
	"time"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// A planned move first records its standby at the next epoch, then waits
// until every published host has connected to it, or its wait is over,
// or it cannot be made; the pass that ends the wait records the switch,
// and every pass after it goes on with the move. A standby recorded for
// another OSD is replaced by one past its epoch, and one no move waits
// for is dropped.
func TestAPlannedMoveWaitsForItsStandbysHosts(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	r := &Reconciler{Now: func() time.Time { return now }, StandbyWait: 10 * time.Second}
	vol := &flintv1.Volume{
		Spec:   flintv1.VolumeSpec{PublishedHosts: []string{"host-a", "host-b"}},
		Status: flintv1.VolumeStatus{Target: &flintv1.VolumeTarget{OSD: "osd-a", Epoch: 4}},
	}
	await := func(next string) bool {
		w := &world{}
		waits := r.awaitStandby(vol, w, next)
		dropUnusedStandby(vol, w)
		return waits
	}
	if !await("osd-b") {
		t.Fatal("a move without a standby went ahead")
	}
	sb := vol.Status.Target.Standby
	if sb == nil || sb.OSD != "osd-b" || sb.Epoch != 5 || !sb.Since.Time.Equal(now) {
		t.Fatalf("standby = %+v, want osd-b at epoch 5 since now", sb)
	}
	sb.ConnectedHosts = []string{"host-a"}
	now = now.Add(5 * time.Second)
	if !await("osd-b") || sb.Switching {
		t.Fatal("the move switched with host-b not connected to the standby, within the wait")
	}
	sb.ConnectedHosts = []string{"host-b", "host-a"}
	if !await("osd-b") || !sb.Switching {
		t.Fatalf("with every host connected the move should record its switch and wait once more: %+v", sb)
	}
	sb.ConnectedHosts = nil // a host went away: the switch, recorded, stands
	for range 2 {
		if await("osd-b") {
			t.Fatal("a move that recorded its switch waits again")
		}
	}

	for _, tc := range []struct {
		name  string
		setup func(*flintv1.VolumeStandby)
	}{
		{"its wait is over", func(*flintv1.VolumeStandby) { now = now.Add(10 * time.Second) }},
		{"it cannot be made", func(sb *flintv1.VolumeStandby) { sb.Problem = "Unimplemented" }},
	} {
		vol.Status.Target.Standby = nil
		await("osd-b")
		tc.setup(vol.Status.Target.Standby)
		if !await("osd-b") || !vol.Status.Target.Standby.Switching {
			t.Fatalf("when %s the move should record its switch", tc.name)
		}
	}

	if !await("osd-c") {
		t.Fatal("a move to another OSD went ahead on osd-b's standby")
	}
	if got := vol.Status.Target.Standby; got == nil || got.OSD != "osd-c" || got.Epoch != 6 {
		t.Fatalf("a move to another OSD has standby %+v, want one on osd-c past osd-b's epoch 5", got)
	}
	dropUnusedStandby(vol, &world{})
	if vol.Status.Target.Standby != nil {
		t.Fatalf("a standby no move waits for stays: %+v", vol.Status.Target.Standby)
	}
	vol.Spec.PublishedHosts = nil
	if await("osd-b") || vol.Status.Target.Standby != nil {
		t.Fatal("a move with no published host waits for a standby")
	}
}

// The move records the standby's epoch when it goes to the standby's OSD,
// and one past it when it goes elsewhere, whose controller ids the hosts
// may still hold.
func TestAMoveTakesAnEpochNoStandbyHandedOut(t *testing.T) {
	for _, tc := range []struct {
		next string
		want int32
	}{{"osd-b", 6}, {"osd-c", 7}} {
		vol := &flintv1.Volume{Status: flintv1.VolumeStatus{Target: &flintv1.VolumeTarget{
			OSD: "osd-a", Epoch: 4, Standby: &flintv1.VolumeStandby{OSD: "osd-b", Epoch: 6},
		}}}
		recordMove(context.Background(), vol, tc.next, true)
		if got := vol.Status.Target; got.OSD != tc.next || got.Epoch != tc.want || got.Standby != nil {
			t.Errorf("a move to %s recorded %+v, want epoch %d and no standby", tc.next, got, tc.want)
		}
	}
}
