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
	"strconv"
	"strings"

	"github.com/flint-io/flint/internal/spdk/jsonrpc"
	"github.com/flint-io/flint/internal/spdk/types"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

const mib = 1 << 20

// Replica is one volume's thin lvol on this OSD.
type Replica struct {
	Volume string
	// Lvol is the lvol's alias, lvstore/volume.
	Lvol string
	// SizeBytes is the lvol's size, in whole clusters.
	SizeBytes uint64
	// AllocatedBytes is what the thin lvol has written.
	AllocatedBytes uint64
}

// Subsystem is an NVMe-oF subsystem and where it listens: how a target
// reaches a replica, and a host the volume.
type Subsystem struct {
	NQN       string
	Transport string
	Address   string
	Port      int
}

func (e *Engine) lvolAlias(volume string) string { return e.lvs() + "/" + volume }

// replica reads a volume's replica; ErrNotFound when there is none.
func (e *Engine) replica(ctx context.Context, volume string) (Replica, types.Bdev, error) {
	b, err := e.replicaBdev(ctx, volume)
	if err != nil {
		return Replica{}, types.Bdev{}, err
	}
	lvs, err := e.Lvstore(ctx)
	if err != nil {
		return Replica{}, types.Bdev{}, err
	}
	return e.replicaOf(volume, b, lvs), b, nil
}

// replicaBdev reads a volume's replica's bdev; ErrNotFound when there is
// none.
func (e *Engine) replicaBdev(ctx context.Context, volume string) (types.Bdev, error) {
	bdevs, err := e.spdk.BdevGetBdevs(ctx, e.lvolAlias(volume))
	if errors.Is(err, jsonrpc.ErrNotFound) {
		// No lvol is "no replica" only while the lvstore is loaded.
		if _, lerr := e.Lvstore(ctx); lerr != nil {
			return types.Bdev{}, lerr
		}
		return types.Bdev{}, fmt.Errorf("%w: no replica of volume %s on this OSD", ErrNotFound, volume)
	}
	if err != nil {
		return types.Bdev{}, fmt.Errorf("look up replica %s: %w", volume, err)
	}
	return bdevs[0], nil
}

// replicaOf is the replica whose lvol is b on lvs.
func (e *Engine) replicaOf(volume string, b types.Bdev, lvs types.Lvstore) Replica {
	r := Replica{Volume: volume, Lvol: e.lvolAlias(volume), SizeBytes: b.SizeBytes()}
	if b.DriverSpecific.Lvol != nil {
		r.AllocatedBytes = b.DriverSpecific.Lvol.NumAllocatedClusters * lvs.ClusterSize
	}
	return r
}

// clusterRound rounds size up to lvs's clusters, as SPDK does.
func clusterRound(lvs types.Lvstore, size uint64) uint64 {
	c := lvs.ClusterSize
	return (size + c - 1) / c * c
}

// CreateReplica makes a thin lvol of sizeBytes for volume. A replica of the
// same size is success; one of another size is ErrConflict.
func (e *Engine) CreateReplica(ctx context.Context, volume string, sizeBytes uint64) (Replica, error) {
	if err := checkVolumeName(volume); err != nil {
		return Replica{}, err
	}
	if sizeBytes == 0 {
		return Replica{}, fmt.Errorf("%w: replica of %s needs a size", ErrInvalid, volume)
	}
	// The lvstore is read once: its cluster size rounds the size, and an
	// lvstore just read loaded tells a missing lvol from an unloaded one.
	lvs, err := e.Lvstore(ctx)
	if err != nil {
		return Replica{}, err
	}
	want := clusterRound(lvs, sizeBytes)
	bdevs, err := e.spdk.BdevGetBdevs(ctx, e.lvolAlias(volume))
	switch {
	case err == nil && bdevs[0].SizeBytes() == want:
		return e.replicaOf(volume, bdevs[0], lvs), nil
	case err == nil:
		return Replica{}, fmt.Errorf("%w: replica %s has %d bytes, not %d; resize it instead", ErrConflict, volume, bdevs[0].SizeBytes(), sizeBytes)
	case !errors.Is(err, jsonrpc.ErrNotFound):
		return Replica{}, fmt.Errorf("look up replica %s: %w", volume, err)
	}
	if _, err := e.spdk.BdevLvolCreate(ctx, types.BdevLvolCreateRequest{
		LvolName: volume, SizeInMiB: (sizeBytes + mib - 1) / mib, ThinProvision: true, LvsName: e.lvs(),
	}); err != nil {
		return Replica{}, fmt.Errorf("create replica %s: %w", volume, err)
	}
	b, err := e.replicaBdev(ctx, volume)
	if err != nil {
		return Replica{}, err
	}
	return e.replicaOf(volume, b, lvs), nil
}

