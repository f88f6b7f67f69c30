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

package pool

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// rolloutLab is a Pool of one OSD per zone a, b, c (nodes n-a, n-b, n-c),
// all Ready and up to date, and Volumes with a replica on each.
type rolloutLab struct {
	pool  *flintv1.Pool
	osds  map[string]*flintv1.OSD
	vols  []flintv1.Volume
	nodes map[string]*corev1.Node
}

func newRolloutLab(replicas int32, zones ...string) *rolloutLab {
	l := &rolloutLab{
		pool:  &flintv1.Pool{Spec: flintv1.PoolSpec{Replicas: replicas, FailureDomain: corev1.LabelTopologyZone, Rollout: flintv1.RolloutPolicy{MaxUnavailableDomains: 1}}},
		osds:  map[string]*flintv1.OSD{},
		nodes: map[string]*corev1.Node{},
	}
	for _, z := range zones {
		node := "n-" + z
		l.nodes[node] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{corev1.LabelTopologyZone: z}}}
		l.osds["osd-"+z] = &flintv1.OSD{
			ObjectMeta: metav1.ObjectMeta{Name: "osd-" + z},
			Spec:       flintv1.OSDSpec{NodeName: node},
			Status: flintv1.OSDStatus{Phase: flintv1.OSDPhaseReady, Conditions: []metav1.Condition{
				{Type: flintv1.UpToDateCondition, Status: metav1.ConditionTrue},
			}},
		}
	}
	return l
}

