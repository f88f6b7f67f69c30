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

package spdktest

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/flint-io/flint/internal/spdk/jsonrpc"
)

const (
	raidOnline      = "online"
	raidConfiguring = "configuring"
)

// raidSlot is one base bdev position; b is nil while the slot is empty (or,
// in a configuring raid, while the named bdev has not appeared).
type raidSlot struct {
	name string
	b    *bdev
}

type raid struct {
	name, uuid, level string
	state             string
	slots             []raidSlot
	blockSize         uint32
	numBlocks         uint64
	bdev              *bdev
	rebuild           *rebuildProcess
}

type rebuildProcess struct {
	slot   int
	start  time.Time
	blocks uint64
	// maxBlocksPerSecond is the bandwidth cap the raid module's options
	// held when the rebuild started, 0 for none.
	maxBlocksPerSecond uint64
}

// raidOptions are bdev_raid_set_options' options, SPDK's defaults until
// set; a restart forgets them.
type raidOptions struct {
	ProcessWindowSizeKB      uint32 `json:"process_window_size_kb"`
	ProcessMaxBandwidthMBSec uint32 `json:"process_max_bandwidth_mb_sec"`
}

var defaultRaidOptions = raidOptions{ProcessWindowSizeKB: 1024}

func (st *state) raid(name string) *raid {
	for _, r := range st.raids {
		if r.name == name {
			return r
		}
	}
	return nil
}

func (r *raid) configured() int {
	n := 0
	for _, s := range r.slots {
		if s.b != nil {
			n++
		}
	}
	return n
}

func (r *raid) slotOf(b *bdev) int {
	return slices.IndexFunc(r.slots, func(s raidSlot) bool { return s.b == b })
}

// The raid levels SPDK knows; the double models raid1 only.
var raidLevels = map[string]bool{"raid0": true, "0": true, "raid1": true, "1": true, "raid5f": true, "5f": true, "concat": true}

func bdevRaidCreate(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		Name        string   `json:"name"`
		RaidLevel   string   `json:"raid_level"`
		BaseBdevs   []string `json:"base_bdevs"`
		StripSizeKB uint32   `json:"strip_size_kb"`
		Superblock  bool     `json:"superblock"`
		UUID        string   `json:"uuid"`
	}
	if err := decode(p, &req, errDecode(), "name", "raid_level", "base_bdevs"); err != nil {
		return nil, err
	}
	if !raidLevels[req.RaidLevel] {
		return nil, errf(jsonrpc.CodeParseError, "spdk_json_decode_object failed")
	}
	if req.RaidLevel != "raid1" && req.RaidLevel != "1" {
		return nil, errf(CodeNotModeled, "the double models raid1 only")
	}
	if req.Superblock {
		return nil, errf(CodeNotModeled, "the double does not model raid superblocks")
	}
	fail := func(code int, msg string) error {
		return errf(code, "Failed to create RAID bdev %s: %s", req.Name, msg)
	}
	if req.StripSizeKB != 0 || len(req.BaseBdevs) == 0 || req.Name == "" {
		return nil, fail(-22, "Invalid argument")
	}
	if t.st.raid(req.Name) != nil || t.st.bdev(req.Name) != nil {
		return nil, fail(-17, "File exists")
	}
	// SPDK's raid1 module needs at least two base bdevs.
	if len(req.BaseBdevs) < 2 {
		return nil, fail(-22, "Invalid argument")
	}
	for _, name := range req.BaseBdevs {
		if b := t.st.bdev(name); b != nil && b.claimType != "" {
			return nil, fail(-1, "Operation not permitted")
		}
	}
	r := &raid{name: req.Name, uuid: req.UUID, level: "raid1", state: raidConfiguring}
	if r.uuid == "" {
		r.uuid = newUUID()
	}
	for _, name := range req.BaseBdevs {
		r.slots = append(r.slots, raidSlot{name: name})
	}
	t.st.raids = append(t.st.raids, r)
	for i, name := range req.BaseBdevs {
		if b := t.st.bdev(name); b != nil {
			t.raidConfigureSlot(r, i, b)
		}
	}
	return true, nil
}

