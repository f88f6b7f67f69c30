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

// Package ledger is what the fault storms judge a volume by: blocks that
// describe themselves (block number, the write's sequence number, a
// checksum) and a ledger of every write tried and acknowledged, against
// which a read of the volume counts lost, corrupt and phantom blocks. The
// storm on SPDK's initiator (test/faults) and the kernel host's (the e2e
// lab's writer, test/e2e/stormwriter) share it.
package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// BlockSize is the unit a writer writes and the checker reads.
const BlockSize = 4096

// magic opens every block the writer writes.
var magic = []byte("FLINTBLK")

// EncodeBlock is block's content as write seq writes it. A block describes
// itself: magic, its block number, the sequence number of the write that
// wrote it, a filler derived from both, and the SHA-256 of all that in
// its last 32 bytes. Any torn, misplaced or stale block shows.
func EncodeBlock(block, seq uint64) []byte {
	b := make([]byte, BlockSize)
	copy(b, magic)
	binary.LittleEndian.PutUint64(b[8:], block)
	binary.LittleEndian.PutUint64(b[16:], seq)
	fill := sha256.Sum256(b[:24])
	for off := 24; off < BlockSize-sha256.Size; off += len(fill) {
		copy(b[off:BlockSize-sha256.Size], fill[:])
	}
	sum := sha256.Sum256(b[:BlockSize-sha256.Size])
	copy(b[BlockSize-sha256.Size:], sum[:])
	return b
}

// Found is what a read found in one block.
type Found struct {
	// Block and Seq are the block number and write the block names.
	Block, Seq uint64
	// Zero says it was never written (all zeroes); OK false says it is
	// not a block a writer could have written (torn, checksum wrong).
	Zero, OK bool
}

// DecodeBlock reads a block back.
func DecodeBlock(b []byte) Found {
	if bytes.Count(b, []byte{0}) == len(b) {
		return Found{Zero: true, OK: true}
	}
	if !bytes.HasPrefix(b, magic) {
		return Found{}
	}
	sum := sha256.Sum256(b[:BlockSize-sha256.Size])
	if !bytes.Equal(sum[:], b[BlockSize-sha256.Size:]) {
		return Found{}
	}
	return Found{Block: binary.LittleEndian.Uint64(b[8:]), Seq: binary.LittleEndian.Uint64(b[16:]), OK: true}
}

// Decode reads each block of data, a read of a volume from block 0.
func Decode(data []byte) []Found {
	found := make([]Found, len(data)/BlockSize)
	for i := range found {
		found[i] = DecodeBlock(data[i*BlockSize : (i+1)*BlockSize])
	}
	return found
}

// FormatFound writes found as one line of words, one a block: z blank,
// x not a writer's block, <block>:<seq> otherwise. ParseFound reads it.
func FormatFound(found []Found) string {
	words := make([]string, len(found))
	for i, f := range found {
		switch {
		case f.Zero:
			words[i] = "z"
		case !f.OK:
			words[i] = "x"
		default:
			words[i] = fmt.Sprintf("%d:%d", f.Block, f.Seq)
		}
	}
	return strings.Join(words, " ")
}

// ParseFound reads what FormatFound wrote.
func ParseFound(line string) ([]Found, error) {
	var found []Found
	for i, w := range strings.Fields(line) {
		f := Found{OK: true}
		switch w {
		case "z":
			f.Zero = true
		case "x":
			f.OK = false
		default:
			if _, err := fmt.Sscanf(w, "%d:%d", &f.Block, &f.Seq); err != nil {
				return nil, fmt.Errorf("block %d: %q is not z, x or <block>:<seq>", i, w)
			}
		}
		found = append(found, f)
	}
	return found, nil
}

// Ledger is what a writer did: every write it tried, by block, and the
// last one acknowledged.
type Ledger struct {
	mu sync.Mutex
	// tried lists, per block, the sequence numbers of every write that
	// covered it, acknowledged or not, in order.
	tried map[uint64][]uint64
	// acked is the last acknowledged write's sequence number per block.
	acked map[uint64]uint64
	// writes and ackedWrites count writes (of several blocks each).
	writes, ackedWrites int
}

// New is an empty ledger.
func New() *Ledger {
	return &Ledger{tried: map[uint64][]uint64{}, acked: map[uint64]uint64{}}
}

// Try records that write seq covers blocks [first, first+n).
func (l *Ledger) Try(seq, first, n uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	for b := first; b < first+n; b++ {
		l.tried[b] = append(l.tried[b], seq)
	}
}

// Ack records that write seq, over [first, first+n), was acknowledged.
func (l *Ledger) Ack(seq, first, n uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ackedWrites++
	for b := first; b < first+n; b++ {
		l.acked[b] = seq
	}
}

// Counts are the writes tried and acknowledged so far.
func (l *Ledger) Counts() (writes, acked int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writes, l.ackedWrites
}

// Verdict counts what a read of the whole volume showed.
type Verdict struct {
	// Blocks were read; Acked of them hold an acknowledged write.
	Blocks, Acked int
	// Lost blocks read older than their last acknowledged write (or
	// blank); Corrupt ones are no block the writer wrote there; Phantom
	// ones hold a write never tried on that block.
	Lost, Corrupt, Phantom int
	// Examples name the first few bad blocks.
	Examples []string
}

// Bad counts the blocks lost, corrupt or phantom.
func (v Verdict) Bad() int { return v.Lost + v.Corrupt + v.Phantom }

func (v Verdict) String() string {
	s := fmt.Sprintf("%d blocks, %d acknowledged: %d lost, %d corrupt, %d phantom", v.Blocks, v.Acked, v.Lost, v.Corrupt, v.Phantom)
	if len(v.Examples) > 0 {
		s += fmt.Sprintf(" (%v)", v.Examples)
	}
	return s
}

// Check judges data, a read of the whole volume from block 0.
func (l *Ledger) Check(data []byte) Verdict { return l.CheckFound(Decode(data)) }

// CheckFound judges what a read of the whole volume found, block i at
// found[i]. A block may hold its last acknowledged write or any later one
// tried, since a write that failed may have reached the disk; nothing
// older, and nothing never tried there.
func (l *Ledger) CheckFound(found []Found) Verdict {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := Verdict{Blocks: len(found)}
	bad := func(kind string, block uint64, detail string) {
		if len(v.Examples) < 5 {
			v.Examples = append(v.Examples, fmt.Sprintf("%s block %d: %s", kind, block, detail))
		}
	}
	for i, f := range found {
		block := uint64(i)
		acked, hasAck := l.acked[block]
		if hasAck {
			v.Acked++
		}
		switch {
		case !f.OK:
			v.Corrupt++
			bad("corrupt", block, "not a block the writer wrote")
		case f.Zero && hasAck:
			v.Lost++
			bad("lost", block, fmt.Sprintf("blank, acknowledged write %d", acked))
		case f.Zero:
		case f.Block != block:
			v.Corrupt++
			bad("corrupt", block, fmt.Sprintf("holds block %d's write %d", f.Block, f.Seq))
		case !slices.Contains(l.tried[block], f.Seq):
			v.Phantom++
			bad("phantom", block, fmt.Sprintf("write %d was never tried there", f.Seq))
		case hasAck && f.Seq < acked:
			v.Lost++
			bad("lost", block, fmt.Sprintf("holds write %d, acknowledged write %d", f.Seq, acked))
		}
	}
	return v
}
