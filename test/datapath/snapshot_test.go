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

package datapath

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/flint-io/flint/internal/spdk/spdklab"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
	"github.com/flint-io/flint/osd-image/agent/storage"
)

const (
	restored  = "5e1f2a3b-4c5d-4e6f-8a7b-9c0d1e2f3a4b" // the restored Volume's uid
	snapshot  = "7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d" // the Snapshot's uid
	block     = 4096
	writeSize = 1 << 20
)

// hostWrite is one write of the writer: where, what, when, and whether
// spdk_dd reported it done (acknowledged).
type hostWrite struct {
	offset     int
	data       []byte
	start, end time.Time
	err        error
}

// TestASnapshotUnderAWriterRestoresWhatWasAcknowledged cuts a 3-replica
// volume while a host writes to it, one 1 MiB write after another, and
// keeps writing after. One OSD's SPDK is restarted. Each copy, cloned into
// a new volume, reads what was acknowledged before the cut, block by
// block: only the blocks of a write in flight during the pause may hold
// that write instead. The three clones read the same, and the restored
// volume, assembled from them, reads that too; the source reads every
// write acknowledged after.
func TestASnapshotUnderAWriterRestoresWhatWasAcknowledged(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lab := spdklab.NewOf(t, 3, spdklab.FlintTgt)
	osds := startOSDs(ctx, t, lab)
	spec := threeReplicaSpec(ctx, t, osds)
	_, err := osds[0].EnsureTarget(ctx, spec)
	must(t, err)
	dd := newHost(t, lab)
	target := osds[0].Endpoint()
	target.NQN = agentv1.VolumeNQN(volume)

	w := startHostWriter(t, dd, target)
	w.waitForAcks(3)
	cutStart := time.Now()
	paused, err := osds[0].PauseTarget(ctx, volume, []string{"osd-0", "osd-1", "osd-2"})
	must(t, err)
	drained := time.Now()
	if len(paused.InSync) != 3 {
		t.Fatalf("paused with in-sync members %v, want all three", paused.InSync)
	}
	// At once, as the operator cuts them.
	var cutting sync.WaitGroup
	for _, o := range osds {
		cutting.Go(func() {
			if _, err := o.CreateSnapshot(ctx, volume, snapshot); err != nil {
				t.Error(err)
			}
		})
	}
	cutting.Wait()
	cut := time.Now()
	must(t, osds[0].ResumeTarget(ctx, volume))
	t.Logf("the volume's I/O paused for %s: its host I/O drained after %s, the three copies cut %s later, resumed %s later",
		time.Since(cutStart).Round(time.Microsecond), drained.Sub(cutStart).Round(time.Microsecond), cut.Sub(drained).Round(time.Microsecond), time.Since(cut).Round(time.Microsecond))
	acked := w.acks()
	w.waitForAcks(acked + 2) // the writer goes on after the cut
	writes := w.stop()
	source := dd.read(target, hostNQN, volSize)

	// The copies are on the devices: an SPDK restarted finds its copy.
	lab.Targets[2].Restart(t)
	must(t, bootstrap(ctx, osds[2]))

	// Restore: a thin clone of each copy, each read on its own, then the
	// restored volume through a target assembled from them.
	var clones [][]byte
	var restoredMembers []storage.MemberSpec
	for i, o := range osds {
		_, err := o.CloneSnapshot(ctx, snapshot, restored)
		must(t, err)
		e, err := o.ExportReplica(ctx, restored, checker, 1, storage.Keys{})
		must(t, err)
		clones = append(clones, dd.read(e, checker, volSize))
		m := storage.MemberSpec{OSD: fmt.Sprintf("osd-%d", i), InSync: true}
		if i != 0 {
			m.Export, err = o.ExportReplica(ctx, restored, agentv1.HostNQN("osd-0"), 1, storage.Keys{})
			must(t, err)
		}
		restoredMembers = append(restoredMembers, m)
	}
	_, err = osds[0].EnsureTarget(ctx, storage.TargetSpec{Volume: restored, Epoch: 1, Members: restoredMembers, Hosts: []string{checker}})
	must(t, err)
	restoredTarget := osds[0].Endpoint()
	restoredTarget.NQN = agentv1.VolumeNQN(restored)
	through := dd.read(restoredTarget, checker, volSize)
	if !lab.Real {
		return // the double has no data
	}
	var inFlight, failed []hostWrite
	for _, w := range writes {
		// A write that failed may have landed in part, as one in flight.
		if w.start.Before(drained) && (!w.end.Before(cutStart) || w.err != nil) {
			inFlight = append(inFlight, w)
		}
		if w.err != nil {
			failed = append(failed, w)
		}
	}
	expectBlocks(t, "the cut", clones[0], apply(writes, func(w hostWrite) bool { return w.err == nil && w.end.Before(cutStart) }), inFlight)
	for i := range clones {
		if !bytes.Equal(clones[i], clones[0]) {
			t.Errorf("the clone on osd-%d reads other data than the one on osd-0: the copies were not cut at one instant", i)
		}
	}
	if !bytes.Equal(through, clones[0]) {
		t.Errorf("the restored volume reads sha256 %x, its clones %x", sha256.Sum256(through), sha256.Sum256(clones[0]))
	}
	expectBlocks(t, "the source volume", source, apply(writes, func(w hostWrite) bool { return w.err == nil }), failed)
	t.Logf("%d writes, %d acknowledged before the cut; clones and restored volume: sha256 %x", len(writes), acked, sha256.Sum256(clones[0]))
}

