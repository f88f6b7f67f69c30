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

package csi

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/csi/nvmeof"
)

// A planned move's standby is followed beside the target's paths, so the
// host holds a path to the new target before the old one stops; a stage
// connects the serving target alone, and nothing is followed before the
// target serves (endpoints recorded).
func TestTheTargetsPathsIncludeAPlannedMovesStandby(t *testing.T) {
	old := flintv1.Endpoint{Transport: "tcp", Address: "10.0.0.1", Port: 4420}
	next := flintv1.Endpoint{Transport: "tcp", Address: "10.0.0.2", Port: 4420}
	vol := &flintv1.Volume{ObjectMeta: metav1.ObjectMeta{Name: "v"}, Status: flintv1.VolumeStatus{Target: &flintv1.VolumeTarget{
		OSD: "a", NQN: "nqn.2026-01.io.flint:volume:v", Endpoints: []flintv1.Endpoint{old},
		Standby: &flintv1.VolumeStandby{OSD: "b", Epoch: 2, Endpoints: []flintv1.Endpoint{next}},
	}}}
	got, ok := followedOf(vol)
	want := []nvmeof.Path{{Transport: "tcp", Address: "10.0.0.1", Port: 4420}, {Transport: "tcp", Address: "10.0.0.2", Port: 4420}}
	if !ok || !slices.Equal(got.Paths, want) {
		t.Fatalf("targetOf = %+v, %t; want the target's path and the standby's: %+v", got, ok, want)
	}
	if got, _ := targetOf(vol); len(got.Paths) != 1 {
		t.Fatalf("a stage would connect %+v, want the serving target's path alone", got.Paths)
	}
	vol.Status.Target.Endpoints = nil
	if got, ok := followedOf(vol); ok {
		t.Fatalf("a target that does not serve yet is followed to %+v", got)
	}
}
