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

// Package storage is what an OSD agent does to its SPDK: claim the device, own
// one lvstore on it, and keep replicas, their exports and raid1 targets in
// the state asked for. A volume is known by its key, which names every
// SPDK object of the volume; the operator gives the Volume's uid, so a
// Volume re-created under an old name never meets the old one's lvols.
// Every operation is keyed by name and idempotent: a
// repeat with the same parameters succeeds without change, a repeat with
// different ones fails with ErrConflict. After SPDK restarts, calling the
// operations again re-creates what SPDK lost (transports, exports,
// attachments, raids) without touching data on the device.
package storage

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

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

// VolumeSerial is the 20-character NVMe serial of a subsystem exporting
// a volume's replica.
func VolumeSerial(volume string) string {
	sum := sha256.Sum256([]byte(volume))
	return "FL" + hex.EncodeToString(sum[:])[:18]
}

// raidName is the raid1 bdev of a volume on its target.
func raidName(volume string) string { return "raid_" + volume }

// volumeBdevName is the flint_volume bdev over a volume's raid on its
// target, which its namespace exports when SPDK is flint_tgt.
func volumeBdevName(volume string) string { return "volume_" + volume }

// remoteName is the controller a target attaches a remote replica with;
// its bdev is remoteBdev.
func remoteName(volume, osdUID string) string {
	sum := sha256.Sum256([]byte(volume + "/" + osdUID))
	return "r" + hex.EncodeToString(sum[:])[:15]
}

// isRemoteName says whether controller name is one remoteName makes.
func isRemoteName(name string) bool {
	hexPart, ok := strings.CutPrefix(name, "r")
	if !ok || len(hexPart) != 15 {
		return false
	}
	_, err := hex.DecodeString(hexPart + "0")
	return err == nil
}

// remoteBdev is the bdev of the replica of volume on OSD osdUID, as its
// target attaches it.
func remoteBdev(volume, osdUID string) string { return remoteName(volume, osdUID) + "n1" }

// placeholderName holds an empty raid slot while a raid is created.
func placeholderName(volume string, slot int) string {
	return fmt.Sprintf("ph%d_%s", slot, volume)
}
