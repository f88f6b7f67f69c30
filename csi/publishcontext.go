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
	"net"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/csi/nvmeof"
	"github.com/flint-io/flint/internal/fabric"
)

// The publish context is what ControllerPublishVolume hands the node's
// NodeStageVolume: where the volume's target listens. Both sides read
// and write it here.

// Publish context keys: what NodeStage connects to.
const (
	PublishNQN       = "nqn"
	PublishTransport = "transport"
	// PublishPaths are the target's listeners, host:port, comma-separated.
	PublishPaths = "paths"
)

// publishContext is the publish context of a Volume's target.
func publishContext(t *flintv1.VolumeTarget) map[string]string {
	var paths []string
	for _, e := range t.Endpoints {
		paths = append(paths, net.JoinHostPort(e.Address, strconv.Itoa(int(e.Port))))
	}
	return map[string]string{
		PublishNQN:       t.NQN,
		PublishTransport: string(t.Endpoints[0].Transport),
		PublishPaths:     strings.Join(paths, ","),
	}
}

// targetFromContext reads the publish context ControllerPublishVolume
// returned.
func targetFromContext(volumeID string, pc map[string]string) (Target, error) {
	t := Target{VolumeID: volumeID, NQN: pc[PublishNQN]}
	transport := pc[PublishTransport]
	if t.NQN == "" || transport == "" || pc[PublishPaths] == "" {
		return t, status.Errorf(codes.InvalidArgument, "publish context lacks %s, %s or %s: it comes from ControllerPublishVolume of %s", PublishNQN, PublishTransport, PublishPaths, DriverName)
	}
	if err := fabric.ValidateNQN(t.NQN); err != nil {
		return t, status.Errorf(codes.InvalidArgument, "publish context %s: %v", PublishNQN, err)
	}
	for _, hp := range strings.Split(pc[PublishPaths], ",") {
		host, port, err := net.SplitHostPort(hp)
		n, perr := strconv.ParseInt(port, 10, 32)
		if err != nil || perr != nil {
			return t, status.Errorf(codes.InvalidArgument, "publish context path %q is not host:port", hp)
		}
		p := nvmeof.Path{Transport: transport, Address: host, Port: int32(n)}
		if err := p.Validate(); err != nil {
			return t, status.Errorf(codes.InvalidArgument, "publish context path %q: %v", hp, err)
		}
		t.Paths = append(t.Paths, p)
	}
	return t, nil
}
