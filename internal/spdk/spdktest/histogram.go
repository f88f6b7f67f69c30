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
	"encoding/base64"
	"encoding/json"
	"slices"
	"time"

	"github.com/flint-io/flint/internal/spdk/jsonrpc"
	"github.com/flint-io/flint/internal/spdk/types"
)

// tscRate is the double's tick rate, that of the machine the transcripts
// were recorded on, so that histogram ranges come out as SPDK's did.
const tscRate = 2_600_000_000

// ticks is SPDK's tick counter at t.
func ticks(t time.Time) uint64 { return uint64(t.UnixNano()) / 10 * (tscRate / 100_000_000) }

// histogram is what bdev_enable_histogram last set on a bdev. Its counts
// stay zero: the double runs no I/O.
type histogram struct {
	enabled     bool
	granularity uint8
	minTicks    uint64
	maxTicks    uint64
}

// histogramOpcs are the I/O types a histogram can be restricted to.
var histogramOpcs = []string{"read", "write", "unmap", "flush", "reset", "nvme_admin", "nvme_io", "nvme_io_md",
	"write_zeroes", "zcopy", "get_zone_info", "zone_management", "zone_append", "compare", "compare_and_write",
	"abort", "seek_hole", "seek_data", "copy", "nvme_iov_md", "nvme_nssr"}

func bdevEnableHistogram(t *Target, p json.RawMessage) (any, error) {
	req := struct {
		Name        string  `json:"name"`
		Enable      bool    `json:"enable"`
		Opc         *string `json:"opc"`
		Granularity uint8   `json:"granularity"`
		MinNsec     uint64  `json:"min_nsec"`
		MaxNsec     uint64  `json:"max_nsec"`
	}{Granularity: 7, MinNsec: 1000, MaxNsec: 120_000_000_000}
	if err := decode(p, &req, errDecode(), "name", "enable"); err != nil {
		return nil, err
	}
	b := t.st.bdev(req.Name)
	if b == nil {
		return nil, errf(jsonrpc.CodeNoSuchDevice, "No such device")
	}
	if req.Opc != nil && !slices.Contains(histogramOpcs, *req.Opc) {
		return nil, errf(jsonrpc.CodeInternalError, "Invalid Io type")
	}
	// SPDK converts with 64-bit products that wrap: its own default
	// maximum, 120 s, comes out near 6.5 s at 2.6 GHz.
	h := &histogram{enabled: req.Enable, granularity: req.Granularity,
		minTicks: req.MinNsec * tscRate / 1_000_000_000, maxTicks: req.MaxNsec * tscRate / 1_000_000_000}
	if req.MaxNsec == ^uint64(0) {
		h.maxTicks = ^uint64(0)
	}
	b.histogram = h
	// Every open channel gets a histogram of that size; one that cannot be
	// sized fails the call and turns it off again.
	if req.Enable && b.claimedBy != "" && h.minTicks >= h.maxTicks {
		h.enabled = false
		return nil, errf(jsonrpc.CodeNoMemory, "Cannot allocate memory")
	}
	return true, nil
}

func bdevGetHistogram(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		Name string `json:"name"`
	}
	if err := decode(p, &req, errDecode(), "name"); err != nil {
		return nil, err
	}
	b := t.st.bdev(req.Name)
	if b == nil {
		return nil, errf(jsonrpc.CodeNoSuchDevice, "No such device")
	}
	h := b.histogram
	if h == nil || h.minTicks >= h.maxTicks {
		return nil, errf(jsonrpc.CodeNoMemory, "Cannot allocate memory")
	}
	// A consumer's channel without a histogram (it was turned off) fails
	// the merge; a bdev nobody opened merges nothing and answers zeros.
	if !h.enabled && b.claimedBy != "" {
		return nil, errf(jsonrpc.CodeInternalError, "Bad address")
	}
	g := uint32(h.granularity)
	lo, hi := types.HistogramRange(g, h.minTicks), types.HistogramRange(g, h.maxTicks-1)
	buckets := make([]byte, 8*(hi-lo+1)<<h.granularity)
	return map[string]any{
		"histogram":   base64.StdEncoding.EncodeToString(buckets),
		"granularity": h.granularity,
		"min_range":   lo,
		"max_range":   hi,
		"tsc_rate":    tscRate,
	}, nil
}
