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
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/flint-io/flint/internal/spdk/jsonrpc"
	"github.com/flint-io/flint/internal/spdk/types"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// Reconnect options for remote replicas: a lost replica is retried every
// 2 s for ever, and I/O to it is held, never failed. SPDK's raid1
// acknowledges a write once an in-sync member took it and drops a member
// whose I/O failed, so with a fast I/O fail the raid would acknowledge
// writes that a replica the operator still counts in sync lacks, and a
// target lost before the operator heard of it could be rebuilt from that
// replica. Held, a member leaves only once the caller has recorded it out
// of sync (EnsureTarget with InSync false, DeleteTarget with it in
// outOfSync): its controller is detached, which fails the held I/O on it,
// and the other members complete the writes.
const (
	ctrlrLossTimeoutSec  = -1
	reconnectDelaySec    = 2
	fastIOFailTimeoutSec = 0
)

// MemberSpec is one replica of a volume as its target is told of it.
type MemberSpec struct {
	// OSD is the uid of the OSD holding the replica.
	OSD string
	// Export is where a remote replica is reached; empty for the local one.
	Export Subsystem
	// InSync says the replica holds every write the volume acknowledged.
	// Only in-sync replicas assemble a raid; the others are rebuilt from
	// them, one at a time.
	InSync bool
	// Leaving says the replica's OSD is about to stop: a member that is
	// not in sync is detached (its slot stays) and not attached again
	// while it leaves, so the OSD's stop holds no write.
	Leaving bool
	// WaitRebuild says the replica, not in sync, waits for a rebuild
	// slot: it is attached but not added to the raid yet.
	WaitRebuild bool
}

// TargetSpec is the volume a target serves.
type TargetSpec struct {
	// Volume is the volume's key; its namespace identity derives from it
	// (agentv1.VolumeIdentity).
	Volume string
	// Epoch counts the target's incarnations (1, 2, ...): it picks the
	// controller-id range of the volume's subsystem (agentv1.CntlidRange).
	Epoch   uint32
	Members []MemberSpec
	// Hosts are the NQNs allowed to connect: the nodes the volume is
	// published to.
	Hosts []string
	// Resume says the target ran before: if its raid is gone, EnsureTarget
	// fails with ErrTargetLost instead of assembling it from every in-sync
	// member, which may differ in the writes that were in flight.
	Resume bool
	// RebuildMaxMiBPerSec caps the bandwidth of a rebuild started by this
	// call; 0 for no cap.
	RebuildMaxMiBPerSec uint32
	// QoS limits the volume's I/O at the exported bdev; zero limits
	// nothing.
	QoS types.QosLimits
	// MemberKeys authenticate the target to the remote replicas' exports
	// (their ExportReplica keys); HostKeys authenticate the hosts to the
	// target. Zero keys authenticate nothing.
	MemberKeys, HostKeys Keys
}

// TargetMember is one replica's place in the target, as it found it.
type TargetMember struct {
	OSD            string
	State          agentv1.MemberState
	RebuildPercent int
	// HeldReason says why a HELD member's writes wait.
	HeldReason string
}

// Target is what a target serves and how healthy it is.
type Target struct {
	Export  Subsystem
	Members []TargetMember
	// SizeBytes is what the raid exports: its smallest member's size, so
	// a resize shows once every replica grew.
	SizeBytes uint64
	// AllowedHosts are the hosts SPDK lets connect to the volume, read
	// back after they were set.
	AllowedHosts []string
	// QoS are the limits SPDK holds on the exported bdev.
	QoS types.QosLimits
}

// Degraded reports whether any member is not online.
func (s Target) Degraded() bool {
	return slices.ContainsFunc(s.Members, func(m TargetMember) bool { return m.State != agentv1.MemberState_MEMBER_STATE_ONLINE })
}

