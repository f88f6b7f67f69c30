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

// Package osd is what an OSD agent does to its SPDK: claim the device, own
// one lvstore on it, and keep replicas, their exports and raid1 targets in
// the state asked for. A volume is known by its key, which names every
// SPDK object of the volume; the operator gives the Volume's uid, so a
// Volume re-created under an old name never meets the old one's lvols.
// Every operation is keyed by name and idempotent: a
// repeat with the same parameters succeeds without change, a repeat with
// different ones fails with ErrConflict. After SPDK restarts, calling the
// operations again re-creates what SPDK lost (transports, exports,
// attachments, raids) without touching data on the device.
package osd

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/flint-io/flint/internal/spdk/types"
)

// NQNPrefix starts every subsystem NQN Flint creates.
const NQNPrefix = "nqn.2026-01.io.flint"

// MaxVolumeKey is the longest volume key: a Kubernetes uid's 36
// characters. Every SPDK name derived from a key of this length fits
// SPDK's 63-character bdev, lvol and raid names.
const MaxVolumeKey = 36

var volumeKeyPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,34}[a-z0-9])?$`)

// checkVolumeName accepts volume keys: 1-36 lower-case letters, digits and
// '-', as a Kubernetes uid is.
func checkVolumeName(name string) error {
	if !volumeKeyPattern.MatchString(name) {
		return fmt.Errorf("%w: volume key %q must be 1-%d lower-case letters, digits and '-' (the Volume's uid)", ErrInvalid, name, MaxVolumeKey)
	}
	return nil
}

// LvstoreName is the lvstore of the OSD with this uid: the name records the
// owner on the device itself.
func LvstoreName(osdUID string) string { return "flint-" + osdUID }

// ReplicaNQN is the subsystem that exports a volume's replica to its target.
func ReplicaNQN(volume string) string { return NQNPrefix + ":replica:" + volume }

// VolumeNQN is the subsystem hosts connect to. It never changes, so a
// target that moves keeps the namespace of the host's multipath device.
func VolumeNQN(volume string) string { return NQNPrefix + ":volume:" + volume }

// HostNQN is the NQN an OSD attaches remote replicas with.
func HostNQN(osdUID string) string { return NQNPrefix + ":osd:" + osdUID }

// VolumeSerial is the 20-character NVMe serial of a subsystem exporting
// a volume's replica.
func VolumeSerial(volume string) string {
	sum := sha256.Sum256([]byte(volume))
	return "FL" + hex.EncodeToString(sum[:])[:18]
}

// Identity is what a host compares to tell one namespace from another. A
// volume has one for its life, derived from its uid, and every target it
// ever has presents it: the kernel host joins a new target's path to the
// device in use only when UUID, NGUID and EUI-64 all match, and drops a
// namespace whose identifiers changed under a path.
type Identity struct {
	// UUID, NGUID (32 hex digits) and EUI64 (16 hex digits) identify the
	// namespace.
	UUID, NGUID, EUI64 string
	// Serial is the subsystem's serial number.
	Serial string
	// RaidUUID is the uuid of the volume's raid1 bdev.
	RaidUUID string
}

// VolumeIdentity derives the identity of the volume with this key (the
// Volume's uid). Each part hashes the key with its own label, so no two
// parts share bits.
func VolumeIdentity(volume string) Identity {
	part := func(label string) []byte {
		sum := sha256.Sum256([]byte("flint.io/" + label + "/" + volume))
		return sum[:16]
	}
	eui := part("eui64")[:8]
	eui[0] = eui[0]&^0x01 | 0x02 // unicast, locally administered: no IEEE OUI is claimed
	return Identity{
		UUID:     uuidOf(part("namespace-uuid")),
		NGUID:    strings.ToUpper(hex.EncodeToString(part("nguid"))),
		EUI64:    strings.ToUpper(hex.EncodeToString(eui)),
		Serial:   "FL" + hex.EncodeToString(part("serial"))[:18],
		RaidUUID: uuidOf(part("raid-uuid")),
	}
}

// uuidOf formats 16 bytes as a version-4-shaped UUID (RFC 9562 variant).
func uuidOf(b []byte) string {
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// cntlidBlock is how many controller ids one target incarnation numbers
// its host controllers from: every connect and reconnect of a host takes
// the next, wrapping within the block.
const cntlidBlock = 1024

// CntlidRange is the controller-id range of a volume's target in
// incarnation epoch (1, 2, ...). Consecutive epochs never overlap, so a
// host that still holds its dead path to the previous target (same NQN)
// is never handed a controller id that path holds: the kernel refuses a
// duplicate cntlid within a subsystem. The ranges repeat after 63 epochs,
// long after any dead path was given up (ctrl_loss_tmo).
func CntlidRange(epoch uint32) (uint16, uint16) {
	const blocks = (types.MaxCntlid - types.MinCntlid + 1) / cntlidBlock // 63
	low := types.MinCntlid + uint16(epoch%blocks)*cntlidBlock
	return low, low + cntlidBlock - 1
}

// raidName is the raid1 bdev of a volume on its target.
func raidName(volume string) string { return "raid_" + volume }

// remoteName is the controller a target attaches a remote replica with;
// its bdev is remoteBdev.
func remoteName(volume, osdUID string) string {
	sum := sha256.Sum256([]byte(volume + "/" + osdUID))
	return "r" + hex.EncodeToString(sum[:])[:15]
}

// remoteBdev is the bdev of the replica of volume on OSD osdUID, as its
// target attaches it.
func remoteBdev(volume, osdUID string) string { return remoteName(volume, osdUID) + "n1" }

// placeholderName holds an empty raid slot while a raid is created.
func placeholderName(volume string, slot int) string {
	return fmt.Sprintf("ph%d_%s", slot, volume)
}
