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

package types

// Raid states and categories of bdev_raid_get_bdevs.
const (
	RaidStateOnline      = "online"
	RaidStateConfiguring = "configuring"
	RaidStateOffline     = "offline"
	RaidCategoryAll      = "all"
)

// BdevRaidCreateRequest creates a raid bdev. A base bdev that does not
// exist yet leaves the raid "configuring" until it appears. Flint builds
// raid1 with Superblock false: membership lives in the Volume's status.
type BdevRaidCreateRequest struct {
	Name        string   `json:"name"`
	RaidLevel   string   `json:"raid_level"`
	BaseBdevs   []string `json:"base_bdevs"`
	StripSizeKB uint32   `json:"strip_size_kb,omitempty"`
	Superblock  bool     `json:"superblock"`
	UUID        string   `json:"uuid,omitempty"`
}

// BdevRaidAddBaseBdevRequest adds a base bdev to an empty slot of a raid;
// for raid1 it starts a rebuild onto it.
type BdevRaidAddBaseBdevRequest struct {
	RaidBdev string `json:"raid_bdev"`
	BaseBdev string `json:"base_bdev"`
}

// BdevRaidSetOptionsRequest sets the raid module's options. SPDK reads
// them when a process (a rebuild) starts: a rebuild keeps the bandwidth
// it started with.
type BdevRaidSetOptionsRequest struct {
	// ProcessMaxBandwidthMiBPerSec caps each rebuild, in MiB/s (SPDK's
	// "mb_sec" counts 2^20 bytes); 0 lifts the cap.
	ProcessMaxBandwidthMiBPerSec uint32 `json:"process_max_bandwidth_mb_sec"`
}

// BdevRaidGetBdevsRequest lists raids of a category: all, online,
// configuring or offline.
type BdevRaidGetBdevsRequest struct {
	Category string `json:"category"`
}

// RaidBdev is one raid bdev.
type RaidBdev struct {
	Name                    string         `json:"name"`
	UUID                    string         `json:"uuid"`
	StripSizeKB             uint32         `json:"strip_size_kb"`
	State                   string         `json:"state"`
	RaidLevel               string         `json:"raid_level"`
	Superblock              bool           `json:"superblock"`
	NumBaseBdevs            int            `json:"num_base_bdevs"`
	NumBaseBdevsDiscovered  int            `json:"num_base_bdevs_discovered"`
	NumBaseBdevsOperational int            `json:"num_base_bdevs_operational"`
	Process                 *RaidProcess   `json:"process,omitempty"`
	BaseBdevsList           []RaidBaseBdev `json:"base_bdevs_list"`
}

// Members names the bdevs configured in r's slots, in slot order.
func (r RaidBdev) Members() []string {
	var names []string
	for _, s := range r.BaseBdevsList {
		if s.Name != nil && s.IsConfigured {
			names = append(names, *s.Name)
		}
	}
	return names
}

// RaidProcess is a background process of a raid, such as a rebuild.
type RaidProcess struct {
	Type     string `json:"type"`
	Target   string `json:"target"`
	Progress struct {
		Blocks  uint64 `json:"blocks"`
		Percent int    `json:"percent"`
	} `json:"progress"`
}

// RaidBaseBdev is one slot of a raid. An empty slot has no name, an
// all-zero uuid and IsConfigured false.
type RaidBaseBdev struct {
	Name         *string `json:"name"`
	UUID         string  `json:"uuid"`
	IsConfigured bool    `json:"is_configured"`
	DataOffset   uint64  `json:"data_offset"`
	DataSize     uint64  `json:"data_size"`
}
