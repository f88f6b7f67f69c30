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
// controllers are gone, when it removed their listener.
const drainPoll = 10 * time.Millisecond

// PauseTarget stops the I/O of volume's hosts at its target here, for a
// snapshot that must cut every replica at one instant. SPDK v25.09 has no
// RPC that holds a subsystem's I/O, so the volume's listener turns ANA
// inaccessible: SPDK tells the hosts (an ANA change notice) and fails
// the I/O that still arrives with a path status, which a host with
// native NVMe multipath queues, on the same connection, until the
// listener is optimized again. Moving the namespace to the ANA group it
// is in then drains it: SPDK answers only once no I/O to it is
// outstanding. PauseTarget returns then; from then on no host I/O
// reaches the replicas. A subsystem created without ANA reporting (by an
// agent before this one) has its listener removed instead: SPDK drops the
// hosts' connections and PauseTarget waits until it lists none, and the
// hosts reconnect once the listener is back. ResumeTarget, or the next
// EnsureTarget, lets the hosts' I/O go on. It returns the members in
// sync at the pause: they hold the same data. A member that holds writes
// (its connection down, its device failing, or silent) would never let
// them drain (*MembersHeldError). A volume not served here is
// ErrNotFound; the wait ends with ctx, the volume then stays paused:
// resume it.
func (e *Engine) PauseTarget(ctx context.Context, volume string, memberOSDs []string) (Stopped, error) {
	if err := checkVolumeName(volume); err != nil {
		return Stopped{}, err
	}
	sub, err := e.servedSubsystem(ctx, volume)
	if err != nil {
		return Stopped{}, err
	}
	held, err := e.heldMembers(ctx, volume, memberOSDs)
	if err != nil {
		return Stopped{}, err
	}
	if len(held) > 0 {
		return Stopped{}, &MembersHeldError{Volume: volume, OSDs: slices.Sorted(maps.Keys(held))}
	}
	if err := e.holdHostIO(ctx, sub); err != nil {
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

// holdHostIO stops sub's host I/O and waits until none is outstanding:
// by its listener's ANA state when sub reports ANA, else by removing the
// listener.
func (e *Engine) holdHostIO(ctx context.Context, sub types.NvmfSubsystem) error {
	nqn, want := sub.NQN, e.listenAddress()
	if !listensOn(sub, want) {
		return e.waitHostsGone(ctx, nqn) // removed by an earlier pause
	}
	group, ana, err := e.anaGroup(ctx, sub)
	if err != nil {
		return err
	}
	if !ana {
		if err := e.spdk.NvmfSubsystemRemoveListener(ctx, nqn, want); err != nil {
			return fmt.Errorf("remove the listener of %s: %w", nqn, err)
		}
		return e.waitHostsGone(ctx, nqn)
	}
	e.mu.Lock()
	delete(e.accessible, nqn)
	e.pauses[nqn]++
	e.mu.Unlock()
	if err := e.spdk.NvmfSubsystemListenerSetAnaState(ctx, types.NvmfListenerAnaStateRequest{
		NQN: nqn, ListenAddress: want, AnaState: types.AnaInaccessible, AnaGrpID: group.AnaGroup,
	}); err != nil {
		return fmt.Errorf("make the listener of %s inaccessible: %w", nqn, err)
	}
	// The namespace stays in its group: the call is for its drain.
	if err := e.spdk.NvmfSubsystemSetNsAnaGroup(ctx, types.NvmfNsAnaGroupRequest{NQN: nqn, NSID: sub.Namespaces[0].NSID, AnaGrpID: group.AnaGroup}); err != nil {
		return fmt.Errorf("drain the host I/O of %s: %w", nqn, err)
	}
	return nil
}

// ensureAccessible makes sure sub's listener lets its hosts' I/O through
// when sub reports ANA: PauseTarget may have left it inaccessible, in
// this agent's life or an earlier one's. Known accessible, it asks SPDK
// nothing (reading the listeners pauses the subsystem) unless sure; what
// it finds is remembered only when no pause started meanwhile.
func (e *Engine) ensureAccessible(ctx context.Context, sub types.NvmfSubsystem, sure bool) error {
	nqn := sub.NQN
	e.mu.Lock()
	known, pauses := e.accessible[nqn], e.pauses[nqn]
	e.mu.Unlock()
	if known && !sure {
		return nil
	}
	group, ana, err := e.anaGroup(ctx, sub)
	if err != nil {
		return err
	}
	if ana && group.AnaState != types.AnaOptimized {
		if err := e.spdk.NvmfSubsystemListenerSetAnaState(ctx, types.NvmfListenerAnaStateRequest{
			NQN: nqn, ListenAddress: e.listenAddress(), AnaState: types.AnaOptimized, AnaGrpID: group.AnaGroup,
		}); err != nil {
			return fmt.Errorf("let the hosts of %s back in (ANA optimized): %w", nqn, err)
		}
	}
	e.mu.Lock()
	if e.pauses[nqn] == pauses {
		e.accessible[nqn] = true
	}
	e.mu.Unlock()
	return nil
}

// anaGroup is the ANA state sub's listener here reports for its
// namespace's group; false when sub does not report ANA, or has no
// namespace.
func (e *Engine) anaGroup(ctx context.Context, sub types.NvmfSubsystem) (types.NvmfAnaState, bool, error) {
	if len(sub.Namespaces) == 0 {
		return types.NvmfAnaState{}, false, nil
	}
	listeners, err := e.spdk.NvmfSubsystemGetListeners(ctx, sub.NQN)
	if err != nil {
		return types.NvmfAnaState{}, false, fmt.Errorf("read the listeners of %s: %w", sub.NQN, err)
	}
	want := e.listenAddress()
	for _, l := range listeners {
		if !sameAddress(l.Address, want) {
			continue
		}
		for _, g := range l.AnaStates {
			if g.AnaGroup == sub.Namespaces[0].AnaGrpID {
				return g, true, nil
			}
		}
	}
	return types.NvmfAnaState{}, false, nil
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

// ResumeTarget lets volume's hosts' I/O go on after PauseTarget: the
// listener back, and optimized. A volume not paused is success; one not
// served here is ErrNotFound.
func (e *Engine) ResumeTarget(ctx context.Context, volume string) error {
	if err := checkVolumeName(volume); err != nil {
		return err
	}
	sub, err := e.servedSubsystem(ctx, volume)
	if err != nil {
		return err
	}
	if err := e.ensureListener(ctx, sub); err != nil {
		return err
	}
	return e.ensureAccessible(ctx, sub, true)
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