// expectBlocks checks got block by block: each block reads as in want,
// or as one of the writes in doubt (in flight at a cut, or failed) left
// it. The writes touch distinct blocks, so no later write hides one.
func expectBlocks(t *testing.T, what string, got, want []byte, doubt []hostWrite) {
	t.Helper()
	bad := 0
	for off := 0; off < len(got); off += block {
		b := got[off : off+block]
		if bytes.Equal(b, want[off:off+block]) {
			continue
		}
		ok := false
		for _, w := range doubt {
			if off >= w.offset && off < w.offset+len(w.data) && bytes.Equal(b, w.data[off-w.offset:off-w.offset+block]) {
				ok = true
			}
		}
		if !ok {
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d blocks read neither what was acknowledged nor a write in doubt (%d in doubt)", what, bad, len(doubt))
	}
}

// apply is the volume after the writes keep selects, in order, from
// zeroes.
func apply(writes []hostWrite, keep func(hostWrite) bool) []byte {
	img := make([]byte, volSize)
	for _, w := range writes {
		if keep(w) {
			copy(img[w.offset:], w.data)
		}
	}
	return img
}

// hostWriter writes 1 MiB of fresh data after 1 MiB, each with its own
// spdk_dd run (at most 60, so each to other blocks), until stopped.
type hostWriter struct {
	mu     sync.Mutex
	writes []hostWrite
	quit   chan struct{}
	done   chan struct{}
}

func startHostWriter(t *testing.T, dd *host, e storage.Subsystem) *hostWriter {
	w := &hostWriter{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := range 60 {
			select {
			case <-w.quit:
				return
			default:
			}
			hw := hostWrite{offset: (i * 7 % (volSize / writeSize)) * writeSize, data: randomBytes(t, writeSize), start: time.Now()}
			hw.err = dd.tryWrite(e, hostNQN, hw.data, hw.offset)
			hw.end = time.Now()
			w.mu.Lock()
			w.writes = append(w.writes, hw)
			w.mu.Unlock()
			if dd.bin == "" {
				time.Sleep(10 * time.Millisecond) // the double has no host: nothing paces the loop
			}
		}
	}()
	t.Cleanup(func() { w.stop() })
	return w
}

func (w *hostWriter) acks() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, hw := range w.writes {
		if hw.err == nil {
			n++
		}
	}
	return n
}

// waitForAcks waits until n writes were acknowledged, at most a minute.
func (w *hostWriter) waitForAcks(n int) {
	for deadline := time.Now().Add(time.Minute); w.acks() < n && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the writes and returns them all.
func (w *hostWriter) stop() []hostWrite {
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]hostWrite(nil), w.writes...)
}
