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
	"time"

	"github.com/flint-io/flint/internal/spdk/types"
)

// Host writes. The double keeps no data, but SPDK does, so it keeps the
// sequence of host writes each lvol received: a write through a volume's
// subsystem reaches the lvols SPDK's data would, and a rebuild copies its
// source's. A test then checks that every acknowledged write is on every
// replica it trusts.

// WriteOutcome is what the host has seen of a write.
type WriteOutcome int

const (
	// WriteFailed is a write never acknowledged: no path, no in-sync
	// member took it, or the target holding it died.
	WriteFailed WriteOutcome = iota
	// WriteHeld is a write not acknowledged yet: a raid member whose
	// controller is reconnecting holds it, as bdev_nvme holds I/O until
	// the controller is back, fast_io_fail_timeout_sec runs out, or it is
	// detached.
	WriteHeld
	// WriteAcked is a write acknowledged to the host.
	WriteAcked
)

func (o WriteOutcome) String() string {
	return [...]string{"failed", "held", "acknowledged"}[o]
}

// hostWrite is a write whose outcome is not settled: members of raid on
// target t hold it.
type hostWrite struct {
	seq  uint64
	t    *Target
	st   *state
	raid *raid
	held []*bdev
	// took says an in-sync member took it.
	took bool
}

// ioResult is what one bdev did with a write.
type ioResult int

const (
	ioDone ioResult = iota
	ioHeld
	ioFailed
)

// Write is a host's write to the first namespace of subsystem nqn at the
// TCP listener addr:port. It returns the write's sequence number and its
// outcome so far: as SPDK's raid1 does, a write completes once every
// member finished with it and one in-sync member took it; a member that
// failed it leaves the raid. A held write settles later (Outcome).
func (f *Fabric) Write(addr string, port int, nqn, host string) (uint64, WriteOutcome) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refresh()
	f.writeSeq++
	seq := f.writeSeq
	at := listenAddr{Trtype: "TCP", Traddr: addr, Trsvcid: strconv.Itoa(port)}
	t, s := f.remote(at, nqn, host)
	if s == nil || s.namespace(1) == nil || !s.accessible(at, s.namespace(1)) {
		return seq, WriteFailed
	}
	w := &hostWrite{seq: seq, t: t, st: t.st}
	res := t.write(s.namespace(1).b, w)
	t.st.gen++ // a raid may have lost a member
	switch res {
	case ioHeld:
		f.held = append(f.held, w)
		return seq, WriteHeld
	case ioDone:
		f.acked[seq] = true
		return seq, WriteAcked
	}
	return seq, WriteFailed
}

// Outcome is what the host has seen of write seq by now.
func (f *Fabric) Outcome(seq uint64) WriteOutcome {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refresh()
	switch {
	case f.acked[seq]:
		return WriteAcked
	case slices.ContainsFunc(f.held, func(w *hostWrite) bool { return w.seq == seq }):
		return WriteHeld
	}
	return WriteFailed
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

// write takes w to b and what lies under it.
func (t *Target) write(b *bdev, w *hostWrite) ioResult {
	switch b.kind {
	case kindLvol:
		b.lvol.writes = append(b.lvol.writes, w.seq)
	case kindRaid:
		r := b.raid
		w.raid = r
		for i, s := range slices.Clone(r.slots) {
			if s.b == nil {
				continue
			}
			switch t.write(s.b, w) {
			case ioFailed:
				t.raidHotRemove(r, s.b)
			case ioHeld:
				w.held = append(w.held, s.b)
			case ioDone:
				w.took = w.took || r.rebuild == nil || r.rebuild.slot != i
			}
		}
		switch {
		case len(w.held) > 0:
			return ioHeld
		case !w.took:
			return ioFailed
		}
	case kindNvme:
		res := t.remoteIO(b)
		if res == ioDone {
			rt, under := t.behind(b)
			return rt.write(under, w)
		}
		return res
	}
	return ioDone // a device: its data is not followed
}

// remoteIO is what I/O to the remote namespace b does now: it goes
// through while its controller is connected, waits while the controller
// reconnects and fast_io_fail_timeout_sec (0: never) has not run out,
// and fails otherwise.
func (t *Target) remoteIO(b *bdev) ioResult {
	c := b.ctrlr
	switch {
	case c.state == ctrlrEnabled:
		if _, under := t.behind(b); under != nil {
			return ioDone
		}
	case c.state == ctrlrReconnectIsDelayed && (c.fastIOFail == 0 || since(c.lostAt, t.fabric.now()) < time.Duration(c.fastIOFail)*time.Second):
		return ioHeld
	}
	return ioFailed
}

// settleHeld moves held writes on: a member whose controller is back
// takes the write, one whose controller is gone (detached, or lost for
// ctrlr_loss_timeout_sec) or whose fast I/O fail ran out fails it and
// leaves the raid. A write nothing holds any more is acknowledged if an
// in-sync member took it. A write held by a Target that died is lost.
func (f *Fabric) settleHeld() {
	f.held = slices.DeleteFunc(f.held, func(w *hostWrite) bool {
		if !w.t.running || w.t.st != w.st {
			return true
		}
		t, r := w.t, w.raid
		w.held = slices.DeleteFunc(w.held, func(b *bdev) bool {
			slot := r.slotOf(b)
			if slot < 0 || !slices.Contains(t.st.bdevs, b) {
				return true // it left the raid: the write failed on it
			}
			switch t.remoteIO(b) {
			case ioDone:
				rt, under := t.behind(b)
				rt.write(under, w)
				w.took = w.took || r.rebuild == nil || r.rebuild.slot != slot
				return true
			case ioFailed:
				t.raidHotRemove(r, b)
				return true
			}
			return false
		})
		if len(w.held) > 0 {
			return false
		}
		if w.took {
			f.acked[w.seq] = true
		}
		return true
	})
}

// sampledQueueDepth is b's queue depth as SPDK's sampling reports it:
// none before the first period ran out, then the writes b holds (the
// double completes every other I/O at once).
func (f *Fabric) sampledQueueDepth(b *bdev) uint64 {
	if !b.queueDepthSampled(f.now()) {
		return types.QueueDepthUnsampled
	}
	var n uint64
	for _, w := range f.held {
		if slices.Contains(w.held, b) {
			n++
		}
	}
	return n
}

// holdsWrites says whether writes wait on members of r: SPDK quiesces a
// raid before it removes a member or deletes it, and a quiesce waits for
// them for ever.
func (f *Fabric) holdsWrites(r *raid) bool {
	return slices.ContainsFunc(f.held, func(w *hostWrite) bool { return w.raid == r })
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
