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

package pool

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// Every OSD setting of the Pool reaches the OSDs it makes, and nothing
// the OSD keeps for itself comes from the Pool.
func TestOSDSpecCarriesThePoolsSettings(t *testing.T) {
	pool := &flintv1.Pool{
		ObjectMeta: metav1.ObjectMeta{Name: "fast"},
		Spec: flintv1.PoolSpec{
			Devices: flintv1.PoolDevices{PowerLossProtection: true},
			OSD: flintv1.OSDTemplate{
				OSDResources: flintv1.OSDResources{CPUs: 2, Memory: ptr.To(resource.MustParse("4Gi"))},
				SPDKSettings: flintv1.SPDKSettings{LogLevel: "INFO", InterruptMode: true},
				OSDScheduling: flintv1.OSDScheduling{
					Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "storage", Effect: corev1.TaintEffectNoSchedule}},
					PriorityClassName: "storage-critical",
				},
			},
			Network: flintv1.Network{Transport: flintv1.TransportTCP, Port: 4430},
			NVMf:    flintv1.NVMfTuning{IOUnitSize: ptr.To[int32](131072)},
		},
	}
	device := flintv1.OSDDevice{Driver: flintv1.DriverPCIe, ResourceName: "flint.io/nvme"}
	got := osdSpec(pool, desiredOSD{name: "fast-n1-0", node: "n1", device: device})
	want := flintv1.OSDSpec{
		Pool: "fast", NodeName: "n1", Device: device,
		Resources:           pool.Spec.OSD.OSDResources,
		SPDK:                pool.Spec.OSD.SPDKSettings,
		Network:             pool.Spec.Network,
		NVMf:                pool.Spec.NVMf,
		Scheduling:          pool.Spec.OSD.OSDScheduling,
		PowerLossProtection: true,
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("osdSpec = %+v\nwant %+v", got, want)
	}
	got.Scheduling.Tolerations[0].Value = "changed"
	if pool.Spec.OSD.Tolerations[0].Value != "storage" {
		t.Fatal("the OSD's tolerations share the Pool's list")
	}
}