// EnsureTarget makes this OSD serve spec.Volume: remote replicas attached
// with reconnect options, a raid1 assembled from the reachable in-sync
// replicas, at most one rebuild started onto a reachable replica that is
// not a member, the volume's subsystem exported to exactly spec.Hosts,
// limited to spec.QoS. It is level-triggered: call it again to progress
// rebuilds and to re-drive the target after SPDK restarted.
func (e *Engine) EnsureTarget(ctx context.Context, spec TargetSpec) (Target, error) {
	if err := e.checkTargetSpec(spec); err != nil {
		return Target{}, err
	}
	unlock, err := e.targets.Lock(ctx, spec.Volume)
	if err != nil {
		return Target{}, fmt.Errorf("wait for another call on volume %s to end: %w", spec.Volume, err)
	}
	defer unlock()
	if err := e.members.count(spec, e.cfg.UID); err != nil {
		return Target{}, err
	}
	localBdev, err := e.replicaBdev(ctx, spec.Volume)
	if err != nil {
		return Target{}, err
	}
	// The local replica joins the raid here, so it is not exported: deleting
	// an export left from when another OSD was the target also cuts that
	// target off it (fencing).
	if err := e.UnexportReplica(ctx, spec.Volume); err != nil {
		return Target{}, err
	}
	hostKeys, err := e.ensureKeys(ctx, spec.Volume, linkHost, spec.HostKeys)
	if err != nil {
		return Target{}, err
	}
	if len(spec.Members) == 1 {
		return e.ensureSingleTarget(ctx, spec, localBdev, hostKeys)
	}
	memberKeys, err := e.ensureKeys(ctx, spec.Volume, linkMember, spec.MemberKeys)
	if err != nil {
		return Target{}, err
	}
	bdevs := map[string]string{}  // member OSD → its bdev, when reachable
	held := map[string]heldBdev{} // member OSD → its bdev, when I/O to it is held
	for _, m := range spec.Members {
		if m.OSD == e.cfg.UID {
			bdevs[m.OSD] = localBdev.Name
			continue
		}
		if m.Leaving && !m.InSync {
			// Neither reachable nor held: letGo detaches it from the raid,
			// and a rebuild onto it stops with its controller.
			if err := e.detachLeaving(ctx, spec.Volume, m.OSD); err != nil {
				return Target{}, err
			}
			continue
		}
		b, connected, err := e.attachRemote(ctx, spec.Volume, m, memberKeys)
		if err != nil {
			return Target{}, err
		}
		if b == "" {
			continue // not attached: not exported, or the attach was refused
		}
		h, err := e.holdsIO(ctx, b, connected)
		if err != nil {
			return Target{}, err
		}
		if h.reason != "" {
			held[m.OSD] = h
		} else {
			bdevs[m.OSD] = b
		}
	}
	blocks := localBdev.SizeBytes() / BlockSize
	raid, err := e.ensureRaid(ctx, spec, bdevs, blocks)
	if err != nil {
		return Target{}, err
	}
	// Held members are let go even when the flint_volume cannot be put
	// right: the writes held for them wait on nothing else.
	bdev, volumeErr := e.ensureVolumeBdev(ctx, spec.Volume)
	if raid, err = e.letGo(ctx, spec, raid, bdevs, held); err != nil {
		return Target{}, errors.Join(err, volumeErr)
	}
	if volumeErr != nil {
		return Target{}, volumeErr
	}
	copied, err := e.resync(ctx, spec, raid, bdevs, held, blocks)
	if err != nil {
		return Target{}, err
	}
	nqn := agentv1.VolumeNQN(spec.Volume)
	if err := e.ensureSubsystem(ctx, volumeSubsystem(spec, bdev).admitting(spec.Hosts, hostKeys)); err != nil {
		return Target{}, err
	}
	exported, err := e.spdk.BdevGetBdevs(ctx, bdev)
	if err != nil {
		return Target{}, fmt.Errorf("read bdev %s: %w", bdev, err)
	}
	qos, err := e.ensureQoS(ctx, exported[0], spec.QoS)
	if err != nil {
		return Target{}, err
	}
	allowed, err := e.setHosts(ctx, nqn, spec.Hosts, hostKeys)
	if err != nil {
		return Target{}, err
	}
	st, err := e.targetStatus(ctx, spec, exported[0], bdevs, held, copied)
	st.AllowedHosts, st.QoS = allowed, qos
	return st, err
}

// ensureQoS gives the exported bdev b, as read once its namespace was
// added, the limits want, unless SPDK holds them already, and returns
// what it holds. It runs once the subsystem's
// namespace has opened the bdev's I/O channels, and before any host is
// let in, so that a new target serves no host unlimited. Before, SPDK
// takes limits once and then answers -EAGAIN: its own open of the bdev
// for the call starts QoS on a bdev with limits and no channel, which
// leaves the change the call asks for "in progress".
func (e *Engine) ensureQoS(ctx context.Context, b types.Bdev, want types.QosLimits) (types.QosLimits, error) {
	if b.AssignedRateLimits == want.Applied() {
		return b.AssignedRateLimits, nil
	}
	if err := e.spdk.BdevSetQosLimit(ctx, types.BdevSetQosLimitRequest{Name: b.Name, QosLimits: want}); err != nil {
		return types.QosLimits{}, fmt.Errorf("set the QoS limits of %s to %+v: %w", b.Name, want, err)
	}
	return want.Applied(), nil
}

// ensureVolumeBdev returns the bdev the volume's namespace exports over
// its raid: a flint_volume when SPDK is flint_tgt, so that a host's
// controller reset stops there and never reaches the raid (docs/spdk.md),
// else the raid itself. A namespace added already keeps its bdev: the
// namespace cannot change under connected hosts.
func (e *Engine) ensureVolumeBdev(ctx context.Context, volume string) (string, error) {
	raid, fv := raidName(volume), volumeBdevName(volume)
	subs, err := e.spdk.NvmfGetSubsystems(ctx, agentv1.VolumeNQN(volume))
	if err != nil && !errors.Is(err, jsonrpc.ErrNotFound) {
		return "", fmt.Errorf("read subsystem of %s: %w", volume, err)
	}
	if err == nil && len(subs[0].Namespaces) > 0 && subs[0].Namespaces[0].BdevName == raid {
		return raid, nil
	}
	info, found, err := e.volumeBdevInfo(ctx, volume)
	if err != nil {
		return "", err
	}
	if found {
		return fv, e.restoreVolumeBdev(ctx, volume, info)
	}
	e.mu.Lock()
	volumeBdev := e.volumeBdev
	e.mu.Unlock()
	if !volumeBdev {
		return raid, nil
	}
	if err := e.spdk.FlintVolumeCreate(ctx, types.FlintVolumeCreateRequest{Name: fv, BaseBdev: raid}); err != nil {
		return "", fmt.Errorf("create flint_volume %s over %s: %w", fv, raid, err)
	}
	return fv, nil
}

