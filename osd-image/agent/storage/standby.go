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
	"slices"

	"github.com/flint-io/flint/internal/spdk/jsonrpc"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// StandbySpec is a volume's subsystem prepared on this OSD for a planned
// move of its target here.
type StandbySpec struct {
	Volume string
	// Epoch is the one the target takes here once it moves: it gives the
	// subsystem's controller ids, which the EnsureTarget that follows the
	// move keeps.
	Epoch uint32
	// Hosts and HostKeys are as a target's.
	Hosts    []string
	HostKeys Keys
}

// Standby is a prepared subsystem: where its hosts connect, which may
// (read back from SPDK), and which have.
type Standby struct {
	Export             Subsystem
	Allowed, Connected []string
}

// PrepareTarget makes the volume's subsystem here as its target of
// spec.Epoch will have it (identity aside), with its listener and hosts
// and no namespace: the hosts connect before the target stops on its
// current OSD, and are served nothing until the EnsureTarget of the same
// epoch adds the namespace (ensureSubsystem), after the move. The local
// replica cannot join a raid here before then: its export to the current
// target claims it. A subsystem of the volume that has a namespace serves
// already, and is refused (ErrConflict).
func (e *Engine) PrepareTarget(ctx context.Context, spec StandbySpec) (Standby, error) {
	if err := checkVolumeName(spec.Volume); err != nil {
		return Standby{}, err
	}
	if spec.Epoch == 0 {
		return Standby{}, fmt.Errorf("%w: volume %s needs the standby's epoch (from 1): it gives the controller ids", ErrInvalid, spec.Volume)
	}
	nqn := agentv1.VolumeNQN(spec.Volume)
	subs, err := e.spdk.NvmfGetSubsystems(ctx, nqn)
	switch {
	case err == nil && len(subs[0].Namespaces) > 0:
		return Standby{}, fmt.Errorf("%w: subsystem %s serves bdev %s here already: a standby is made only where the volume has no target", ErrConflict, nqn, subs[0].Namespaces[0].BdevName)
	case err != nil && !errors.Is(err, jsonrpc.ErrNotFound):
		return Standby{}, fmt.Errorf("read subsystem %s: %w", nqn, err)
	}
	hostKeys, err := e.ensureKeys(ctx, spec.Volume, linkHost, spec.HostKeys)
	if err != nil {
		return Standby{}, err
	}
	if err := e.ensureSubsystem(ctx, volumeSubsystem(TargetSpec{Volume: spec.Volume, Epoch: spec.Epoch}, "")); err != nil {
		return Standby{}, err
	}
	allowed, err := e.setHosts(ctx, nqn, spec.Hosts, hostKeys)
	if err != nil {
		return Standby{}, err
	}
	ctrls, err := e.spdk.NvmfSubsystemGetControllers(ctx, nqn)
	if err != nil {
		return Standby{}, fmt.Errorf("read the controllers of %s: %w", nqn, err)
	}
	var connected []string
	for _, c := range ctrls {
		connected = append(connected, c.HostNQN)
	}
	slices.Sort(connected)
	return Standby{Export: e.export(nqn), Allowed: allowed, Connected: slices.Compact(connected)}, nil
}
