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

package faults

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
)

// blockSize is the unit the writer writes and the checker reads.
const blockSize = 4096

// magic opens every block the writer writes.
var magic = []byte("FLINTBLK")

// A block describes itself: magic, its block number, the sequence number
// of the write that wrote it, a filler derived from both, and the SHA-256
// of all that in its last 32 bytes. Any torn, misplaced or stale block
// shows.
func encodeBlock(block, seq uint64) []byte {
	b := make([]byte, blockSize)
	copy(b, magic)
	binary.LittleEndian.PutUint64(b[8:], block)
	binary.LittleEndian.PutUint64(b[16:], seq)
	fill := sha256.Sum256(b[:24])
	for off := 24; off < blockSize-sha256.Size; off += len(fill) {
		copy(b[off:blockSize-sha256.Size], fill[:])
	}
	sum := sha256.Sum256(b[:blockSize-sha256.Size])
	copy(b[blockSize-sha256.Size:], sum[:])
	return b
}

// decodeBlock reads a block back: zero says it was never written (all
// zeroes); ok false says it is not one the writer could have written.
func decodeBlock(b []byte) (block, seq uint64, zero, ok bool) {
	if bytes.Count(b, []byte{0}) == len(b) {
		return 0, 0, true, true
	}
	if !bytes.HasPrefix(b, magic) {
		return 0, 0, false, false
	}
	sum := sha256.Sum256(b[:blockSize-sha256.Size])
	if !bytes.Equal(sum[:], b[blockSize-sha256.Size:]) {
		return 0, 0, false, false
	}
	return binary.LittleEndian.Uint64(b[8:]), binary.LittleEndian.Uint64(b[16:]), false, true
}

// ledger is what the writer did: every write it tried, by block, and the
// last one acknowledged.
type ledger struct {
	mu sync.Mutex
	// tried lists, per block, the sequence numbers of every write that
	// covered it, acknowledged or not, in order.
	tried map[uint64][]uint64
	// acked is the last acknowledged write's sequence number per block.
	acked map[uint64]uint64
	// writes and ackedWrites count writes (of several blocks each).
	writes, ackedWrites int
}

func newLedger() *ledger {
	return &ledger{tried: map[uint64][]uint64{}, acked: map[uint64]uint64{}}
}

// try records that write seq covers blocks [first, first+n).
func (l *ledger) try(seq, first, n uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	for b := first; b < first+n; b++ {
		l.tried[b] = append(l.tried[b], seq)
	}
}

// ack records that write seq, over [first, first+n), was acknowledged.
func (l *ledger) ack(seq, first, n uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ackedWrites++
	for b := first; b < first+n; b++ {
		l.acked[b] = seq
	}
}

// counts are the writes tried and acknowledged so far.
func (l *ledger) counts() (writes, acked int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writes, l.ackedWrites
}

// verdict counts what a read of the whole volume showed.
type verdict struct {
	// Blocks were read; Acked of them hold an acknowledged write.
	Blocks, Acked int
	// Lost blocks read older than their last acknowledged write (or
	// blank); Corrupt ones are no block the writer wrote there; Phantom
	// ones hold a write never tried on that block.
	Lost, Corrupt, Phantom int
	// Examples name the first few bad blocks.
	Examples []string
}

func (v verdict) bad() int { return v.Lost + v.Corrupt + v.Phantom }

func (v verdict) String() string {
	s := fmt.Sprintf("%d blocks, %d acknowledged: %d lost, %d corrupt, %d phantom", v.Blocks, v.Acked, v.Lost, v.Corrupt, v.Phantom)
	if len(v.Examples) > 0 {
		s += fmt.Sprintf(" (%v)", v.Examples)
	}
	return s
}

// check judges data, a read of the whole volume from block 0. A block
// may hold its last acknowledged write or any later one tried, since a
// write that failed may have reached the disk; nothing older, and
// nothing never tried there.
func (l *ledger) check(data []byte) verdict {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := verdict{Blocks: len(data) / blockSize}
	bad := func(kind string, block uint64, detail string) {
		if len(v.Examples) < 5 {
			v.Examples = append(v.Examples, fmt.Sprintf("%s block %d: %s", kind, block, detail))
		}
	}
	for i := range v.Blocks {
		block := uint64(i)
		acked, hasAck := l.acked[block]
		if hasAck {
			v.Acked++
		}
		got, seq, zero, ok := decodeBlock(data[i*blockSize : (i+1)*blockSize])
		switch {
		case !ok:
			v.Corrupt++
			bad("corrupt", block, "not a block the writer wrote")
		case zero && hasAck:
			v.Lost++
			bad("lost", block, fmt.Sprintf("blank, acknowledged write %d", acked))
		case zero:
		case got != block:
			v.Corrupt++
			bad("corrupt", block, fmt.Sprintf("holds block %d's write %d", got, seq))
		case !slices.Contains(l.tried[block], seq):
			v.Phantom++
			bad("phantom", block, fmt.Sprintf("write %d was never tried there", seq))
		case hasAck && seq < acked:
			v.Lost++
			bad("lost", block, fmt.Sprintf("holds write %d, acknowledged write %d", seq, acked))
		}
	}
	return v
}