// restoreVolumeBdev puts right a flint_volume that a delta resync's join
// left paused, or without its raid (joinAfterDelta): the raid, made again
// by ensureRaid once the operator re-assembles the target (a resuming call
// finds it lost), is attached, and host I/O goes on. Nothing else pauses
// a flint_volume.
func (e *Engine) restoreVolumeBdev(ctx context.Context, volume string, info types.FlintVolumeInfo) error {
	fv := volumeBdevName(volume)
	if info.BaseBdev == "" {
		if err := e.spdk.FlintVolumePause(ctx, fv); err != nil {
			return fmt.Errorf("pause %s, which lost its raid: %w", fv, err)
		}
		if err := e.spdk.FlintVolumeAttach(ctx, types.FlintVolumeAttachRequest{Name: fv, BaseBdev: raidName(volume)}); err != nil {
			return fmt.Errorf("attach %s to its raid: %w", fv, err)
		}
		info.Paused = true
	}
	if info.Paused {
		if err := e.spdk.FlintVolumeResume(ctx, fv); err != nil {
			return fmt.Errorf("resume %s: %w", fv, err)
		}
	}
	return nil
}

// volumeSubsystem is the subsystem hosts reach spec's volume by, exporting
// bdev with the volume's identity and the epoch's controller ids.
func volumeSubsystem(spec TargetSpec, bdev string) subsystemSpec {
	id := agentv1.VolumeIdentity(spec.Volume)
	low, high := agentv1.CntlidRange(spec.Epoch)
	return subsystemSpec{NQN: agentv1.VolumeNQN(spec.Volume), Serial: id.Serial, Model: "Flint volume", Bdev: bdev, Identity: &id, MinCntlid: low, MaxCntlid: high, LatencyHistogram: true, AnaReporting: true}
}

// ensureSingleTarget serves a volume of one replica: SPDK's raid1 needs two
// members, and one copy needs no mirror, so the lvol itself is exported.
func (e *Engine) ensureSingleTarget(ctx context.Context, spec TargetSpec, b types.Bdev, hostKeys keyNames) (Target, error) {
	nqn := agentv1.VolumeNQN(spec.Volume)
	if err := e.ensureSubsystem(ctx, volumeSubsystem(spec, b.Name).admitting(spec.Hosts, hostKeys)); err != nil {
		return Target{}, err
	}
	qos, err := e.ensureQoS(ctx, b, spec.QoS)
	if err != nil {
		return Target{}, err
	}
	allowed, err := e.setHosts(ctx, nqn, spec.Hosts, hostKeys)
	if err != nil {
		return Target{}, err
	}
	return Target{
		Export: e.export(nqn), SizeBytes: b.SizeBytes(), AllowedHosts: allowed, QoS: qos,
		Members: []TargetMember{{OSD: e.cfg.UID, State: agentv1.MemberState_MEMBER_STATE_ONLINE}},
	}, nil
}

func (e *Engine) checkTargetSpec(spec TargetSpec) error {
	if err := checkVolumeName(spec.Volume); err != nil {
		return err
	}
	if spec.Epoch == 0 {
		return fmt.Errorf("%w: volume %s needs the target's epoch (from 1): it gives the controller ids", ErrInvalid, spec.Volume)
	}
	local := 0
	seen := map[string]bool{}
	for _, m := range spec.Members {
		if seen[m.OSD] {
			return fmt.Errorf("%w: volume %s lists OSD %s twice", ErrInvalid, spec.Volume, m.OSD)
		}
		seen[m.OSD] = true
		if m.OSD == e.cfg.UID {
			local++
		}
	}
	if local != 1 {
		return fmt.Errorf("%w: a target runs on an OSD that holds one of the volume's replicas; %s lists none on this OSD", ErrInvalid, spec.Volume)
	}
	// InSync matters only to assemble a raid that is not there: a running
	// raid's members are what SPDK says, not what the caller believes.
	return nil
}

// attachRemote attaches a remote replica unless it is attached, and
// returns its bdev and whether its controller is connected; "" when the
// replica cannot be reached now (or refused the keys). A controller that
// lost its connection keeps its bdev (it retries for ever, with the keys
// it was attached with); letGo decides whether it stays.
func (e *Engine) attachRemote(ctx context.Context, volume string, m MemberSpec, keys keyNames) (string, bool, error) {
	name, bdev := remoteName(volume, m.OSD), remoteBdev(volume, m.OSD)
	if _, err := e.spdk.BdevGetBdevs(ctx, bdev); err == nil {
		connected, err := e.connected(ctx, name)
		return bdev, connected, err
	} else if !errors.Is(err, jsonrpc.ErrNotFound) {
		return "", false, fmt.Errorf("look up replica bdev %s: %w", bdev, err)
	}
	// A controller without its bdev lost its namespace: let it go and
	// attach afresh.
	if _, err := e.spdk.BdevNvmeGetControllers(ctx, name); err == nil {
		if err := e.spdk.BdevNvmeDetachController(ctx, name); err != nil && !errors.Is(err, jsonrpc.ErrNotFound) {
			return "", false, fmt.Errorf("detach stale controller %s: %w", name, err)
		}
	}
	sub := m.Export
	if sub.NQN == "" {
		return "", false, nil // its OSD has not exported it
	}
	_, err := e.spdk.BdevNvmeAttachController(ctx, types.BdevNvmeAttachControllerRequest{
		Name: name, Trtype: sub.Transport, Adrfam: "ipv4", Traddr: sub.Address, Trsvcid: fmt.Sprint(sub.Port),
		Subnqn: sub.NQN, Hostnqn: agentv1.HostNQN(e.cfg.UID),
		CtrlrLossTimeoutSec: ctrlrLossTimeoutSec, ReconnectDelaySec: reconnectDelaySec, FastIOFailTimeoutSec: fastIOFailTimeoutSec,
		DhchapKey: keys.key, DhchapCtrlrKey: keys.ctrlr,
	})
	if jsonrpc.CodeOf(err) == jsonrpc.CodeIOError {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("attach replica of %s on OSD %s at %s:%d: %w", volume, m.OSD, sub.Address, sub.Port, err)
	}
	return bdev, true, nil
}

