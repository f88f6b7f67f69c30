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
	"crypto/rand"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flint-io/flint/internal/spdk/types"
)

// disk is storage that outlives a Target: a file, a PCI device, or the RAM
// of a malloc bdev (which dies with its Target). An lvstore lives on it.
type disk struct {
	size          uint64
	serial, model string
	lvs           *lvstore
	// volatileWriteCache is whether a PCIe controller has one;
	// writeCacheEnabled is its WCE, reset to on by every attach.
	volatileWriteCache, writeCacheEnabled bool
	// blockSize is a PCIe namespace's logical block size (its LBA
	// format): 4096 unless WithLogicalBlockSize says otherwise.
	blockSize uint32
}

func pcieKey(addr string) string { return "pcie:" + strings.ToLower(addr) }

func fileKey(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return "file:" + path
}

type bdevKind int

const (
	kindMalloc bdevKind = iota
	kindAio
	kindUring
	kindNvme
	kindLvol
	kindRaid
	kindNull
)

const (
	claimReadManyWriteOne = "read_many_write_one" // an lvstore on its base bdev
	claimExclusiveWrite   = "exclusive_write"     // a raid member or an NVMe-oF namespace
)

// bdev is one registered block device.
type bdev struct {
	name      string
	uuid      string
	aliases   []string
	product   string
	blockSize uint32
	numBlocks uint64
	kind      bdevKind

	claimType string
	claimedBy string // "lvol", "raid:<name>" or "nvmf:<nqn>"

	disk  *disk  // malloc, aio, uring, pcie: what an lvstore is stored on
	lvol  *lvol  // kindLvol
	raid  *raid  // kindRaid
	ctrlr *ctrlr // kindNvme
	nsid  uint32 // kindNvme

	histogram *histogram // nil until bdev_enable_histogram first names it
	qos       types.QosLimits
	// qdPeriod is the queue-depth sampling period (µs), 0 when off.
	// SPDK samples a period after the period is set; qdFirst is when
	// the first sample is due, until qdSampled.
	qdPeriod  uint64
	qdFirst   time.Time
	qdSampled bool
}

// queueDepthSampled says whether SPDK has sampled b's queue depth by now.
func (b *bdev) queueDepthSampled(now time.Time) bool {
	if !b.qdSampled && !b.qdFirst.IsZero() && !now.Before(b.qdFirst) {
		b.qdSampled = true
	}
	return b.qdSampled
}

func (b *bdev) matches(name string) bool {
	if b.name == name || b.uuid == name {
		return true
	}
	for _, a := range b.aliases {
		if a == name {
			return true
		}
	}
	return false
}

// state is what one SPDK process keeps in memory.
type state struct {
	bdevs      []*bdev
	lvstores   []*lvstore // loaded, in load order
	transports []*transport
	subsystems []*subsystem
	// subsystemByNQN indexes subsystems: every RPC refreshes every
	// controller of the fabric, which looks its subsystem up on every
	// running Target.
	subsystemByNQN map[string]*subsystem
	ctrlrs         []*ctrlr
	// gen counts changes: controllers of other Targets re-read this
	// Target's subsystems only when it moved.
	gen         uint64
	raids       []*raid
	raidOptions raidOptions
	logLevel    string
	printLevel  string
	// keys is the keyring; removedKeys are removed keys still held.
	keys, removedKeys []*key
	// hostID is the host identifier this process's controllers present
	// to the subsystems they connect to: SPDK draws one per process.
	hostID string
}

func newState() *state {
	return &state{raidOptions: defaultRaidOptions, logLevel: "NOTICE", printLevel: "INFO", subsystemByNQN: map[string]*subsystem{}, hostID: newUUID()}
}

