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
	"fmt"
	"math/bits"
)

// BdevEnableHistogramRequest turns a bdev's latency histogram on or off.
// The histogram counts completed I/O by latency in TSC ticks; Granularity
// splits each power-of-two range of ticks into 2^Granularity buckets, and
// MinNsec/MaxNsec bound the ranges kept (latencies outside land in the
// first or last bucket).
type BdevEnableHistogramRequest struct {
	Name   string `json:"name"`
	Enable bool   `json:"enable"`
	// Opc restricts it to one I/O type ("read", "write", …); empty counts
	// every type.
	Opc         string `json:"opc,omitempty"`
	Granularity uint8  `json:"granularity,omitempty"`
	MinNsec     uint64 `json:"min_nsec,omitempty"`
	MaxNsec     uint64 `json:"max_nsec,omitempty"`
}

// BdevGetHistogramRequest names the bdev whose histogram is read.
type BdevGetHistogramRequest struct {
	Name string `json:"name"`
}

// Histogram is SPDK's latency histogram of a bdev, merged over its I/O
// channels: Data is the base64 of the buckets of ranges MinRange to
// MaxRange, 2^Granularity little-endian uint64 counts per range.
type Histogram struct {
	Data        string `json:"histogram"`
	Granularity uint32 `json:"granularity"`
	MinRange    uint32 `json:"min_range"`
	MaxRange    uint32 `json:"max_range"`
	TscRate     uint64 `json:"tsc_rate"`
}

// HistogramBucket counts the I/O whose latency in ticks was in
// [StartTicks, EndTicks).
type HistogramBucket struct {
	StartTicks, EndTicks, Count uint64
}

// Buckets decodes h's buckets in order of latency, as SPDK's
// spdk_histogram_data_iterate walks them. The first bucket starts at 0,
// since it also counts every latency below the lowest range kept.
func (h Histogram) Buckets() ([]HistogramBucket, error) {
	raw, err := base64.StdEncoding.DecodeString(h.Data)
	if err != nil {
		return nil, fmt.Errorf("histogram data is not base64: %w", err)
	}
	if h.Granularity == 0 || h.Granularity > 16 || h.MaxRange < h.MinRange || h.MaxRange >= 64 {
		return nil, fmt.Errorf("histogram of granularity %d and ranges %d-%d is not one SPDK makes", h.Granularity, h.MinRange, h.MaxRange)
	}
	perRange := uint64(1) << h.Granularity
	n := perRange * uint64(h.MaxRange-h.MinRange+1)
	if uint64(len(raw)) != 8*n {
		return nil, fmt.Errorf("histogram has %d bytes, want %d for granularity %d and ranges %d-%d", len(raw), 8*n, h.Granularity, h.MinRange, h.MaxRange)
	}
	buckets := make([]HistogramBucket, 0, n)
	var start uint64
	for r := h.MinRange; r <= h.MaxRange; r++ {
		for i := range perRange {
			end := h.bucketEnd(r, i)
			count := binary.LittleEndian.Uint64(raw[8*uint64(len(buckets)):])
			buckets = append(buckets, HistogramBucket{StartTicks: start, EndTicks: end, Count: count})
			start = end
		}
	}
	return buckets, nil
}

// bucketEnd is where bucket index of range r ends: SPDK's
// __spdk_histogram_data_get_bucket_start of the next bucket. Ranges 0 and
// 1 hold one tick per bucket, each later range twice the one before.
func (h Histogram) bucketEnd(r uint32, index uint64) uint64 {
	index++
	if r == 0 {
		return index
	}
	return 1<<(uint64(r)+uint64(h.Granularity)-1) + index<<(r-1)
}

// HistogramRange is the range of a histogram of granularity g that a
// latency of ticks falls in, as SPDK's __spdk_histogram_data_get_bucket_range
// computes it: ranges 0 and 1 hold the values below 2^(g+1), each later
// range one more power of two.
func HistogramRange(g uint32, ticks uint64) uint32 {
	lsb := 64 - int(g)
	if clz := bits.LeadingZeros64(ticks); clz <= lsb {
		return uint32(lsb - clz)
	}
	return 0
}
