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

package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// A replica being rebuilt has a series with its progress; once none of a
// Volume's replicas rebuilds, the Volume has none (and other Volumes keep
// theirs). Every Volume has its names, until it is forgotten.
func TestVolumeSeriesFollowTheReplicas(t *testing.T) {
	v1 := Volume{Name: "pvc-1", UID: "u1", Pool: "p", ClaimNamespace: "shop", Claim: "orders"}
	v2 := Volume{Name: "pvc-2", UID: "u2", Pool: "p"}
	ObserveVolume(v1, map[string]int32{"osd-a": 42})
	ObserveVolume(v2, map[string]int32{"osd-b": 7})
	if got := testutil.ToFloat64(ReplicaRebuild.WithLabelValues("pvc-1", "p", "shop", "orders", "osd-a")); got != 42 {
		t.Fatalf("pvc-1 on osd-a = %v, want 42", got)
	}
	if got := testutil.ToFloat64(VolumeInfo.WithLabelValues("pvc-1", "u1", "p", "shop", "orders")); got != 1 {
		t.Fatalf("pvc-1's names = %v, want 1", got)
	}
	ObserveVolume(v1, nil)
	if n := testutil.CollectAndCount(ReplicaRebuild); n != 1 {
		t.Fatalf("%d series after pvc-1's rebuild ended, want pvc-2's alone", n)
	}
	if n := testutil.CollectAndCount(VolumeInfo); n != 2 {
		t.Fatalf("%d Volumes named, want 2", n)
	}
	ForgetVolume("pvc-2")
	ForgetVolume("pvc-1")
	if n := testutil.CollectAndCount(ReplicaRebuild) + testutil.CollectAndCount(VolumeInfo); n != 0 {
		t.Fatalf("%d series after both Volumes were forgotten", n)
	}
}
