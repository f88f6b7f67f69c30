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
// the state asked for. Every operation is keyed by name and idempotent: a
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
)

// NQNPrefix starts every subsystem NQN Flint creates.
const NQNPrefix = "nqn.2026-01.io.flint"

var volumeNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// checkVolumeName accepts names that fit SPDK's 63-character lvol names and
// NQNs: lower-case DNS labels, as Kubernetes volume ids are.
func checkVolumeName(name string) error {
	if !volumeNamePattern.MatchString(name) {
		return fmt.Errorf("%w: volume name %q must be 1-63 lower-case letters, digits and '-'", ErrInvalid, name)
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

// VolumeSerial is the 20-character NVMe serial of a volume's namespace.
func VolumeSerial(volume string) string {
	sum := sha256.Sum256([]byte(volume))
	return "FL" + hex.EncodeToString(sum[:])[:18]
}

// raidName is the raid1 bdev of a volume on its target.
func raidName(volume string) string { return "raid_" + volume }

// remoteName is the controller a target attaches a remote replica with;
// its bdev is remoteName + "n1".
func remoteName(volume, osdUID string) string {
	sum := sha256.Sum256([]byte(volume + "/" + osdUID))
	return "r" + hex.EncodeToString(sum[:])[:15]
}

// placeholderName holds an empty raid slot while a raid is created.
func placeholderName(volume string, slot int) string {
	return fmt.Sprintf("ph%d_%s", slot, volume)
}
