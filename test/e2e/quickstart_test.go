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

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/flint-io/flint/test/e2e/lab"
)

// The README's quickstart after its install (TestChartInstalls runs that
// block): the dev Pool, a PVC and a Pod that writes to it, as written,
// ending with the Pod's log of what it wrote and read back. The lab's dev
// Pool exists by then (on the storage node, on the storage network), and
// the sample's apply leaves it as it is.
//
// The Pod carries no node selector. The CSIDriver keeps it off the
// second storage node, which has no node plugin. The storage node has
// one (TestVolumeOnTheStorageNode) but no kernel NVMe-oF host, unlike the
// nodes the README speaks of: a taint keeps new Pods off it meanwhile.
func TestQuickstart(t *testing.T) {
	clients := inLab(t)
	needStorage(t)
	if !haveImage("e2e-busybox") {
		t.Skip("no busybox image: the storage suite's images are built with E2E_SUITE=ci or full")
	}
	devPoolReady(t, clients, flintClient(t))
	keepNewPodsOff(t, clients, lab.StorageNode)
	t.Cleanup(func() {
		// Whatever the block left, so that the tests after it start clean.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		_ = clients.CoreV1().Pods("default").Delete(ctx, "flint-quickstart", metav1.DeleteOptions{})
		_ = clients.CoreV1().PersistentVolumeClaims("default").Delete(ctx, "flint-quickstart", metav1.DeleteOptions{})
	})
	out := runREADMEBlock(t, "TestQuickstart", 25*time.Minute, nil)
	if !strings.Contains(out, "written to a Flint Volume at") {
		t.Errorf("the Pod's log does not show what it wrote:\n%s", out)
	}
	eventually(t, 3*time.Minute, func() error {
		_, err := clients.CoreV1().PersistentVolumeClaims("default").Get(t.Context(), "flint-quickstart", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("the quickstart's PVC is still there (%v)", err)
		}
		return nil
	})
}

// The blocks the lab runs are in README.md, where the tests find them
// (outside the lab too).
func TestREADMEHoldsTheQuickstart(t *testing.T) {
	for _, test := range []string{"TestChartInstalls", "TestQuickstart"} {
		if block := readmeBlock(t, test); !strings.Contains(block, "kubectl ") {
			t.Errorf("README.md's block for %s runs no kubectl:\n%s", test, block)
		}
	}
}

// noKernelHostTaint marks a node without a kernel NVMe-oF host.
const noKernelHostTaint = "lab.flint.io/no-kernel-nvme-host"

// keepNewPodsOff taints node, which has no kernel NVMe-oF host, for the
// test's duration: Pods that use a Flint volume and name no node then go
// to the workload node. Pods already there stay.
func keepNewPodsOff(t *testing.T, clients *kubernetes.Clientset, node string) {
	t.Helper()
	noKernelHost := corev1.Taint{Key: noKernelHostTaint, Effect: corev1.TaintEffectNoSchedule}
	updateNode(t, clients, node, func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, noKernelHost) })
	t.Cleanup(func() {
		updateNode(t, clients, node, func(n *corev1.Node) {
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(taint corev1.Taint) bool { return taint.Key == noKernelHost.Key })
		})
	})
}

// updateNode changes a Node, again on a conflict.
func updateNode(t *testing.T, clients *kubernetes.Clientset, name string, change func(*corev1.Node)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := clients.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(node)
		_, err = clients.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("update Node %s: %v", name, err)
	}
}

// runREADMEBlock runs, with bash in the repository's root, the sh block
// of README.md that follows the comment naming test, and returns what it
// printed. kubectl is the lab's, on its cluster; $REGISTRY and $TAG name
// the images built here; helm is the lab's, given helmFlags after the
// README's own (the lab's settings for its emulated node).
func runREADMEBlock(t *testing.T, test string, timeout time.Duration, helmFlags []string) string {
	t.Helper()
	block := readmeBlock(t, test)
	var prelude strings.Builder
	prelude.WriteString("lab_helm_flags=(")
	for _, f := range helmFlags {
		fmt.Fprintf(&prelude, " '%s'", strings.ReplaceAll(f, "'", `'\''`))
	}
	prelude.WriteString(" )\n")
	fmt.Fprintf(&prelude, "helm() { '%s' \"$@\" \"${lab_helm_flags[@]}\"; }\n", os.Getenv("FLINT_E2E_HELM"))
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euxo", "pipefail", "-c", prelude.String()+block)
	cmd.Dir = repoPath()
	cmd.Env = append(os.Environ(),
		"PATH="+os.Getenv("FLINT_E2E_ASSETS")+":"+os.Getenv("PATH"),
		"KUBECONFIG="+cluster.AdminKubeconfig,
		"REGISTRY=ghcr.io/flint-io", "TAG="+os.Getenv("FLINT_E2E_VERSION"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("README.md's block for %s:\n%s", test, out.String())
	if err != nil {
		t.Fatalf("README.md's block for %s: %v", test, err)
	}
	return out.String()
}

// readmeBlock is the sh block of README.md after the comment naming test.
func readmeBlock(t *testing.T, test string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoPath(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	marker := "<!-- test/e2e's " + test + " runs this block as written. -->"
	var block strings.Builder
	state := "before"
	for s := bufio.NewScanner(f); s.Scan(); {
		line := s.Text()
		switch {
		case state == "before" && line == marker:
			state = "marker"
		case state == "marker" && line == "```sh":
			state = "in"
		case state == "marker" && strings.TrimSpace(line) != "":
			t.Fatalf("README.md: %q is not followed by an sh block", marker)
		case state == "in" && line == "```":
			return block.String()
		case state == "in":
			block.WriteString(line + "\n")
		}
	}
	t.Fatalf("README.md has no sh block after %q", marker)
	return ""
}
