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

package client

import (
	"context"

	"github.com/flint-io/flint/internal/spdk/types"
)

// The flint_volume module's methods: flint_tgt's, which nvmf_tgt lacks
// (it answers "Method not found").

// FlintVolumeCreate puts a flint_volume over a base bdev; the same call
// again succeeds.
func (c *Client) FlintVolumeCreate(ctx context.Context, req types.FlintVolumeCreateRequest) error {
	return c.rpc.Call(ctx, "flint_volume_create", req, nil)
}

// FlintVolumeDelete deletes a flint_volume (refused while it is paused or
// a copy from it runs); one that is gone already succeeds.
func (c *Client) FlintVolumeDelete(ctx context.Context, name string) error {
	return c.rpc.Call(ctx, "flint_volume_delete", types.BdevNameRequest{Name: name}, nil)
}

// FlintVolumePause returns once the flint_volume's I/O has drained; new
// host I/O then waits in SPDK until FlintVolumeResume.
func (c *Client) FlintVolumePause(ctx context.Context, name string) error {
	return c.rpc.Call(ctx, "flint_volume_pause", types.BdevNameRequest{Name: name}, nil)
}

// FlintVolumeResume lets a paused flint_volume's host I/O go on.
func (c *Client) FlintVolumeResume(ctx context.Context, name string) error {
	return c.rpc.Call(ctx, "flint_volume_resume", types.BdevNameRequest{Name: name}, nil)
}

// FlintVolumeAttach gives a paused flint_volume whose base was deleted
// another base of its size.
func (c *Client) FlintVolumeAttach(ctx context.Context, req types.FlintVolumeAttachRequest) error {
	return c.rpc.Call(ctx, "flint_volume_attach", req, nil)
}

// FlintVolumeMark starts member's write-intent map: the blocks of every
// write in flight through the flint_volume, and of every later one. A
// member marked already keeps its map.
func (c *Client) FlintVolumeMark(ctx context.Context, name, member string) error {
	return c.rpc.Call(ctx, "flint_volume_mark", types.FlintVolumeMemberRequest{Name: name, Member: member}, nil)
}

// FlintVolumeForget drops member's map; one with none succeeds.
func (c *Client) FlintVolumeForget(ctx context.Context, name, member string) error {
	return c.rpc.Call(ctx, "flint_volume_forget", types.FlintVolumeMemberRequest{Name: name, Member: member}, nil)
}

// FlintVolumeGetDirty reads member's map.
func (c *Client) FlintVolumeGetDirty(ctx context.Context, req types.FlintVolumeGetDirtyRequest) (types.FlintVolumeDirty, error) {
	var dirty types.FlintVolumeDirty
	err := c.rpc.Call(ctx, "flint_volume_get_dirty", req, &dirty)
	return dirty, err
}

// FlintVolumeCopy starts copying member's dirty blocks to its bdev in the
// background (FlintVolumeGetDirty tells how it goes); one that runs to the
// same bdev already is success.
func (c *Client) FlintVolumeCopy(ctx context.Context, req types.FlintVolumeCopyRequest) error {
	return c.rpc.Call(ctx, "flint_volume_copy", req, nil)
}
