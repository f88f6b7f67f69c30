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

// KeyringFileAddKey registers the key kept in file path under name. A
// name already taken is jsonrpc.ErrExists; a path that is relative or
// open to group or others is refused with EPERM.
func (c *Client) KeyringFileAddKey(ctx context.Context, name, path string) error {
	return c.rpc.Call(ctx, "keyring_file_add_key", types.KeyringFileAddKeyRequest{Name: name, Path: path}, nil)
}

// KeyringFileRemoveKey removes a file key. Whatever holds it (a host of a
// subsystem, a controller) keeps it, unusable, until it lets go. A key
// missing is ENOKEY.
func (c *Client) KeyringFileRemoveKey(ctx context.Context, name string) error {
	return c.rpc.Call(ctx, "keyring_file_remove_key", types.BdevNameRequest{Name: name}, nil)
}

// KeyringGetKeys lists the keyring's keys.
func (c *Client) KeyringGetKeys(ctx context.Context) ([]types.Key, error) {
	var keys []types.Key
	err := c.rpc.Call(ctx, "keyring_get_keys", nil, &keys)
	return keys, err
}
