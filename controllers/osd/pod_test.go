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

package osd

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// The operator's pull Secrets and PriorityClass reach the OSD pod, and the
// Pool's PriorityClass replaces the operator's.
func TestRenderPodSchedulingAndPulls(t *testing.T) {
	osd := &flintv1.OSD{
		ObjectMeta: metav1.ObjectMeta{Name: "fast-n1-0"},
		Spec: flintv1.OSDSpec{Pool: "fast", NodeName: "n1", Device: flintv1.OSDDevice{Driver: flintv1.DriverAIO, Path: "/dev/nvme1n1"},
			Network: flintv1.Network{Transport: flintv1.TransportTCP, Port: 4420}},
	}
	cfg := PodConfig{Namespace: "flint-system", Image: "registry.example/flint-osd:v1", ImagePullSecrets: []string{"regcred", "mirror"}, PriorityClassName: "flint-osd"}
	pod, err := RenderPod(osd, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := []corev1.LocalObjectReference{{Name: "regcred"}, {Name: "mirror"}}; !slices.Equal(pod.Spec.ImagePullSecrets, want) {
		t.Errorf("imagePullSecrets = %v, want %v", pod.Spec.ImagePullSecrets, want)
	}
	if pod.Spec.PriorityClassName != "flint-osd" {
		t.Errorf("priorityClassName = %q, want the operator's flint-osd", pod.Spec.PriorityClassName)
	}
	osd.Spec.Scheduling.PriorityClassName = "storage-critical"
	if pod, err = RenderPod(osd, cfg); err != nil || pod.Spec.PriorityClassName != "storage-critical" {
		t.Errorf("priorityClassName = %q (%v), want the Pool's storage-critical", pod.Spec.PriorityClassName, err)
	}
}

// The SPDK container's fence probe gets the operator's hang timeout, and
// none when it is off, so that a frozen SPDK is left to the lease.
func TestRenderPodHangTimeout(t *testing.T) {
	osd := &flintv1.OSD{
		ObjectMeta: metav1.ObjectMeta{Name: "fast-n1-0"},
		Spec: flintv1.OSDSpec{Pool: "fast", NodeName: "n1", Device: flintv1.OSDDevice{Driver: flintv1.DriverAIO, Path: "/dev/nvme1n1"},
			Network: flintv1.Network{Transport: flintv1.TransportTCP, Port: 4420}},
	}
	for hang, want := range map[time.Duration]string{10 * time.Second: "--spdk-hang-timeout=10s", 0: ""} {
		pod, err := RenderPod(osd, PodConfig{Namespace: "flint-system", Image: "flint-osd:v1", SPDKHangTimeout: hang})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == spdkName })
		got := slices.IndexFunc(pod.Spec.Containers[i].Args, func(a string) bool { return strings.HasPrefix(a, "--spdk-hang-timeout=") })
		switch {
		case want == "" && got >= 0:
			t.Errorf("hang timeout off: SPDK's args have %s", pod.Spec.Containers[i].Args[got])
		case want != "" && (got < 0 || pod.Spec.Containers[i].Args[got] != want):
			t.Errorf("hang timeout %s: SPDK's args %q, want %s", hang, pod.Spec.Containers[i].Args, want)
		}
	}
}
