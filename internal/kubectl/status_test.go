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

package kubectl

import (
	"testing"
	"time"
)

func TestRebuildRate(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name    string
		size    int64
		percent int32
		elapsed time.Duration
		mibps   float64
		eta     int64
	}{
		{"a quarter of 10 GiB in 64 s", 10 * gib, 25, 64 * time.Second, 40, 192},
		{"half of 1 GiB in 2 s", gib, 50, 2 * time.Second, 256, 2},
		{"no progress yet", 10 * gib, 0, time.Minute, 0, 0},
		{"too soon to tell", gib, 10, 500 * time.Millisecond, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mibps, eta := rebuildRate(tc.size, tc.percent, tc.elapsed)
			if mibps != tc.mibps || eta != tc.eta {
				t.Fatalf("rebuildRate = %v MiB/s, ETA %d s; want %v MiB/s, %d s", mibps, eta, tc.mibps, tc.eta)
			}
		})
	}
}
