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

package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every job runs with the real fio on a file and reports figures that
// hold together, in a report that fits a termination message; its
// progress names each job as it starts, in words Running reads back.
func TestRunReportsEveryJob(t *testing.T) {
	fio, err := exec.LookPath("fio")
	if err != nil {
		t.Fatal("fio is missing: apt-get install fio (.ci/run installs it)")
	}
	target := filepath.Join(t.TempDir(), "volume")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(target, 32<<20); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var progress strings.Builder
	results, err := Run(ctx, fio, target, 32<<20, time.Second, &progress)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
	for i, line := range lines {
		if got, ok := Running(line); !ok || got != i {
			t.Errorf("progress line %q reads as job %d (%v), want %d", line, got, ok, i)
		}
	}
	if len(lines) != len(Jobs) {
		t.Errorf("%d progress lines for %d jobs: %q", len(lines), len(Jobs), progress.String())
	}
	if _, ok := Running("fio: something else"); ok {
		t.Error("a line that is not a job's start reads as one")
	}
	if len(results) != len(Jobs) {
		t.Fatalf("%d results for %d jobs", len(results), len(Jobs))
	}
	for i, r := range results {
		if r.Job != Jobs[i].Name || r.OpsPerSec <= 0 || r.BytesPerSec <= 0 || r.AvgUs <= 0 {
			t.Errorf("result %d: %+v", i, r)
		}
		if r.P50Us <= 0 || r.P50Us > r.P99Us || r.P99Us > r.P999Us {
			t.Errorf("%s: percentiles out of order: %+v", r.Job, r)
		}
	}
	report, err := Encode(results)
	if err != nil {
		t.Fatal(err)
	}
	if len(report) > 4096 {
		t.Errorf("the report takes %d bytes; a termination message holds 4096", len(report))
	}
	decoded, err := Decode(string(report))
	if err != nil || len(decoded) != len(results) || decoded[0] != results[0] {
		t.Fatalf("decoded %+v, %v; want %+v", decoded, err, results)
	}
	var table strings.Builder
	if err := Print(&table, decoded); err != nil {
		t.Fatal(err)
	}
	for _, j := range Jobs {
		if !strings.Contains(table.String(), j.Name) {
			t.Errorf("the table lacks %s:\n%s", j.Name, table.String())
		}
	}
	t.Logf("\n%s", table.String())
}

func TestParseRefusesAFailedOrIncompleteReport(t *testing.T) {
	j := Jobs[1]
	for name, out := range map[string]string{
		"failed job":         `{"jobs":[{"error":5,"write":{"iops":1}}]}`,
		"no I/O":             `{"jobs":[{"error":0,"write":{"iops":0}}]}`,
		"no percentiles":     `{"jobs":[{"error":0,"write":{"iops":10,"lat_ns":{"mean":1000}}}]}`,
		"two jobs":           `{"jobs":[{},{}]}`,
		"not a fio document": `fio: pid=1, err=2/file:filesetup.c`,
	} {
		if _, err := Parse(j, []byte(out)); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
	if _, err := Decode(""); err == nil {
		t.Error("an empty report decoded")
	}
}