// ResizeReplica grows a replica to sizeBytes. A replica already of that
// size is left alone; shrinking is refused.
func (e *Engine) ResizeReplica(ctx context.Context, volume string, sizeBytes uint64) (Replica, error) {
	b, err := e.replicaBdev(ctx, volume)
	if err != nil {
		return Replica{}, err
	}
	lvs, err := e.Lvstore(ctx)
	if err != nil {
		return Replica{}, err
	}
	r, want := e.replicaOf(volume, b, lvs), clusterRound(lvs, sizeBytes)
	switch {
	case want == r.SizeBytes:
		return r, nil
	case want < r.SizeBytes:
		return Replica{}, fmt.Errorf("%w: replica %s has %d bytes; shrinking to %d would lose data", ErrInvalid, volume, r.SizeBytes, sizeBytes)
	}
	if err := e.spdk.BdevLvolResize(ctx, r.Lvol, (sizeBytes+mib-1)/mib); err != nil {
		return Replica{}, fmt.Errorf("resize replica %s: %w", volume, err)
	}
	if b, err = e.replicaBdev(ctx, volume); err != nil {
		return Replica{}, err
	}
	return e.replicaOf(volume, b, lvs), nil
}

// DeleteReplica removes a replica's export and its lvol. A missing replica
// is success. A replica that is a member of this OSD's raid for the volume
// is refused: delete the target first.
func (e *Engine) DeleteReplica(ctx context.Context, volume string) error {
	b, err := e.replicaBdev(ctx, volume)
	if errors.Is(err, ErrNotFound) {
		return e.UnexportReplica(ctx, volume)
	}
	if err != nil {
		return err
	}
	if b.Claimed {
		if subs, err := e.spdk.NvmfGetSubsystems(ctx, agentv1.VolumeNQN(volume)); err == nil && len(subs[0].Namespaces) > 0 && subs[0].Namespaces[0].BdevName == b.Name {
			return fmt.Errorf("%w: replica %s is exported as its volume's target; delete the target first", ErrInUse, volume)
		}
		raids, err := e.spdk.BdevRaidGetBdevs(ctx, types.RaidCategoryAll)
		if err != nil {
			return fmt.Errorf("list raids: %w", err)
		}
		for _, r := range raids {
			for _, s := range r.BaseBdevsList {
				if s.Name != nil && (*s.Name == b.Name || slices.Contains(b.Aliases, *s.Name)) {
					return fmt.Errorf("%w: replica %s is a member of target %s; delete the target first", ErrInUse, volume, r.Name)
				}
			}
		}
	}
	if err := e.UnexportReplica(ctx, volume); err != nil {
		return err
	}
	if err := e.spdk.BdevLvolDelete(ctx, e.lvolAlias(volume)); err != nil && !errors.Is(err, jsonrpc.ErrNotFound) {
		return fmt.Errorf("delete replica %s: %w", volume, err)
	}
	if err := e.epochs.lock(); err != nil {
		return err
	}
	defer e.epochs.unlock()
	return e.epochs.forget(volume)
}