// detachLeaving detaches the controller of a leaving member that is not
// in the raid (the one a rebuild writes to, or one attached and not yet
// rebuilt onto); a raid member is left to letGo, which takes it out.
func (e *Engine) detachLeaving(ctx context.Context, volume, osd string) error {
	name, bdev := remoteName(volume, osd), remoteBdev(volume, osd)
	r, err := e.raid(ctx, raidName(volume))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	if err == nil && slices.Contains(r.Members(), bdev) {
		return nil
	}
	ctrlrs, err := e.spdk.BdevNvmeGetControllers(ctx, name)
	if errors.Is(err, jsonrpc.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read controller %s: %w", name, err)
	}
	h, err := e.holdsIO(ctx, bdev, slices.ContainsFunc(ctrlrs, hasEnabledPath))
	if err != nil {
		return err
	}
	if err := e.detachController(ctx, name, h.stuck()); err != nil && !errors.Is(err, jsonrpc.ErrNotFound) {
		return fmt.Errorf("detach the leaving replica %s: %w", name, err)
	}
	return nil
}

// heldBdev is a remote replica's bdev and why I/O to it is held ("" when
// it is not).
type heldBdev struct {
	name, reason string
	// connected says its controller kept its connection.
	connected bool
}

// connectionDown is why a remote replica whose controller lost its
// connection holds I/O.
const connectionDown = "its connection to the target is down"

// stuck says the bdev holds I/O on a live connection (memberStuck): its
// controller is disabled before it is detached, or the detach would wait
// for that I/O.
func (h heldBdev) stuck() bool { return h.reason != "" && h.connected }

// judge reads whether bdev, a raid member, holds I/O now: a remote
// replica's is judged by holdsIO, anything else holds none.
func (e *Engine) judge(ctx context.Context, bdev string) (heldBdev, error) {
	ctrlr := strings.TrimSuffix(bdev, "n1")
	if !isRemoteName(ctrlr) {
		return heldBdev{name: bdev}, nil
	}
	connected, err := e.connected(ctx, ctrlr)
	if err != nil {
		return heldBdev{}, err
	}
	return e.holdsIO(ctx, bdev, connected)
}

// holdsIO judges remote replica bdev, whose controller is connected or
// not: held when it is not, or when it is stuck (memberStuck).
func (e *Engine) holdsIO(ctx context.Context, bdev string, connected bool) (heldBdev, error) {
	h := heldBdev{name: bdev, connected: connected}
	if !connected {
		h.reason = connectionDown
		return h, nil
	}
	st, err := e.spdk.BdevGetIostat(ctx, bdev)
	if errors.Is(err, jsonrpc.ErrNotFound) {
		return h, nil
	}
	if err != nil {
		return h, fmt.Errorf("read I/O counters of %s: %w", bdev, err)
	}
	for _, b := range st.Bdevs {
		why, err := e.memberStuck(ctx, b)
		if err != nil {
			return h, err
		}
		h.reason = cmp.Or(h.reason, why)
	}
	return h, nil
}

// memberStuck judges a connected remote member from its counters st, and
// says why it is stuck ("" when it is not). It is stuck when its device
// failed I/O with an error of its own (ENOSPC on its lvstore and a media
// error both come back as internal_device_error; a namespace gone as
// invalid_namespace_or_format): bdev_nvme retries that I/O for ever
// (ensureNvmeOptions), and the count never drops while its controller
// lives. Or when it went silent (silenceWatch), which needs SPDK's
// sampling of its queue depth: turned on here when it is off, as on a new
// controller's bdev. Either way it holds writes as a lost connection
// does. Path errors and the aborts of a lost connection are the
// connection's, which connected() reports.
func (e *Engine) memberStuck(ctx context.Context, st types.BdevIostat) (string, error) {
	if st.QueueDepthPollingPeriod == 0 {
		if err := e.spdk.BdevSetQdSamplingPeriod(ctx, st.Name, queueDepthPeriodUs); err != nil && !errors.Is(err, jsonrpc.ErrNotFound) {
			return "", fmt.Errorf("sample the queue depth of %s: %w", st.Name, err)
		}
	}
	silent := e.silence.silent(st)
	if st.DriverSpecific != nil {
		if n := ownErrors(st.DriverSpecific.NvmeError); n > 0 {
			return fmt.Sprintf("its device failed %d I/O tries with an error of its own (a full lvstore, a media error)", n), nil
		}
	}
	if silent {
		return fmt.Sprintf("it has answered no I/O for %s, with %d outstanding (its SPDK hangs, or the network drops its packets)", e.silence.after, st.QueueDepth), nil
	}
	return "", nil
}

// ownErrors counts the failed completions in e that are neither path
// errors nor aborts.
func ownErrors(e *types.NvmeErrorStat) int64 {
	if e == nil {
		return 0
	}
	n := -int64(e.StatusCode["aborted_sq_deletion"]) - int64(e.StatusCode["aborted_by_request"])
	for kind, count := range e.StatusType {
		if kind != "path" {
			n += int64(count)
		}
	}
	return max(n, 0)
}

// connected reports whether controller name has a path that is enabled.
func (e *Engine) connected(ctx context.Context, name string) (bool, error) {
	ctrlrs, err := e.spdk.BdevNvmeGetControllers(ctx, name)
	if errors.Is(err, jsonrpc.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read controller %s: %w", name, err)
	}
	return slices.ContainsFunc(ctrlrs, hasEnabledPath), nil
}

