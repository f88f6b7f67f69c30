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
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// osdOn is a Ready OSD of phase on node.
func osdOn(name, node string, phase flintv1.OSDPhase) *flintv1.OSD {
	return &flintv1.OSD{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: flintv1.OSDSpec{NodeName: node}, Status: flintv1.OSDStatus{Phase: phase}}
}

func TestSetReady(t *testing.T) {
	const zone = corev1.LabelTopologyZone
	nodes := map[string]*corev1.Node{}
	for name, z := range map[string]string{"n1": "a", "n2": "b", "n3": "c", "n4": "b", "bare": ""} {
		labels := map[string]string{}
		if z != "" {
			labels[zone] = z
		}
		nodes[name] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	ready, draining, failed := flintv1.OSDPhaseReady, flintv1.OSDPhaseDraining, flintv1.OSDPhaseFailed
	for _, tc := range []struct {
		name      string
		osds      []*flintv1.OSD
		preflight string // a preflight failure, if any
		status    metav1.ConditionStatus
		reason    string
		says      string
	}{
		{name: "three zones serve", osds: []*flintv1.OSD{osdOn("o1", "n1", ready), osdOn("o2", "n2", ready), osdOn("o3", "n3", ready)},
			status: metav1.ConditionTrue, reason: flintv1.PoolProvisionableReason, says: "3 OSDs serve"},
		{name: "three nodes in two zones", osds: []*flintv1.OSD{osdOn("o1", "n1", ready), osdOn("o2", "n2", ready), osdOn("o4", "n4", ready)},
			status: metav1.ConditionFalse, reason: flintv1.PoolOSDsNotReadyReason, says: "in 2 failure domains (topology.kubernetes.io/zone); volumes need 3"},
		{name: "a draining OSD places nothing", osds: []*flintv1.OSD{osdOn("o1", "n1", ready), osdOn("o2", "n2", ready), osdOn("o3", "n3", draining)},
			status: metav1.ConditionFalse, reason: flintv1.PoolOSDsNotReadyReason, says: "in 2 failure domains"},
		{name: "a failed OSD places nothing", osds: []*flintv1.OSD{osdOn("o1", "n1", ready), osdOn("o2", "n2", ready), osdOn("o3", "n3", failed)},
			status: metav1.ConditionFalse, reason: flintv1.PoolOSDsNotReadyReason, says: "2 of 3 OSDs are ready"},
		{name: "a node without the label is no domain", osds: []*flintv1.OSD{osdOn("o1", "n1", ready), osdOn("o2", "n2", ready), osdOn("o5", "bare", ready)},
			status: metav1.ConditionFalse, reason: flintv1.PoolOSDsNotReadyReason, says: "their nodes' topology.kubernetes.io/zone labels"},
		{name: "a preflight failure comes first", osds: []*flintv1.OSD{osdOn("o1", "n1", ready), osdOn("o2", "n2", ready), osdOn("o3", "n3", ready)},
			preflight: flintv1.PoolNoNodesSelectedCondition, status: metav1.ConditionFalse, reason: flintv1.PoolNoNodesSelectedCondition, says: "no node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := &flintv1.Pool{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Spec: flintv1.PoolSpec{Replicas: 3, FailureDomain: zone}}
			w := world{osds: map[string]*flintv1.OSD{}, nodes: nodes}
			for _, o := range tc.osds {
				w.osds[o.Name] = o
				if o.Status.Phase == ready {
					pool.Status.OSDs.Ready++
				}
				pool.Status.OSDs.Total++
			}
			pool.Status.Capacity = &flintv1.PoolCapacity{}
			pf := &preflight{failures: map[string][]string{}, blockedNodes: map[string]bool{}}
			if tc.preflight != "" {
				pf.fail(tc.preflight, "no node matches the Pool's nodeSelector")
			}
			r := &Reconciler{Recorder: events.NewFakeRecorder(10)}
			r.setReady(pool, pf, w)
			c := meta.FindStatusCondition(pool.Status.Conditions, flintv1.ReadyCondition)
			if c == nil || c.Status != tc.status || c.Reason != tc.reason || !strings.Contains(c.Message, tc.says) {
				t.Fatalf("Ready = %+v; want %s, %s, saying %q", c, tc.status, tc.reason, tc.says)
			}
		})
	}
}

func TestSetDegraded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		osds     flintv1.OSDCounts
		draining []string
		status   metav1.ConditionStatus
		reason   string
		says     string
	}{
		{name: "every OSD Ready", osds: flintv1.OSDCounts{Total: 3, Ready: 3}, status: metav1.ConditionFalse, reason: flintv1.PoolAllOSDsReadyReason},
		{name: "no OSD at all", status: metav1.ConditionFalse, reason: flintv1.PoolNoOSDsReason},
		{name: "some not Ready", osds: flintv1.OSDCounts{Total: 3, Ready: 1, Starting: 1, Failed: 1}, status: metav1.ConditionTrue, reason: flintv1.PoolOSDsNotReadyReason,
			says: "2 of 3 OSDs are not Ready (pending 0, starting 1, degraded 0, failed 1, draining 0)"},
		{name: "OSDs that left the devices", osds: flintv1.OSDCounts{Total: 4, Ready: 2, Draining: 2}, draining: []string{"o4", "o3"}, status: metav1.ConditionTrue,
			reason: flintv1.PoolOSDsDrainingReason, says: "left the Pool's devices and drain before deletion: o3, o4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := &flintv1.Pool{Status: flintv1.PoolStatus{OSDs: tc.osds}}
			(&Reconciler{}).setDegraded(pool, tc.draining)
			c := meta.FindStatusCondition(pool.Status.Conditions, flintv1.DegradedCondition)
			if c == nil || c.Status != tc.status || c.Reason != tc.reason || !strings.Contains(c.Message, tc.says) {
				t.Fatalf("Degraded = %+v; want %s, %s, saying %q", c, tc.status, tc.reason, tc.says)
			}
		})
	}
}
