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
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

func TestObservePod(t *testing.T) {
	now := metav1.Now()
	running := corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.7"}
	for _, tc := range []struct {
		name    string
		pod     corev1.Pod
		running bool
		phase   flintv1.OSDPhase
		reason  string
		says    string
	}{
		{name: "running with an address: ask the agent", pod: corev1.Pod{Status: running}, running: true},
		{name: "terminating", pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now, Finalizers: []string{"x"}}, Status: running},
			phase: flintv1.OSDPhasePending, reason: flintv1.OSDPodTerminatingReason, says: "its successor starts when it is gone"},
		{name: "failed", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "low on memory"}},
			phase: flintv1.OSDPhaseFailed, reason: flintv1.OSDPodFailedReason, says: "Evicted low on memory"},
		{name: "unschedulable", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: "0/3 nodes are available: 3 Insufficient hugepages-2Mi."}}}},
			phase: flintv1.OSDPhasePending, reason: flintv1.OSDUnschedulableReason, says: "Insufficient hugepages-2Mi"},
		{name: "a container that cannot start", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "agent", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "pull access denied"}}}}}},
			phase: flintv1.OSDPhaseStarting, reason: flintv1.OSDContainerWaitingReason, says: "ImagePullBackOff pull access denied"},
		{name: "running without an address yet", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}},
			phase: flintv1.OSDPhasePending, reason: flintv1.OSDPodNotRunningReason},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.pod.Name = "osd-a"
			obs, running := observePod(&tc.pod)
			if running != tc.running || obs.phase != tc.phase || obs.reason != tc.reason || !strings.Contains(obs.detail, tc.says) {
				t.Fatalf("observePod = %+v, running %v; want %s %s saying %q, running %v", obs, running, tc.phase, tc.reason, tc.says, tc.running)
			}
		})
	}
}

func TestObserveAgent(t *testing.T) {
	endpoint := &agentv1.Export{Transport: "tcp", Address: "10.0.0.7", Port: 4420}
	serving := func(targets ...*agentv1.TargetSummary) *agentv1.OSDStatus {
		return &agentv1.OSDStatus{Ready: true, Endpoint: endpoint, TotalBytes: 1 << 30, FreeBytes: 1 << 29, Targets: targets}
	}
	for _, tc := range []struct {
		name   string
		drain  bool
		st     *agentv1.OSDStatus
		phase  flintv1.OSDPhase
		reason string
		says   string
	}{
		{name: "serving", st: serving(&agentv1.TargetSummary{Members: 3, Online: 3}), phase: flintv1.OSDPhaseReady, reason: flintv1.OSDServingReason},
		{name: "a target short of a member", st: serving(&agentv1.TargetSummary{Members: 3, Online: 3}, &agentv1.TargetSummary{Members: 3, Online: 2}),
			phase: flintv1.OSDPhaseDegraded, reason: flintv1.OSDTargetsDegradedReason, says: "1 volume targets"},
		{name: "draining outranks degraded", drain: true, st: serving(&agentv1.TargetSummary{Members: 3, Online: 2}),
			phase: flintv1.OSDPhaseDraining, reason: flintv1.OSDDrainingReason},
		{name: "an endpoint no host can reach", st: &agentv1.OSDStatus{Ready: true, Endpoint: &agentv1.Export{Transport: "tcp", Address: "storage-0", Port: 4420}},
			phase: flintv1.OSDPhaseFailed, reason: flintv1.OSDBadEndpointReason, says: "no host can connect to"},
		{name: "a device another owner holds", st: &agentv1.OSDStatus{NotReadyCode: agentv1.NotReadyCode_NOT_READY_CODE_FOREIGN_DEVICE, NotReadyReason: "the device holds an lvstore of another OSD"},
			phase: flintv1.OSDPhaseFailed, reason: flintv1.OSDForeignDeviceReason, says: "another OSD"},
		{name: "SPDK not up yet", st: &agentv1.OSDStatus{NotReadyCode: agentv1.NotReadyCode_NOT_READY_CODE_SPDK_DOWN, NotReadyReason: "SPDK does not answer"},
			phase: flintv1.OSDPhaseStarting, reason: flintv1.OSDSPDKDownReason},
		{name: "any other start", st: &agentv1.OSDStatus{NotReadyReason: "loading the lvstore"},
			phase: flintv1.OSDPhaseStarting, reason: flintv1.OSDAgentNotReadyReason, says: "loading the lvstore"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			osd := &flintv1.OSD{Spec: flintv1.OSDSpec{Drain: tc.drain}}
			obs := observeAgent(osd, "osd-a", tc.st)
			if obs.phase != tc.phase || obs.reason != tc.reason || !strings.Contains(obs.detail, tc.says) {
				t.Fatalf("observeAgent = %s %s %q; want %s %s saying %q", obs.phase, obs.reason, obs.detail, tc.phase, tc.reason, tc.says)
			}
			if serves := obs.status != nil; serves != (tc.st.GetReady() && obs.phase != flintv1.OSDPhaseFailed) {
				t.Errorf("status recorded: %v, for phase %s", serves, obs.phase)
			}
		})
	}
}