// hasEnabledPath reports whether controller c is connected.
func hasEnabledPath(c types.NvmeController) bool {
	return slices.ContainsFunc(c.Ctrlrs, func(p types.NvmeCtrlrPath) bool { return p.State == "enabled" })
}

// ensureRaid returns the volume's raid1, creating it from the reachable
// in-sync members when it does not exist. Every other member gets a slot
// held by a null placeholder that is removed at once: SPDK brings a raid1
// without superblock online only when every named base bdev exists.
func (e *Engine) ensureRaid(ctx context.Context, spec TargetSpec, bdevs map[string]string, blocks uint64) (types.RaidBdev, error) {
	name := raidName(spec.Volume)
	if r, err := e.raid(ctx, name); err == nil || !errors.Is(err, ErrNotFound) {
		return r, err
	}
	if spec.Resume {
		return types.RaidBdev{}, fmt.Errorf("%w: the raid of %s is gone (SPDK restarted, or a resync's join was cut short): re-assemble it from one replica and resynchronise the others", ErrTargetLost, spec.Volume)
	}
	slots := make([]string, len(spec.Members))
	for i, m := range e.localFirst(spec.Members) {
		if b, ok := bdevs[m.OSD]; ok && m.InSync {
			slots[i] = b
		}
	}
	if !slices.ContainsFunc(slots, func(b string) bool { return b != "" }) {
		return types.RaidBdev{}, fmt.Errorf("%w: no replica of %s that the caller knows in sync is reachable to assemble its raid from", ErrNotFound, spec.Volume)
	}
	if err := e.createRaid(ctx, spec.Volume, slots, blocks); err != nil {
		return types.RaidBdev{}, err
	}
	return e.raid(ctx, name)
}

// createRaid makes the volume's raid1 with slots (in localFirst order),
// online at once: a slot named "" is left empty for a rebuild to fill,
// held by a placeholder of blocks while the raid is made.
func (e *Engine) createRaid(ctx context.Context, volume string, slots []string, blocks uint64) error {
	name := raidName(volume)
	bases := slices.Clone(slots)
	var placeholders []string
	for i, b := range bases {
		if b != "" {
			continue
		}
		ph := placeholderName(volume, i)
		if _, err := e.spdk.BdevNullCreate(ctx, types.BdevNullCreateRequest{Name: ph, NumBlocks: blocks, BlockSize: BlockSize}); err != nil && !errors.Is(err, jsonrpc.ErrExists) {
			return fmt.Errorf("create placeholder %s: %w", ph, err)
		}
		bases[i] = ph
		placeholders = append(placeholders, ph)
	}
	raid := types.BdevRaidCreateRequest{Name: name, RaidLevel: "raid1", BaseBdevs: bases, Superblock: false, UUID: agentv1.VolumeIdentity(volume).RaidUUID}
	if err := e.spdk.BdevRaidCreate(ctx, raid); err != nil {
		return fmt.Errorf("create raid1 %s over %v: %w", name, bases, err)
	}
	for _, ph := range placeholders {
		if err := e.spdk.BdevRaidRemoveBaseBdev(ctx, ph); err != nil {
			return fmt.Errorf("free the slot held by %s: %w", ph, err)
		}
		if err := e.spdk.BdevNullDelete(ctx, ph); err != nil {
			return fmt.Errorf("delete placeholder %s: %w", ph, err)
		}
	}
	return nil
}

// localFirst orders members for the raid's slots: this OSD's replica
// first. SPDK's raid1 reads from the member with the fewest blocks being
// read, the first slot on a tie, so reads at queue depth 1 stay on the
// local lvol and need no fabric round trip, and deeper queues spread
// over every member.
func (e *Engine) localFirst(members []MemberSpec) []MemberSpec {
	out := make([]MemberSpec, 0, len(members))
	for _, m := range members {
		if m.OSD == e.cfg.UID {
			out = append(out, m)
		}
	}
	for _, m := range members {
		if m.OSD != e.cfg.UID {
			out = append(out, m)
		}
	}
	return out
}

func (e *Engine) raid(ctx context.Context, name string) (types.RaidBdev, error) {
	raids, err := e.spdk.BdevRaidGetBdevs(ctx, types.RaidCategoryAll)
	if err != nil {
		return types.RaidBdev{}, fmt.Errorf("list raids: %w", err)
	}
	for _, r := range raids {
		if r.Name == name {
			return r, nil
		}
	}
	return types.RaidBdev{}, fmt.Errorf("%w: no raid %s", ErrNotFound, name)
}

// rebuilding says whether bdev is the member r is rebuilding onto.
func rebuilding(r types.RaidBdev, bdev string) bool {
	return r.Process != nil && r.Process.Target == bdev
}

