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

// BdevRaidCreate creates a raid bdev.
func (c *Client) BdevRaidCreate(ctx context.Context, req types.BdevRaidCreateRequest) error {
	return c.rpc.Call(ctx, "bdev_raid_create", req, nil)
}

// BdevRaidDelete deletes a raid bdev and releases its base bdevs.
func (c *Client) BdevRaidDelete(ctx context.Context, name string) error {
	return c.rpc.Call(ctx, "bdev_raid_delete", types.BdevNameRequest{Name: name}, nil)
}

// BdevRaidAddBaseBdev adds a base bdev to a raid's empty slot; raid1
// rebuilds onto it.
func (c *Client) BdevRaidAddBaseBdev(ctx context.Context, raid, base string) error {
	return c.rpc.Call(ctx, "bdev_raid_add_base_bdev", types.BdevRaidAddBaseBdevRequest{RaidBdev: raid, BaseBdev: base}, nil)
}

// BdevRaidSetOptions sets the raid module's options; a rebuild takes the
// bandwidth cap set when it starts.
func (c *Client) BdevRaidSetOptions(ctx context.Context, req types.BdevRaidSetOptionsRequest) error {
	return c.rpc.Call(ctx, "bdev_raid_set_options", req, nil)
}

// BdevRaidRemoveBaseBdev removes a base bdev from its raid; removing the
// last one deletes the raid.
func (c *Client) BdevRaidRemoveBaseBdev(ctx context.Context, base string) error {
	return c.rpc.Call(ctx, "bdev_raid_remove_base_bdev", types.BdevNameRequest{Name: base}, nil)
}

// BdevRaidGetBdevs lists raids of a category (types.RaidCategoryAll, …).
func (c *Client) BdevRaidGetBdevs(ctx context.Context, category string) ([]types.RaidBdev, error) {
	var raids []types.RaidBdev
	err := c.rpc.Call(ctx, "bdev_raid_get_bdevs", types.BdevRaidGetBdevsRequest{Category: category}, &raids)
	return raids, err
}
