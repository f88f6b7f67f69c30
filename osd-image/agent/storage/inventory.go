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
	"fmt"
	"slices"
	"strings"

	"github.com/flint-io/flint/internal/spdk/types"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// TargetSummary is a raid1 target as SPDK reports it, without the member
// mapping only the volume's spec holds.
type TargetSummary struct {
	Volume string
	// State is SPDK's raid state: online, configuring or offline; or
	// agentv1.TargetStateStandby.
	State string
	// Members is the raid's slot count, Online how many hold an in-sync
	// replica (a member being rebuilt is not).
	Members, Online int
	// RebuildPercent is the progress of a running rebuild, -1 without one.
	RebuildPercent int
}

// Inventory is everything the OSD holds.
type Inventory struct {
	Lvstore   types.Lvstore
	Replicas  []Replica
	Snapshots []Snapshot
	Targets   []TargetSummary
}

// Inventory lists the OSD's lvstore, replicas, snapshots and targets, each
// sorted by name.
func (e *Engine) Inventory(ctx context.Context) (Inventory, error) {
	lvs, err := e.Lvstore(ctx)
	if err != nil {
		return Inventory{}, err
	}
	inv := Inventory{Lvstore: lvs}
	bdevs, err := e.spdk.BdevGetBdevs(ctx, "")
	if err != nil {
		return Inventory{}, fmt.Errorf("list bdevs: %w", err)
	}
	prefix := e.lvs() + "/"
	for _, b := range bdevs {
		l := b.DriverSpecific.Lvol
		if l == nil || l.LvolStoreUUID != lvs.UUID {
			continue
		}
		i := slices.IndexFunc(b.Aliases, func(a string) bool { return strings.HasPrefix(a, prefix) })
		if i < 0 {
			continue
		}
		r := Replica{
			Volume: strings.TrimPrefix(b.Aliases[i], prefix), Lvol: b.Aliases[i],
			SizeBytes: b.SizeBytes(), AllocatedBytes: l.NumAllocatedClusters * lvs.ClusterSize,
		}
		if l.Snapshot {
			inv.Snapshots = append(inv.Snapshots, snapshotOf(r))
		} else {
			inv.Replicas = append(inv.Replicas, r)
		}
	}
	if inv.Targets, err = e.raidTargets(ctx); err != nil {
		return Inventory{}, err
	}
	// A one-replica volume is served from its lvol, without a raid; a
	// standby (PrepareTarget) serves nothing yet.
	subs, err := e.spdk.NvmfGetSubsystems(ctx, "")
	if err != nil {
		return Inventory{}, fmt.Errorf("list subsystems: %w", err)
	}
	for _, sub := range subs {
		volume, ok := strings.CutPrefix(sub.NQN, agentv1.VolumeNQN(""))
		switch {
		case !ok:
		case len(sub.Namespaces) == 0:
			inv.Targets = append(inv.Targets, TargetSummary{Volume: volume, State: agentv1.TargetStateStandby, RebuildPercent: -1})
		case len(sub.Namespaces) == 1 && sub.Namespaces[0].BdevName != raidName(volume) && sub.Namespaces[0].BdevName != volumeBdevName(volume):
			inv.Targets = append(inv.Targets, TargetSummary{Volume: volume, State: types.RaidStateOnline, Members: 1, Online: 1, RebuildPercent: -1})
		}
	}
	slices.SortFunc(inv.Replicas, func(a, b Replica) int { return strings.Compare(a.Volume, b.Volume) })
	slices.SortFunc(inv.Snapshots, func(a, b Snapshot) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(inv.Targets, func(a, b TargetSummary) int { return strings.Compare(a.Volume, b.Volume) })
	return inv, nil
}

// raidTargets summarises the targets this OSD serves through a raid1.
func (e *Engine) raidTargets(ctx context.Context) ([]TargetSummary, error) {
	raids, err := e.spdk.BdevRaidGetBdevs(ctx, types.RaidCategoryAll)
	if err != nil {
		return nil, fmt.Errorf("list raids: %w", err)
	}
	held, err := e.heldBdevs(ctx)
	if err != nil {
		return nil, err
	}
	var out []TargetSummary
	for _, r := range raids {
		volume, ok := strings.CutPrefix(r.Name, raidName(""))
		if !ok {
			continue
		}
		// A member that holds writes (its connection down, or stuck) is
		// no more online than one that left.
		online := slices.DeleteFunc(r.Members(), func(b string) bool { return held[b] })
		t := TargetSummary{Volume: volume, State: r.State, Members: r.NumBaseBdevs, Online: len(online), RebuildPercent: -1}
		if r.Process != nil {
			t.Online--
			t.RebuildPercent = r.Process.Progress.Percent
		}
		out = append(out, t)
	}
	return out, nil
}

// DegradedTargets lists the volumes whose raid here runs with fewer
// in-sync members than slots: a member holds writes (its connection lost,
// its device failing, or silent), dropped out, or is being rebuilt. The
// operator learns of a held member from it within a lease renewal, and
// writes wait for the member only until then.
func (e *Engine) DegradedTargets(ctx context.Context) ([]string, error) {
	targets, err := e.raidTargets(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range targets {
		if t.Online < t.Members {
			out = append(out, t.Volume)
		}
	}
	return out, nil
}

// VolumeBdevs maps each volume this OSD serves a target of to the bdev its
// hosts' I/O reaches first: the raid1, or the lvol of a volume of one
// replica.
func (e *Engine) VolumeBdevs(ctx context.Context) (map[string]string, error) {
	subs, err := e.spdk.NvmfGetSubsystems(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("list subsystems: %w", err)
	}
	out := map[string]string{}
	for _, s := range subs {
		volume, ok := strings.CutPrefix(s.NQN, agentv1.VolumeNQN(""))
		if ok && len(s.Namespaces) > 0 {
			out[volume] = s.Namespaces[0].BdevName
		}
	}
	return out, nil
}
