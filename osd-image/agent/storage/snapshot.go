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

	"github.com/flint-io/flint/internal/spdk/jsonrpc"
	"github.com/flint-io/flint/internal/spdk/types"
)

// Snapshot is a read-only, point-in-time lvol of a replica. Snapshots share
// the lvstore's name space with replicas.
type Snapshot struct {
	Name string
	// Lvol is the snapshot's alias, lvstore/name.
	Lvol           string
	SizeBytes      uint64
	AllocatedBytes uint64
}

// CreateSnapshot snapshots volume's replica as name. Repeating it for a
// snapshot that is already in the replica's history is success; a name
// used by anything else is ErrConflict.
func (e *Engine) CreateSnapshot(ctx context.Context, volume, name string) (Snapshot, error) {
	if err := checkVolumeName(name); err != nil {
		return Snapshot{}, err
	}
	_, vol, err := e.replica(ctx, volume)
	if err != nil {
		return Snapshot{}, err
	}
	s, snap, err := e.replica(ctx, name)
	switch {
	case err == nil && isSnapshot(snap) && e.inHistory(ctx, vol, name):
		return snapshotOf(s), nil
	case err == nil:
		return Snapshot{}, fmt.Errorf("%w: %s exists on this OSD and is not a snapshot of volume %s", ErrConflict, name, volume)
	case !errors.Is(err, ErrNotFound):
		return Snapshot{}, err
	}
	if _, err := e.spdk.BdevLvolSnapshot(ctx, e.lvolAlias(volume), name); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot replica %s as %s: %w", volume, name, err)
	}
	s, _, err = e.replica(ctx, name)
	return snapshotOf(s), err
}

// inHistory reports whether snapshot is an ancestor of the lvol b.
func (e *Engine) inHistory(ctx context.Context, b types.Bdev, snapshot string) bool {
	// A chain is as long as the snapshots taken; the bound guards a
	// malformed answer only.
	for range 1024 {
		l := b.DriverSpecific.Lvol
		if l == nil || l.BaseSnapshot == "" {
			return false
		}
		if l.BaseSnapshot == snapshot {
			return true
		}
		_, parent, err := e.replica(ctx, l.BaseSnapshot)
		if err != nil {
			return false
		}
		b = parent
	}
	return false
}

// CloneSnapshot makes volume's replica a thin clone of snapshot: it reads
// as the snapshot did and allocates only what is written after. Repeating
// it is success; a replica of that name with another origin is ErrConflict.
func (e *Engine) CloneSnapshot(ctx context.Context, snapshot, volume string) (Replica, error) {
	if err := checkVolumeName(volume); err != nil {
		return Replica{}, err
	}
	_, snap, err := e.replica(ctx, snapshot)
	if errors.Is(err, ErrNotFound) {
		return Replica{}, fmt.Errorf("%w: no snapshot %s on this OSD", ErrNotFound, snapshot)
	}
	if err != nil {
		return Replica{}, err
	}
	if !isSnapshot(snap) {
		return Replica{}, fmt.Errorf("%w: %s is a volume's replica, not a snapshot; snapshot it first", ErrInvalid, snapshot)
	}
	r, b, err := e.replica(ctx, volume)
	switch {
	case err == nil && b.DriverSpecific.Lvol != nil && b.DriverSpecific.Lvol.BaseSnapshot == snapshot:
		return r, nil
	case err == nil:
		return Replica{}, fmt.Errorf("%w: replica %s exists and is not a clone of %s", ErrConflict, volume, snapshot)
	case !errors.Is(err, ErrNotFound):
		return Replica{}, err
	}
	if _, err := e.spdk.BdevLvolClone(ctx, e.lvolAlias(snapshot), volume); err != nil {
		return Replica{}, fmt.Errorf("clone %s as %s: %w", snapshot, volume, err)
	}
	r, _, err = e.replica(ctx, volume)
	return r, err
}

// DeleteSnapshot removes a snapshot; a missing one is success. A snapshot
// with one clone is merged into it, as SPDK does; one with more clones is
// ErrInUse.
func (e *Engine) DeleteSnapshot(ctx context.Context, name string) error {
	_, snap, err := e.replica(ctx, name)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !isSnapshot(snap) {
		return fmt.Errorf("%w: %s is a volume's replica, not a snapshot; delete it as a replica", ErrInvalid, name)
	}
	if n := len(snap.DriverSpecific.Lvol.Clones); n > 1 {
		return fmt.Errorf("%w: snapshot %s has %d clones; delete all but one first", ErrInUse, name, n)
	}
	if err := e.spdk.BdevLvolDelete(ctx, e.lvolAlias(name)); err != nil && !errors.Is(err, jsonrpc.ErrNotFound) {
		return fmt.Errorf("delete snapshot %s: %w", name, err)
	}
	return nil
}

func isSnapshot(b types.Bdev) bool {
	return b.DriverSpecific.Lvol != nil && b.DriverSpecific.Lvol.Snapshot
}

func snapshotOf(r Replica) Snapshot {
	return Snapshot{Name: r.Volume, Lvol: r.Lvol, SizeBytes: r.SizeBytes, AllocatedBytes: r.AllocatedBytes}
}
