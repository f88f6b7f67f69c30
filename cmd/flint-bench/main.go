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

// Command flint-bench benchmarks the volume a Pod was given as a block
// device with fio, prints the figures and leaves them in the container's
// termination message for kubectl flint bench.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/flint-io/flint/internal/bench"
	"github.com/flint-io/flint/internal/cli"
)

func main() {
	fs := flag.NewFlagSet("flint-bench", flag.ContinueOnError)
	target := fs.String("target", "/dev/flint-bench", "the block device (or file) to benchmark; its first --size bytes are overwritten")
	size := fs.String("size", "1Gi", "how much of the target the jobs use")
	runtime := fs.Duration("runtime", 30*time.Second, "how long each timed job runs")
	report := fs.String("report-file", "/dev/termination-log", "where the results are written as JSON (the container's termination message)")
	fio := fs.String("fio", "fio", "the fio binary")
	cmd := &cli.Command{
		Name:        "flint-bench",
		Summary:     "benchmarks a volume with fio: 4 KiB random and 128 KiB sequential I/O",
		Description: "Runs in the Pod kubectl flint bench creates, on a raw block PVC. The first job writes the region once (so that reads read written data), then 4 KiB random writes and reads at queue depth 1 and 32, then 128 KiB sequential reads.",
		Flags:       fs,
	}
	cmd.Main(func() error {
		q, err := resource.ParseQuantity(*size)
		if err != nil || q.Value() <= 0 {
			return fmt.Errorf("--size %q: want a positive quantity such as 1Gi", *size)
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		results, err := bench.Run(ctx, *fio, *target, q.Value(), *runtime, os.Stderr)
		if err != nil {
			return err
		}
		if err := bench.Print(os.Stdout, results); err != nil {
			return err
		}
		data, err := bench.Encode(results)
		if err != nil {
			return err
		}
		return os.WriteFile(*report, data, 0o644)
	})
}
