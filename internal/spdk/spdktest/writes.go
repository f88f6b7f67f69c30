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
	"slices"
	"strconv"
)

// Host writes. The double keeps no data, but SPDK does, so it keeps the
// sequence of host writes each lvol received: a write through a volume's
// subsystem reaches the lvols SPDK's data would, and a rebuild copies its
// source's. A test then checks that every acknowledged write is on every
// replica it trusts.

// Write is a host's write to the first namespace of subsystem nqn at the
// TCP listener addr:port. It returns the write's sequence number and
// whether it was acknowledged: as SPDK's raid1 does, a write completes
// when one member took it, and a member that failed it leaves the raid.
func (f *Fabric) Write(addr string, port int, nqn, host string) (seq uint64, acked bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refresh()
	f.writeSeq++
	seq = f.writeSeq
	t, s := f.remote(listenAddr{Trtype: "TCP", Traddr: addr, Trsvcid: strconv.Itoa(port)}, nqn, host)
	if s == nil {
		return seq, false
	}
	ns := s.namespace(1)
	if ns == nil {
		return seq, false
	}
	acked = t.write(ns.b, seq)
	t.st.gen++ // a raid may have lost a member
	return seq, acked
}

// Writes lists the writes lvol alias (lvstore/lvol) holds, on whichever
// running Target has its lvstore loaded; false when none has.
func (f *Fabric) Writes(alias string) ([]uint64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.running() {
		if b := t.st.bdev(alias); b != nil && b.lvol != nil {
			return slices.Clone(b.lvol.writes), true
		}
	}
	return nil, false
}

// write takes write seq to b and what lies under it; false when it did
// not reach stable storage.
func (t *Target) write(b *bdev, seq uint64) bool {
	switch b.kind {
	case kindLvol:
		b.lvol.writes = append(b.lvol.writes, seq)
		return true
	case kindRaid:
		r, acked := b.raid, false
		for i, s := range slices.Clone(r.slots) {
			if s.b == nil {
				continue
			}
			if !t.write(s.b, seq) {
				t.raidHotRemove(r, s.b)
				continue
			}
			if r.rebuild == nil || r.rebuild.slot != i {
				acked = true
			}
		}
		return acked
	case kindNvme:
		rt, under := t.behind(b)
		return b.ctrlr.state == ctrlrEnabled && under != nil && rt.write(under, seq)
	}
	return true // a device: its data is not followed
}

// lvolUnder is the lvol b stores its data on, through remote
// controllers; nil for anything else.
func (t *Target) lvolUnder(b *bdev) *lvol {
	switch b.kind {
	case kindLvol:
		return b.lvol
	case kindNvme:
		if rt, under := t.behind(b); under != nil {
			return rt.lvolUnder(under)
		}
	}
	return nil
}

// behind is the bdev that the remote namespace b stands for, and the
// Target exporting it; nil when that cannot be reached.
func (t *Target) behind(b *bdev) (*Target, *bdev) {
	rt, s := t.fabric.remote(b.ctrlr.trid, b.ctrlr.subnqn, b.ctrlr.hostnqn)
	if s == nil {
		return nil, nil
	}
	ns := s.namespace(b.nsid)
	if ns == nil {
		return nil, nil
	}
	return rt, ns.b
}

// rebuilt gives the member in slot, whose rebuild just finished, the
// writes of a member that was in sync: the rebuild copied its data.
func (t *Target) rebuilt(r *raid, slot int) {
	dst := t.lvolUnder(r.slots[slot].b)
	if dst == nil {
		return
	}
	for i, s := range r.slots {
		if i == slot || s.b == nil {
			continue
		}
		if src := t.lvolUnder(s.b); src != nil {
			dst.writes = slices.Clone(src.writes)
			return
		}
	}
}