func (st *state) bdev(name string) *bdev {
	for _, b := range st.bdevs {
		if b.matches(name) {
			return b
		}
	}
	return nil
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

const zeroUUID = "00000000-0000-0000-0000-000000000000"

// register adds a bdev and lets the modules examine it: an lvstore on its
// disk loads, and a configuring raid waiting for its name claims it.
func (t *Target) register(b *bdev) {
	st := t.st
	st.bdevs = append(st.bdevs, b)
	if b.disk != nil && b.disk.lvs != nil && b.disk.lvs.base == nil && st.lvstoreByName(b.disk.lvs.name) == nil {
		t.loadLvstore(b.disk.lvs, b)
	}
	for _, r := range st.raids {
		if r.state != raidConfiguring {
			continue
		}
		for i := range r.slots {
			if r.slots[i].b == nil && r.slots[i].name == b.name && b.claimType == "" {
				t.raidConfigureSlot(r, i, b)
			}
		}
	}
}

// unregister removes a bdev and everything built on it: the lvols of an
// lvstore on it, its raid slot, its NVMe-oF namespace.
func (t *Target) unregister(b *bdev) {
	st := t.st
	if b.disk != nil && b.disk.lvs != nil && b.disk.lvs.base == b {
		t.unloadLvstore(b.disk.lvs)
	}
	switch {
	case strings.HasPrefix(b.claimedBy, "raid:"):
		if r := st.raid(strings.TrimPrefix(b.claimedBy, "raid:")); r != nil {
			t.raidHotRemove(r, b)
		}
	case strings.HasPrefix(b.claimedBy, "nvmf:"):
		if s := st.subsystem(strings.TrimPrefix(b.claimedBy, "nvmf:")); s != nil {
			s.removeNamespaceOf(b)
		}
	}
	for i, x := range st.bdevs {
		if x == b {
			st.bdevs = append(st.bdevs[:i], st.bdevs[i+1:]...)
			break
		}
	}
}

func (b *bdev) claim(kind, by string) {
	b.claimType, b.claimedBy = kind, by
}

func (b *bdev) release() {
	b.claimType, b.claimedBy = "", ""
}

// refresh brings every running Target's view of the fabric up to date: lost
// and regained controllers, expired loss timeouts, rebuild progress. It
// looks at what may have moved since the last refresh: every controller
// and raid of a Target that changed, started or stopped, the controllers
// following such a Target, and what waits on the clock (reconnecting
// controllers, rebuilding raids, held writes).
func (f *Fabric) refresh() {
	marks := f.marks()
	changed := map[*Target]bool{}
	look := map[*Target][]*ctrlr{}
	for i, t := range f.targets {
		if i < len(f.seen) && f.seen[i] == marks[i] {
			continue
		}
		changed[t] = true
		for c, home := range f.followers[t] {
			look[home] = append(look[home], c)
		}
	}
	for c, home := range f.pending {
		look[home] = append(look[home], c)
	}
	f.seen = marks
	now, running := f.now(), f.running()
	for _, t := range running {
		cs := look[t]
		if changed[t] {
			cs = slices.Clone(t.st.ctrlrs)
		}
		delete(look, t)
		for _, c := range cs {
			f.refreshOne(t, c, now, running)
		}
		if !changed[t] && len(cs) == 0 && !f.rebuilding[t] {
			continue
		}
		delete(f.rebuilding, t)
		for _, r := range t.st.raids {
			t.advanceRebuild(r, now, f.rebuildRate)
			if r.rebuild != nil {
				f.rebuilding[t] = true
			}
		}
	}
	for _, cs := range look { // on Targets that stopped
		for _, c := range cs {
			f.forget(c)
		}
	}
	for t := range f.rebuilding {
		if !t.running {
			delete(f.rebuilding, t)
		}
	}
	f.settleHeld()
}

// refreshOne has home, the Target holding c, follow the fabric for c,
// and files c under the Target it follows now.
func (f *Fabric) refreshOne(home *Target, c *ctrlr, now time.Time, running []*Target) {
	f.forget(c)
	if c.gone || c.home != home.st {
		return
	}
	home.refreshCtrlr(c, now, running)
	if c.gone {
		return
	}
	if c.synced != nil {
		m := f.followers[c.synced.target]
		if m == nil {
			m = map[*ctrlr]*Target{}
			f.followers[c.synced.target] = m
		}
		m[c] = home
	}
	if !c.settled() {
		f.pending[c] = home
	}
}

// forget drops c from the refresh's books.
func (f *Fabric) forget(c *ctrlr) {
	if c.synced != nil {
		delete(f.followers[c.synced.target], c)
	}
	delete(f.pending, c)
}

// targetMark is what a refresh depends on of a Target: whether it runs,
// which state it holds, and how far that state changed.
type targetMark struct {
	running bool
	st      *state
	gen     uint64
}

func (f *Fabric) marks() []targetMark {
	out := make([]targetMark, len(f.targets))
	for i, t := range f.targets {
		out[i] = targetMark{running: t.running, st: t.st}
		if t.st != nil {
			out[i].gen = t.st.gen
		}
	}
	return out
}

// since is the time from then to now, never negative.
func since(then, now time.Time) time.Duration {
	if now.Before(then) {
		return 0
	}
	return now.Sub(then)
}
