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
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flint-io/flint/csi/nvmeof"
	"github.com/flint-io/flint/internal/fabric"
)

// Target is where a volume is reached: its subsystem and the target's
// listeners, and the secrets it asks hosts for. The secrets are never
// written to the node's state: a path added later takes them from the
// kernel's controllers.
type Target struct {
	VolumeID string         `json:"volumeID"`
	NQN      string         `json:"nqn"`
	Paths    []nvmeof.Path  `json:"paths"`
	Secrets  nvmeof.Secrets `json:"-"`
}

// Attacher connects volumes to this node: the step between a publish
// context and a block device.
type Attacher interface {
	// Attach connects t and returns its block device.
	Attach(ctx context.Context, t Target) (device string, err error)
	// Detach disconnects t.
	Detach(ctx context.Context, t Target) error
	// Refresh makes the device show the volume's current size.
	Refresh(ctx context.Context, t Target) error
	// Health lists what is wrong with t's connection; none when nothing
	// is.
	Health(t Target) []*csi.VolumeHealth_VolumeHealthEntry
	// SetSecrets has t's connection authenticate with t.Secrets from now
	// on (a rotation), keeping its I/O going.
	SetSecrets(t Target) error
}

// Validate checks everything a connect string is made of: the NQN's
// grammar and each path's transport, address and port.
func (t Target) Validate() error {
	if err := fabric.ValidateNQN(t.NQN); err != nil {
		return err
	}
	for _, p := range t.Paths {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("path %s: %w", p, err)
		}
	}
	return nil
}

// FabricAttacher attaches with the kernel NVMe-oF host.
type FabricAttacher struct {
	Host *nvmeof.Host
	// DeviceTimeout bounds the wait for the block device after connecting.
	DeviceTimeout time.Duration
	// ConnectTimeout bounds each path's connect: a black-holed target
	// address must not hold the volume (or the caller) for the kernel's
	// own TCP timeouts. Zero means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// JoinTimeout bounds Follow's wait for a new path to carry the
	// volume's namespace. Zero means DefaultJoinTimeout.
	JoinTimeout time.Duration
}

const (
	// DefaultConnectTimeout is a FabricAttacher's ConnectTimeout when unset.
	DefaultConnectTimeout = 30 * time.Second
	// DefaultJoinTimeout is a FabricAttacher's JoinTimeout when unset.
	DefaultJoinTimeout = 15 * time.Second
)

// Attach connects every path of t (one is enough) and waits for the
// namespace's block device.
func (a *FabricAttacher) Attach(ctx context.Context, t Target) (string, error) {
	errs := a.connectAll(ctx, t)
	if len(errs) == len(t.Paths) {
		return "", status.Errorf(codes.Unavailable, "volume %s: no path connected: %v", t.VolumeID, errors.Join(errs...))
	}
	ctx, cancel := context.WithTimeout(ctx, a.DeviceTimeout)
	defer cancel()
	dev, err := a.Host.WaitDevice(ctx, t.NQN)
	if err != nil {
		return "", status.Errorf(codes.Unavailable, "volume %s: connected, but %v", t.VolumeID, err)
	}
	return dev, nil
}

