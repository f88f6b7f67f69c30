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

// Command kubectl-flint is the kubectl plugin for Flint: status, volume
// details, OSD drains and cordons, node diagnosis and benchmarks, against
// the current kubeconfig context.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/internal/cli"
	"github.com/flint-io/flint/internal/kubectl"
	"github.com/flint-io/flint/internal/version"
)

const commands = `Commands:
  status [-o json|yaml]    Pools, OSDs and the Volumes that need attention, and why
  volume describe NAME|NAMESPACE/CLAIM [-o json|yaml]
                           a Volume's claim, replicas (OSD, node, failure
                           domain, state, rebuild), target, hosts, conditions
                           and recent Events
  osd describe NAME [-o json|yaml]
                           an OSD's device, listener, space, the Volumes it
                           holds a replica or the target of, conditions, Events
  pool describe NAME [-o json|yaml]
                           a Pool's placement, OSDs by failure domain, space,
                           conditions and Events
  snapshot describe NAME [-o json|yaml]
                           a Snapshot's Volume, cut time, write pause, copies,
                           conditions and Events
  drain OSD [--no-wait] [--timeout 1h]
                           move an OSD's replicas and targets to other OSDs,
                           and follow it: replicas and targets left, bytes
                           rebuilt, rate and ETA, until none is left
  undrain OSD              let a drained OSD take replicas again
  cordon OSD               keep an OSD's replicas but place no new ones on it
  uncordon OSD             let a cordoned OSD take replicas again
  diagnose [NODE] [-o json|yaml]
                           what each storage node offers the OSDs of its Pools
                           (cores, hugepages, NVMe devices, RDMA functions) and
                           the operator's preflight verdicts, with the fix
  bench --storage-class SC [--size 10Gi] [--runtime 30s] [--namespace NS]
        [--node NODE] [--image IMAGE] [--keep]
                           fio on a new raw block PVC of SC: 4 KiB random write
                           and read at QD1 and QD32, 128 KiB sequential; ops/s,
                           MiB/s, average and p50/p99/p99.9 latency`

func main() {
	fs := flag.NewFlagSet("kubectl-flint", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	kubeContext := fs.String("context", "", "the kubeconfig context (default: the current one)")
	cmd := &cli.Command{
		Name:        "kubectl-flint",
		Summary:     "kubectl plugin for Flint: status, volume details, OSD drains and cordons, node diagnosis, benchmarks",
		Description: "Install on PATH as kubectl-flint and run as 'kubectl flint COMMAND'.\n\n" + commands,
		Flags:       fs,
		Args:        "COMMAND [ARGS]",
	}
	cmd.Main(func() error {
		args := fs.Args()
		if len(args) == 0 {
			return errors.New("no command given\n\n" + commands)
		}
		cfg, err := kubectl.Connect(*kubeconfig, *kubeContext)
		if err != nil {
			return err
		}
		scheme := runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(scheme); err != nil {
			return err
		}
		if err := flintv1.AddToScheme(scheme); err != nil {
			return err
		}
		c, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			return err
		}
		clients, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return run(ctx, &kubectl.Plugin{Client: c, Out: os.Stdout, LastLogLine: kubectl.LastLogLineVia(clients)}, args)
	})
}

