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

// NvmfCreateTransport creates an NVMe-oF transport.
func (c *Client) NvmfCreateTransport(ctx context.Context, req types.NvmfCreateTransportRequest) error {
	return c.rpc.Call(ctx, "nvmf_create_transport", req, nil)
}

// NvmfGetTransports lists transports, or the one of trtype.
func (c *Client) NvmfGetTransports(ctx context.Context, trtype string) ([]types.NvmfTransport, error) {
	var ts []types.NvmfTransport
	err := c.rpc.Call(ctx, "nvmf_get_transports", optional(types.NvmfGetTransportsRequest{Trtype: trtype}, trtype != ""), &ts)
	return named("nvmf_get_transports", trtype, ts, err)
}

// NvmfCreateSubsystem creates a subsystem.
func (c *Client) NvmfCreateSubsystem(ctx context.Context, req types.NvmfCreateSubsystemRequest) error {
	return c.rpc.Call(ctx, "nvmf_create_subsystem", req, nil)
}

// NvmfDeleteSubsystem deletes a subsystem, dropping its connections and
// releasing its namespaces' bdevs.
func (c *Client) NvmfDeleteSubsystem(ctx context.Context, nqn string) error {
	return c.rpc.Call(ctx, "nvmf_delete_subsystem", types.NQNRequest{NQN: nqn}, nil)
}

// NvmfGetSubsystems lists subsystems (the discovery subsystem included), or
// the one of nqn.
func (c *Client) NvmfGetSubsystems(ctx context.Context, nqn string) ([]types.NvmfSubsystem, error) {
	var subs []types.NvmfSubsystem
	err := c.rpc.Call(ctx, "nvmf_get_subsystems", optional(types.NvmfGetSubsystemsRequest{NQN: nqn}, nqn != ""), &subs)
	return named("nvmf_get_subsystems", nqn, subs, err)
}

// NvmfSubsystemGetControllers lists the controllers hosts hold on
// subsystem nqn. SPDK answers a missing subsystem with "Invalid
// parameters" (jsonrpc.ErrInvalid), not ErrNotFound.
func (c *Client) NvmfSubsystemGetControllers(ctx context.Context, nqn string) ([]types.NvmfController, error) {
	var ctrlrs []types.NvmfController
	err := c.rpc.Call(ctx, "nvmf_subsystem_get_controllers", types.NQNRequest{NQN: nqn}, &ctrlrs)
	return ctrlrs, err
}

// NvmfSubsystemGetQpairs lists the queue pairs hosts hold on subsystem
// nqn, with how each authenticated. The double does not model queues.
func (c *Client) NvmfSubsystemGetQpairs(ctx context.Context, nqn string) ([]types.NvmfQpair, error) {
	var qpairs []types.NvmfQpair
	err := c.rpc.Call(ctx, "nvmf_subsystem_get_qpairs", types.NQNRequest{NQN: nqn}, &qpairs)
	return qpairs, err
}

// NvmfSubsystemAddNs adds a namespace and returns its nsid.
func (c *Client) NvmfSubsystemAddNs(ctx context.Context, nqn string, ns types.NvmfNamespaceRequest) (uint32, error) {
	var nsid uint32
	err := c.rpc.Call(ctx, "nvmf_subsystem_add_ns", types.NvmfSubsystemAddNsRequest{NQN: nqn, Namespace: ns}, &nsid)
	return nsid, err
}

// NvmfSubsystemAddListener adds a listener.
func (c *Client) NvmfSubsystemAddListener(ctx context.Context, nqn string, addr types.ListenAddress) error {
	return c.rpc.Call(ctx, "nvmf_subsystem_add_listener", types.NvmfSubsystemListenerRequest{NQN: nqn, ListenAddress: addr}, nil)
}

// NvmfSubsystemRemoveListener removes a listener, dropping its connections.
func (c *Client) NvmfSubsystemRemoveListener(ctx context.Context, nqn string, addr types.ListenAddress) error {
	return c.rpc.Call(ctx, "nvmf_subsystem_remove_listener", types.NvmfSubsystemListenerRequest{NQN: nqn, ListenAddress: addr}, nil)
}

// NvmfSubsystemGetListeners lists subsystem nqn's listeners with their
// ANA states.
func (c *Client) NvmfSubsystemGetListeners(ctx context.Context, nqn string) ([]types.NvmfListener, error) {
	var listeners []types.NvmfListener
	err := c.rpc.Call(ctx, "nvmf_subsystem_get_listeners", types.NQNRequest{NQN: nqn}, &listeners)
	return listeners, err
}

// NvmfSubsystemListenerSetAnaState sets the ANA state a listener reports.
func (c *Client) NvmfSubsystemListenerSetAnaState(ctx context.Context, req types.NvmfListenerAnaStateRequest) error {
	return c.rpc.Call(ctx, "nvmf_subsystem_listener_set_ana_state", req, nil)
}

// NvmfSubsystemSetNsAnaGroup moves a namespace to an ANA group, once no
// I/O to it is outstanding.
func (c *Client) NvmfSubsystemSetNsAnaGroup(ctx context.Context, req types.NvmfNsAnaGroupRequest) error {
	return c.rpc.Call(ctx, "nvmf_subsystem_set_ns_ana_group", req, nil)
}

// NvmfSubsystemAddHost allows a host to connect, authenticating with the
// request's keys when it names them. A host already allowed is refused
// (jsonrpc.CodeInternalError); a key the keyring lacks is
// jsonrpc.CodeInvalidParams.
func (c *Client) NvmfSubsystemAddHost(ctx context.Context, req types.NvmfSubsystemHostRequest) error {
	return c.rpc.Call(ctx, "nvmf_subsystem_add_host", req, nil)
}

// NvmfSubsystemRemoveHost disallows a host and drops its live connections.
func (c *Client) NvmfSubsystemRemoveHost(ctx context.Context, nqn, host string) error {
	return c.rpc.Call(ctx, "nvmf_subsystem_remove_host", types.NvmfSubsystemHostRequest{NQN: nqn, Host: host}, nil)
}
