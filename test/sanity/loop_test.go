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

package sanity

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	csispec "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/csi"
	"github.com/flint-io/flint/csi/nvmeof"
	spdkclient "github.com/flint-io/flint/internal/spdk/client"
	"github.com/flint-io/flint/internal/spdk/types"
	"github.com/flint-io/flint/test/localnode"
)

// loopAttacher stands in for the kernel NVMe-oF host on a machine without
// one (the only swap in this suite). Its "connect" asks the target OSD's
// SPDK (the double) for the subsystem: it must listen on the path and
// allow this host, as a kernel target would check; the namespace's size
// is the bdev's. The device is a loop device over a sparse file per
// volume, so the node service formats, mounts and grows a real block
// device.
type loopAttacher struct {
	client  client.Client
	nodes   *localnode.Runner
	hostNQN string
	dir     string

	mu      sync.Mutex
	devices map[string]string // volume id → /dev/loopN
}

// subsystem finds t's subsystem on the OSD listening on one of t's paths.
func (a *loopAttacher) subsystem(ctx context.Context, t csi.Target) (types.NvmfSubsystem, *spdkclient.Client, error) {
	var osds flintv1.OSDList
	if err := a.client.List(ctx, &osds); err != nil {
		return types.NvmfSubsystem{}, nil, err
	}
	for _, o := range osds.Items {
		ep := o.Status.Endpoint
		if ep == nil || !slices.ContainsFunc(t.Paths, func(p nvmeof.Path) bool { return p.Address == ep.Address && p.Port == ep.Port }) {
			continue
		}
		c := spdkclient.New(a.nodes.Socket("osd-" + o.Name))
		subs, err := c.NvmfGetSubsystems(ctx, t.NQN)
		if err != nil {
			_ = c.Close()
			return types.NvmfSubsystem{}, nil, fmt.Errorf("connect %s: no such subsystem on %s:%d: %w", t.NQN, ep.Address, ep.Port, err)
		}
		if !slices.Contains(subs[0].HostNQNs(), a.hostNQN) {
			_ = c.Close()
			return types.NvmfSubsystem{}, nil, fmt.Errorf("connect %s: the target refused host %s (allowed: %v)", t.NQN, a.hostNQN, subs[0].HostNQNs())
		}
		return subs[0], c, nil
	}
	return types.NvmfSubsystem{}, nil, fmt.Errorf("connect %s: nothing listens on %v", t.NQN, t.Paths)
}

// size is the namespace's size.
func (a *loopAttacher) size(ctx context.Context, t csi.Target) (int64, error) {
	sub, c, err := a.subsystem(ctx, t)
	if err != nil {
		return 0, err
	}
	defer func() { _ = c.Close() }()
	if len(sub.Namespaces) == 0 {
		return 0, fmt.Errorf("subsystem %s has no namespace", t.NQN)
	}
	bdevs, err := c.BdevGetBdevs(ctx, sub.Namespaces[0].BdevName)
	if err != nil {
		return 0, err
	}
	return int64(bdevs[0].NumBlocks) * int64(bdevs[0].BlockSize), nil
}

func (a *loopAttacher) Attach(ctx context.Context, t csi.Target) (string, error) {
	size, err := a.size(ctx, t)
	if err != nil {
		return "", status.Error(codes.Unavailable, err.Error())
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if dev, ok := a.devices[t.VolumeID]; ok {
		return dev, nil
	}
	img := filepath.Join(a.dir, t.VolumeID+".img")
	if err := truncate(img, size); err != nil {
		return "", err
	}
	out, err := exec.CommandContext(ctx, "losetup", "--find", "--show", img).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("losetup %s: %v: %s", img, err, out)
	}
	dev := strings.TrimSpace(string(out))
	a.devices[t.VolumeID] = dev
	return dev, nil
}

func (a *loopAttacher) Detach(ctx context.Context, t csi.Target) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	dev, ok := a.devices[t.VolumeID]
	if !ok {
		return nil
	}
	if out, err := exec.CommandContext(ctx, "losetup", "-d", dev).CombinedOutput(); err != nil {
		return fmt.Errorf("losetup -d %s: %v: %s", dev, err, out)
	}
	delete(a.devices, t.VolumeID)
	return nil
}

func (a *loopAttacher) Refresh(ctx context.Context, t csi.Target) error {
	size, err := a.size(ctx, t)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := truncate(filepath.Join(a.dir, t.VolumeID+".img"), size); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, "losetup", "-c", a.devices[t.VolumeID]).CombinedOutput(); err != nil {
		return fmt.Errorf("losetup -c: %v: %s", err, out)
	}
	return nil
}

func (a *loopAttacher) Health(t csi.Target) []*csispec.VolumeHealth_VolumeHealthEntry {
	_, c, err := a.subsystem(context.Background(), t)
	if err != nil {
		return []*csispec.VolumeHealth_VolumeHealthEntry{{Status: csispec.VolumeHealthErrorType_INACCESSIBLE, Reason: "NotConnected", Message: err.Error()}}
	}
	_ = c.Close()
	return nil
}

// SetSecrets has nothing to do: a loop device authenticates nothing.
func (a *loopAttacher) SetSecrets(csi.Target) error { return nil }

func truncate(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if fi, err := f.Stat(); err != nil || fi.Size() >= size {
		return err
	}
	return f.Truncate(size)
}
