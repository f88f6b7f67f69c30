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
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

func TestLetGoStopping(t *testing.T) {
	const on, stale, faulted, rebuilding = flintv1.ReplicaStateOnline, flintv1.ReplicaStateStale, flintv1.ReplicaStateFaulted, flintv1.ReplicaStateRebuilding
	for _, tc := range []struct {
		name     string
		states   []flintv1.ReplicaState // of replicas on osd-0 (the target's), osd-1, osd-2
		stopping []string
		want     []flintv1.ReplicaState
	}{
		{"a stopping OSD's in-sync replica is let go", []flintv1.ReplicaState{on, on, on}, []string{"osd-2"}, []flintv1.ReplicaState{on, on, stale}},
		{"and a rebuilding one", []flintv1.ReplicaState{on, on, rebuilding}, []string{"osd-2"}, []flintv1.ReplicaState{on, on, stale}},
		{"the last in-sync replica stays", []flintv1.ReplicaState{faulted, on}, []string{"osd-1"}, []flintv1.ReplicaState{faulted, on}},
		{"one elsewhere is enough", []flintv1.ReplicaState{on, on}, []string{"osd-1"}, []flintv1.ReplicaState{on, stale}},
		{"the target's own waits for its move", []flintv1.ReplicaState{on, on, on}, []string{"osd-0"}, []flintv1.ReplicaState{on, on, on}},
		{"nothing stops", []flintv1.ReplicaState{on, on, on}, nil, []flintv1.ReplicaState{on, on, on}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ips := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}[:len(tc.states)]
			w, vol := servingOSDs(nil, ips)
			for i, s := range tc.states {
				vol.Status.Replicas[i].State = s
			}
			for _, name := range tc.stopping {
				w.osds[name].Status.Conditions = []metav1.Condition{{Type: flintv1.StoppingCondition, Status: metav1.ConditionTrue, Reason: flintv1.OSDRollingUpdateReason}}
			}
			r := &Reconciler{Recorder: events.NewFakeRecorder(10)}
			r.letGoStopping(vol, w)
			var got []flintv1.ReplicaState
			for _, rep := range vol.Status.Replicas {
				got = append(got, rep.State)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("replica states after letGoStopping: %v; want %v", got, tc.want)
			}
		})
	}
}
