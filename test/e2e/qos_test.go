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
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// A PVC's VolumeAttributesClass limits its Volume, through the chart's
// csi-provisioner (CreateVolume's mutable parameters); a new class given
// to the PVC changes the limits online, through its csi-resizer
// (ControllerModifyVolume), and the PVC records the class as current
// once the target enforces it. Nothing here needs the workload node: the
// class binds at once, and the target runs on the storage node.
func TestQoSThroughAVolumeAttributesClass(t *testing.T) {
	clients := inLab(t)
	needStorage(t)
	ctx := t.Context()
	c := flintClient(t)
	devPoolReady(t, clients, c)

	classes := map[string]map[string]string{
		"e2e-limited": {"maxIOPS": "2000", "maxWriteMiBps": "40"},
		"e2e-faster":  {"maxIOPS": "8000", "maxWriteMiBps": "0"},
	}
	for name, params := range classes {
		vac := &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: name}, DriverName: "csi.flint.io", Parameters: params}
		if _, err := clients.StorageV1().VolumeAttributesClasses().Create(ctx, vac, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "e2e-immediate"}, Provisioner: "csi.flint.io",
		Parameters:        map[string]string{"pool": "dev"},
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate), ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimDelete)}
	if _, err := clients.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "limited", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:               []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:          ptr.To(sc.Name),
			VolumeAttributesClassName: ptr.To("e2e-limited"),
			Resources:                 corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}},
		},
	}
	if _, err := clients.CoreV1().PersistentVolumeClaims("default").Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		_ = clients.CoreV1().PersistentVolumeClaims("default").Delete(cctx, claim.Name, metav1.DeleteOptions{})
	})

	// enforced waits until the claim's class is current and its Volume's
	// target enforces want.
	enforced := func(class string, want *flintv1.VolumeQoS) {
		t.Helper()
		eventually(t, 3*time.Minute, func() error {
			pvc, err := clients.CoreV1().PersistentVolumeClaims("default").Get(ctx, claim.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if pvc.Spec.VolumeName == "" {
				return fmt.Errorf("PVC %s is %s: %s", claim.Name, pvc.Status.Phase, podEventsIn(t, clients, "default", claim.Name))
			}
			var vol flintv1.Volume
			if err := c.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, &vol); err != nil {
				return err
			}
			if current := ptr.Deref(pvc.Status.CurrentVolumeAttributesClassName, ""); current != class || vol.Status.Target == nil || !equalQoS(vol.Status.Target.QoS, want) {
				return fmt.Errorf("PVC's current class %q (modify status %+v; events: %s), Volume %s's spec.qos %+v, target %+v; want class %s enforcing %+v",
					current, pvc.Status.ModifyVolumeStatus, podEventsIn(t, clients, "default", claim.Name), vol.Name, vol.Spec.QoS, vol.Status.Target, class, want)
			}
			return nil
		})
	}
	enforced("e2e-limited", &flintv1.VolumeQoS{IOPS: 2000, WriteMiBps: 40})
	patch := []byte(`{"spec":{"volumeAttributesClassName":"e2e-faster"}}`)
	if _, err := clients.CoreV1().PersistentVolumeClaims("default").Patch(ctx, claim.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	enforced("e2e-faster", &flintv1.VolumeQoS{IOPS: 8000})
}

func equalQoS(a, b *flintv1.VolumeQoS) bool {
	return ptr.Deref(a, flintv1.VolumeQoS{}) == ptr.Deref(b, flintv1.VolumeQoS{})
}
