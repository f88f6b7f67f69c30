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

package ledger

import (
	"slices"
	"testing"
)

// The checker is what the storm's verdict rests on: each way a block can
// be wrong must count, and a write that failed may or may not show.
func TestLedgerCheck(t *testing.T) {
	const blocks = 8
	l := New()
	l.Try(1, 0, 4) // blocks 0–3: write 1, acknowledged
	l.Ack(1, 0, 4)
	l.Try(2, 2, 4) // blocks 2–5: write 2, failed
	l.Try(3, 4, 2) // blocks 4–5: write 3, acknowledged
	l.Ack(3, 4, 2)

	good := func() []byte {
		data := make([]byte, blocks*BlockSize)
		for b, seq := range map[uint64]uint64{0: 1, 1: 1, 2: 2, 3: 1, 4: 3, 5: 3} {
			copy(data[b*BlockSize:], EncodeBlock(b, seq))
		}
		return data
	}
	put := func(data []byte, at, block, seq uint64) {
		copy(data[at*BlockSize:(at+1)*BlockSize], EncodeBlock(block, seq))
	}
	for _, tc := range []struct {
		name  string
		spoil func([]byte)
		want  Verdict
	}{
		{"every acknowledged write, one failed write shown", func([]byte) {}, Verdict{}},
		{"a failed write not shown", func(d []byte) { put(d, 2, 2, 1) }, Verdict{}},
		{"an acknowledged block blank", func(d []byte) { clear(d[1*BlockSize : 2*BlockSize]) }, Verdict{Lost: 1}},
		{"an acknowledged block older", func(d []byte) { put(d, 4, 4, 2) }, Verdict{Lost: 1}},
		{"a torn block", func(d []byte) { d[3*BlockSize+100] ^= 1 }, Verdict{Corrupt: 1}},
		{"another block's write", func(d []byte) { put(d, 0, 1, 1) }, Verdict{Corrupt: 1}},
		{"a write never tried there", func(d []byte) { put(d, 6, 6, 3) }, Verdict{Phantom: 1}},
		{"a later write never tried there", func(d []byte) { put(d, 1, 1, 3) }, Verdict{Phantom: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := good()
			tc.spoil(data)
			got := l.Check(data)
			if got.Blocks != blocks || got.Acked != 6 {
				t.Errorf("counted %d blocks, %d acknowledged; want %d, 6", got.Blocks, got.Acked, blocks)
			}
			if got.Lost != tc.want.Lost || got.Corrupt != tc.want.Corrupt || got.Phantom != tc.want.Phantom {
				t.Errorf("check = %s, want %d lost, %d corrupt, %d phantom", got, tc.want.Lost, tc.want.Corrupt, tc.want.Phantom)
			}
		})
	}
}

// What the e2e lab's writer prints of a read is what the test judges.
func TestFoundRoundTrips(t *testing.T) {
	data := make([]byte, 4*BlockSize)
	copy(data, EncodeBlock(0, 7))
	copy(data[2*BlockSize:], EncodeBlock(5, 9))
	copy(data[3*BlockSize:], EncodeBlock(3, 1))
	data[3*BlockSize+100] ^= 1 // torn
	found := Decode(data)
	line := FormatFound(found)
	if line != "0:7 z 5:9 x" {
		t.Fatalf("FormatFound = %q, want %q", line, "0:7 z 5:9 x")
	}
	back, err := ParseFound(line)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back, found) {
		t.Fatalf("ParseFound(%q) = %+v, want %+v", line, back, found)
	}
	if _, err := ParseFound("0:7 y"); err == nil {
		t.Fatal("ParseFound took a word that is no block")
	}
}
