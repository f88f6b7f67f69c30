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
	"maps"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

func ledgerVolume(name, pool, size string, osds ...string) *flintv1.Volume {
	v := &flintv1.Volume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: flintv1.VolumeSpec{Pool: pool, Size: resource.MustParse(size)}}
	for _, o := range osds {
		v.Status.Replicas = append(v.Status.Replicas, flintv1.ReplicaStatus{OSD: o})
	}
	return v
}

// TestLedgerSumsWhatTheCacheAndThisProcessPlaced follows one Pool's sums
// through the cache's events and this process's placements, which stand
// until released even when the cache shows an older status.
func TestLedgerSumsWhatTheCacheAndThisProcessPlaced(t *testing.T) {
	synced := false
	l := &ledger{synced: func() bool { return synced }}
	events := l.handler()
	want := func(step string, pool string, sums map[string]int64) {
		t.Helper()
		got, ok := l.sums(pool)
		if !ok {
			t.Fatalf("%s: the ledger says it has not synced", step)
		}
		if !maps.Equal(got, sums) {
			t.Fatalf("%s: sums of %s = %v, want %v", step, pool, got, sums)
		}
	}
	const mi = 1 << 20

	events.OnAdd(ledgerVolume("a", "p", "1Mi", "o1", "o2"), true)
	if _, ok := l.sums("p"); ok {
		t.Fatal("sums before the cache's Volumes were all seen: a placement then could overcommit")
	}
	synced = true
	want("listed", "p", map[string]int64{"o1": mi, "o2": mi})

	events.OnAdd(ledgerVolume("b", "p", "2Mi"), false)
	events.OnAdd(ledgerVolume("c", "q", "4Mi", "o9"), false)
	want("a Volume not placed yet counts nowhere", "p", map[string]int64{"o1": mi, "o2": mi})
	want("another Pool", "q", map[string]int64{"o9": 4 * mi})

	l.place(ledgerVolume("b", "p", "2Mi", "o2", "o3"))
	want("placed ahead of the cache", "p", map[string]int64{"o1": mi, "o2": 3 * mi, "o3": 2 * mi})

	events.OnUpdate(nil, ledgerVolume("b", "p", "3Mi"))
	want("the cache's older status keeps the placement, its size counts", "p", map[string]int64{"o1": mi, "o2": 4 * mi, "o3": 3 * mi})

	l.release("b")
	events.OnUpdate(nil, ledgerVolume("b", "p", "3Mi", "o3", "o4"))
	want("released: the cache's status stands", "p", map[string]int64{"o1": mi, "o2": mi, "o3": 3 * mi, "o4": 3 * mi})

	events.OnUpdate(nil, ledgerVolume("a", "p", "1Mi", "o1", "o5"))
	want("a replica replaced", "p", map[string]int64{"o1": mi, "o5": mi, "o3": 3 * mi, "o4": 3 * mi})

	events.OnDelete(ledgerVolume("a", "p", "1Mi", "o1", "o5"))
	events.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "b", Obj: ledgerVolume("b", "p", "3Mi")})
	want("deleted, one seen only as a tombstone", "p", map[string]int64{})
	want("the other Pool untouched", "q", map[string]int64{"o9": 4 * mi})
}
