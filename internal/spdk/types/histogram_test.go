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

import (
	"encoding/base64"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// tally counts v as SPDK's spdk_histogram_data_tally does into counts,
// the buckets of ranges lo to hi at granularity g.
func tally(counts []uint64, g, lo, hi uint32, v uint64) {
	r := HistogramRange(g, v)
	var index uint64
	switch {
	case r < lo:
		r, index = lo, 0
	case r > hi:
		r, index = hi, 1<<g-1
	default:
		shift := uint32(0)
		if r > 0 {
			shift = r - 1
		}
		index = v >> shift & (1<<g - 1)
	}
	counts[uint64(r-lo)<<g+index]++
}

func encode(counts []uint64) string {
	raw := make([]byte, 8*len(counts))
	for i, c := range counts {
		binary.LittleEndian.PutUint64(raw[8*i:], c)
	}
	return base64.StdEncoding.EncodeToString(raw)
}

func TestHistogramBucketsHoldWhatSPDKTallied(t *testing.T) {
	for _, h := range []Histogram{
		{Granularity: 7, MinRange: 0, MaxRange: 57},
		{Granularity: 5, MinRange: 7, MaxRange: 23},
		{Granularity: 7, MinRange: 5, MaxRange: 27},
	} {
		counts := make([]uint64, (h.MaxRange-h.MinRange+1)<<h.Granularity)
		rng := rand.New(rand.NewPCG(1, 2))
		values := []uint64{0, 1, 127, 128, 255, 256, 2600, 1 << 33, 1<<34 + 5}
		for range 2000 {
			values = append(values, rng.Uint64N(1<<uint(rng.IntN(40)+1)))
		}
		for _, v := range values {
			tally(counts, h.Granularity, h.MinRange, h.MaxRange, v)
		}
		h.Data = encode(counts)
		buckets, err := h.Buckets()
		if err != nil {
			t.Fatal(err)
		}
		if len(buckets) != len(counts) || buckets[0].StartTicks != 0 {
			t.Fatalf("granularity %d: %d buckets from %d, want %d from 0", h.Granularity, len(buckets), buckets[0].StartTicks, len(counts))
		}
		// Each value lands in the bucket that covers it, but for those
		// below the first range or beyond the last, which SPDK clamps.
		for _, v := range values {
			one := make([]uint64, len(counts))
			tally(one, h.Granularity, h.MinRange, h.MaxRange, v)
			for i, c := range one {
				if c == 0 {
					continue
				}
				b := buckets[i]
				last := i == len(buckets)-1
				if v < b.StartTicks || (v >= b.EndTicks && !last) {
					t.Errorf("granularity %d ranges %d-%d: %d ticks tallied into bucket %d, which is [%d, %d)", h.Granularity, h.MinRange, h.MaxRange, v, i, b.StartTicks, b.EndTicks)
				}
			}
		}
		var total uint64
		for i, b := range buckets {
			total += b.Count
			if i > 0 && b.StartTicks != buckets[i-1].EndTicks {
				t.Fatalf("bucket %d starts at %d, the one before ends at %d", i, b.StartTicks, buckets[i-1].EndTicks)
			}
		}
		if total != uint64(len(values)) {
			t.Errorf("granularity %d: buckets count %d, %d were tallied", h.Granularity, total, len(values))
		}
	}
}

func TestHistogramBucketsRefuseWhatSPDKDoesNotMake(t *testing.T) {
	for name, h := range map[string]Histogram{
		"not base64":      {Data: "!!", Granularity: 7, MinRange: 0, MaxRange: 0},
		"short":           {Data: encode(make([]uint64, 127)), Granularity: 7, MinRange: 0, MaxRange: 0},
		"ranges reversed": {Data: encode(make([]uint64, 128)), Granularity: 7, MinRange: 3, MaxRange: 2},
		"granularity 0":   {Data: encode(make([]uint64, 1)), Granularity: 0, MinRange: 0, MaxRange: 0},
	} {
		if _, err := h.Buckets(); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}