// run runs one command of args.
func run(ctx context.Context, p *kubectl.Plugin, args []string) error {
	if args[0] == "bench" {
		return runBench(ctx, p, args[1:])
	}
	if args[0] == "drain" {
		return runDrain(ctx, p, args[1:])
	}
	// Every other command reads or writes a few objects.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	switch {
	case args[0] == "status":
		format, rest, err := outputFormat(args[1:])
		if err != nil || len(rest) > 0 {
			return cmp.Or(err, fmt.Errorf("status takes no arguments, not %q", rest))
		}
		s, err := p.ReadStatus(ctx)
		if err != nil {
			return err
		}
		return p.PrintStatus(s, format)
	case len(args) >= 2 && args[1] == "describe":
		format, rest, err := outputFormat(args[2:])
		if err != nil || len(rest) != 1 {
			return cmp.Or(err, fmt.Errorf("%s describe takes one name, not %q", args[0], rest))
		}
		return p.Describe(ctx, args[0], rest[0], format, time.Now())
	case len(args) == 2 && args[0] == "undrain":
		return p.Drain(ctx, args[1], false)
	case len(args) == 2 && (args[0] == "cordon" || args[0] == "uncordon"):
		return p.Cordon(ctx, args[1], args[0] == "cordon")
	case args[0] == "diagnose":
		format, rest, err := outputFormat(args[1:])
		if err != nil || len(rest) > 1 {
			return cmp.Or(err, fmt.Errorf("diagnose takes at most a node, not %q", rest))
		}
		checks, err := p.Diagnose(ctx, strings.Join(rest, ""))
		if err != nil {
			return err
		}
		return p.PrintChecks(checks, format)
	}
	return fmt.Errorf("unknown command %q\n\n%s", args, commands)
}

// outputFormat takes -o (json or yaml) from anywhere in args and returns
// the rest: flag parsing alone stops at the first name.
func outputFormat(args []string) (format string, rest []string, err error) {
	fs := flag.NewFlagSet("output", flag.ContinueOnError)
	o := fs.String("o", "", "json or yaml; tables when unset")
	for {
		if err := fs.Parse(args); err != nil {
			return "", nil, err
		}
		if fs.NArg() == 0 {
			return *o, rest, nil
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// runDrain drains an OSD and, unless --no-wait, follows the drain until
// it is done or --timeout passes.
func runDrain(ctx context.Context, p *kubectl.Plugin, args []string) error {
	sub := flag.NewFlagSet("drain", flag.ContinueOnError)
	noWait := sub.Bool("no-wait", false, "set the drain and return at once")
	timeout := sub.Duration("timeout", time.Hour, "how long to follow the drain; it goes on after")
	var names []string
	for {
		if err := sub.Parse(args); err != nil {
			return err
		}
		if sub.NArg() == 0 {
			break
		}
		names, args = append(names, sub.Arg(0)), sub.Args()[1:]
	}
	if len(names) != 1 {
		return fmt.Errorf("drain takes one OSD, not %q", names)
	}
	set, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := p.Drain(set, names[0], true); err != nil || *noWait {
		return err
	}
	follow, cancelFollow := context.WithTimeout(ctx, *timeout)
	defer cancelFollow()
	return p.WaitDrained(follow, names[0], 2*time.Second)
}

func runBench(ctx context.Context, p *kubectl.Plugin, args []string) error {
	sub := flag.NewFlagSet("bench", flag.ContinueOnError)
	o := kubectl.BenchOptions{}
	sub.StringVar(&o.StorageClass, "storage-class", "", "the StorageClass whose volumes are benchmarked (required)")
	sub.StringVar(&o.Namespace, "namespace", "default", "where the PVC and the Pod are created")
	size := sub.String("size", "10Gi", "the PVC's size; the jobs use all of it")
	sub.DurationVar(&o.Runtime, "runtime", 30*time.Second, "how long each timed job runs")
	sub.StringVar(&o.Image, "image", "ghcr.io/flint-io/flint-bench:"+version.Version, "the image with flint-bench and fio (make images builds it)")
	sub.StringVar(&o.Node, "node", "", "the node the Pod runs on, to measure its path (default: the scheduler picks)")
	sub.BoolVar(&o.Keep, "keep", false, "leave the PVC and the Pod behind")
	timeout := sub.Duration("timeout", 30*time.Minute, "how long provisioning, scheduling and the jobs may take in all")
	if err := sub.Parse(args); err != nil {
		return err
	}
	q, err := resource.ParseQuantity(*size)
	if err != nil {
		return fmt.Errorf("--size %q: %w", *size, err)
	}
	o.Size = q
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	return p.Bench(ctx, o)
}
