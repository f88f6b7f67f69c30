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
	"reflect"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/csi/nvmeof"
)

func TestTargetFromContext(t *testing.T) {
	const nqn = "nqn.2026-01.io.flint:volume:pvc-1"
	tests := []struct {
		name string
		pc   map[string]string
		want codes.Code
	}{
		{"valid, two paths", map[string]string{PublishNQN: nqn, PublishTransport: "tcp", PublishPaths: "10.0.0.5:4420,[fd00::5]:4420"}, codes.OK},
		{"missing paths", map[string]string{PublishNQN: nqn, PublishTransport: "tcp"}, codes.InvalidArgument},
		{"not host:port", map[string]string{PublishNQN: nqn, PublishTransport: "tcp", PublishPaths: "10.0.0.5"}, codes.InvalidArgument},
		{"options injected in the NQN", map[string]string{PublishNQN: nqn + ",hostnqn=nqn.evil", PublishTransport: "tcp", PublishPaths: "10.0.0.5:4420"}, codes.InvalidArgument},
		{"options injected in the transport", map[string]string{PublishNQN: nqn, PublishTransport: "tcp,traddr=10.9.9.9", PublishPaths: "10.0.0.5:4420"}, codes.InvalidArgument},
		{"a host name", map[string]string{PublishNQN: nqn, PublishTransport: "tcp", PublishPaths: "target.example:4420"}, codes.InvalidArgument},
		{"port out of range", map[string]string{PublishNQN: nqn, PublishTransport: "tcp", PublishPaths: "10.0.0.5:99999999999"}, codes.InvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := targetFromContext("pvc-1", tc.pc)
			if status.Code(err) != tc.want {
				t.Fatalf("targetFromContext = %+v, %v; want %s", got, err, tc.want)
			}
			if tc.want == codes.OK && (len(got.Paths) != 2 || got.Paths[1] != (nvmeof.Path{Transport: "tcp", Address: "fd00::5", Port: 4420})) {
				t.Fatalf("paths = %+v", got.Paths)
			}
		})
	}
}

// What ControllerPublishVolume returns, the node reads back as the same
// target.
func TestPublishContextRoundTrip(t *testing.T) {
	target := &flintv1.VolumeTarget{NQN: fuzzNQN, Endpoints: []flintv1.Endpoint{
		{Transport: "tcp", Address: "10.0.0.5", Port: 4420}, {Transport: "tcp", Address: "fd00::6", Port: 4421},
	}}
	got, err := targetFromContext("vol", publishContext(target))
	if err != nil {
		t.Fatal(err)
	}
	want := Target{VolumeID: "vol", NQN: fuzzNQN, Paths: []nvmeof.Path{
		{Transport: "tcp", Address: "10.0.0.5", Port: 4420}, {Transport: "tcp", Address: "fd00::6", Port: 4421},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("target = %+v, want %+v", got, want)
	}
}
