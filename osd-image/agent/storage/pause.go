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
	"maps"
	"slices"
	"time"

	"github.com/flint-io/flint/internal/spdk/jsonrpc"
	"github.com/flint-io/flint/internal/spdk/types"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// drainPoll is how often PauseTarget asks SPDK whether the hosts'
// controllers are gone.
const drainPoll = 10 * time.Millisecond

// PauseTarget stops the I/O of volume's hosts at its target here, for a
// snapshot that must cut every replica at one instant. SPDK v25.09 has no
// RPC that holds a subsystem's I/O, so the volume's listener is removed:
// SPDK drops the hosts' connections, and lists their controllers until
// the I/O outstanding on them is done. PauseTarget returns once it lists
// none; from then on no host I/O reaches the replicas. The hosts
// reconnect (the kernel queues their I/O meanwhile) until ResumeTarget,
// or the next EnsureTarget, adds the listener back. It returns the
// members in sync at the pause: they hold the same data. A member that
// holds writes (its connection down, its device failing, or silent)
// would never let them drain (*MembersHeldError). A volume not served
// here is ErrNotFound; the wait ends with ctx, the listener then stays
// removed: resume it.
func (e *Engine) PauseTarget(ctx context.Context, volume string, memberOSDs []string) (Stopped, error) {
	if err := checkVolumeName(volume); err != nil {
		return Stopped{}, err
	}
	sub, err := e.servedSubsystem(ctx, volume)
	if err != nil {
		return Stopped{}, err
	}
	nqn := sub.NQN
	held, err := e.heldMembers(ctx, volume, memberOSDs)
	if err != nil {
		return Stopped{}, err
	}
	if len(held) > 0 {
		return Stopped{}, &MembersHeldError{Volume: volume, OSDs: slices.Sorted(maps.Keys(held))}
	}
	if want := e.listenAddress(); listensOn(sub, want) {
		if err := e.spdk.NvmfSubsystemRemoveListener(ctx, nqn, want); err != nil {
			return Stopped{}, fmt.Errorf("remove the listener of %s: %w", nqn, err)
		}
	}
	if err := e.waitHostsGone(ctx, nqn); err != nil {
		return Stopped{}, err
	}
	st, err := e.inSyncMembers(ctx, volume, memberOSDs)
	if err != nil || st.RaidFound {
		return st, err
	}
	// No raid: a volume of one replica exports its lvol itself.
	if _, err := e.replicaBdev(ctx, volume); err != nil {
		return Stopped{}, err
	}
	return Stopped{InSync: []string{e.cfg.UID}}, nil
}

// waitHostsGone waits until SPDK lists no host controller on nqn.
func (e *Engine) waitHostsGone(ctx context.Context, nqn string) error {
	for {
		ctrlrs, err := e.spdk.NvmfSubsystemGetControllers(ctx, nqn)
		if err != nil {
			return fmt.Errorf("list the controllers of %s: %w", nqn, err)
		}
		if len(ctrlrs) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d host controllers of %s still hold I/O: %w", len(ctrlrs), nqn, ctx.Err())
		case <-time.After(drainPoll):
		}
	}
}

// ResumeTarget lets volume's hosts back in after PauseTarget: it adds the
// volume's listener again. A listener already there is success; a volume
// not served here is ErrNotFound.
func (e *Engine) ResumeTarget(ctx context.Context, volume string) error {
	if err := checkVolumeName(volume); err != nil {
		return err
	}
	sub, err := e.servedSubsystem(ctx, volume)
	if err != nil {
		return err
	}
	return e.ensureListener(ctx, sub)
}

// servedSubsystem is the subsystem hosts reach volume by here; a volume
// not served here is ErrNotFound.
func (e *Engine) servedSubsystem(ctx context.Context, volume string) (types.NvmfSubsystem, error) {
	nqn := agentv1.VolumeNQN(volume)
	subs, err := e.spdk.NvmfGetSubsystems(ctx, nqn)
	if errors.Is(err, jsonrpc.ErrNotFound) {
		return types.NvmfSubsystem{}, fmt.Errorf("%w: volume %s is not served by this OSD", ErrNotFound, volume)
	}
	if err != nil {
		return types.NvmfSubsystem{}, fmt.Errorf("read subsystem %s: %w", nqn, err)
	}
	return subs[0], nil
}