// raidConfigureSlot claims b for slot i; a configuring raid goes online
// once every slot is filled.
func (t *Target) raidConfigureSlot(r *raid, i int, b *bdev) {
	b.claim(claimExclusiveWrite, "raid:"+r.name)
	r.slots[i] = raidSlot{name: b.name, b: b}
	if r.state != raidConfiguring || r.configured() < len(r.slots) {
		return
	}
	r.state = raidOnline
	r.blockSize = r.slots[0].b.blockSize
	r.numBlocks = r.slots[0].b.numBlocks
	for _, s := range r.slots {
		r.numBlocks = min(r.numBlocks, s.b.numBlocks)
	}
	r.bdev = &bdev{
		name: r.name, uuid: r.uuid, aliases: []string{r.uuid}, product: "Raid Volume",
		blockSize: r.blockSize, numBlocks: r.numBlocks, kind: kindRaid, raid: r,
	}
	t.register(r.bdev)
}

// resize sets b's size; a raid1 b is a member of follows as SPDK's resize
// event makes it: to the smallest of its configured members, so it grows
// once every member has grown.
func (t *Target) resize(b *bdev, numBlocks uint64) {
	if b.numBlocks == numBlocks {
		return
	}
	b.numBlocks = numBlocks
	t.st.gen++ // a namespace over b, or over a raid of it, changed size
	for _, r := range t.st.raids {
		if r.bdev == nil || r.slotOf(b) < 0 {
			continue
		}
		smallest := numBlocks
		for _, s := range r.slots {
			if s.b != nil {
				smallest = min(smallest, s.b.numBlocks)
			}
		}
		r.numBlocks, r.bdev.numBlocks = smallest, smallest
	}
}

// raidHotRemove empties the slot of a base bdev that left the raid; the
// raid is deleted when its last base bdev goes.
func (t *Target) raidHotRemove(r *raid, b *bdev) {
	i := r.slotOf(b)
	if i < 0 {
		return
	}
	b.release()
	r.slots[i] = raidSlot{}
	if r.rebuild != nil && r.rebuild.slot == i {
		r.rebuild = nil
	}
	if r.configured() == 0 {
		t.deleteRaid(r)
	}
}

func (t *Target) deleteRaid(r *raid) {
	for i, s := range r.slots {
		if s.b != nil {
			s.b.release()
			r.slots[i].b = nil
		}
	}
	t.st.raids = slices.DeleteFunc(t.st.raids, func(x *raid) bool { return x == r })
	if r.bdev != nil {
		t.unregister(r.bdev)
	}
}

// advanceRebuild moves a running rebuild on to now; when it finishes, the
// rebuilt member gets the data (the writes) of one in sync.
func (t *Target) advanceRebuild(r *raid, now time.Time, blocksPerSecond uint64) {
	if r.rebuild == nil {
		return
	}
	if limit := r.rebuild.maxBlocksPerSecond; limit > 0 {
		blocksPerSecond = min(blocksPerSecond, limit)
	}
	r.rebuild.blocks = uint64(since(r.rebuild.start, now).Seconds() * float64(blocksPerSecond))
	if r.rebuild.blocks >= r.numBlocks {
		slot := r.rebuild.slot
		r.rebuild = nil
		t.rebuilt(r, slot)
	}
}

func bdevRaidDelete(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		Name string `json:"name"`
	}
	if err := decode(p, &req, errDecode(), "name"); err != nil {
		return nil, err
	}
	r := t.st.raid(req.Name)
	if r == nil {
		return nil, errf(jsonrpc.CodeNoSuchDevice, "raid bdev %s not found", req.Name)
	}
	if err := t.quiesce(r); err != nil {
		return nil, err
	}
	t.deleteRaid(r)
	return true, nil
}

func bdevRaidAddBaseBdev(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		RaidBdev string `json:"raid_bdev"`
		BaseBdev string `json:"base_bdev"`
	}
	if err := decode(p, &req, errDecode(), "raid_bdev", "base_bdev"); err != nil {
		return nil, err
	}
	r := t.st.raid(req.RaidBdev)
	if r == nil {
		return nil, errf(jsonrpc.CodeNoSuchDevice, "raid bdev %s is not found in config", req.RaidBdev)
	}
	fail := func(code int, msg string) error {
		return errf(code, "Failed to add base bdev %s to RAID bdev %s: %s", req.BaseBdev, req.RaidBdev, msg)
	}
	b := t.st.bdev(req.BaseBdev)
	free := slices.IndexFunc(r.slots, func(s raidSlot) bool { return s.b == nil })
	switch {
	case r.rebuild != nil: // seen on SPDK v25.09 while a rebuild ran
		return nil, fail(-1, "Operation not permitted")
	case b == nil, r.slotOf(b) >= 0, free < 0, r.state == raidOnline && b.numBlocks < r.numBlocks:
		return nil, fail(-22, "Invalid argument")
	case b.claimType != "":
		return nil, fail(-1, "Operation not permitted")
	}
	online := r.state == raidOnline
	t.raidConfigureSlot(r, free, b)
	if online {
		limit := uint64(t.st.raidOptions.ProcessMaxBandwidthMBSec) << 20 / uint64(r.blockSize)
		r.rebuild = &rebuildProcess{slot: free, start: t.fabric.now(), maxBlocksPerSecond: limit}
	}
	return true, nil
}

