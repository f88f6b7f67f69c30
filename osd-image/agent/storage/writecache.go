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

package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/flint-io/flint/internal/spdk/types"
)

// WriteCache is the state of the device's volatile write cache.
//
// SPDK's lvol bdev does not support FLUSH, so a raid1 of lvols does not
// either, and the NVMe-oF target answers a host's Flush of such a bdev
// with success without doing anything. A write the controller acknowledged
// into a volatile cache could then be lost at power loss after the host's
// fsync returned. The agent therefore keeps the cache off (or, with
// power-loss protection declared, on) and says which.
type WriteCache int

const (
	// WriteCacheUnknown is a device that is not an NVMe controller SPDK
	// drives (aio, uring, malloc): the kernel owns its cache.
	WriteCacheUnknown WriteCache = iota
	// WriteCacheAbsent is a controller without a volatile write cache.
	WriteCacheAbsent
	// WriteCacheDisabled is a controller whose cache is off.
	WriteCacheDisabled
	// WriteCacheEnabled is a cache left on, as the device's declared
	// power-loss protection makes safe.
	WriteCacheEnabled
)

func (w WriteCache) String() string {
	switch w {
	case WriteCacheAbsent:
		return "Absent"
	case WriteCacheDisabled:
		return "Disabled"
	case WriteCacheEnabled:
		return "Enabled"
	}
	return "Unknown"
}

// ErrWriteCache is a volatile write cache that is on and could not be
// turned off.
var ErrWriteCache = errors.New("volatile write cache stays on")

// ensureWriteCache reads the controller's volatile write cache and turns
// it off unless the device has power-loss protection. Features set
// without saving return to their defaults at every controller reset, so
// every Bootstrap (each probe of the agent) checks again.
func (e *Engine) ensureWriteCache(ctx context.Context) (WriteCache, error) {
	if e.cfg.Device.Driver != DriverPCIe {
		return WriteCacheUnknown, nil
	}
	cpl, id, err := e.spdk.BdevNvmeAdminCmd(ctx, baseBdevName, types.NvmeCommand{
		Opcode: types.NvmeOpcodeIdentify, CDW10: types.NvmeIdentifyCNSController,
	}, types.NvmeIdentifySize)
	if err != nil {
		return WriteCacheUnknown, fmt.Errorf("identify NVMe controller %s: %w", e.deviceName(), err)
	}
	if !cpl.OK() {
		return WriteCacheUnknown, fmt.Errorf("identify NVMe controller %s: %s", e.deviceName(), cpl)
	}
	if id[types.NvmeIdentifyVWCOffset]&1 == 0 {
		return WriteCacheAbsent, nil
	}
	on, err := e.writeCacheOn(ctx)
	if err != nil || !on {
		return WriteCacheDisabled, err
	}
	if e.cfg.Device.PowerLossProtected {
		return WriteCacheEnabled, nil
	}
	cpl, _, err = e.spdk.BdevNvmeAdminCmd(ctx, baseBdevName, types.NvmeCommand{
		Opcode: types.NvmeOpcodeSetFeatures, CDW10: types.NvmeFeatureVolatileWriteCache, CDW11: 0,
	}, 0)
	if err != nil {
		return WriteCacheEnabled, fmt.Errorf("turn off the volatile write cache of %s: %w", e.deviceName(), err)
	}
	if !cpl.OK() {
		return WriteCacheEnabled, fmt.Errorf("%w: %s refused Set Features (Volatile Write Cache off): %s; use a device with power-loss protection and set the Pool's devices.powerLossProtection", ErrWriteCache, e.deviceName(), cpl)
	}
	if on, err := e.writeCacheOn(ctx); err != nil {
		return WriteCacheEnabled, err
	} else if on {
		return WriteCacheEnabled, fmt.Errorf("%w: %s still reports its volatile write cache on after Set Features turned it off; use a device with power-loss protection and set the Pool's devices.powerLossProtection", ErrWriteCache, e.deviceName())
	}
	return WriteCacheDisabled, nil
}

// writeCacheOn reads the Volatile Write Cache feature's WCE bit.
func (e *Engine) writeCacheOn(ctx context.Context) (bool, error) {
	cpl, _, err := e.spdk.BdevNvmeAdminCmd(ctx, baseBdevName, types.NvmeCommand{
		Opcode: types.NvmeOpcodeGetFeatures, CDW10: types.NvmeFeatureVolatileWriteCache,
	}, 0)
	if err != nil {
		return false, fmt.Errorf("read the volatile write cache of %s: %w", e.deviceName(), err)
	}
	if !cpl.OK() {
		return false, fmt.Errorf("read the volatile write cache of %s: %s", e.deviceName(), cpl)
	}
	return cpl.CDW0&1 == 1, nil
}

// WriteCache is the volatile write cache's state as the latest Bootstrap
// left it.
func (e *Engine) WriteCache() WriteCache {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.writeCache
}
