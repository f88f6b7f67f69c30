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
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flint-io/flint/internal/bench"
)

// BenchOptions says what kubectl flint bench runs.
type BenchOptions struct {
	Namespace    string
	StorageClass string
	// Size is the PVC's; the jobs use all of it.
	Size    resource.Quantity
	Runtime time.Duration
	Image   string
	// Node, when set, is where the Pod runs: the path from that node's
	// NVMe-oF host is measured. Unset, the scheduler picks.
	Node string
	// Keep leaves the PVC and the Pod behind, to look at.
	Keep bool
}

// benchDevice is where the Pod sees the PVC.
const benchDevice = "/dev/flint-bench"

// benchContainer is the Pod's container, flint-bench running fio.
const benchContainer = "fio"

// benchLabels mark the PVC and the Pod a benchmark creates.
var benchLabels = map[string]string{"app.kubernetes.io/name": "flint-bench"}

// Bench runs flint-bench in a Pod on a new raw block PVC of the
// StorageClass, prints its figures and deletes both.
func (p *Plugin) Bench(ctx context.Context, o BenchOptions) (err error) {
	if o.StorageClass == "" {
		return errors.New("name the StorageClass to benchmark: --storage-class")
	}
	name := "flint-bench-" + rand.String(5)
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: name, Labels: benchLabels},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(o.StorageClass),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			VolumeMode:       ptr.To(corev1.PersistentVolumeBlock),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: o.Size}},
		},
	}
	if err := p.Client.Create(ctx, pvc); err != nil {
		return fmt.Errorf("create PVC %s/%s: %w", o.Namespace, name, err)
	}
	pod := benchPod(o, name)
	if !o.Keep {
		defer func() {
			// Cleaning up outlives a cancelled benchmark.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			err = errors.Join(err, deleteIfThere(cctx, p.Client, pod), deleteIfThere(cctx, p.Client, pvc))
		}()
	}
	if err := p.Client.Create(ctx, pod); err != nil {
		return fmt.Errorf("create Pod %s/%s: %w", o.Namespace, name, err)
	}
	_, _ = fmt.Fprintf(p.Out, "benchmarking StorageClass %s: PVC and Pod %s/%s (%s, %s per job)\n", o.StorageClass, o.Namespace, name, o.Size.String(), o.Runtime)
	done, err := p.waitForBench(ctx, pod, pvc, o)
	if err != nil {
		return err
	}
	results, err := bench.Decode(done.Message)
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", o.Namespace, name, err)
	}
	return bench.Print(p.Out, results)
}

func benchPod(o BenchOptions, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: name, Labels: benchLabels},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			NodeSelector:  nodeSelector(o.Node),
			Containers: []corev1.Container{{
				Name: benchContainer, Image: o.Image,
				Args: []string{"--target=" + benchDevice, "--size=" + o.Size.String(), "--runtime=" + o.Runtime.String()},
				// A raw block device is root's to open.
				SecurityContext:          &corev1.SecurityContext{RunAsUser: ptr.To[int64](0)},
				VolumeDevices:            []corev1.VolumeDevice{{Name: "volume", DevicePath: benchDevice}},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
			Volumes: []corev1.Volume{{Name: "volume", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name},
			}}},
		},
	}
}

// waitForBench waits until the Pod's container ends and returns how; it
// says what it waits for, and which job runs, when that changes.
func (p *Plugin) waitForBench(ctx context.Context, pod *corev1.Pod, pvc *corev1.PersistentVolumeClaim, o BenchOptions) (*corev1.ContainerStateTerminated, error) {
	var done *corev1.ContainerStateTerminated
	last := ""
	say := func(s string) {
		if s != last {
			_, _ = fmt.Fprintln(p.Out, s)
			last = s
		}
	}
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		if err := p.Client.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil {
			return false, err
		}
		if err := p.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err
		}
		for _, s := range pod.Status.ContainerStatuses {
			if t := s.State.Terminated; t != nil {
				done = t
				return true, nil
			}
		}
		switch {
		case pvc.Status.Phase != corev1.ClaimBound:
			say("waiting for the PVC to be provisioned and bound")
		case pod.Status.Phase == corev1.PodPending:
			say("waiting for the Pod to start")
		default:
			say(p.benchProgress(ctx, pod, o))
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("the benchmark did not finish (%s): %w; see kubectl describe pod -n %s %s", last, err, pod.Namespace, pod.Name)
	}
	if done.ExitCode != 0 {
		return nil, fmt.Errorf("the benchmark failed (exit code %d): %s; see kubectl logs -n %s %s", done.ExitCode, done.Message, pod.Namespace, pod.Name)
	}
	return done, nil
}

// nodeSelector pins a Pod to node; none when node is unset.
func nodeSelector(node string) map[string]string {
	if node == "" {
		return nil
	}
	return map[string]string{corev1.LabelHostname: node}
}

// benchProgress says which of flint-bench's jobs runs, from the line it
// logged last as the job started.
func (p *Plugin) benchProgress(ctx context.Context, pod *corev1.Pod, o BenchOptions) string {
	if p.LastLogLine == nil {
		return "running fio"
	}
	line, err := p.LastLogLine(ctx, pod.Namespace, pod.Name, benchContainer)
	i, ok := bench.Running(line)
	if err != nil || !ok {
		return "running fio"
	}
	j := bench.Jobs[i]
	length := o.Runtime.String()
	if j.OnePass {
		length = "one pass over " + o.Size.String()
	}
	return fmt.Sprintf("running fio: job %d of %d, %s (%s)", i+1, len(bench.Jobs), j.Name, length)
}

func deleteIfThere(ctx context.Context, c client.Client, obj client.Object) error {
	if err := client.IgnoreNotFound(c.Delete(ctx, obj)); err != nil {
		return fmt.Errorf("delete %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
