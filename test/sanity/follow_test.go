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
	"context"
	"slices"
	"time"

	csispec "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/csi"
	"github.com/flint-io/flint/csi/nvmeof"
)

// recordingFollower records where the PathFollower sends a volume; the
// kernel side of following is proven in the VM lab.
type recordingFollower struct{ followed chan csi.Target }

func (r *recordingFollower) Follow(_ context.Context, t csi.Target, _ string) error {
	r.followed <- t
	return nil
}

var _ = Describe("The node plugin's PathFollower", func() {
	It("follows a staged Volume to the OSD its target moved to when the target OSD is lost", func(ctx SpecContext) {
		id, published := publishedBlockVolume(ctx, "follow-me")
		_, err := node.NodeStageVolume(ctx, &csispec.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: GinkgoT().TempDir(), VolumeCapability: blockCapability, PublishContext: published.PublishContext})
		Expect(err).NotTo(HaveOccurred())

		c, err := cache.New(cluster.Env.Config, cache.Options{Scheme: cluster.Client.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		rec := &recordingFollower{followed: make(chan csi.Target, 8)}
		follower := &csi.PathFollower{Node: node, Follower: rec, Cache: c, Resync: time.Second, Log: logr.Discard()}
		fctx, stop := context.WithCancel(ctx)
		DeferCleanup(stop)
		go func() { _ = c.Start(fctx) }()
		go func() { _ = follower.Run(fctx) }()

		var vol flintv1.Volume
		Expect(cluster.Client.Get(ctx, ctrlKey(id), &vol)).To(Succeed())
		lost := vol.Status.Target.OSD
		oldPaths := paths(vol.Status.Target)
		By("killing the SPDK of target OSD " + lost)
		cluster.Nodes.Target("osd-" + lost).Kill()

		var followed csi.Target
		Eventually(rec.followed, time.Minute).Should(Receive(&followed))
		Expect(cluster.Client.Get(ctx, ctrlKey(id), &vol)).To(Succeed())
		Expect(vol.Status.Target.OSD).NotTo(Equal(lost))
		Expect(followed.NQN).To(Equal(vol.Status.Target.NQN), "same subsystem: multipath joins the new path to the same namespace")
		Expect(followed.Paths).To(Equal(paths(vol.Status.Target)))
		Expect(followed.Paths).NotTo(Equal(oldPaths))
		Consistently(rec.followed, 3*time.Second).ShouldNot(Receive(), "followed once: the node's state now has the new paths")

		Expect(cluster.Nodes.Target("osd-" + lost).Restart()).To(Succeed())
		_, err = node.NodeUnstageVolume(ctx, &csispec.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: "unused"})
		Expect(err).NotTo(HaveOccurred())
		_, err = controller.ControllerUnpublishVolume(ctx, &csispec.ControllerUnpublishVolumeRequest{VolumeId: id, NodeId: hostNQN})
		Expect(err).NotTo(HaveOccurred())
		_, err = controller.DeleteVolume(ctx, &csispec.DeleteVolumeRequest{VolumeId: id})
		Expect(err).NotTo(HaveOccurred())
	}, NodeTimeout(3*time.Minute))
})

// blockCapability is a single-node raw block volume.
var blockCapability = &csispec.VolumeCapability{
	AccessMode: &csispec.VolumeCapability_AccessMode{Mode: csispec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	AccessType: &csispec.VolumeCapability_Block{Block: &csispec.VolumeCapability_BlockVolume{}},
}

// publishedBlockVolume creates a 16 MiB block volume and publishes it to
// this node; it returns the volume's id and publish context.
func publishedBlockVolume(ctx context.Context, name string) (string, *csispec.ControllerPublishVolumeResponse) {
	GinkgoHelper()
	created, err := controller.CreateVolume(ctx, &csispec.CreateVolumeRequest{Name: name, VolumeCapabilities: []*csispec.VolumeCapability{blockCapability},
		Parameters: map[string]string{csi.ParamPool: pool}, CapacityRange: &csispec.CapacityRange{RequiredBytes: 16 << 20}})
	Expect(err).NotTo(HaveOccurred())
	id := created.Volume.VolumeId
	published, err := controller.ControllerPublishVolume(ctx, &csispec.ControllerPublishVolumeRequest{VolumeId: id, NodeId: hostNQN, VolumeCapability: blockCapability})
	Expect(err).NotTo(HaveOccurred())
	return id, published
}

// recordingAttacher records what NodeStageVolume connects.
type recordingAttacher struct{ attached []csi.Target }

func (r *recordingAttacher) Attach(_ context.Context, t csi.Target) (string, error) {
	r.attached = append(r.attached, t)
	return "/dev/null", nil
}
func (r *recordingAttacher) Detach(context.Context, csi.Target) error  { return nil }
func (r *recordingAttacher) Refresh(context.Context, csi.Target) error { return nil }
func (r *recordingAttacher) Health(csi.Target) []*csispec.VolumeHealth_VolumeHealthEntry {
	return nil
}
func (r *recordingAttacher) SetSecrets(csi.Target) error { return nil }

var _ = Describe("The node plugin's NodeStageVolume", func() {
	It("connects to where the target is now when it moved after the volume was published", func(ctx SpecContext) {
		// The publish context stays the VolumeAttachment's while the
		// volume stays attached to the node, from one Pod to the next.
		id, published := publishedBlockVolume(ctx, "stage-after-move")
		var vol flintv1.Volume
		Expect(cluster.Client.Get(ctx, ctrlKey(id), &vol)).To(Succeed())
		lost := vol.Status.Target.OSD
		By("killing the SPDK of target OSD " + lost)
		cluster.Nodes.Target("osd-" + lost).Kill()
		Eventually(func(g Gomega) {
			g.Expect(cluster.Client.Get(ctx, ctrlKey(id), &vol)).To(Succeed())
			g.Expect(vol.Status.Target.OSD).NotTo(Equal(lost))
			g.Expect(vol.Status.Target.Endpoints).NotTo(BeEmpty())
		}, time.Minute).Should(Succeed())

		rec := &recordingAttacher{}
		staging := &csi.Node{NodeID: hostNQN, NodeName: "sanity-0", StateDir: GinkgoT().TempDir(), Attacher: rec, Volumes: cluster.Client}
		_, err := staging.NodeStageVolume(ctx, &csispec.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: GinkgoT().TempDir(), VolumeCapability: blockCapability, PublishContext: published.PublishContext})
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.attached).To(HaveLen(1))
		Expect(rec.attached[0].NQN).To(Equal(published.PublishContext[csi.PublishNQN]))
		Expect(rec.attached[0].Paths).To(Equal(paths(vol.Status.Target)), "the moved target's paths, not the publish context's")

		Expect(cluster.Nodes.Target("osd-" + lost).Restart()).To(Succeed())
		_, err = controller.ControllerUnpublishVolume(ctx, &csispec.ControllerUnpublishVolumeRequest{VolumeId: id, NodeId: hostNQN})
		Expect(err).NotTo(HaveOccurred())
		_, err = controller.DeleteVolume(ctx, &csispec.DeleteVolumeRequest{VolumeId: id})
		Expect(err).NotTo(HaveOccurred())
	}, NodeTimeout(3*time.Minute))
})

func paths(t *flintv1.VolumeTarget) []nvmeof.Path {
	var ps []nvmeof.Path
	for _, e := range t.Endpoints {
		ps = append(ps, nvmeof.Path{Transport: string(e.Transport), Address: e.Address, Port: e.Port})
	}
	return slices.Clip(ps)
}
