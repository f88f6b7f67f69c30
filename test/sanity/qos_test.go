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

package sanity

import (
	csispec "github.com/container-storage-interface/spec/lib/go/csi"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/csi"
)

// A Volume's limits come from its StorageClass's defaults and its
// VolumeAttributesClass, which ControllerModifyVolume changes: each call
// returns once the target enforces the limits (status.target.qos, read
// back from SPDK by the target's agent). A CreateVolume retried with
// another class gets that class's limits.
var _ = Describe("QoS through a VolumeAttributesClass", func() {
	It("limits a Volume from its classes and follows a modification", func(ctx SpecContext) {
		created, err := controller.CreateVolume(ctx, &csispec.CreateVolumeRequest{
			Name: "pvc-limited", VolumeCapabilities: []*csispec.VolumeCapability{blockCapability},
			Parameters:        map[string]string{csi.ParamPool: pool, csi.ParamMaxIOPS: "5000", csi.ParamMaxMiBps: "200"},
			MutableParameters: map[string]string{csi.ParamMaxIOPS: "2000"},
			CapacityRange:     &csispec.CapacityRange{RequiredBytes: 16 << 20},
		})
		Expect(err).NotTo(HaveOccurred())
		id := created.Volume.VolumeId
		DeferCleanup(func(ctx SpecContext) {
			_, err := controller.DeleteVolume(ctx, &csispec.DeleteVolumeRequest{VolumeId: id})
			Expect(err).NotTo(HaveOccurred())
		})
		enforced := func() *flintv1.VolumeQoS {
			var vol flintv1.Volume
			Expect(cluster.Client.Get(ctx, ctrlKey(id), &vol)).To(Succeed())
			return vol.Status.Target.QoS
		}
		Expect(enforced()).To(Equal(&flintv1.VolumeQoS{IOPS: 2000, ReadWriteMiBps: 200}), "the class's limit over the StorageClass's default, enforced before the Volume serves")

		modify := func(params map[string]string) error {
			_, err := controller.ControllerModifyVolume(ctx, &csispec.ControllerModifyVolumeRequest{VolumeId: id, MutableParameters: params})
			return err
		}
		Expect(modify(map[string]string{csi.ParamMaxWriteMiBps: "50", csi.ParamMaxMiBps: "0"})).To(Succeed())
		Expect(enforced()).To(Equal(&flintv1.VolumeQoS{IOPS: 2000, WriteMiBps: 50}), "enforced when the call returns")

		err = modify(map[string]string{csi.ParamMaxIOPS: "1500"})
		Expect(status.Code(err)).To(Equal(codes.InvalidArgument))
		Expect(err.Error()).To(ContainSubstring("multiple of 1000"))
		_, err = controller.ControllerModifyVolume(ctx, &csispec.ControllerModifyVolumeRequest{VolumeId: "no-such-volume", MutableParameters: map[string]string{csi.ParamMaxIOPS: "1500"}})
		Expect(status.Code(err)).To(Equal(codes.InvalidArgument), "a bad class is refused before the volume is looked up")

		Expect(modify(map[string]string{csi.ParamMaxIOPS: "0", csi.ParamMaxWriteMiBps: "0"})).To(Succeed())
		Expect(enforced()).To(BeNil())

		By("retrying CreateVolume with another class")
		_, err = controller.CreateVolume(ctx, &csispec.CreateVolumeRequest{
			Name: "pvc-limited", VolumeCapabilities: []*csispec.VolumeCapability{blockCapability},
			Parameters:        map[string]string{csi.ParamPool: pool},
			MutableParameters: map[string]string{csi.ParamMaxIOPS: "4000"},
			CapacityRange:     &csispec.CapacityRange{RequiredBytes: 16 << 20},
		})
		Expect(err).NotTo(HaveOccurred())
		Eventually(enforced).Should(Equal(&flintv1.VolumeQoS{IOPS: 4000}))
	})
})
