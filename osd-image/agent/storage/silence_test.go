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

package storage

import (
	"testing"
	"time"

	"github.com/flint-io/flint/internal/spdk/types"
)

func TestSilenceWatch(t *testing.T) {
	const member = "r0123456789abcden1"
	counters := func(completions, queueDepth uint64) types.BdevIostat {
		return types.BdevIostat{Name: member, NumWriteOps: completions, QueueDepthPollingPeriod: queueDepthPeriodUs, QueueDepth: queueDepth}
	}
	type look struct {
		at       time.Duration
		counters types.BdevIostat
		silent   bool
	}
	for _, tc := range []struct {
		name  string
		looks []look
	}{
		{"a member holding I/O that completes none for the span is silent", []look{
			{0, counters(7, 3), false}, {5 * time.Second, counters(7, 3), false},
			{9900 * time.Millisecond, counters(7, 3), false}, {10 * time.Second, counters(7, 3), true},
			{time.Minute, counters(7, 3), true},
		}},
		{"the span starts at the first look that found it stalled", []look{
			{0, counters(5, 1), false}, {4 * time.Second, counters(7, 3), false},
			{12 * time.Second, counters(7, 3), false}, {14 * time.Second, counters(7, 3), true},
		}},
		{"a member completing I/O is never silent", []look{
			{0, counters(1, 8), false}, {8 * time.Second, counters(2, 8), false},
			{16 * time.Second, counters(3, 8), false}, {24 * time.Second, counters(4, 8), false},
		}},
		{"a member idle at one look and holding I/O at the next starts its clock at the second", []look{
			{0, counters(7, 0), false}, {10 * time.Second, counters(7, 1), false},
			{15 * time.Second, counters(7, 1), false}, {20 * time.Second, counters(7, 1), true},
		}},
		{"a member idle between two looks that find I/O held is not silent", []look{
			{0, counters(7, 1), false}, {5 * time.Second, counters(7, 0), false},
			{10 * time.Second, counters(7, 1), false}, {19 * time.Second, counters(7, 1), false},
		}},
		{"an idle member is never silent", []look{
			{0, counters(7, 0), false}, {time.Minute, counters(7, 0), false}, {time.Hour, counters(7, 0), false},
		}},
		{"no sample yet is not held I/O", []look{
			{0, counters(0, types.QueueDepthUnsampled), false}, {time.Minute, counters(0, types.QueueDepthUnsampled), false},
		}},
		{"no sampling is not held I/O", []look{
			{0, types.BdevIostat{Name: member}, false}, {time.Minute, types.BdevIostat{Name: member}, false},
		}},
		{"a member that answers again starts afresh", []look{
			{0, counters(7, 3), false}, {10 * time.Second, counters(7, 3), true},
			{11 * time.Second, counters(9, 3), false}, {20 * time.Second, counters(9, 3), false},
			{21 * time.Second, counters(9, 3), true},
		}},
		{"a member attached afresh (counters from 0) starts afresh", []look{
			{0, counters(7, 3), false}, {10 * time.Second, counters(0, 1), false},
			{15 * time.Second, counters(0, 1), false}, {20 * time.Second, counters(0, 1), true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
			var now time.Time
			w := newSilenceWatch(0, func() time.Time { return now })
			for _, l := range tc.looks {
				now = start.Add(l.at)
				if got := w.silent(l.counters); got != l.silent {
					t.Fatalf("at %s with %d completions and queue depth %d: silent = %t, want %t", l.at, l.counters.Completions(), l.counters.QueueDepth, got, l.silent)
				}
			}
		})
	}
}

func TestSilenceWatchForgetsGoneMembers(t *testing.T) {
	var now time.Time
	w := newSilenceWatch(time.Second, func() time.Time { return now })
	held := types.BdevIostat{Name: "gone", NumWriteOps: 1, QueueDepthPollingPeriod: queueDepthPeriodUs, QueueDepth: 1}
	w.silent(held)
	w.forget(map[string]bool{"other": true})
	now = now.Add(2 * time.Second)
	if w.silent(held) {
		t.Fatal("a member forgotten and seen again counted its silence from before")
	}
	now = now.Add(time.Second)
	if !w.silent(held) {
		t.Fatal("a member seen again is not watched afresh")
	}
}

// Only controllers the agent attaches remote replicas with are watched,
// never the OSD's own NVMe device.
func TestIsRemoteName(t *testing.T) {
	for name, want := range map[string]bool{
		remoteName("0c7e1d2a-5b3f-4e6d-9a8c-1b2c3d4e5f60", "osd-2"): true,
		baseBdevName:        false,
		"r0123456789abcd":   false,
		"r0123456789abcdef": false,
		"r0123456789abcdg":  false,
		"x0123456789abcde":  false,
	} {
		if got := isRemoteName(name); got != want {
			t.Errorf("isRemoteName(%q) = %t, want %t", name, got, want)
		}
	}
}
