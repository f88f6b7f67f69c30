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
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestStoppedByTheKubelet(t *testing.T) {
	terminated := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	pod := func(phase corev1.PodPhase, states ...corev1.ContainerState) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "spdk"}, {Name: "agent"}}}, Status: corev1.PodStatus{Phase: phase}}
		for i, s := range states {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: p.Spec.Containers[i].Name, State: s})
		}
		return p
	}
	disrupted := func(reason string) func(*corev1.Pod) *corev1.Pod {
		return func(p *corev1.Pod) *corev1.Pod {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason})
			return p
		}
	}
	gcMarked, evicted := disrupted("DeletionByPodGC"), disrupted("EvictionByEvictionAPI")
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"removed by its kubelet: terminal phase, every container terminated", pod(corev1.PodFailed, terminated, terminated), true},
		{"succeeded, every container terminated", pod(corev1.PodSucceeded, terminated, terminated), true},
		{"deleted by force while it ran", pod(corev1.PodRunning, running, running), false},
		{"marked Failed by the pod garbage collector, its containers as last reported", pod(corev1.PodFailed, running, running), false},
		{"marked Failed by the pod garbage collector over terminated states the kubelet wrote before a restart", gcMarked(pod(corev1.PodFailed, terminated, terminated)), false},
		{"evicted by the eviction API, then stopped by its kubelet", evicted(pod(corev1.PodFailed, terminated, terminated)), true},
		{"one container terminated, the other still running", pod(corev1.PodFailed, terminated, running), false},
		{"a container with no status", pod(corev1.PodFailed, terminated), false},
		{"never ran", pod(corev1.PodPending), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stoppedByTheKubelet(tt.pod); got != tt.want {
				t.Fatalf("stoppedByTheKubelet = %v, want %v", got, tt.want)
			}
		})
	}
}
