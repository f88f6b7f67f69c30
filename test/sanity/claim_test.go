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

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/csi"
)

// People know a Volume by its claim: the provisioner names it
// (--extra-create-metadata) and the Volume keeps it.
var _ = Describe("The controller's CreateVolume", func() {
	It("records the claim the provisioner names", func(ctx SpecContext) {
		created, err := controller.CreateVolume(ctx, &csispec.CreateVolumeRequest{
			Name: "pvc-claimed", VolumeCapabilities: []*csispec.VolumeCapability{blockCapability},
			Parameters: map[string]string{
				csi.ParamPool: pool, csi.ParamClaimNamespace: "shop", csi.ParamClaimName: "orders",
				"csi.storage.k8s.io/pv/name": "pvc-claimed",
			},
			CapacityRange: &csispec.CapacityRange{RequiredBytes: 16 << 20},
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_, err := controller.DeleteVolume(ctx, &csispec.DeleteVolumeRequest{VolumeId: created.Volume.VolumeId})
			Expect(err).NotTo(HaveOccurred())
		})
		var vol flintv1.Volume
		Expect(cluster.Client.Get(ctx, ctrlKey(created.Volume.VolumeId), &vol)).To(Succeed())
		Expect(vol.Spec.Claim).To(Equal(&flintv1.ClaimReference{Namespace: "shop", Name: "orders"}))
	})
})
