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

// Command localup starts a local Flint cluster for development: a real
// kube-apiserver and etcd (the binaries hack/envtest-assets.sh builds) with
// Flint's CRDs, three nodes, the operator, and the OSD pods of the dev Pool
// run on this machine (real osd-agent processes over SPDK doubles, see
// test/localcluster). It applies config/samples with kubectl and shows the dev
// Pool and its OSDs reaching Ready, and the other samples' Pools saying why
// they cannot start here. It keeps running until interrupted, unless --once
// is given.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/flint-io/flint/controllers"
	"github.com/flint-io/flint/internal/spdk/spdktest"
	"github.com/flint-io/flint/test/localcluster"
	"github.com/flint-io/flint/test/localnode"
)

func main() {
	once := flag.Bool("once", false, "exit after showing the resources instead of running until interrupted")
	dir := flag.String("dir", defaultDir(), "where the kubeconfig is written")
	flag.Parse()
	if err := run(*once, *dir); err != nil {
		fmt.Fprintf(os.Stderr, "localup: %v\n", err)
		os.Exit(1)
	}
}

func defaultDir() string {
	if d := os.Getenv("FLINT_CACHE"); d != "" {
		return filepath.Join(d, "run")
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "flint", "run")
}

func run(once bool, dir string) error {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return fmt.Errorf("KUBEBUILDER_ASSETS is not set: run 'make run', which builds the control plane binaries first")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	spdk, kind := localnode.DoubleSPDK(spdktest.NewFabric()), "the SPDK double"
	if spdkDir := os.Getenv("FLINT_SPDK_DIR"); spdkDir != "" {
		spdk, kind = localnode.RealSPDK(spdkDir), "flint_tgt of "+spdkDir
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	fmt.Println("Starting kube-apiserver and etcd with the Flint CRDs, 3 nodes and the operator")
	c, err := localcluster.Start(ctx, localcluster.Options{
		Root:  ".",
		Nodes: []localcluster.Node{{Name: "local-0", Zone: "a"}, {Name: "local-1", Zone: "b"}, {Name: "local-2", Zone: "c"}},
		Pools: []string{"dev"}, StartSPDK: spdk,
		Operator: controllers.Options{Resync: 2 * time.Second, ReplicaGrace: time.Minute, TargetGrace: 10 * time.Second, AgentLease: 4 * time.Second, VolumeWorkers: 4},
	})
	if c != nil {
		defer func() {
			if err := c.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "localup: stop the control plane: %v\n", err)
			}
		}()
	}
	if err != nil {
		return err
	}
	fmt.Printf("OSD pods of Pool dev run as local processes over %s\n", kind)
	kubeconfig, err := c.Kubeconfig(dir)
	if err != nil {
		return err
	}
	// kubectl finds the plugin on PATH, as it would on a workstation.
	pluginDir := filepath.Join(dir, "bin")
	if out, err := exec.Command("go", "build", "-o", filepath.Join(pluginDir, "kubectl-flint"), "./cmd/kubectl-flint").CombinedOutput(); err != nil {
		return fmt.Errorf("build kubectl-flint: %v: %s", err, out)
	}
	kubectl := func(args ...string) error {
		cmd := exec.Command(filepath.Join(assets, "kubectl"), args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"))
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		fmt.Printf("\n$ kubectl %s\n", strings.Join(args, " "))
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("kubectl %v: %w", args, err)
		}
		return nil
	}
	if err := kubectl("apply", "-k", filepath.Join("config", "samples")); err != nil {
		return err
	}
	fmt.Println("\nWaiting for Pool dev, its OSDs and its Volume to be Ready")
	if err := kubectl("wait", "--for=condition=Ready", "pool/dev", "--timeout=120s"); err != nil {
		return err
	}
	if err := kubectl("wait", "--for=jsonpath={.status.phase}=Ready", "osds", "-l", "flint.io/pool=dev", "--timeout=120s"); err != nil {
		return err
	}
	if err := kubectl("wait", "--for=condition=Ready", "volume/pvc-0d3e5b7a-1c2f-4e6a-9b8d-7f1a2c3e4d5f", "--timeout=120s"); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"get", "pools,osds,volumes", "-o", "wide"},
		{"get", "pools", "-o", `custom-columns=POOL:.metadata.name,READY:.status.conditions[?(@.type=="Ready")].reason,WHY:.status.conditions[?(@.type=="Ready")].message`},
		{"flint", "status"},
		{"flint", "volume", "describe", "pvc-0d3e5b7a-1c2f-4e6a-9b8d-7f1a2c3e4d5f"},
	} {
		if err := kubectl(args...); err != nil {
			return err
		}
	}
	// The samples' fast and general Pools cannot start here: diagnose says
	// why, and exits non-zero for them.
	if err := kubectl("flint", "diagnose"); err != nil {
		fmt.Println("(diagnose failed for the sample Pools that cannot start on this machine, as it should)")
	}
	if once {
		return nil
	}

	fmt.Printf("\nThe cluster is up. In another shell:\n  export KUBECONFIG=%s\n  export PATH=%s:$PATH\n  %s get flint\n  %[3]s flint status\nPress Ctrl-C to stop.\n", kubeconfig, pluginDir, filepath.Join(assets, "kubectl"))
	<-ctx.Done()
	fmt.Println("\nStopping")
	return nil
}
