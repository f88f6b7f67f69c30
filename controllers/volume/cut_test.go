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
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/agentclient"
)

// An unplanned move is decided a hold's wait before the grace ends, but
// never before the old target's lease lapsed for certain: cut off its
// member before that, it could be renewed and serve on with its lease.
// It records the cut, from the old OSD, not before the grace.
func TestAnUnplannedMoveWaitsForTheOldLeaseToLapse(t *testing.T) {
	began := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	now := began
	leases := &agentclient.Leases{}
	leases.Begin(began)
	r := &Reconciler{
		Recorder: events.NewFakeRecorder(10), Leases: leases, Now: func() time.Time { return now },
		TargetGrace: 30 * time.Second, HoldWait: 14 * time.Second, LeaseBound: 25 * time.Second,
	}
	w, vol := servingOSDs(nil, []string{"127.0.0.2", "127.0.0.3"})
	lost := w.osds["osd-0"]
	lost.Status.Phase = flintv1.OSDPhaseFailed
	meta.SetStatusCondition(&lost.Status.Conditions, metav1.Condition{Type: flintv1.ReadyCondition, Status: metav1.ConditionFalse, Reason: "AgentUnreachable", LastTransitionTime: metav1.NewTime(began)})

	now = began.Add(24 * time.Second) // the grace less the hold has passed; the lease has not
	if err := r.moveTarget(context.Background(), vol, w); err != nil || vol.Status.Target.OSD != "osd-0" {
		t.Fatalf("24s after the last renewal the target moved to %s (%v); the lease may hold until 25s", vol.Status.Target.OSD, err)
	}
	now = began.Add(25 * time.Second)
	if err := r.moveTarget(context.Background(), vol, w); err != nil {
		t.Fatal(err)
	}
	got := vol.Status.Target
	if got.OSD != "osd-1" || got.Cut == nil || got.Cut.From != "osd-0" || !got.Cut.NotBefore.Time.Equal(began.Add(30*time.Second)) || got.Cut.ServesAfter != nil {
		t.Fatalf("at 25s the target is %+v (cut %+v); want it on osd-1, cut pending from osd-0, not serving before 30s", got, got.Cut)
	}
	// The Event says how long the OSD was silent, not the grace.
	if e := <-r.Recorder.(*events.FakeRecorder).Events; !strings.Contains(e, "the target's OSD osd-0 has not served for 25s:") {
		t.Errorf("the move's Event: %q; want it to say the OSD has not served for 25s", e)
	}
}
