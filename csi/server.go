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

// Package csi is the csi.flint.io CSI driver: the identity service, the
// controller service that provisions and publishes Volumes through the
// Kubernetes API, and the node service that connects them with the kernel
// NVMe-oF host (csi/nvmeof), formats and mounts.
package csi

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flint-io/flint/internal/rpclog"
)

// DriverName is the CSI driver's name, the provisioner of its
// StorageClasses.
const DriverName = "csi.flint.io"

// Listen opens endpoint, a unix:// path (a stale socket is removed) or
// tcp:// address.
func Listen(endpoint string) (net.Listener, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("parse the endpoint %q: %w", endpoint, err)
	}
	switch u.Scheme {
	case "unix":
		path := u.Path
		if u.Host != "" {
			path = u.Host + u.Path
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			return nil, err
		}
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("remove the stale socket %s: %w", path, err)
		}
		return net.Listen("unix", path)
	case "tcp":
		return net.Listen("tcp", u.Host)
	}
	return nil, fmt.Errorf("endpoint %q: the scheme must be unix:// or tcp://", endpoint)
}

// NewServer returns a gRPC server with the given services registered
// (nil ones skipped), every call logged and a panic answered INTERNAL.
func NewServer(log logr.Logger, ids csi.IdentityServer, cs csi.ControllerServer, ns csi.NodeServer) *grpc.Server {
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(rpclog.LogCalls(log), rpclog.RecoverPanics(log)))
	csi.RegisterIdentityServer(srv, ids)
	if cs != nil {
		csi.RegisterControllerServer(srv, cs)
	}
	if ns != nil {
		csi.RegisterNodeServer(srv, ns)
	}
	return srv
}

// volumeLocks refuses a second operation on a volume while one runs, as
// the CSI spec asks (Aborted: the CO retries).
type volumeLocks struct {
	mu   sync.Mutex
	held map[string]bool
}

func (l *volumeLocks) lock(id string) (unlock func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		l.held = map[string]bool{}
	}
	if l.held[id] {
		return nil, status.Errorf(codes.Aborted, "an operation on volume %s is in progress: retry when it ends", id)
	}
	l.held[id] = true
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.held, id)
	}, nil
}