// volume adds a Volume with an Online replica on each named OSD.
func (l *rolloutLab) volume(name string, osds ...string) *flintv1.Volume {
	v := flintv1.Volume{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, o := range osds {
		v.Status.Replicas = append(v.Status.Replicas, flintv1.ReplicaStatus{OSD: o, State: flintv1.ReplicaStateOnline})
	}
	l.vols = append(l.vols, v)
	return &l.vols[len(l.vols)-1]
}

func (l *rolloutLab) outdate(osds ...string) {
	for _, o := range osds {
		l.osds[o].Status.Conditions[0].Status = metav1.ConditionFalse
	}
}

func (l *rolloutLab) plan() rollout {
	p := planRollout(l.pool, l.osds, l.vols, l.nodes)
	l.pool.Status.Rollout = p.status
	return p
}

func TestPlanRollout(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup builds the lab and may record a rollout in progress.
		setup       func(l *rolloutLab)
		wantOSDs    []string
		wantPending int32
		wantReason  string
		wantMessage string
	}{{
		name:       "nothing to stop",
		setup:      func(l *rolloutLab) { l.volume("v", "osd-a", "osd-b", "osd-c") },
		wantReason: flintv1.PoolUpToDateReason,
	}, {
		name: "one domain at a time, in order",
		setup: func(l *rolloutLab) {
			l.volume("v", "osd-a", "osd-b", "osd-c")
			l.outdate("osd-a", "osd-b", "osd-c")
		},
		wantOSDs: []string{"osd-a"}, wantPending: 2, wantReason: flintv1.PoolRollingReason,
	}, {
		name: "a stopping domain stays while its OSD is outdated",
		setup: func(l *rolloutLab) {
			l.volume("v", "osd-a", "osd-b", "osd-c")
			l.outdate("osd-a", "osd-b", "osd-c")
			l.pool.Status.Rollout = &flintv1.RolloutStatus{Domains: []string{"b"}, OSDs: []string{"osd-b"}}
		},
		wantOSDs: []string{"osd-b"}, wantPending: 2, wantReason: flintv1.PoolRollingReason,
	}, {
		name: "a restarted OSD stays until its replicas are back in sync",
		setup: func(l *rolloutLab) {
			v := l.volume("v", "osd-a", "osd-b", "osd-c")
			v.Status.Replicas[0].State = flintv1.ReplicaStateRebuilding
			l.outdate("osd-b", "osd-c")
			l.pool.Status.Rollout = &flintv1.RolloutStatus{Domains: []string{"a"}, OSDs: []string{"osd-a"}}
		},
		wantOSDs: []string{"osd-a"}, wantPending: 2, wantReason: flintv1.PoolRollingReason,
	}, {
		name: "a restarted OSD that does not serve yet stays",
		setup: func(l *rolloutLab) {
			l.volume("v", "osd-a", "osd-b", "osd-c")
			l.osds["osd-a"].Status.Phase = flintv1.OSDPhaseStarting
			l.outdate("osd-b", "osd-c")
			l.pool.Status.Rollout = &flintv1.RolloutStatus{Domains: []string{"a"}, OSDs: []string{"osd-a"}}
		},
		wantOSDs: []string{"osd-a"}, wantPending: 2, wantReason: flintv1.PoolRollingReason,
	}, {
		name: "the next domain starts once the last one is back in sync",
		setup: func(l *rolloutLab) {
			l.volume("v", "osd-a", "osd-b", "osd-c")
			l.outdate("osd-b", "osd-c")
			l.pool.Status.Rollout = &flintv1.RolloutStatus{Domains: []string{"a"}, OSDs: []string{"osd-a"}}
		},
		wantOSDs: []string{"osd-b"}, wantPending: 1, wantReason: flintv1.PoolRollingReason,
	}, {
		name: "a Volume already short of a replica elsewhere blocks the domain",
		setup: func(l *rolloutLab) {
			v := l.volume("v", "osd-a", "osd-b", "osd-c")
			v.Status.Replicas[2].State = flintv1.ReplicaStateFaulted
			l.outdate("osd-a")
		},
		wantPending: 1, wantReason: flintv1.PoolRolloutBlockedReason,
		wantMessage: "OSDs in topology.kubernetes.io/zone a wait: Volume v would keep 1 in-sync replicas outside them, and needs 2",
	}, {
		name: "a blocked domain does not hold back another",
		setup: func(l *rolloutLab) {
			v := l.volume("v", "osd-a", "osd-b", "osd-c")
			v.Status.Replicas[2].State = flintv1.ReplicaStateFaulted
			l.outdate("osd-a", "osd-c")
		},
		wantOSDs: []string{"osd-c"}, wantPending: 1, wantReason: flintv1.PoolRollingReason,
		wantMessage: "Volume v would keep 1 in-sync replicas outside them",
	}, {
		name: "a single-replica Volume blocks its OSD's domain, saying what to do",
		setup: func(l *rolloutLab) {
			l.pool.Spec.Replicas = 1
			l.volume("v", "osd-a")
			l.outdate("osd-a")
		},
		wantPending: 1, wantReason: flintv1.PoolRolloutBlockedReason,
		wantMessage: "Volume v has a single replica, there: stopping its OSD stops the Volume. Delete that OSD's pod",
	}, {
		name: "a cordoned node's OSD stops for the drain",
		setup: func(l *rolloutLab) {
			l.volume("v", "osd-a", "osd-b", "osd-c")
			l.nodes["n-b"].Spec.Unschedulable = true
		},
		wantOSDs: []string{"osd-b"}, wantReason: flintv1.PoolRollingReason,
	}, {
		name: "a cordoned node keeps its domain until uncordoned",
		setup: func(l *rolloutLab) {
			l.volume("v", "osd-a", "osd-b", "osd-c")
			l.nodes["n-b"].Spec.Unschedulable = true
			l.outdate("osd-a")
			l.pool.Status.Rollout = &flintv1.RolloutStatus{Domains: []string{"b"}, OSDs: []string{"osd-b"}}
		},
		wantOSDs: []string{"osd-b"}, wantPending: 1, wantReason: flintv1.PoolRollingReason,
	}, {
		name: "an outdated OSD that does not serve is not the rollout's",
		setup: func(l *rolloutLab) {
			l.volume("v", "osd-a", "osd-b", "osd-c")
			l.outdate("osd-a")
			l.osds["osd-a"].Status.Phase = flintv1.OSDPhaseFailed
		},
		wantReason: flintv1.PoolUpToDateReason,
	}, {
		name: "two domains at once when the Pool allows it and the Volumes can",
		setup: func(l *rolloutLab) {
			l.pool.Spec.Rollout.MaxUnavailableDomains = 2
			l.volume("v", "osd-a", "osd-b", "osd-c")
			l.outdate("osd-a", "osd-b", "osd-c")
		},
		wantOSDs: []string{"osd-a", "osd-b"}, wantPending: 1, wantReason: flintv1.PoolRollingReason,
	}, {
		name: "a Volume's own replica count sets what it needs",
		setup: func(l *rolloutLab) {
			v := l.volume("v", "osd-b", "osd-c")
			v.Spec.Replicas = ptr.To[int32](2)
			v.Status.Replicas[1].State = flintv1.ReplicaStateStale
			l.outdate("osd-b")
		},
		wantPending: 1, wantReason: flintv1.PoolRolloutBlockedReason,
		wantMessage: "Volume v would keep 0 in-sync replicas outside them, and needs 1",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			l := newRolloutLab(3, "a", "b", "c")
			tc.setup(l)
			got := l.plan()
			var osds []string
			var pending int32
			if got.status != nil {
				osds, pending = got.status.OSDs, got.status.Pending
			}
			if !slices.Equal(osds, tc.wantOSDs) || pending != tc.wantPending || got.reason != tc.wantReason {
				t.Fatalf("planRollout: osds %v, pending %d, reason %s (%s); want osds %v, pending %d, reason %s", osds, pending, got.reason, got.message, tc.wantOSDs, tc.wantPending, tc.wantReason)
			}
			if !strings.Contains(got.message, tc.wantMessage) {
				t.Fatalf("planRollout's message %q does not say %q", got.message, tc.wantMessage)
			}
		})
	}
}

// TestRolloutVisitsEveryDomainOnce walks a rollout to its end: each pass
// the OSDs that stop are restarted and their replicas rebuilt.
func TestRolloutVisitsEveryDomainOnce(t *testing.T) {
	l := newRolloutLab(3, "a", "b", "c", "d")
	l.volume("v1", "osd-a", "osd-b", "osd-c")
	l.volume("v2", "osd-b", "osd-c", "osd-d")
	l.outdate("osd-a", "osd-b", "osd-c", "osd-d")
	var order []string
	for range 10 {
		p := l.plan()
		if p.status == nil {
			break
		}
		if len(p.status.Domains) != 1 {
			t.Fatalf("pass stops domains %v; want one at a time", p.status.Domains)
		}
		order = append(order, p.status.Domains[0])
		for _, name := range p.status.OSDs {
			l.osds[name].Status.Conditions[0].Status = metav1.ConditionTrue
		}
	}
	if want := []string{"a", "b", "c", "d"}; !slices.Equal(order, want) {
		t.Fatalf("domains stopped pass by pass: %v; want %v", order, want)
	}
}
