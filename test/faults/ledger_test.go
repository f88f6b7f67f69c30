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

import "testing"

// The checker is what the storm's verdict rests on: each way a block can
// be wrong must count, and a write that failed may or may not show.
func TestLedgerCheck(t *testing.T) {
	const blocks = 8
	l := newLedger()
	l.try(1, 0, 4) // blocks 0–3: write 1, acknowledged
	l.ack(1, 0, 4)
	l.try(2, 2, 4) // blocks 2–5: write 2, failed
	l.try(3, 4, 2) // blocks 4–5: write 3, acknowledged
	l.ack(3, 4, 2)

	good := func() []byte {
		data := make([]byte, blocks*blockSize)
		for b, seq := range map[uint64]uint64{0: 1, 1: 1, 2: 2, 3: 1, 4: 3, 5: 3} {
			copy(data[b*blockSize:], encodeBlock(b, seq))
		}
		return data
	}
	put := func(data []byte, at, block, seq uint64) {
		copy(data[at*blockSize:(at+1)*blockSize], encodeBlock(block, seq))
	}
	for _, tc := range []struct {
		name  string
		spoil func([]byte)
		want  verdict
	}{
		{"every acknowledged write, one failed write shown", func([]byte) {}, verdict{}},
		{"a failed write not shown", func(d []byte) { put(d, 2, 2, 1) }, verdict{}},
		{"an acknowledged block blank", func(d []byte) { clear(d[1*blockSize : 2*blockSize]) }, verdict{Lost: 1}},
		{"an acknowledged block older", func(d []byte) { put(d, 4, 4, 2) }, verdict{Lost: 1}},
		{"a torn block", func(d []byte) { d[3*blockSize+100] ^= 1 }, verdict{Corrupt: 1}},
		{"another block's write", func(d []byte) { put(d, 0, 1, 1) }, verdict{Corrupt: 1}},
		{"a write never tried there", func(d []byte) { put(d, 6, 6, 3) }, verdict{Phantom: 1}},
		{"a later write never tried there", func(d []byte) { put(d, 1, 1, 3) }, verdict{Phantom: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := good()
			tc.spoil(data)
			got := l.check(data)
			if got.Blocks != blocks || got.Acked != 6 {
				t.Errorf("counted %d blocks, %d acknowledged; want %d, 6", got.Blocks, got.Acked, blocks)
			}
			if got.Lost != tc.want.Lost || got.Corrupt != tc.want.Corrupt || got.Phantom != tc.want.Phantom {
				t.Errorf("check = %s, want %d lost, %d corrupt, %d phantom", got, tc.want.Lost, tc.want.Corrupt, tc.want.Phantom)
			}
		})
	}
}
