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

// The flint_volume bdev module's requests and answers: Flint's own module
// in flint_tgt (osd-image/flinttgt), not SPDK's; nvmf_tgt has none of its
// methods. docs/spdk.md describes them.

// FlintVolumeCreateRequest puts a flint_volume named Name over BaseBdev
// (a Volume's raid), of its size; UUID, when set, is the bdev's.
type FlintVolumeCreateRequest struct {
	Name     string `json:"name"`
	BaseBdev string `json:"base_bdev"`
	UUID     string `json:"uuid,omitempty"`
}

// FlintVolumeAttachRequest attaches BaseBdev to a paused flint_volume whose
// base went away; it must have the same block size and count.
type FlintVolumeAttachRequest struct {
	Name     string `json:"name"`
	BaseBdev string `json:"base_bdev"`
}

// FlintVolumeMemberRequest names a member's write-intent map of a
// flint_volume: Member is Flint's name for it.
type FlintVolumeMemberRequest struct {
	Name   string `json:"name"`
	Member string `json:"member"`
}

// FlintVolumeGetDirtyRequest reads a member's map without changing it:
// the dirty blocks' count, and their first MaxRanges runs (SPDK's
// default 1024).
type FlintVolumeGetDirtyRequest struct {
	Name      string `json:"name"`
	Member    string `json:"member"`
	MaxRanges uint64 `json:"max_ranges,omitempty"`
}

// FlintVolumeDirty is a member's map: what was written since it was marked
// and not copied since, and how its copy goes.
type FlintVolumeDirty struct {
	DirtyBlocks uint64 `json:"dirty_blocks"`
	// Grown says the volume grew past the map while the member was out:
	// the map is incomplete, and no copy may start from it.
	Grown bool `json:"grown"`
	// Copying says a copy runs; CopiedBlocks counts what it (or the last
	// one) copied; CopyError says why the last one failed.
	Copying      bool         `json:"copying"`
	CopiedBlocks uint64       `json:"copied_blocks"`
	CopyError    string       `json:"copy_error,omitempty"`
	Ranges       []BlockRange `json:"ranges"`
}

// BlockRange is a run of blocks.
type BlockRange struct {
	OffsetBlocks uint64 `json:"offset_blocks"`
	NumBlocks    uint64 `json:"num_blocks"`
}

// FlintVolumeCopyRequest starts copying a member's dirty blocks from the
// flint_volume's base (the raid's in-sync members) to MemberBdev, once
// over the map, in the background; each block's mark is cleared just
// before it is read, so a write after that marks it again. MaxMiBPerSec
// caps it (0: no cap).
type FlintVolumeCopyRequest struct {
	Name         string `json:"name"`
	Member       string `json:"member"`
	MemberBdev   string `json:"member_bdev"`
	MaxMiBPerSec uint64 `json:"max_mib_per_sec,omitempty"`
}

// FlintVolumeInfo is bdev_get_bdevs' driver_specific.flint_volume.
type FlintVolumeInfo struct {
	// BaseBdev is empty while the base went away (the raid deleted).
	BaseBdev string           `json:"base_bdev"`
	Paused   bool             `json:"paused"`
	Maps     []FlintVolumeMap `json:"maps"`
}

// FlintVolumeMap is one member's map, counted.
type FlintVolumeMap struct {
	Member      string `json:"member"`
	DirtyBlocks uint64 `json:"dirty_blocks"`
	Grown       bool   `json:"grown"`
}