// ExportReplica exports a replica to exactly one host: the NQN of the OSD
// that runs the volume's target of epoch. Any other host is removed, which
// drops its live connections: that is how an old target is fenced. An
// epoch below the highest the replica was exported for is refused
// (ErrStaleEpoch): the caller's view of the volume is stale. An export of
// an earlier lvol of the volume (under another NQN) goes. With keys, the
// target must prove keys.Secret to connect and is proven
// keys.CtrlSecret; a target allowed already keeps the keys it was
// allowed with.
func (e *Engine) ExportReplica(ctx context.Context, volume, targetHostNQN string, epoch uint32, keys Keys) (Subsystem, error) {
	if err := e.epochs.lock(); err != nil {
		return Subsystem{}, err
	}
	defer e.epochs.unlock()
	if err := e.epochs.admit(volume, epoch); err != nil {
		return Subsystem{}, err
	}
	b, err := e.replicaBdev(ctx, volume)
	if err != nil {
		return Subsystem{}, err
	}
	nqn := agentv1.ReplicaNQN(volume, b.UUID)
	// An export of an earlier lvol of the volume can only predate this
	// lvol's first export (the agent unexports before it deletes an lvol,
	// and SPDK keeps no subsystem across a restart): it is looked for
	// then, not on every re-drive, since listing every subsystem costs
	// SPDK's app thread in proportion to the OSD's volumes. It is looked
	// for before this export is made, so that a failed clean-up leaves
	// the export unmade and the next call looks again.
	if _, err := e.spdk.NvmfGetSubsystems(ctx, nqn); errors.Is(err, jsonrpc.ErrNotFound) {
		if err := e.unexportReplicaBut(ctx, volume, nqn); err != nil {
			return Subsystem{}, err
		}
	} else if err != nil {
		return Subsystem{}, fmt.Errorf("read subsystem %s: %w", nqn, err)
	}
	names, err := e.ensureKeys(ctx, volume, linkExport, keys)
	if err != nil {
		return Subsystem{}, err
	}
	if err := e.ensureSubsystem(ctx, subsystemSpec{NQN: nqn, Serial: VolumeSerial(volume), Model: "Flint replica", Bdev: b.Name}); err != nil {
		return Subsystem{}, err
	}
	if _, err := e.setHosts(ctx, nqn, []string{targetHostNQN}, names); err != nil {
		return Subsystem{}, err
	}
	return e.export(nqn), nil
}

// UnexportReplica deletes a replica's subsystem and the keys its target
// authenticated with; missing ones are success.
func (e *Engine) UnexportReplica(ctx context.Context, volume string) error {
	if err := e.unexportReplicaBut(ctx, volume, ""); err != nil {
		return err
	}
	return e.forgetKeys(ctx, volume, linkExport)
}

// unexportReplicaBut deletes every export of volume's replica except keep.
func (e *Engine) unexportReplicaBut(ctx context.Context, volume, keep string) error {
	subs, err := e.spdk.NvmfGetSubsystems(ctx, "")
	if err != nil {
		return fmt.Errorf("list subsystems: %w", err)
	}
	for _, s := range subs {
		if strings.HasPrefix(s.NQN, agentv1.ReplicaNQNPrefix(volume)) && s.NQN != keep {
			if err := e.deleteSubsystem(ctx, s.NQN); err != nil {
				return err
			}
		}
	}
	return nil
}

func (e *Engine) export(nqn string) Subsystem {
	l := e.cfg.Listener
	return Subsystem{NQN: nqn, Transport: l.Transport, Address: l.Address, Port: l.Port}
}

func (e *Engine) listenAddress() types.ListenAddress {
	l := e.cfg.Listener
	return types.ListenAddress{Trtype: l.Transport, Adrfam: "ipv4", Traddr: l.Address, Trsvcid: strconv.Itoa(l.Port)}
}

// subsystemSpec is a subsystem exporting one bdev as namespace 1.
type subsystemSpec struct {
	// Bdev is what namespace 1 exports; "" for a standby, which has none
	// yet.
	NQN, Serial, Model, Bdev string
	// Identity, when set, is the namespace's: a volume's, the same on
	// every target. Unset, SPDK derives one from the bdev.
	Identity *agentv1.Identity
	// MinCntlid and MaxCntlid, when set, bound the controller ids the
	// subsystem hands out.
	MinCntlid, MaxCntlid uint16
	// LatencyHistogram keeps SPDK's latency histogram on for the bdev,
	// for the metrics.
	LatencyHistogram bool
	// Admitted, when set, are the only hosts a subsystem found without a
	// namespace (a standby, PrepareTarget) lets in before the namespace
	// is added: a host unpublished while the standby waited must not
	// reach it, even if the call fails before it sets the hosts itself.
	Admitted *admission
	// AnaReporting creates the subsystem reporting ANA states, so that a
	// pause can hold its hosts' I/O without disconnecting them, and keeps
	// its listener optimized (pause.go). A subsystem that exists keeps
	// what it was created with: SPDK cannot turn ANA on later.
	AnaReporting bool
}

// admission is a subsystem's hosts and the keys they prove.
type admission struct {
	hosts []string
	keys  keyNames
}

// admitting is spec with its hosts narrowed to hosts before a namespace
// is added to it (subsystemSpec.Admitted).
func (spec subsystemSpec) admitting(hosts []string, keys keyNames) subsystemSpec {
	spec.Admitted = &admission{hosts, keys}
	return spec
}