// bdevRaidSetOptions keeps the options for the rebuilds that start after
// it; a zero window is refused, as SPDK does.
func bdevRaidSetOptions(t *Target, p json.RawMessage) (any, error) {
	opts := t.st.raidOptions
	if err := decode(p, &opts, errf(jsonrpc.CodeParseError, "spdk_json_decode_object failed")); err != nil {
		return nil, err
	}
	if opts.ProcessWindowSizeKB == 0 {
		return nil, errf(jsonrpc.CodeInvalid, "Invalid argument")
	}
	t.st.raidOptions = opts
	return true, nil
}

func bdevRaidRemoveBaseBdev(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		Name string `json:"name"`
	}
	if err := decode(p, &req, errDecode(), "name"); err != nil {
		return nil, err
	}
	for _, r := range t.st.raids {
		if b := t.st.bdev(req.Name); b != nil && r.slotOf(b) >= 0 {
			if err := t.quiesce(r); err != nil {
				return nil, err
			}
			t.raidHotRemove(r, b)
			return true, nil
		}
	}
	return nil, errf(jsonrpc.CodeNoSuchDevice, "Failed to remove base bdev from raid bdev")
}

// quiesce is SPDK's wait for r's I/O before a member leaves or r goes: it
// never ends while members hold writes, so the double refuses the call
// rather than hang the caller.
func (t *Target) quiesce(r *raid) error {
	if t.fabric.holdsWrites(r) {
		return errf(CodeNotModeled, "raid bdev %s: members hold writes (their controllers reconnect), so SPDK's quiesce would wait for ever", r.name)
	}
	return nil
}

func bdevRaidGetBdevs(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		Category string `json:"category"`
	}
	if err := decode(p, &req, errDecode(), "category"); err != nil {
		return nil, err
	}
	switch req.Category {
	case "all", raidOnline, raidConfiguring, "offline":
	default:
		return nil, errf(jsonrpc.CodeInvalid, "Invalid argument")
	}
	out := []any{}
	for _, r := range t.st.raids {
		if req.Category == "all" || req.Category == r.state {
			info := r.render()
			info["name"] = r.name
			out = append(out, info)
		}
	}
	return out, nil
}

// render is a raid as bdev_raid_get_bdevs shows it, less its name (the
// driver_specific part of the raid bdev).
func (r *raid) render() map[string]any {
	uuid, operational := r.uuid, r.configured()
	if r.state == raidConfiguring {
		uuid, operational = zeroUUID, len(r.slots)
	}
	slots := []any{}
	for _, s := range r.slots {
		switch {
		case s.b != nil:
			size := r.numBlocks
			if r.state == raidConfiguring {
				size = s.b.numBlocks
			}
			slots = append(slots, map[string]any{"name": s.b.name, "uuid": s.b.uuid, "is_configured": true, "data_offset": 0, "data_size": size})
		case r.state == raidConfiguring:
			slots = append(slots, map[string]any{"name": s.name, "uuid": zeroUUID, "is_configured": false, "data_offset": 0, "data_size": 0})
		default:
			slots = append(slots, map[string]any{"name": nil, "uuid": zeroUUID, "is_configured": false, "data_offset": 0, "data_size": r.numBlocks})
		}
	}
	m := map[string]any{
		"uuid": uuid, "strip_size_kb": 0, "state": r.state, "raid_level": r.level, "superblock": false,
		"num_base_bdevs": len(r.slots), "num_base_bdevs_discovered": r.configured(),
		"num_base_bdevs_operational": operational, "base_bdevs_list": slots,
	}
	if r.rebuild != nil {
		m["process"] = map[string]any{
			"type": "rebuild", "target": r.slots[r.rebuild.slot].b.name,
			"progress": map[string]any{"blocks": r.rebuild.blocks, "percent": int(r.rebuild.blocks * 100 / r.numBlocks)},
		}
	}
	return m
}
