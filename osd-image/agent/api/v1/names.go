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

// Package agentv1 is the operator–agent contract: the OSD agent's gRPC API
// (agent.proto and the Go generated from it), its error reasons, the names
// and identities both sides derive, and the check of an export before the
// operator records it. The operator imports this package and no other part
// of the agent.
package agentv1

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
)

// The names and identities the operator and the agents agree on. The
// agent names the SPDK objects; the operator records these names in the
// Volume's status and tells hosts where to connect.

// Names of the client certificates agents accept, each issued by the
// operator from the agents' CA: the API serves the operator's alone, and
// /metrics the scraper's alone, so a scraper's certificate cannot drive
// an agent.
const (
	OperatorClientName = "flint-operator"
	MetricsClientName  = "flint-metrics"
	// The Secrets of the operator's namespace that hold them.
	OperatorClientSecret = OperatorClientName + "-client"
	MetricsClientSecret  = MetricsClientName + "-client"
)

// NQNPrefix starts every subsystem NQN Flint creates.
const NQNPrefix = "nqn.2026-01.io.flint"

// LvstoreName is the lvstore of the OSD with this uid: the name records the
// owner on the device itself.
func LvstoreName(osdUID string) string { return "flint-" + osdUID }

// ReplicaNQN is the subsystem that exports a volume's replica to its
// target. It names the replica's lvol (its uuid), so a target's controller
// that reconnects by itself after a lost connection only ever finds the
// lvol it had: never one created since under the volume's name, which
// holds none of its data.
func ReplicaNQN(volume, lvolUUID string) string { return ReplicaNQNPrefix(volume) + lvolUUID }

// ReplicaNQNPrefix starts the NQN of every export of a volume's replica.
func ReplicaNQNPrefix(volume string) string { return NQNPrefix + ":replica:" + volume + ":" }

// VolumeNQN is the subsystem hosts connect to. It never changes, so a
// target that moves keeps the namespace of the host's multipath device.
func VolumeNQN(volume string) string { return NQNPrefix + ":volume:" + volume }

// HostNQN is the NQN an OSD attaches remote replicas with.
func HostNQN(osdUID string) string { return NQNPrefix + ":osd:" + osdUID }

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
	const blocks = (maxCntlid - minCntlid + 1) / cntlidBlock // 63
	low := minCntlid + uint16(epoch%blocks)*cntlidBlock
	return low, low + cntlidBlock - 1
}

// The controller ids an NVMe subsystem can hand out: 0xfff0 and above are
// reserved by the specification.
const (
	minCntlid = 1
	maxCntlid = 0xffef
)

// TargetStateStandby is the inventory's state of a volume's subsystem
// prepared for a planned move of its target to the OSD (PrepareTarget):
// it has no namespace and serves nothing yet.
const TargetStateStandby = "standby"

// TargetHold is how long after the Keep Alives its remote members last
// all answered a target keeps its hosts once its OSD's lease lapsed
// (RenewLeaseRequest.hold_ms): the SPDK container's probe spares it that
// long, the agent a fence's lead less. Every operator promises this one
// value and waits it out after a cut, so that an operator never waits
// less than an agent partitioned from it heard from its predecessor; a
// release that changes it must wait out the larger.
const TargetHold = 8 * time.Second