// ensureSubsystem makes spec.NQN exist with spec.Bdev as namespace 1 and
// the OSD's listener, creating what is missing. A subsystem that exports
// another bdev or another identity is a conflict, never changed under a
// host; one numbering its controllers from another range belongs to an
// earlier incarnation of the target and is created again.
func (e *Engine) ensureSubsystem(ctx context.Context, spec subsystemSpec) error {
	nqn := spec.NQN
	subs, err := e.spdk.NvmfGetSubsystems(ctx, nqn)
	if err == nil && spec.MinCntlid != 0 && (subs[0].MinCntlid != spec.MinCntlid || subs[0].MaxCntlid != spec.MaxCntlid) {
		if err := e.deleteSubsystem(ctx, nqn); err != nil {
			return fmt.Errorf("replace subsystem %s of an earlier incarnation (controller ids %d-%d, now %d-%d): %w", nqn, subs[0].MinCntlid, subs[0].MaxCntlid, spec.MinCntlid, spec.MaxCntlid, err)
		}
		err = jsonrpc.ErrNotFound // created again below
	}
	if errors.Is(err, jsonrpc.ErrNotFound) {
		if err := e.spdk.NvmfCreateSubsystem(ctx, types.NvmfCreateSubsystemRequest{
			NQN: nqn, SerialNumber: spec.Serial, ModelNumber: spec.Model, AllowAnyHost: false,
			AnaReporting: spec.AnaReporting, MinCntlid: spec.MinCntlid, MaxCntlid: spec.MaxCntlid,
		}); err != nil {
			return fmt.Errorf("create subsystem %s: %w", nqn, err)
		}
		subs, err = e.spdk.NvmfGetSubsystems(ctx, nqn)
	}
	if err != nil {
		return fmt.Errorf("read subsystem %s: %w", nqn, err)
	}
	sub := subs[0]
	added := false
	switch {
	case spec.Bdev == "":
		// A standby's: its namespace comes with the move (PrepareTarget).
	case len(sub.Namespaces) == 0:
		if a := spec.Admitted; a != nil {
			if _, err := e.setHosts(ctx, nqn, a.hosts, a.keys); err != nil {
				return err
			}
		}
		ns := types.NvmfNamespaceRequest{BdevName: spec.Bdev, NSID: 1}
		if id := spec.Identity; id != nil {
			ns.UUID, ns.NGUID, ns.EUI64 = id.UUID, id.NGUID, id.EUI64
		}
		if _, err := e.spdk.NvmfSubsystemAddNs(ctx, nqn, ns); err != nil {
			return fmt.Errorf("add %s to subsystem %s: %w", spec.Bdev, nqn, err)
		}
		added = true
	case sub.Namespaces[0].BdevName != spec.Bdev:
		return fmt.Errorf("%w: subsystem %s exports bdev %s, not %s", ErrConflict, nqn, sub.Namespaces[0].BdevName, spec.Bdev)
	case spec.Identity != nil && !sameIdentity(sub.Namespaces[0], *spec.Identity):
		ns := sub.Namespaces[0]
		return fmt.Errorf("%w: subsystem %s exports its namespace as uuid %s, NGUID %s, EUI-64 %s, not as the volume's %s, %s, %s: hosts would take it for another volume; delete the target to build it again",
			ErrConflict, nqn, ns.UUID, ns.NGUID, ns.EUI64, spec.Identity.UUID, spec.Identity.NGUID, spec.Identity.EUI64)
	}
	if spec.LatencyHistogram && spec.Bdev != "" {
		// A namespace added now has new channels, which a histogram left
		// on from an earlier export would not cover until set afresh.
		if err := e.keepLatencyHistogram(ctx, spec.Bdev, added); err != nil {
			return err
		}
	}
	if err := e.ensureListener(ctx, sub); err != nil {
		return err
	}
	if spec.AnaReporting {
		return e.ensureAccessible(ctx, sub, false)
	}
	return nil
}

// ensureListener makes sub listen on the OSD's listener.
func (e *Engine) ensureListener(ctx context.Context, sub types.NvmfSubsystem) error {
	want := e.listenAddress()
	if listensOn(sub, want) {
		return nil
	}
	if err := e.spdk.NvmfSubsystemAddListener(ctx, sub.NQN, want); err != nil {
		return fmt.Errorf("listen for %s on %s:%s: %w", sub.NQN, want.Traddr, want.Trsvcid, err)
	}
	return nil
}

