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
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestCheckCapability(t *testing.T) {
	mode := func(m csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability_AccessMode {
		return &csi.VolumeCapability_AccessMode{Mode: m}
	}
	mount := func(fs string) *csi.VolumeCapability_Mount {
		return &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fs}}
	}
	block := &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
	for _, tt := range []struct {
		name string
		c    *csi.VolumeCapability
		code codes.Code
	}{
		{"RWO filesystem", &csi.VolumeCapability{AccessMode: mode(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER), AccessType: mount("xfs")}, codes.OK},
		{"RWOP block", &csi.VolumeCapability{AccessMode: mode(csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER), AccessType: block}, codes.OK},
		{"RWX", &csi.VolumeCapability{AccessMode: mode(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER), AccessType: block}, codes.InvalidArgument},
		{"an unknown filesystem", &csi.VolumeCapability{AccessMode: mode(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER), AccessType: mount("zfs")}, codes.InvalidArgument},
		{"no access type", &csi.VolumeCapability{AccessMode: mode(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)}, codes.InvalidArgument},
		{"none", nil, codes.InvalidArgument},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkCapability(tt.c); status.Code(err) != tt.code {
				t.Fatalf("err = %v, want %s", err, tt.code)
			}
		})
	}
}
