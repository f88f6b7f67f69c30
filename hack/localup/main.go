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
// test/localnode). It applies config/samples with kubectl and shows the dev
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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flint-io/flint/controllers"
	"github.com/flint-io/flint/controllers/osd"
	"github.com/flint-io/flint/internal/spdk/spdktest"
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
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	fmt.Println("Starting kube-apiserver and etcd with the Flint CRDs")
	if _, err := env.Start(); err != nil {
		return fmt.Errorf("start the control plane: %w", err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "localup: stop the control plane: %v\n", err)
		}
	}()

	kubeconfig, err := writeKubeconfig(env, dir)
	if err != nil {
		return err
	}
	kubectl := func(args ...string) error {
		cmd := exec.Command(filepath.Join(assets, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		fmt.Printf("\n$ kubectl %s\n", strings.Join(args, " "))
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("kubectl %v: %w", args, err)
		}
		return nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := startCluster(ctx, env.Config, dir); err != nil {
		return err
	}
	if err := kubectl("apply", "-k", filepath.Join("config", "samples")); err != nil {
		return err
	}
	fmt.Println("\nWaiting for Pool dev and its OSDs to be Ready")
	if err := kubectl("wait", "--for=condition=Ready", "pool/dev", "--timeout=120s"); err != nil {
		return err
	}
	if err := kubectl("wait", "--for=jsonpath={.status.phase}=Ready", "osds", "-l", "flint.io/pool=dev", "--timeout=120s"); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"get", "pools,osds,volumes", "-o", "wide"},
		{"get", "pools", "-o", `custom-columns=POOL:.metadata.name,READY:.status.conditions[?(@.type=="Ready")].reason,WHY:.status.conditions[?(@.type=="Ready")].message`},
	} {
		if err := kubectl(args...); err != nil {
			return err
		}
	}
	if once {
		return nil
	}

	fmt.Printf("\nThe cluster is up. In another shell:\n  export KUBECONFIG=%s\n  %s get flint\nPress Ctrl-C to stop.\n", kubeconfig, filepath.Join(assets, "kubectl"))
	<-ctx.Done()
	fmt.Println("\nStopping")
	return nil
}

// startCluster adds what a cluster has beyond its API: three nodes in
// three zones, the operator, and a kubelet stand-in for the dev Pool's OSD
// pods. Everything stops with ctx.
func startCluster(ctx context.Context, cfg *rest.Config, dir string) error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return err
	}
	for i, zone := range []string{"a", "b", "c"} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("local-%d", i), Labels: map[string]string{
			corev1.LabelHostname: fmt.Sprintf("local-%d", i), corev1.LabelTopologyZone: zone,
		}}}
		if err := c.Create(ctx, n); err != nil {
			return fmt.Errorf("create node %s: %w", n.Name, err)
		}
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi")}
		n.Status.Capacity = n.Status.Allocatable
		if err := c.Status().Update(ctx, n); err != nil {
			return err
		}
	}
	agent := filepath.Join(dir, "osd-agent")
	fmt.Println("Building osd-agent")
	if out, err := exec.Command("go", "build", "-o", agent, "./cmd/osd-agent").CombinedOutput(); err != nil {
		return fmt.Errorf("build osd-agent: %v\n%s", err, out)
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	mgr, err := controllers.NewManager(cfg, controllers.Options{
		Namespace: namespace, OSDImage: "flint-osd:dev", PriorityClass: "flint-osd", ServiceAccount: "flint-osd",
		AgentPort: osd.GRPCPort, Resync: 2 * time.Second,
	}, ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "localup: operator: %v\n", err)
		}
	}()
	// Unix socket paths must stay short.
	podDir, err := os.MkdirTemp("", "flint-pods-")
	if err != nil {
		return err
	}
	spdk, kind := localnode.DoubleSPDK(spdktest.NewFabric()), "the SPDK double"
	if spdkDir := os.Getenv("FLINT_SPDK_DIR"); spdkDir != "" {
		spdk, kind = localnode.RealSPDK(spdkDir), "spdk_tgt of "+spdkDir
	}
	runner := &localnode.Runner{Client: c, Namespace: namespace, AgentBinary: agent, Dir: podDir, StartSPDK: spdk, Pools: []string{"dev"}}
	go func() {
		runner.Run(ctx, 200*time.Millisecond)
		_ = os.RemoveAll(podDir)
	}()
	fmt.Printf("Started 3 nodes, the operator, and OSD pods of Pool dev as local processes over %s\n", kind)
	return nil
}

const namespace = "flint-system"

// writeKubeconfig writes an admin kubeconfig for the running control plane.
func writeKubeconfig(env *envtest.Environment, dir string) (string, error) {
	user, err := env.AddUser(envtest.User{Name: "flint-dev", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("create an admin user: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", fmt.Errorf("render the kubeconfig: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}
