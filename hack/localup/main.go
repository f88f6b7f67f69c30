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

// Command localup starts a local Flint control plane for development: a real
// kube-apiserver and etcd (the binaries hack/envtest-assets.sh builds) with
// Flint's CRDs installed, applies config/samples with kubectl, and shows them.
// It keeps running until interrupted, unless --once is given.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
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
	for _, args := range [][]string{
		{"apply", "-k", filepath.Join("config", "samples")},
		{"get", "pools,osds,volumes", "-o", "wide"},
	} {
		if err := kubectl(args...); err != nil {
			return err
		}
	}
	if once {
		return nil
	}

	fmt.Printf("\nThe control plane is up. In another shell:\n  export KUBECONFIG=%s\n  %s get flint\nPress Ctrl-C to stop.\n", kubeconfig, filepath.Join(assets, "kubectl"))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	fmt.Println("\nStopping")
	return nil
}

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
