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
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/agentclient"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// An OSD's pod goes, or may be evicted, only once the Pool's rollout
// chose the OSD and nothing of a Volume's needs it any more.
func TestStopWaitsForTheRolloutAndTheVolumes(t *testing.T) {
	const on, stale = flintv1.ReplicaStateOnline, flintv1.ReplicaStateStale
	volume := func(target string, state flintv1.ReplicaState, members ...string) *flintv1.Volume {
		return &flintv1.Volume{ObjectMeta: metav1.ObjectMeta{Name: "v"}, Status: flintv1.VolumeStatus{
			Target:   &flintv1.VolumeTarget{OSD: target, Members: members},
			Replicas: []flintv1.ReplicaStatus{{OSD: "osd-b", State: on}, {OSD: "osd-a", State: state}},
		}}
	}
	for _, tc := range []struct {
		name                string
		outdated, cordoned  bool
		chosen, serving     bool
		vol                 *flintv1.Volume
		targetsOnAgent      int
		wantReason          string
		wantDeleted, wantOK bool // the pod deleted; labelled ready to stop
	}{
		{name: "an outdated pod waits for the rollout", outdated: true, serving: true, vol: volume("osd-b", stale, "osd-b")},
		{name: "an outdated pod of an OSD that does not serve goes at once", outdated: true, vol: volume("osd-b", on, "osd-b", "osd-a"), wantDeleted: true},
		{name: "a chosen OSD keeps its pod while a target is on it", outdated: true, chosen: true, serving: true, vol: volume("osd-a", on, "osd-b", "osd-a"), wantReason: flintv1.OSDRollingUpdateReason},
		{name: "or while its agent still runs one", outdated: true, chosen: true, serving: true, vol: volume("osd-b", stale, "osd-b"), targetsOnAgent: 1, wantReason: flintv1.OSDRollingUpdateReason},
		{name: "or while a replica is in sync", outdated: true, chosen: true, serving: true, vol: volume("osd-b", on, "osd-b", "osd-a"), wantReason: flintv1.OSDRollingUpdateReason},
		{name: "or while the target's raid holds it", outdated: true, chosen: true, serving: true, vol: volume("osd-b", stale, "osd-b", "osd-a"), wantReason: flintv1.OSDRollingUpdateReason},
		{name: "a stopped OSD's outdated pod is replaced", outdated: true, chosen: true, serving: true, vol: volume("osd-b", stale, "osd-b"), wantReason: flintv1.OSDRollingUpdateReason, wantDeleted: true},
		{name: "a stopped OSD on a cordoned node is ready for eviction", cordoned: true, chosen: true, serving: true, vol: volume("osd-b", stale, "osd-b"), wantReason: flintv1.OSDNodeCordonedReason, wantOK: true},
		{name: "an up-to-date OSD the rollout still lists does not stop", chosen: true, serving: true, vol: volume("osd-b", stale, "osd-b")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			_ = clientgoscheme.AddToScheme(scheme)
			_ = flintv1.AddToScheme(scheme)
			osd := &flintv1.OSD{ObjectMeta: metav1.ObjectMeta{Name: "osd-a"}, Spec: flintv1.OSDSpec{Pool: "p", NodeName: "n-a"}}
			pool := &flintv1.Pool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
			if tc.chosen {
				pool.Status.Rollout = &flintv1.RolloutStatus{Domains: []string{"a"}, OSDs: []string{"osd-a"}}
			}
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-a"}, Spec: corev1.NodeSpec{Unschedulable: tc.cordoned}}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "flint", Name: "osd-osd-a", Labels: map[string]string{flintv1.LabelOSD: "osd-a"}}}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(osd, pool, node, pod, tc.vol).Build()
			r := &Reconciler{Client: c, Recorder: events.NewFakeRecorder(10), Pods: PodConfig{Namespace: "flint"}, Agents: &agentclient.Agents{Dialer: &agentclient.Dialer{}, Leases: &agentclient.Leases{}}}
			var inv *agentv1.OSDStatus // the agent did not answer ready
			if tc.serving {
				osd.Status.Phase = flintv1.OSDPhaseReady
				inv = &agentv1.OSDStatus{Ready: true}
				for range tc.targetsOnAgent {
					inv.Targets = append(inv.Targets, &agentv1.TargetSummary{})
				}
			}
			st, err := r.stop(context.Background(), osd, pod, tc.outdated, inv)
			if err != nil {
				t.Fatal(err)
			}
			var got corev1.Pod
			err = c.Get(context.Background(), client.ObjectKeyFromObject(pod), &got)
			deleted := apierrors.IsNotFound(err)
			_, ready := got.Labels[flintv1.LabelStopReady]
			if st.reason != tc.wantReason || deleted != tc.wantDeleted || ready != tc.wantOK {
				t.Fatalf("stop: reason %q (%s), pod deleted %t, ready to stop %t; want reason %q, deleted %t, ready %t",
					st.reason, st.message, deleted, ready, tc.wantReason, tc.wantDeleted, tc.wantOK)
			}
		})
	}
}
