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

package main

import (
	"bytes"
	"strings"
	"testing"
)

// Each row gives its median over the rounds and their IOPS spread; a
// flint-N row is set against raw-N, and every N against its kind's 1.
func TestTheTableComparesMediansLikeForLike(t *testing.T) {
	run := func(round int, config string, iops, avg float64) result {
		return result{Round: round, Config: config, Client: "spdk_nvme_perf", Workload: "4k-randwrite-qd1", IOPS: iops, AvgUs: avg, P50Us: avg, P99Us: avg, P999Us: avg}
	}
	var out bytes.Buffer
	printTable(&out, []result{
		run(1, "flint-1", 1000, 10), run(1, "raw-1", 2000, 5), run(1, "flint-2", 500, 20), run(1, "raw-2", 1000, 10),
		run(2, "flint-1", 1200, 9), run(2, "raw-1", 2000, 5), run(2, "flint-2", 400, 25), run(2, "raw-2", 800, 12),
		run(3, "flint-1", 800, 11), run(3, "raw-1", 2000, 5), run(3, "flint-2", 450, 22), run(3, "raw-2", 900, 11),
	})
	rows := map[string][]string{}
	for _, line := range strings.Split(out.String(), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[1]] = f[3:]
		}
	}
	want := map[string][]string{
		// RUNS IOPS MIN-MAX MiB/s AVG P50 P99 P99.9 vs-raw(IOPS AVG) vs-1(IOPS AVG)
		"flint-1": {"3", "1000", "800-1200", "0.0", "10.0", "10.0", "10.0", "10.0", "0.50x", "2.00x", "-", "-"},
		"raw-1":   {"3", "2000", "2000-2000", "0.0", "5.0", "5.0", "5.0", "5.0", "-", "-", "-", "-"},
		"flint-2": {"3", "450", "400-500", "0.0", "22.0", "22.0", "22.0", "22.0", "0.50x", "2.00x", "0.45x", "2.20x"},
		"raw-2":   {"3", "900", "800-1000", "0.0", "11.0", "11.0", "11.0", "11.0", "-", "-", "0.45x", "2.20x"},
	}
	for config, fields := range want {
		if got := strings.Join(rows[config], " "); got != strings.Join(fields, " ") {
			t.Errorf("%s: got %q, want %q\n%s", config, got, strings.Join(fields, " "), out.String())
		}
	}
}
