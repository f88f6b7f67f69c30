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
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flint-io/flint/internal/bench"
	"github.com/flint-io/flint/internal/kubectl"
)

// syncBuffer is an output several goroutines may read and write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// kubectl flint bench creates a raw block PVC of the StorageClass and a
// Pod on it, says which job runs from the line the container logged last,
// and once the Pod's container ends (played here as the provisioner and
// the kubelet would, with the figures flint-bench's code measured with
// fio on a file) prints them and deletes both.
func TestBench(t *testing.T) {
	report := fioReport(t)
	for name, tc := range map[string]struct {
		exitCode int32
		message  string
		wantErr  string
	}{
		"succeeds": {message: report},
		"fails":    {exitCode: 1, message: "fio: failed to open /dev/flint-bench", wantErr: "exit code 1"},
	} {
		t.Run(name, func(t *testing.T) {
			ns := "bench-" + name
			if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				t.Fatal(err)
			}
			var out syncBuffer
			var logged atomic.Value
			logged.Store("")
			p := &kubectl.Plugin{Client: c, Out: &out, LastLogLine: func(_ context.Context, namespace, pod, container string) (string, error) {
				if line := logged.Load().(string); namespace == ns && container == "fio" && line != "" {
					return line, nil
				}
				return "", fmt.Errorf("no logs of container %s of %s/%s", container, namespace, pod)
			}}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				done <- p.Bench(ctx, kubectl.BenchOptions{Namespace: ns, StorageClass: "flint-fast", Size: resource.MustParse("1Gi"), Runtime: time.Second, Image: "flint-bench:test", Node: "node-a"})
			}()

			pod := waitForBenchPod(t, ns)
			if sel := pod.Spec.NodeSelector; len(sel) != 1 || sel[corev1.LabelHostname] != "node-a" {
				t.Errorf("the Pod is pinned by %v, want to node-a by its hostname label", sel)
			}
			if d := pod.Spec.Containers[0].VolumeDevices; len(d) != 1 || d[0].DevicePath != "/dev/flint-bench" {
				t.Errorf("the Pod gets the volume as %+v, want the block device /dev/flint-bench", d)
			}
			var pvc corev1.PersistentVolumeClaim
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: pod.Name}, &pvc); err != nil {
				t.Fatal(err)
			}
			if *pvc.Spec.StorageClassName != "flint-fast" || *pvc.Spec.VolumeMode != corev1.PersistentVolumeBlock {
				t.Errorf("the PVC asks for %s in %s mode, want flint-fast as a raw block device", *pvc.Spec.StorageClassName, *pvc.Spec.VolumeMode)
			}
			pvc.Status.Phase = corev1.ClaimBound
			if err := c.Status().Update(ctx, &pvc); err != nil {
				t.Fatal(err)
			}
			pod.Status.Phase = corev1.PodRunning
			if err := c.Status().Update(ctx, pod); err != nil {
				t.Fatal(err)
			}
			waitForOutput(t, &out, "running fio\n")
			logged.Store("running " + bench.Jobs[2].Name)
			waitForOutput(t, &out, fmt.Sprintf("running fio: job 3 of %d, %s (1s)\n", len(bench.Jobs), bench.Jobs[2].Name))

			pod.Status.Phase = corev1.PodSucceeded
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "fio", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: tc.exitCode, Message: tc.message}}}}
			if err := c.Status().Update(ctx, pod); err != nil {
				t.Fatal(err)
			}

			err := <-done
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("bench: %v\n%s", err, out.String())
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), tc.message)):
				t.Fatalf("bench: %v; want an error with %q and the Pod's message", err, tc.wantErr)
			}
			if tc.wantErr == "" {
				for _, j := range bench.Jobs {
					if !strings.Contains(out.String(), j.Name) {
						t.Errorf("the report lacks %s:\n%s", j.Name, out.String())
					}
				}
			}
			// The PVC stays until the controller-manager (which envtest
			// does not run) drops its protection finalizer: deleting is
			// what the plugin does.
			for _, obj := range []client.Object{&pvc, pod} {
				err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
				if !apierrors.IsNotFound(err) && (err != nil || obj.GetDeletionTimestamp() == nil) {
					t.Errorf("%T %s is left behind: %v", obj, obj.GetName(), err)
				}
			}
			t.Logf("kubectl flint bench:\n%s", out.String())
		})
	}
}

// waitForOutput waits until out holds want.
func waitForOutput(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the output lacks %q after 30 s:\n%s", want, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitForBenchPod(t *testing.T, ns string) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var pods corev1.PodList
		if err := c.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/name": "flint-bench"}); err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) == 1 {
			return &pods.Items[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no benchmark Pod in %s after 30 s (%d)", ns, len(pods.Items))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fioReport is what flint-bench leaves in its termination message, from
// real fio runs on a file.
func fioReport(t *testing.T) string {
	t.Helper()
	fio, err := exec.LookPath("fio")
	if err != nil {
		t.Fatal("fio is missing: apt-get install fio (.ci/run installs it)")
	}
	target := filepath.Join(t.TempDir(), "volume")
	if err := os.WriteFile(target, make([]byte, 16<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	results, err := bench.Run(context.Background(), fio, target, 16<<20, time.Second, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := bench.Encode(results)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
