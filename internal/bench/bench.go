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

// Package bench is Flint's benchmark of a volume: fio runs each job on the
// volume's block device, and the figures are reported as the seed reports
// do: ops/s, throughput, average latency and p50/p99/p99.9 latency.
// flint-bench runs it in a Pod; kubectl flint bench prints its report.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Job is one fio workload.
type Job struct {
	Name      string
	RW        string // fio's rw: randwrite, randread, write, read
	BlockSize int
	Depth     int
	// OnePass writes the region once instead of for the runtime: the
	// first job fills the region, so that reads after it read written
	// data (a thin volume answers unwritten blocks without touching a
	// device).
	OnePass bool
}

// Jobs run in this order.
var Jobs = []Job{
	{Name: "128k-seqwrite-qd8", RW: "write", BlockSize: 128 << 10, Depth: 8, OnePass: true},
	{Name: "4k-randwrite-qd1", RW: "randwrite", BlockSize: 4 << 10, Depth: 1},
	{Name: "4k-randwrite-qd32", RW: "randwrite", BlockSize: 4 << 10, Depth: 32},
	{Name: "4k-randread-qd1", RW: "randread", BlockSize: 4 << 10, Depth: 1},
	{Name: "4k-randread-qd32", RW: "randread", BlockSize: 4 << 10, Depth: 32},
	{Name: "128k-seqread-qd8", RW: "read", BlockSize: 128 << 10, Depth: 8},
}

// Result is one job's figures. Latency is from submission to completion
// (fio's lat, not clat), in microseconds.
type Result struct {
	Job         string  `json:"job"`
	OpsPerSec   float64 `json:"ops"`
	BytesPerSec float64 `json:"bps"`
	AvgUs       float64 `json:"avgUs"`
	P50Us       float64 `json:"p50Us"`
	P99Us       float64 `json:"p99Us"`
	P999Us      float64 `json:"p999Us"`
}

// Args are fio's arguments for j on target, within its first size bytes.
func (j Job) Args(target string, size int64, runtime time.Duration) []string {
	args := []string{
		"--name=" + j.Name, "--filename=" + target, "--rw=" + j.RW,
		"--bs=" + strconv.Itoa(j.BlockSize), "--iodepth=" + strconv.Itoa(j.Depth),
		"--size=" + strconv.FormatInt(size, 10), "--ioengine=libaio", "--direct=1",
		"--randrepeat=0", "--norandommap", "--lat_percentiles=1", "--percentile_list=50:99:99.9",
		"--output-format=json",
	}
	if !j.OnePass {
		args = append(args, "--time_based", fmt.Sprintf("--runtime=%ds", max(int(runtime.Seconds()), 1)))
	}
	return args
}

// runningPrefix starts the progress line Run writes as each job starts.
const runningPrefix = "running "

// Running reads a progress line of Run: the index in Jobs of the job it
// says started.
func Running(line string) (int, bool) {
	name, ok := strings.CutPrefix(strings.TrimSpace(line), runningPrefix)
	if !ok {
		return 0, false
	}
	i := slices.IndexFunc(Jobs, func(j Job) bool { return j.Name == name })
	return i, i >= 0
}

// Run runs every job on target with fio and returns their results; it
// writes a line to progress as each job starts (Running reads it).
func Run(ctx context.Context, fio, target string, size int64, runtime time.Duration, progress io.Writer) ([]Result, error) {
	var results []Result
	for _, j := range Jobs {
		_, _ = fmt.Fprintf(progress, "%s%s\n", runningPrefix, j.Name)
		cmd := exec.CommandContext(ctx, fio, j.Args(target, size, runtime)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("fio %s on %s: %v: %s", j.Name, target, err, strings.TrimSpace(stderr.String()))
		}
		r, err := Parse(j, out)
		if err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	return results, nil
}

// fioOutput is the part of fio's JSON output a Result comes from.
type fioOutput struct {
	Jobs []struct {
		Error int               `json:"error"`
		Read  fioDirectionStats `json:"read"`
		Write fioDirectionStats `json:"write"`
	} `json:"jobs"`
}

type fioDirectionStats struct {
	IOPS  float64 `json:"iops"`
	BW    float64 `json:"bw_bytes"`
	LatNs struct {
		Mean       float64            `json:"mean"`
		Percentile map[string]float64 `json:"percentile"`
	} `json:"lat_ns"`
}

// Parse reads j's figures from fio's JSON output.
func Parse(j Job, out []byte) (Result, error) {
	// fio may print notes before the JSON document.
	if i := strings.IndexByte(string(out), '{'); i > 0 {
		out = out[i:]
	}
	var o fioOutput
	if err := json.Unmarshal(out, &o); err != nil {
		return Result{}, fmt.Errorf("read fio's report of %s: %w", j.Name, err)
	}
	if len(o.Jobs) != 1 {
		return Result{}, fmt.Errorf("fio reported %d jobs for %s, want 1", len(o.Jobs), j.Name)
	}
	if o.Jobs[0].Error != 0 {
		return Result{}, fmt.Errorf("fio's job %s failed with error %d", j.Name, o.Jobs[0].Error)
	}
	s := o.Jobs[0].Read
	if strings.Contains(j.RW, "write") {
		s = o.Jobs[0].Write
	}
	if s.IOPS == 0 {
		return Result{}, fmt.Errorf("fio's job %s did no I/O", j.Name)
	}
	pct := func(p string) (float64, error) {
		v, ok := s.LatNs.Percentile[p]
		if !ok {
			return 0, fmt.Errorf("fio's report of %s has no %s%% latency", j.Name, strings.TrimRight(strings.TrimRight(p, "0"), "."))
		}
		return v / 1e3, nil
	}
	r := Result{Job: j.Name, OpsPerSec: s.IOPS, BytesPerSec: s.BW, AvgUs: s.LatNs.Mean / 1e3}
	var err error
	if r.P50Us, err = pct("50.000000"); err != nil {
		return Result{}, err
	}
	if r.P99Us, err = pct("99.000000"); err != nil {
		return Result{}, err
	}
	if r.P999Us, err = pct("99.900000"); err != nil {
		return Result{}, err
	}
	return r, nil
}

// Encode is the report a benchmark Pod leaves in its termination message
// (at most 4 KiB: six results take about 700 bytes).
func Encode(results []Result) ([]byte, error) { return json.Marshal(results) }

// Decode reads a report Encode wrote.
func Decode(report string) ([]Result, error) {
	var results []Result
	if err := json.Unmarshal([]byte(report), &results); err != nil {
		return nil, fmt.Errorf("read the benchmark's report: %w", err)
	}
	if len(results) == 0 {
		return nil, errors.New("the benchmark's report holds no result")
	}
	return results, nil
}

// Print writes results as a table.
func Print(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "JOB\tOPS/S\tMiB/S\tAVG µs\tP50 µs\tP99 µs\tP99.9 µs\t")
	for _, r := range results {
		_, _ = fmt.Fprintf(tw, "%s\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", r.Job, r.OpsPerSec, r.BytesPerSec/(1<<20), r.AvgUs, r.P50Us, r.P99Us, r.P999Us)
	}
	return tw.Flush()
}