// letGo takes out of the raid every member the target must not keep:
// one the spec no longer lists (a replica drained away, freeing its slot
// for the replacement), and one whose I/O is held (its connection is
// down, or its device fails I/O) that the spec does not count in sync. A
// held member the spec counts in sync stays and holds writes (HELD): no
// write is acknowledged without a replica the caller trusts until the
// caller has recorded it out of sync. A remote member leaves by its
// controller's detach, which also fails the I/O it holds (a removal from
// the raid would wait for that I/O for ever). A held controller that is no
// member is detached too, so that the next call attaches the replica's
// current export afresh. The raid keeps at least one member: SPDK deletes
// a raid that loses its last.
func (e *Engine) letGo(ctx context.Context, spec TargetSpec, r types.RaidBdev, bdevs map[string]string, held map[string]heldBdev) (types.RaidBdev, error) {
	keep := map[string]bool{}
	for _, m := range spec.Members {
		if b, ok := bdevs[m.OSD]; ok {
			keep[b] = true
		}
		if b, ok := held[m.OSD]; ok && m.InSync {
			keep[b.name] = true
		}
	}
	in := r.Members()
	changed := false
	leave := func(b heldBdev) error {
		e.markBeforeLetGo(ctx, spec, b.name)
		if err := e.detachMember(ctx, r, b); err != nil {
			return err
		}
		in = slices.DeleteFunc(in, func(x string) bool { return x == b.name })
		changed = true
		return nil
	}
	for _, b := range held {
		member := slices.Contains(in, b.name)
		if member && (keep[b.name] || len(in) == 1) {
			continue
		}
		if err := leave(b); err != nil {
			return r, err
		}
	}
	for _, b := range slices.Clone(in) {
		if keep[b] || len(in) == 1 {
			continue
		}
		// Leaving, or no longer listed: judged now, as EnsureTarget
		// judged none of them.
		h, err := e.judge(ctx, b)
		if err != nil {
			return r, err
		}
		if err := leave(h); err != nil {
			return r, err
		}
	}
	if !changed {
		return r, nil
	}
	return e.raid(ctx, r.Name)
}

// detachMember takes b out of raid r: a remote replica by detaching its
// controller (SPDK then drops it from the raid), anything else by removing
// it from the raid. b's verdict is the one letGo judged it by, not read
// again: a stuck member that answers one I/O in between still holds the
// rest.
func (e *Engine) detachMember(ctx context.Context, r types.RaidBdev, b heldBdev) error {
	bdev := b.name
	ctrlr := strings.TrimSuffix(bdev, "n1")
	err := e.detachController(ctx, ctrlr, b.stuck())
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, jsonrpc.ErrNotFound):
		return fmt.Errorf("detach member %s of %s: %w", ctrlr, r.Name, err)
	}
	if err := e.spdk.BdevRaidRemoveBaseBdev(ctx, bdev); err != nil && !errors.Is(err, jsonrpc.ErrNotFound) {
		return fmt.Errorf("remove member %s from %s: %w", bdev, r.Name, err)
	}
	return nil
}

// detachController detaches ctrlr, the controller of a remote replica.
// One that is stuck (its device fails I/O, or it went silent) is disabled
// first: bdev_nvme retries failed I/O on the live connection for ever, and
// the detach would wait for the I/O held there (SPDK gives up after 10 s);
// disabled, the I/O fails, and the raid completes it on the other members.
func (e *Engine) detachController(ctx context.Context, ctrlr string, stuck bool) error {
	if stuck {
		if err := e.spdk.BdevNvmeDisableController(ctx, ctrlr); err != nil && !errors.Is(err, jsonrpc.ErrNotFound) && jsonrpc.CodeOf(err) != jsonrpc.CodeAlready {
			return fmt.Errorf("disable controller %s: %w", ctrlr, err)
		}
	}
	return e.spdk.BdevNvmeDetachController(ctx, ctrlr)
}

// startNextRebuild adds one reachable replica that is not a member and
// does not wait for a rebuild slot, unless a rebuild runs: SPDK rebuilds
// one member at a time.
func (e *Engine) startNextRebuild(ctx context.Context, spec TargetSpec, r types.RaidBdev, bdevs map[string]string) error {
	if r.Process != nil {
		return nil
	}
	in := r.Members()
	for _, m := range spec.Members {
		b, ok := bdevs[m.OSD]
		if !ok || m.WaitRebuild || slices.Contains(in, b) {
			continue
		}
		if err := e.startRebuild(ctx, r.Name, b, spec.RebuildMaxMiBPerSec); err != nil {
			return fmt.Errorf("add replica on OSD %s to %s: %w", m.OSD, r.Name, err)
		}
		return nil
	}
	return nil
}

// startRebuild adds base to raid with the rebuild that starts capped at
// maxMiBPerSec. SPDK's cap is one option of the raid module, read when a
// rebuild starts, so setting it and starting the rebuild go together.
func (e *Engine) startRebuild(ctx context.Context, raid, base string, maxMiBPerSec uint32) error {
	e.rebuildStart.Lock()
	defer e.rebuildStart.Unlock()
	if err := e.spdk.BdevRaidSetOptions(ctx, types.BdevRaidSetOptionsRequest{ProcessMaxBandwidthMiBPerSec: maxMiBPerSec}); err != nil {
		return fmt.Errorf("cap the rebuild at %d MiB/s: %w", maxMiBPerSec, err)
	}
	return e.spdk.BdevRaidAddBaseBdev(ctx, raid, base)
}

// targetStatus is the target of spec, whose raid's bdev is exported.
func (e *Engine) targetStatus(ctx context.Context, spec TargetSpec, exported types.Bdev, bdevs map[string]string, held map[string]heldBdev, copied map[string]int32) (Target, error) {
	r, err := e.raid(ctx, raidName(spec.Volume))
	if err != nil {
		return Target{}, err
	}
	in := r.Members()
	st := Target{Export: e.export(agentv1.VolumeNQN(spec.Volume)), SizeBytes: exported.SizeBytes()}
	for _, m := range spec.Members {
		ms := TargetMember{OSD: m.OSD, State: agentv1.MemberState_MEMBER_STATE_MISSING}
		b, reachable := bdevs[m.OSD]
		percent, deltaCopying := copied[m.OSD]
		switch {
		case reachable && rebuilding(r, b):
			ms.State, ms.RebuildPercent = agentv1.MemberState_MEMBER_STATE_REBUILDING, r.Process.Progress.Percent
		case reachable && deltaCopying:
			// Caught up by its map (resync).
			ms.State, ms.RebuildPercent = agentv1.MemberState_MEMBER_STATE_REBUILDING, int(percent)
		case reachable && slices.Contains(in, b):
			ms.State = agentv1.MemberState_MEMBER_STATE_ONLINE
		case reachable:
			ms.State = agentv1.MemberState_MEMBER_STATE_PENDING
		case held[m.OSD].name != "" && slices.Contains(in, held[m.OSD].name):
			ms.State, ms.HeldReason = agentv1.MemberState_MEMBER_STATE_HELD, held[m.OSD].reason
		}
		st.Members = append(st.Members, ms)
	}
	return st, nil
}

