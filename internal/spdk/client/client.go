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

// Package client is Flint's typed SPDK client: one method per JSON-RPC
// method, named after it. Errors are *jsonrpc.Error answers, matched with
// errors.Is against jsonrpc.ErrExists, ErrNotFound, ErrNoSpace, ErrInvalid
// and ErrNotPermitted. Every call takes a context; without a deadline,
// jsonrpc.DefaultTimeout applies. A lookup by name answers at least one
// item or an error, so callers may take the first.
package client

import (
	"context"
	"fmt"

	"github.com/flint-io/flint/internal/spdk/jsonrpc"
	"github.com/flint-io/flint/internal/spdk/types"
)

// Client calls one SPDK application. It is safe for concurrent use and
// redials after the application restarts.
type Client struct {
	rpc *jsonrpc.Client
}

// New returns a client of the SPDK application listening on socket.
func New(socket string) *Client {
	return &Client{rpc: jsonrpc.NewClient(socket)}
}

// Close closes the connection.
func (c *Client) Close() error { return c.rpc.Close() }

// Socket is the path of SPDK's RPC socket.
func (c *Client) Socket() string { return c.rpc.Socket() }

// named makes an empty answer to a lookup by name an error: SPDK answers
// -19 for a name it does not know, so an empty list is a malformed answer,
// and callers index the first item.
func named[T any](method, name string, items []T, err error) ([]T, error) {
	if err == nil && name != "" && len(items) == 0 {
		return nil, fmt.Errorf("spdk %s %s: %w: the answer lists nothing", method, name, jsonrpc.ErrNotFound)
	}
	return items, err
}

// SpdkGetVersion returns SPDK's version.
func (c *Client) SpdkGetVersion(ctx context.Context) (types.SpdkVersion, error) {
	var v types.SpdkVersion
	err := c.rpc.Call(ctx, "spdk_get_version", nil, &v)
	return v, err
}

// RPCGetMethods lists the methods SPDK answers: those of the modules
// linked into the application.
func (c *Client) RPCGetMethods(ctx context.Context) ([]string, error) {
	var methods []string
	err := c.rpc.Call(ctx, "rpc_get_methods", nil, &methods)
	return methods, err
}

// LogSetLevel sets the level of messages SPDK logs.
func (c *Client) LogSetLevel(ctx context.Context, level string) error {
	return c.rpc.Call(ctx, "log_set_level", types.LogSetLevelRequest{Level: level}, nil)
}

// LogSetPrintLevel sets the level of messages SPDK prints to stderr.
func (c *Client) LogSetPrintLevel(ctx context.Context, level string) error {
	return c.rpc.Call(ctx, "log_set_print_level", types.LogSetLevelRequest{Level: level}, nil)
}
