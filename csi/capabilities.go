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
	"fmt"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Flint volumes attach to one node at a time: a raid1 target exported
// to a host's kernel, with a local filesystem or a raw device on top.
var singleNodeModes = []csi.VolumeCapability_AccessMode_Mode{
	csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
	csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
	csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER,
	csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER,
}

// FsTypes are the filesystems the node service makes and grows.
var FsTypes = []string{"ext4", "xfs"}

// DefaultFsType is used when neither the capability nor the StorageClass
// names one.
const DefaultFsType = "ext4"

// checkCapability says, as an InvalidArgument, what is wrong with c.
func checkCapability(c *csi.VolumeCapability) error {
	if c == nil {
		return status.Error(codes.InvalidArgument, "volume capability missing")
	}
	mode := c.GetAccessMode().GetMode()
	if !slices.Contains(singleNodeModes, mode) {
		return status.Errorf(codes.InvalidArgument, "access mode %s is not supported: a Flint volume attaches to one node at a time; use ReadWriteOnce or ReadWriteOncePod", mode)
	}
	switch t := c.GetAccessType().(type) {
	case *csi.VolumeCapability_Block:
	case *csi.VolumeCapability_Mount:
		if fs := t.Mount.GetFsType(); fs != "" && !slices.Contains(FsTypes, fs) {
			return status.Errorf(codes.InvalidArgument, "fsType %q is not supported: use one of %v", fs, FsTypes)
		}
	default:
		return status.Error(codes.InvalidArgument, "volume capability has neither block nor mount access type")
	}
	return nil
}

func checkCapabilities(caps []*csi.VolumeCapability) error {
	if len(caps) == 0 {
		return status.Error(codes.InvalidArgument, "volume capabilities missing: name at least one")
	}
	for _, c := range caps {
		if err := checkCapability(c); err != nil {
			return err
		}
	}
	return nil
}

func isBlock(c *csi.VolumeCapability) bool { return c.GetBlock() != nil }

func requireField(value, name string) error {
	if value == "" {
		return status.Error(codes.InvalidArgument, fmt.Sprintf("%s missing", name))
	}
	return nil
}