// Stopped is what a target held when it was deleted.
type Stopped struct {
	// RaidFound says the raid was there to read: InSync is known.
	RaidFound bool
	// InSync are the OSDs (uids) whose replicas were configured members of
	// the raid, not being rebuilt, when the hosts were already cut off:
	// they hold every write the volume acknowledged.
	InSync []string
}

// MembersHeldError refuses to stop a target whose members hold writes:
// the caller has not recorded them out of sync.
type MembersHeldError struct {
	Volume string
	// OSDs are the uids of the OSDs of the members that hold writes.
	OSDs []string
}

func (e *MembersHeldError) Error() string {
	return fmt.Sprintf("the target of %s waits for replicas on OSDs %s, which lost their connection and hold writes: record them out of sync, then stop the target with them in out_of_sync_osds", e.Volume, strings.Join(e.OSDs, ", "))
}

// DeleteTarget stops serving a volume here: members that hold writes and
// that the caller lists in outOfSync are let go (the writes complete on
// the others), then its subsystem goes (hosts are cut off), then the
// raid, read just before it goes, and the remote attachments; the local
// replica stays. Missing pieces are success. memberOSDs are the uids of
// the OSDs holding the volume's replicas. A member that holds writes and
// is not in outOfSync fails the call (*MembersHeldError): SPDK would wait
// for its writes for ever, and letting it go would acknowledge writes it
// lacks while the caller still counts it in sync.
func (e *Engine) DeleteTarget(ctx context.Context, volume string, memberOSDs, outOfSync []string) (Stopped, error) {
	unlock, err := e.targets.Lock(ctx, volume)
	if err != nil {
		return Stopped{}, fmt.Errorf("wait for another call on volume %s to end: %w", volume, err)
	}
	defer unlock()
	held, err := e.heldMembers(ctx, volume, memberOSDs)
	if err != nil {
		return Stopped{}, err
	}
	if refused := slices.DeleteFunc(slices.Sorted(maps.Keys(held)), func(m string) bool { return slices.Contains(outOfSync, m) }); len(refused) > 0 {
		return Stopped{}, &MembersHeldError{Volume: volume, OSDs: refused}
	}
	for m, h := range held {
		if err := e.detachController(ctx, remoteName(volume, m), h.stuck()); err != nil && !errors.Is(err, jsonrpc.ErrNotFound) {
			return Stopped{}, fmt.Errorf("let go of the replica of %s on OSD %s: %w", volume, m, err)
		}
	}
	if err := e.deleteSubsystem(ctx, agentv1.VolumeNQN(volume)); err != nil {
		return Stopped{}, err
	}
	if err := e.members.forget(volume); err != nil {
		return Stopped{}, err
	}
	stopped, err := e.inSyncMembers(ctx, volume, memberOSDs)
	if err != nil {
		return Stopped{}, err
	}
	if err := e.detachCopiedTo(ctx, volume, memberOSDs); err != nil {
		return Stopped{}, err
	}
	if err := e.deleteVolumeBdev(ctx, volume); err != nil {
		return Stopped{}, err
	}
	if err := e.spdk.BdevRaidDelete(ctx, raidName(volume)); err != nil && !errors.Is(err, jsonrpc.ErrNotFound) {
		return Stopped{}, fmt.Errorf("delete raid %s: %w", raidName(volume), err)
	}
	for _, m := range memberOSDs {
		if m == e.cfg.UID {
			continue
		}
		if err := e.spdk.BdevNvmeDetachController(ctx, remoteName(volume, m)); err != nil && !errors.Is(err, jsonrpc.ErrNotFound) {
			return Stopped{}, fmt.Errorf("detach replica of %s on OSD %s: %w", volume, m, err)
		}
	}
	for _, link := range []string{linkMember, linkHost} {
		if err := e.forgetKeys(ctx, volume, link); err != nil {
			return Stopped{}, err
		}
	}
	return stopped, nil
}

// detachCopiedTo detaches, disabled first, the controllers of the remote
// replicas among memberOSDs that are not in the volume's raid: a delta
// resync's copy may be writing to one, and on a lost connection its writes
// wait for ever, which would hold the flint_volume's deletion; detached,
// they fail and the copy ends.
func (e *Engine) detachCopiedTo(ctx context.Context, volume string, memberOSDs []string) error {
	r, err := e.raid(ctx, raidName(volume))
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, m := range memberOSDs {
		if m == e.cfg.UID || slices.Contains(r.Members(), remoteBdev(volume, m)) {
			continue
		}
		if err := e.detachController(ctx, remoteName(volume, m), true); err != nil && !errors.Is(err, jsonrpc.ErrNotFound) {
			return fmt.Errorf("detach the replica of %s on OSD %s: %w", volume, m, err)
		}
	}
	return nil
}