// connectAll connects every path of t at once, each within
// ConnectTimeout, and returns the failures.
func (a *FabricAttacher) connectAll(ctx context.Context, t Target) []error {
	results := make([]error, len(t.Paths))
	var wg sync.WaitGroup
	for i, p := range t.Paths {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, orDefault(a.ConnectTimeout, DefaultConnectTimeout))
			defer cancel()
			results[i] = a.Host.Connect(ctx, t.NQN, p, t.Secrets)
		})
	}
	wg.Wait()
	var errs []error
	for _, err := range results {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Detach deletes every path of t.
func (a *FabricAttacher) Detach(_ context.Context, t Target) error {
	if err := a.Host.Disconnect(t.NQN); err != nil {
		return status.Errorf(codes.Internal, "volume %s: %v", t.VolumeID, err)
	}
	return nil
}

// Refresh rescans t's namespaces.
func (a *FabricAttacher) Refresh(_ context.Context, t Target) error {
	if err := a.Host.Rescan(t.NQN); err != nil {
		return status.Errorf(codes.Internal, "volume %s: %v", t.VolumeID, err)
	}
	return nil
}

// SetSecrets gives every path of t its new secrets; the kernel
// re-authenticates each live one with them.
func (a *FabricAttacher) SetSecrets(t Target) error {
	if err := a.Host.SetSecrets(t.NQN, t.Secrets); err != nil {
		return status.Errorf(codes.Unavailable, "volume %s: %v", t.VolumeID, err)
	}
	return nil
}

// Health is INACCESSIBLE when no path is live (I/O waits for one) and
// DEGRADED when some path is down, or when the node's native NVMe
// multipath is off: a volume staged before the node plugin refused such
// nodes fails its I/O at its next snapshot.
func (a *FabricAttacher) Health(t Target) []*csi.VolumeHealth_VolumeHealthEntry {
	if err := a.Host.MultipathOn(); err != nil {
		return []*csi.VolumeHealth_VolumeHealthEntry{{Status: csi.VolumeHealthErrorType_DEGRADED, Reason: "NoMultipath", Message: err.Error()}}
	}
	ctrls, err := a.Host.Controllers(t.NQN)
	if err != nil {
		return []*csi.VolumeHealth_VolumeHealthEntry{inaccessible("PathsUnknown", err.Error())}
	}
	var live int
	var states []string
	for _, c := range ctrls {
		if c.Live() {
			live++
		}
		states = append(states, fmt.Sprintf("%s (%s) %s", c.Name, c.Path, c.State))
	}
	switch {
	case len(ctrls) == 0:
		return []*csi.VolumeHealth_VolumeHealthEntry{inaccessible("NotConnected", fmt.Sprintf("subsystem %s is not connected on this node", t.NQN))}
	case live == 0:
		return []*csi.VolumeHealth_VolumeHealthEntry{inaccessible("NoLivePath", "no live path to the volume's target, I/O waits for one: "+strings.Join(states, ", "))}
	case live < len(ctrls):
		return []*csi.VolumeHealth_VolumeHealthEntry{{Status: csi.VolumeHealthErrorType_DEGRADED, Reason: "PathDown", Message: fmt.Sprintf("%d of %d paths live: %s", live, len(ctrls), strings.Join(states, ", "))}}
	}
	return nil
}

func inaccessible(reason, msg string) *csi.VolumeHealth_VolumeHealthEntry {
	return &csi.VolumeHealth_VolumeHealthEntry{Status: csi.VolumeHealthErrorType_INACCESSIBLE, Reason: reason, Message: msg}
}

// Follow connects t's paths and, once one of them is live and carries the
// namespace of device (the head in use), deletes the paths t no longer
// lists. Native multipath joins the new path to the same namespace head,
// so the device in use never changes. Deleting the old paths earlier would
// fail the I/O queued on the head: the kernel scans the new controller's
// namespaces only after the connect returned, and a head with no path
// left fails what it holds ("no available path - failing I/O"). A new
// path whose namespace does not join the head (the target presents other
// identifiers) is deleted again and the old paths are kept.
func (a *FabricAttacher) Follow(ctx context.Context, t Target, device string) error {
	secrets, err := a.Host.SecretsOf(t.NQN)
	if err != nil {
		return err
	}
	t.Secrets = secrets
	errs := a.connectAll(ctx, t)
	ctrls, joined, err := a.waitJoined(ctx, t, device)
	if err != nil {
		return err
	}
	var stale, strangers []nvmeof.Controller
	for _, c := range ctrls {
		switch {
		case !t.lists(c.Path):
			stale = append(stale, c)
		case c.Live() && !a.Host.Carries(c, device):
			strangers = append(strangers, c)
		}
	}
	if !joined {
		for _, c := range strangers {
			errs = append(errs, fmt.Errorf("path %s (%s) is live but its namespace did not join %s within %s: does the target present the volume's namespace identifiers?", c.Name, c.Path, device, orDefault(a.JoinTimeout, DefaultJoinTimeout)))
			if err := a.Host.Delete(c); err != nil {
				errs = append(errs, err)
			}
		}
		return fmt.Errorf("volume %s: no new path carries %s yet, old paths kept: %w", t.VolumeID, device, errors.Join(errs...))
	}
	for _, c := range stale {
		if err := a.Host.Delete(c); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// waitJoined waits, within JoinTimeout, until a path t lists is live and
// carries device's namespace; it returns the subsystem's controllers as
// last seen and whether one did.
func (a *FabricAttacher) waitJoined(ctx context.Context, t Target, device string) ([]nvmeof.Controller, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, orDefault(a.JoinTimeout, DefaultJoinTimeout))
	defer cancel()
	for {
		ctrls, err := a.Host.Controllers(t.NQN)
		if err != nil {
			return nil, false, err
		}
		for _, c := range ctrls {
			if t.lists(c.Path) && c.Live() && a.Host.Carries(c, device) {
				return ctrls, true, nil
			}
		}
		select {
		case <-ctx.Done():
			return ctrls, false, nil
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lists says whether p is one of t's paths.
func (t Target) lists(p nvmeof.Path) bool { return slices.Contains(t.Paths, p) }