// listensOn says whether sub listens on addr.
func listensOn(sub types.NvmfSubsystem, addr types.ListenAddress) bool {
	return slices.ContainsFunc(sub.ListenAddresses, func(l types.ListenAddress) bool { return sameAddress(l, addr) })
}

// sameAddress says whether two listeners are one: SPDK echoes the
// address and port as given.
func sameAddress(a, b types.ListenAddress) bool {
	return a.Traddr == b.Traddr && a.Trsvcid == b.Trsvcid
}

// The latency histogram's shape: 32 buckets per power of two (3%
// resolution) from 1 µs to 2 s; longer I/O lands in the last bucket. SPDK
// converts the bounds to ticks with a 64-bit product that wraps above
// 1.8e19 ns·Hz, which 2 s keeps clear of up to 9 GHz.
const (
	histogramGranularity = 5
	histogramMinNsec     = 1_000
	histogramMaxNsec     = 2_000_000_000
)

// keepLatencyHistogram turns bdev's latency histogram on; SPDK keeps the
// counts of one turned on again while on. With reset it is first turned
// off, which empties it and sizes it afresh for every channel.
func (e *Engine) keepLatencyHistogram(ctx context.Context, bdev string, reset bool) error {
	req := types.BdevEnableHistogramRequest{Name: bdev, Granularity: histogramGranularity, MinNsec: histogramMinNsec, MaxNsec: histogramMaxNsec}
	if reset {
		if err := e.spdk.BdevEnableHistogram(ctx, req); err != nil {
			return fmt.Errorf("turn the latency histogram of %s off: %w", bdev, err)
		}
	}
	req.Enable = true
	if err := e.spdk.BdevEnableHistogram(ctx, req); err != nil {
		return fmt.Errorf("turn the latency histogram of %s on: %w", bdev, err)
	}
	return nil
}

// sameIdentity says whether ns presents identity id (SPDK reports hex in
// upper case).
func sameIdentity(ns types.NvmfNamespace, id agentv1.Identity) bool {
	return strings.EqualFold(ns.UUID, id.UUID) && strings.EqualFold(ns.NGUID, id.NGUID) && strings.EqualFold(ns.EUI64, id.EUI64)
}

// setHosts makes hosts the exact allow-list of nqn: it adds the missing
// first, each to authenticate with the keys of names, then removes the
// others. A host allowed already keeps its keys: one connected before
// its link had keys would be refused at its next reconnect. It returns
// the allow-list SPDK holds afterwards, read back: what the caller
// reports is what SPDK enforces.
func (e *Engine) setHosts(ctx context.Context, nqn string, hosts []string, names keyNames) ([]string, error) {
	subs, err := e.spdk.NvmfGetSubsystems(ctx, nqn)
	if err != nil {
		return nil, fmt.Errorf("read subsystem %s: %w", nqn, err)
	}
	have := subs[0].HostNQNs()
	for _, h := range hosts {
		if !slices.Contains(have, h) {
			if err := e.spdk.NvmfSubsystemAddHost(ctx, types.NvmfSubsystemHostRequest{NQN: nqn, Host: h, DhchapKey: names.key, DhchapCtrlrKey: names.ctrlr}); err != nil {
				return nil, fmt.Errorf("allow host %s on %s: %w", h, nqn, err)
			}
		}
	}
	for _, h := range have {
		if !slices.Contains(hosts, h) {
			if err := e.spdk.NvmfSubsystemRemoveHost(ctx, nqn, h); err != nil {
				return nil, fmt.Errorf("disallow host %s on %s: %w", h, nqn, err)
			}
		}
	}
	if subs, err = e.spdk.NvmfGetSubsystems(ctx, nqn); err != nil {
		return nil, fmt.Errorf("read back subsystem %s: %w", nqn, err)
	}
	return subs[0].HostNQNs(), nil
}

func (e *Engine) deleteSubsystem(ctx context.Context, nqn string) error {
	if _, err := e.spdk.NvmfGetSubsystems(ctx, nqn); errors.Is(err, jsonrpc.ErrNotFound) {
		return nil
	}
	if err := e.spdk.NvmfDeleteSubsystem(ctx, nqn); err != nil {
		return fmt.Errorf("delete subsystem %s: %w", nqn, err)
	}
	e.mu.Lock()
	delete(e.accessible, nqn) // a subsystem made again starts accessible
	e.mu.Unlock()
	return nil
}