// deleteVolumeBdev deletes the volume's flint_volume, if it has one:
// resumed first, and after the copies from it stopped, which SPDK stops
// at their next run.
func (e *Engine) deleteVolumeBdev(ctx context.Context, volume string) error {
	info, found, err := e.volumeBdevInfo(ctx, volume)
	if err != nil || !found {
		return err
	}
	fv := volumeBdevName(volume)
	for {
		// A pause that was still draining may have completed since.
		if info.Paused {
			if err := e.spdk.FlintVolumeResume(ctx, fv); err != nil && jsonrpc.CodeOf(err) != jsonrpc.CodeBusy {
				return fmt.Errorf("resume %s to delete it: %w", fv, err)
			}
		}
		err := e.spdk.FlintVolumeDelete(ctx, fv)
		if jsonrpc.CodeOf(err) != jsonrpc.CodeBusy {
			if err != nil {
				return fmt.Errorf("delete flint_volume %s: %w", fv, err)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("delete flint_volume %s: %w (%w)", fv, ctx.Err(), err)
		case <-time.After(copyPoll):
		}
		if info, found, err = e.volumeBdevInfo(ctx, volume); err != nil || !found {
			return err
		}
	}
}

// heldMembers maps the OSDs among memberOSDs whose replicas are members
// of the volume's raid here and hold writes to their verdicts, read
// member by member: a call for one volume reads only its members.
func (e *Engine) heldMembers(ctx context.Context, volume string, memberOSDs []string) (map[string]heldBdev, error) {
	r, err := e.raid(ctx, raidName(volume))
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	held := map[string]heldBdev{}
	for _, m := range memberOSDs {
		bdev := remoteBdev(volume, m)
		if !slices.Contains(r.Members(), bdev) {
			continue
		}
		h, err := e.judge(ctx, bdev)
		if err != nil {
			return nil, err
		}
		if h.reason != "" {
			held[m] = h
		}
	}
	return held, nil
}

// heldBdevs lists the bdevs of remote replicas that hold I/O: their
// controller's connection is down, or, connected, they are stuck. It
// reads every controller and every bdev's counters once, and lets the
// silence watch forget the bdevs that are gone. The counters are best
// effort: unread (SPDK slow to answer every bdev's), the lost
// connections are still listed.
func (e *Engine) heldBdevs(ctx context.Context) (map[string]bool, error) {
	ctrlrs, err := e.spdk.BdevNvmeGetControllers(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("list controllers: %w", err)
	}
	counters := map[string]types.BdevIostat{}
	if stats, err := e.spdk.BdevGetIostat(ctx, ""); err == nil {
		for _, b := range stats.Bdevs {
			counters[b.Name] = b
		}
	}
	held, remote := map[string]bool{}, map[string]bool{}
	for _, c := range ctrlrs {
		if !isRemoteName(c.Name) {
			continue // the OSD's own NVMe device
		}
		bdev := c.Name + "n1"
		remote[bdev] = true
		if !hasEnabledPath(c) {
			held[bdev] = true
			continue
		}
		if st, read := counters[bdev]; read {
			why, err := e.memberStuck(ctx, st)
			held[bdev] = err == nil && why != ""
		}
	}
	if len(counters) > 0 {
		e.silence.forget(remote)
	}
	return held, nil
}

// inSyncMembers reads which of memberOSDs' replicas are configured,
// not rebuilding, members of the volume's raid.
func (e *Engine) inSyncMembers(ctx context.Context, volume string, memberOSDs []string) (Stopped, error) {
	r, err := e.raid(ctx, raidName(volume))
	if errors.Is(err, ErrNotFound) {
		return Stopped{}, nil
	}
	if err != nil {
		return Stopped{}, err
	}
	in := r.Members()
	st := Stopped{RaidFound: true}
	for _, m := range memberOSDs {
		bdev := remoteBdev(volume, m)
		if m == e.cfg.UID {
			b, err := e.replicaBdev(ctx, volume)
			if err != nil {
				continue // the local replica is gone: not in sync
			}
			bdev = b.Name
		}
		if slices.Contains(in, bdev) && !rebuilding(r, bdev) {
			st.InSync = append(st.InSync, m)
		}
	}
	return st, nil
}

// FenceTargets removes every host from every volume target this OSD
// serves but those spare keeps, which drops their live connections; the
// raids and replicas stay. It returns the volumes whose targets it
// fenced, and fences every target it can even when one fails.
func (e *Engine) FenceTargets(ctx context.Context, spare func(volume string) bool) ([]string, error) {
	subs, err := e.spdk.NvmfGetSubsystems(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("list subsystems: %w", err)
	}
	var volumes []string
	var errs []error
	for _, s := range subs {
		volume, ok := strings.CutPrefix(s.NQN, agentv1.VolumeNQN(""))
		if !ok || spare(volume) {
			continue
		}
		volumes = append(volumes, volume)
		if _, err := e.setHosts(ctx, s.NQN, nil, keyNames{}); err != nil {
			errs = append(errs, err)
		}
	}
	return volumes, errors.Join(errs...)
}

// VolumesServed lists the volumes whose targets on spdk let a host
// connect.
func VolumesServed(ctx context.Context, spdk interface {
	NvmfGetSubsystems(context.Context, string) ([]types.NvmfSubsystem, error)
}) ([]string, error) {
	subs, err := spdk.NvmfGetSubsystems(ctx, "")
	if err != nil {
		return nil, err
	}
	var volumes []string
	for _, s := range subs {
		if volume, ok := strings.CutPrefix(s.NQN, agentv1.VolumeNQN("")); ok && (s.AllowAnyHost || len(s.Hosts) > 0) {
			volumes = append(volumes, volume)
		}
	}
	return volumes, nil
}
