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

package v1alpha1_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flint-io/flint/api/v1alpha1"
)

func TestReplicasHeld(t *testing.T) {
	osd := &v1alpha1.OSD{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	vols := []v1alpha1.Volume{
		{Status: v1alpha1.VolumeStatus{Replicas: []v1alpha1.ReplicaStatus{{OSD: "a"}, {OSD: "b"}}}},
		{Status: v1alpha1.VolumeStatus{Target: &v1alpha1.VolumeTarget{OSD: "a"}, Replicas: []v1alpha1.ReplicaStatus{{OSD: "a"}}}},
		{Status: v1alpha1.VolumeStatus{Target: &v1alpha1.VolumeTarget{OSD: "a"}}},
		{Status: v1alpha1.VolumeStatus{Replicas: []v1alpha1.ReplicaStatus{{OSD: "b"}}}},
	}
	if got := osd.ReplicasHeld(vols); got != 3 {
		t.Errorf("ReplicasHeld = %d, want 3 (one per Volume placing a replica or its target on it)", got)
	}
	osd.Status.Replicas = 5
	if got := osd.ReplicasHeld(vols); got != 5 {
		t.Errorf("ReplicasHeld = %d, want the agent's 5", got)
	}
}
