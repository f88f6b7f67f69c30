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

// BdevLvolCreateLvstore creates an lvstore and returns its uuid.
func (c *Client) BdevLvolCreateLvstore(ctx context.Context, req types.BdevLvolCreateLvstoreRequest) (string, error) {
	var uuid string
	err := c.rpc.Call(ctx, "bdev_lvol_create_lvstore", req, &uuid)
	return uuid, err
}

// BdevLvolGetLvstores lists lvstores, or the one sel picks.
func (c *Client) BdevLvolGetLvstores(ctx context.Context, sel types.LvstoreSelector) ([]types.Lvstore, error) {
	var stores []types.Lvstore
	err := c.rpc.Call(ctx, "bdev_lvol_get_lvstores", optional(sel, sel != types.LvstoreSelector{}), &stores)
	return named("bdev_lvol_get_lvstores", sel.LvsName+sel.UUID, stores, err)
}

// BdevLvolDeleteLvstore destroys an lvstore and every lvol in it.
func (c *Client) BdevLvolDeleteLvstore(ctx context.Context, sel types.LvstoreSelector) error {
	return c.rpc.Call(ctx, "bdev_lvol_delete_lvstore", sel, nil)
}

// BdevLvolCreate creates an lvol and returns its uuid.
func (c *Client) BdevLvolCreate(ctx context.Context, req types.BdevLvolCreateRequest) (string, error) {
	var uuid string
	err := c.rpc.Call(ctx, "bdev_lvol_create", req, &uuid)
	return uuid, err
}

// BdevLvolResize resizes an lvol. A thin lvol may exceed the lvstore.
func (c *Client) BdevLvolResize(ctx context.Context, name string, sizeMiB uint64) error {
	return c.rpc.Call(ctx, "bdev_lvol_resize", types.BdevLvolResizeRequest{Name: name, SizeInMiB: sizeMiB}, nil)
}

// BdevLvolSnapshot snapshots an lvol and returns the snapshot's uuid.
func (c *Client) BdevLvolSnapshot(ctx context.Context, lvol, snapshot string) (string, error) {
	var uuid string
	err := c.rpc.Call(ctx, "bdev_lvol_snapshot", types.BdevLvolSnapshotRequest{LvolName: lvol, SnapshotName: snapshot}, &uuid)
	return uuid, err
}

// BdevLvolClone clones a snapshot and returns the clone's uuid.
func (c *Client) BdevLvolClone(ctx context.Context, snapshot, clone string) (string, error) {
	var uuid string
	err := c.rpc.Call(ctx, "bdev_lvol_clone", types.BdevLvolCloneRequest{SnapshotName: snapshot, CloneName: clone}, &uuid)
	return uuid, err
}

// BdevLvolDelete deletes an lvol. A snapshot with two or more clones cannot
// be deleted; one with one clone is merged into it.
func (c *Client) BdevLvolDelete(ctx context.Context, name string) error {
	return c.rpc.Call(ctx, "bdev_lvol_delete", types.BdevNameRequest{Name: name}, nil)
}

// BdevLvolGetLvols lists lvols, of one lvstore when req names it.
func (c *Client) BdevLvolGetLvols(ctx context.Context, req types.BdevLvolGetLvolsRequest) ([]types.Lvol, error) {
	var lvols []types.Lvol
	err := c.rpc.Call(ctx, "bdev_lvol_get_lvols", optional(req, req != types.BdevLvolGetLvolsRequest{}), &lvols)
	return lvols, err
}
