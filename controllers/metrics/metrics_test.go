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
// theirs).
func TestRebuildSeriesFollowTheReplicas(t *testing.T) {
	ObserveRebuilds("v1", "p", map[string]int32{"osd-a": 42})
	ObserveRebuilds("v2", "p", map[string]int32{"osd-b": 7})
	if got := testutil.ToFloat64(ReplicaRebuild.WithLabelValues("v1", "p", "osd-a")); got != 42 {
		t.Fatalf("v1 on osd-a = %v, want 42", got)
	}
	ObserveRebuilds("v1", "p", nil)
	if n := testutil.CollectAndCount(ReplicaRebuild); n != 1 {
		t.Fatalf("%d series after v1's rebuild ended, want v2's alone", n)
	}
	ObserveRebuilds("v2", "", nil)
	if n := testutil.CollectAndCount(ReplicaRebuild); n != 0 {
		t.Fatalf("%d series after every rebuild ended", n)
	}
}
