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

package operator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/volume"
	spdkclient "github.com/flint-io/flint/internal/spdk/client"
	"github.com/flint-io/flint/internal/spdk/spdktest"
	"github.com/flint-io/flint/internal/spdk/types"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

const (
	hostA = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-4000-8000-000000000001"
	hostB = "nqn.2014-08.org.nvmexpress:uuid:bbbbbbbb-0000-4000-8000-000000000002"
)

// The Volume specs run a Pool of four OSDs in four zones, each a real
// osd-agent over an SPDK double on one fabric, so targets attach replicas
// over (simulated) NVMe/TCP and rebuild them.
var _ = Describe("A Volume", Ordered, func() {
	BeforeAll(func() { makeZonedPool("vols") })

	It("stays Pending, saying why, when the Pool cannot place it", func() {
		v := newVolume("vol-wide", "vols", "64Mi")
		v.Spec.Replicas = ptr.To[int32](5)
		Expect(k8sClient.Create(ctx, v)).To(Succeed())
		Eventually(func(g Gomega) {
			got := getVolume("vol-wide")
			g.Expect(got.Status.Phase).To(Equal(flintv1.VolumePhasePending))
			g.Expect(got.Status.Replicas).To(BeEmpty())
			g.Expect(readyOf(got)).To(PointTo(MatchFields(IgnoreExtras, Fields{
				"Reason":  Equal("NoPlacement"),
				"Message": HavePrefix("needs 5 OSDs of Pool vols in distinct topology.kubernetes.io/zone values, each with 64Mi uncommitted; eligible domains: 4 (a, b, c, d)"),
			})))
		}).Should(Succeed())
		big := newVolume("vol-big", "vols", "1Gi")
		Expect(k8sClient.Create(ctx, big)).To(Succeed())
		Eventually(func() string { return readyOf(getVolume("vol-big")).Message }).Should(ContainSubstring("eligible domains: none; not eligible: vols-vols-0-0 (full: 0 of 252Mi committed)"))
		deleteVolume("vol-wide")
		deleteVolume("vol-big")
	})

	It("is not placed afresh when restored without its status, until the marker of its placement goes", func() {
		v := newVolume("vol-restored", "vols", "64Mi")
		v.Annotations = map[string]string{flintv1.AnnotationPlaced: "2026-11-01T00:00:00Z"}
		Expect(k8sClient.Create(ctx, v)).To(Succeed())
		Eventually(func(g Gomega) {
			got := getVolume("vol-restored")
			g.Expect(got.Status.Phase).To(Equal(flintv1.VolumePhasePending))
			g.Expect(readyOf(got)).To(PointTo(MatchFields(IgnoreExtras, Fields{
				"Reason":  Equal(flintv1.VolumeRestoredWithoutStatusReason),
				"Message": ContainSubstring("restored without its status, and new replicas would be empty"),
			})))
		}).Should(Succeed())
		Consistently(func() []flintv1.ReplicaStatus { return getVolume("vol-restored").Status.Replicas }, "2s").Should(BeEmpty())

		got := getVolume("vol-restored")
		delete(got.Annotations, flintv1.AnnotationPlaced)
		Expect(k8sClient.Update(ctx, got)).To(Succeed())
		Eventually(func(g Gomega) {
			got := getVolume("vol-restored")
			g.Expect(got.Status.Phase).To(Equal(flintv1.VolumePhaseReady))
			g.Expect(got.Annotations).To(HaveKeyWithValue(flintv1.AnnotationPlaced, Not(Equal("2026-11-01T00:00:00Z"))))
		}).Should(Succeed())
		deleteVolume("vol-restored")
	})

	It("gets three replicas in distinct zones, a raid1 target and an export to its hosts", func() {
		v := newVolume("vol-1", "vols", "64Mi")
		v.Spec.PublishedHosts = []string{hostA}
		Expect(k8sClient.Create(ctx, v)).To(Succeed())
		Eventually(func(g Gomega) {
			got := getVolume("vol-1")
			g.Expect(got.Status.Phase).To(Equal(flintv1.VolumePhaseReady), "%+v", got.Status)
			g.Expect(got.Status.Replicas).To(HaveLen(3))
			for _, r := range got.Status.Replicas {
				g.Expect(r.State).To(Equal(flintv1.ReplicaStateOnline))
			}
			g.Expect(got.Status.Capacity.String()).To(Equal("64Mi"))
			g.Expect(got.Status.Target.NQN).To(Equal(agentv1.VolumeNQN(uidOf("vol-1"))))
			g.Expect(got.Status.Target.Endpoints).To(ConsistOf(MatchFields(IgnoreExtras, Fields{"Address": HavePrefix("127.0.1."), "Port": Equal(int32(4420))})))
		}).Should(Succeed())
		got := getVolume("vol-1")
		zones := map[string]bool{}
		for _, r := range got.Status.Replicas {
			zones[zoneOf(r.OSD)] = true
		}
		Expect(zones).To(HaveLen(3))
		Expect(hostsOf(got.Status.Target.OSD, agentv1.VolumeNQN(uidOf("vol-1")))).To(ConsistOf(hostA))
		for _, r := range got.Status.Replicas {
			if r.OSD != got.Status.Target.OSD {
				Expect(replicaHostsOf(r.OSD, "vol-1")).To(ConsistOf(agentv1.HostNQN(osdUID(got.Status.Target.OSD))))
			}
		}
	})

	It("follows spec.publishedHosts, and reports the allow-list SPDK enforces", func() {
		allowed := func() []string { return getVolume("vol-1").Status.Target.AllowedHosts }
		updateVolume("vol-1", func(v *flintv1.Volume) { v.Spec.PublishedHosts = []string{hostA, hostB} })
		target := getVolume("vol-1").Status.Target.OSD
		Eventually(func() []string { return hostsOf(target, agentv1.VolumeNQN(uidOf("vol-1"))) }).Should(ConsistOf(hostA, hostB))
		Eventually(allowed).Should(ConsistOf(hostA, hostB))
		updateVolume("vol-1", func(v *flintv1.Volume) { v.Spec.PublishedHosts = []string{hostB} })
		Eventually(func() []string { return hostsOf(target, agentv1.VolumeNQN(uidOf("vol-1"))) }).Should(ConsistOf(hostB))
		Eventually(allowed).Should(ConsistOf(hostB))
	})

	It("is limited at its target by spec.qos, and reports the limits SPDK enforces", func() {
		target := getVolume("vol-1").Status.Target.OSD
		for _, q := range []*flintv1.VolumeQoS{{IOPS: 3000}, nil, volumeQoS} {
			updateVolume("vol-1", func(v *flintv1.Volume) { v.Spec.QoS = q })
			Eventually(func() *flintv1.VolumeQoS { return getVolume("vol-1").Status.Target.QoS }).Should(Equal(q))
			Expect(qosAt(target, "vol-1")).To(Equal(q))
		}
	})

	It("grows online, and refuses to shrink", func() {
		updateVolume("vol-1", func(v *flintv1.Volume) { v.Spec.Size = resource.MustParse("128Mi") })
		Eventually(func() string { return getVolume("vol-1").Status.Capacity.String() }).Should(Equal("128Mi"))
		for _, r := range getVolume("vol-1").Status.Replicas {
			Expect(lvolSize(r.OSD, uidOf("vol-1"))).To(Equal(uint64(128 << 20)))
		}
		v := getVolume("vol-1")
		v.Spec.Size = resource.MustParse("64Mi")
		Expect(k8sClient.Update(ctx, v)).To(MatchError(ContainSubstring("size cannot shrink")))
	})

	It("rebuilds a replica whose SPDK restarted with an empty device, in place", func() {
		v := getVolume("vol-1")
		replica := otherThanTarget(v)
		before := replicaOSDs(v)
		Expect(node.Target("osd-" + replica).Restart()).To(Succeed())
		Eventually(func() flintv1.VolumePhase { return getVolume("vol-1").Status.Phase }).Should(BeElementOf(flintv1.VolumePhaseDegraded, flintv1.VolumePhaseRebuilding))
		Eventually(func(g Gomega) {
			got := getVolume("vol-1")
			g.Expect(got.Status.Phase).To(Equal(flintv1.VolumePhaseReady), "%+v", got.Status.Replicas)
			g.Expect(replicaOSDs(got)).To(Equal(before))
		}, "60s").Should(Succeed())
	})

	It("puts its target on its nearNode's OSD, and moves it there, planned, when the node changes", func() {
		nodeOf := func(osd string) string {
			var o flintv1.OSD
			Expect(k8sClient.Get(ctx, client.ObjectKey{Name: osd}, &o)).To(Succeed())
			return o.Spec.NodeName
		}
		v := newVolume("vol-near", "vols", "64Mi")
		v.Spec.NearNode = "vols-3"
		Expect(k8sClient.Create(ctx, v)).To(Succeed())
		Eventually(func() flintv1.VolumePhase { return getVolume("vol-near").Status.Phase }).Should(Equal(flintv1.VolumePhaseReady))
		got := getVolume("vol-near")
		Expect(nodeOf(got.Status.Target.OSD)).To(Equal("vols-3"))
		epoch := got.Status.Target.Epoch

		var next string
		for _, r := range got.Status.Replicas {
			if r.OSD != got.Status.Target.OSD {
				next = r.OSD
			}
		}
		updateVolume("vol-near", func(v *flintv1.Volume) { v.Spec.NearNode = nodeOf(next) })
		Eventually(func(g Gomega) {
			got := getVolume("vol-near")
			g.Expect(got.Status.Target.OSD).To(Equal(next))
			g.Expect(got.Status.Target.Epoch).To(Equal(epoch + 1))
			g.Expect(got.Status.Phase).To(Equal(flintv1.VolumePhaseReady))
			for _, r := range got.Status.Replicas {
				g.Expect(r.State).To(Equal(flintv1.ReplicaStateOnline), "a planned move keeps every replica in sync")
			}
		}).Should(Succeed())
		Expect(eventNotes("vol-near", flintv1.EventTargetMoved)).To(ContainElement(HavePrefix(fmt.Sprintf("OSD %s is nearer node %s, where the Volume is used", next, nodeOf(next)))))
		Consistently(func() int32 { return getVolume("vol-near").Status.Target.Epoch }, "2s").Should(Equal(epoch + 1))
		deleteVolume("vol-near")
	})

	It("re-assembles the target from one replica when the target's SPDK restarts", func() {
		v := getVolume("vol-1")
		target := v.Status.Target.OSD
		expectVolumeIdentity(v)
		Expect(node.Target("osd-" + target).Restart()).To(Succeed())
		Eventually(eventsFor("vol-1"), "30s").Should(ContainElement("TargetReassembled"))
		Eventually(func(g Gomega) {
			got := getVolume("vol-1")
			g.Expect(got.Status.Phase).To(Equal(flintv1.VolumePhaseReady), "%+v", got.Status.Replicas)
		}, "60s").Should(Succeed())
		got := getVolume("vol-1")
		Expect(got.Status.Target.Epoch).To(Equal(v.Status.Target.Epoch+1), "a re-assembled target is a new incarnation")
		expectVolumeIdentity(got)
		Expect(qosAt(target, "vol-1")).To(Equal(volumeQoS), "the restarted SPDK forgot the limits; the target has them again")
	})

	It("assembles, once, a re-assembly recorded by an operator that died before it assembled the target", func() {
		v := getVolume("vol-1")
		target := v.Status.Target.OSD
		died := make(chan struct{})
		var armed atomic.Bool
		armed.Store(true)
		stopOperator()
		stopOperator = startOperator(func(ictx context.Context, vol *flintv1.Volume, p volume.Point) {
			if vol.Name != "vol-1" || p != volume.PointTargetReassembled || !armed.CompareAndSwap(true, false) {
				return
			}
			close(died)
			<-ictx.Done() // nothing this reconcile does from here on takes effect
		})
		Expect(node.Target("osd-" + target).Restart()).To(Succeed())
		Eventually(died, "30s").Should(BeClosed(), "the operator recorded the re-assembly")
		stopOperator()
		recorded := getVolume("vol-1").Status.Target
		Expect(recorded.Epoch).To(Equal(v.Status.Target.Epoch+1), "the re-assembly is recorded as a new incarnation")
		Expect(recorded.Endpoints).To(BeEmpty(), "the new incarnation has not served yet")
		stopOperator = startOperator(nil)
		Eventually(func(g Gomega) {
			got := getVolume("vol-1")
			g.Expect(got.Status.Phase).To(Equal(flintv1.VolumePhaseReady), "%+v", got.Status.Replicas)
		}, "60s").Should(Succeed())
		got := getVolume("vol-1")
		Expect(got.Status.Target.Epoch).To(Equal(recorded.Epoch), "the next operator assembles the recorded incarnation, not another")
		Expect(got.Status.Target.OSD).To(Equal(target))
		expectVolumeIdentity(got)
	})

	It("keeps its hosts while no operator leads, and re-assembles a target whose SPDK restarted meanwhile", func() {
		v := getVolume("vol-1")
		target := v.Status.Target.OSD
		nqn := agentv1.VolumeNQN(uidOf("vol-1"))
		Expect(hostsOf(target, nqn)).NotTo(BeEmpty(), "the spec needs a published volume")
		// Without the operator the lease lapses; the target keeps its
		// hosts, since its members answer it (the hold). SPDK then
		// restarts, and the raid is gone. The operator returns within the
		// target grace, so the target stays where it is.
		stopOperator()
		Consistently(func() []string { return hostsOf(target, nqn) }, "10s").ShouldNot(BeEmpty(), "the target let its hosts go while its members answer it")
		Expect(node.Target("osd-" + target).Restart()).To(Succeed())
		Expect(hostsOf(target, nqn)).To(BeEmpty(), "an SPDK started again serves nothing")
		stopOperator = startOperator(nil)
		Eventually(func(g Gomega) {
			got := getVolume("vol-1")
			g.Expect(got.Status.Phase).To(Equal(flintv1.VolumePhaseReady), "%+v", got.Status.Conditions)
			g.Expect(hostsOf(got.Status.Target.OSD, nqn)).NotTo(BeEmpty(), "the target serves its hosts again")
		}, "60s").Should(Succeed())
		expectVolumeIdentity(getVolume("vol-1"))
	})

	It("re-creates a target deleted behind its back once its OSD's inventory lacks it, though Ready Volumes are not polled", func() {
		// Settled: past the one drive a Volume gets once it turns Ready.
		Eventually(func(g Gomega) {
			v := getVolume("vol-1")
			g.Expect(v.Status.Phase).To(Equal(flintv1.VolumePhaseReady))
			g.Expect(time.Since(readyOf(v).LastTransitionTime.Time)).To(BeNumerically(">", 3*time.Second))
		}, "60s").Should(Succeed())
		v := getVolume("vol-1")
		c, cctx := spdkOf(v.Status.Target.OSD)
		Expect(c.NvmfDeleteSubsystem(cctx, agentv1.VolumeNQN(string(v.UID)))).To(Succeed())
		Expect(c.BdevRaidDelete(cctx, "raid_"+string(v.UID))).To(Succeed())
		Eventually(func(g Gomega) {
			_, err := c.BdevGetBdevs(ctx, "raid_"+string(v.UID))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(getVolume("vol-1").Status.Phase).To(Equal(flintv1.VolumePhaseReady))
		}, "30s").Should(Succeed())
		Expect(hostsOf(getVolume("vol-1").Status.Target.OSD, agentv1.VolumeNQN(string(v.UID)))).To(ConsistOf(v.Spec.PublishedHosts))
	})

	It("is taken as recorded by a restarted operator, which drives it only once an OSD's inventory contradicts it", func() {
		// Settled: the Volume Ready with every replica in sync, and its
		// OSDs no longer counting a target just made again as degraded (a
		// phase change has their Volumes driven).
		Eventually(func(g Gomega) {
			v := getVolume("vol-1")
			g.Expect(v.Status.Phase).To(Equal(flintv1.VolumePhaseReady))
			for _, r := range v.Status.Replicas {
				g.Expect(r.State).To(Equal(flintv1.ReplicaStateOnline), r.OSD)
				g.Expect(getOSD(r.OSD).Status.Phase).To(Equal(flintv1.OSDPhaseReady), r.OSD)
			}
		}).Should(Succeed())
		v := getVolume("vol-1")
		var looked, driven atomic.Int32
		stopOperator()
		stopOperator = startOperator(func(_ context.Context, vol *flintv1.Volume, p volume.Point) {
			switch {
			case vol.Name != "vol-1":
			case p == volume.PointIntentRecorded:
				looked.Add(1)
			case p == volume.PointTargetEnsured:
				driven.Add(1)
			}
		})
		Eventually(looked.Load).Should(BeNumerically(">", 0), "the new operator reconciles the Volume")
		// Past several resyncs: every OSD's inventory was read, and agrees.
		Consistently(driven.Load, "4s").Should(BeZero(), "a settled Volume costs a new operator no agent call")

		c, cctx := spdkOf(v.Status.Target.OSD)
		Expect(c.NvmfDeleteSubsystem(cctx, agentv1.VolumeNQN(string(v.UID)))).To(Succeed())
		Expect(c.BdevRaidDelete(cctx, "raid_"+string(v.UID))).To(Succeed())
		// Made again from one replica, as a new incarnation, and the
		// others rebuilt from it: until the new epoch is recorded, the
		// status still reads as it did before the loss.
		Eventually(func(g Gomega) {
			g.Expect(driven.Load()).To(BeNumerically(">", 0))
			_, err := c.BdevGetBdevs(ctx, "raid_"+string(v.UID))
			g.Expect(err).NotTo(HaveOccurred())
			got := getVolume("vol-1")
			g.Expect(got.Status.Target.Epoch).To(BeNumerically(">", v.Status.Target.Epoch))
			g.Expect(got.Status.Phase).To(Equal(flintv1.VolumePhaseReady))
			for _, r := range got.Status.Replicas {
				g.Expect(r.State).To(Equal(flintv1.ReplicaStateOnline), r.OSD)
			}
		}, "60s").Should(Succeed(), "the target's inventory lacks it: the Volume is driven and its target made again")
		Expect(hostsOf(getVolume("vol-1").Status.Target.OSD, agentv1.VolumeNQN(string(v.UID)))).To(ConsistOf(v.Spec.PublishedHosts))
		stopOperator()
		stopOperator = startOperator(nil)
	})

	It("moves the target off an OSD that stops serving, fences it, and replaces its replica", func() {
		v := getVolume("vol-1")
		lost := v.Status.Target.OSD
		expectVolumeIdentity(v)
		node.Target("osd-" + lost).Kill()
		DeferCleanup(func() { _ = node.Target("osd-" + lost).Restart() })
		var moved string
		Eventually(func(g Gomega) {
			got := getVolume("vol-1")
			g.Expect(got.Status.Target.OSD).NotTo(Equal(lost))
			moved = got.Status.Target.OSD
		}, "30s").Should(Succeed())
		Expect(eventsFor("vol-1")()).To(ContainElement("TargetMoved"))
		Eventually(func(g Gomega) {
			got := getVolume("vol-1")
			g.Expect(got.Status.Phase).To(Equal(flintv1.VolumePhaseReady), "%+v", got.Status.Replicas)
			g.Expect(replicaOSDs(got)).NotTo(ContainElement(lost))
			g.Expect(got.Status.Replicas).To(HaveLen(3))
		}, "60s").Should(Succeed())
		got := getVolume("vol-1")
		Expect(got.Status.Target.Epoch).To(Equal(v.Status.Target.Epoch+1), "a moved target is a new incarnation")
		expectVolumeIdentity(got)
		Expect(qosAt(moved, "vol-1")).To(Equal(volumeQoS), "the moved target keeps the limits")
		for _, r := range got.Status.Replicas {
			if r.OSD != moved {
				Expect(replicaHostsOf(r.OSD, "vol-1")).To(ConsistOf(agentv1.HostNQN(osdUID(moved))), "replica on %s", r.OSD)
			}
		}
		Expect(eventsFor("vol-1")()).To(ContainElement("ReplicaReplaced"))

		// The lost OSD returns: what it held of the volume is deleted.
		Expect(node.Target("osd-" + lost).Restart()).To(Succeed())
		Eventually(func() []string { return lvolsOn(lost) }, "30s").ShouldNot(ContainElement(uidOf("vol-1")))
	})

	It("moves the target at once off an OSD whose pod its kubelet stopped", func() {
		v := getVolume("vol-1")
		lost := v.Status.Target.OSD
		pod := "osd-" + lost
		// The pod's successor stays Pending, as on a cordoned node.
		node.Hold(pod, true)
		DeferCleanup(node.Hold, pod, false)
		deleted := time.Now()
		Expect(k8sClient.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pod}})).To(Succeed())
		var moved string
		Eventually(func(g Gomega) {
			got := getVolume("vol-1")
			g.Expect(got.Status.Target.OSD).NotTo(Equal(lost))
			moved = got.Status.Target.OSD
		}, "30s").Should(Succeed())
		movedAt := eventTime("vol-1", "TargetMoved", "the target's OSD "+lost+" stopped: the kubelet reported every container of its pod terminated")
		GinkgoWriter.Printf("pod %s deleted; its kubelet reported it stopped; the target moved to %s %s after the deletion (target grace %s)\n", pod, moved, movedAt.Sub(deleted).Round(time.Millisecond), targetGrace)
		Expect(getVolume("vol-1").Status.Target.Epoch).To(Equal(v.Status.Target.Epoch+1), "a moved target is a new incarnation")

		node.Hold(pod, false)
		vol1WholeWithTargetOn(moved)
		expectVolumeIdentity(getVolume("vol-1"))
	})

	It("waits out the grace when the target's OSD pod is deleted by force", func() {
		v := getVolume("vol-1")
		lost := v.Status.Target.OSD
		pod := "osd-" + lost
		node.Hold(pod, true)
		DeferCleanup(node.Hold, pod, false)
		// Gone from the apiserver at once, with the states its kubelet
		// last wrote: nothing says its processes ended.
		Expect(k8sClient.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pod}}, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getVolume("vol-1").Status.Target.OSD).NotTo(Equal(lost))
		}, "60s").Should(Succeed())
		eventTime("vol-1", "TargetMoved", fmt.Sprintf("the target's OSD %s has not served for ", lost))

		node.Hold(pod, false)
		vol1WholeWithTargetOn("")
	})

	It("fences a target whose agent hangs before the target moves, and the returning agent serves nothing of it", func() {
		v := getVolume("vol-1")
		old := v.Status.Target.OSD
		pod := "osd-" + old
		Expect(hostsOf(old, agentv1.VolumeNQN(uidOf("vol-1")))).NotTo(BeEmpty(), "the spec needs a published volume")
		Expect(node.FreezeAgent(pod, true)).To(Succeed())
		DeferCleanup(node.FreezeAgent, pod, false)

		// The operator cannot renew the lease; the hung agent cannot fence,
		// so the SPDK container's liveness probe has SPDK restarted.
		Eventually(func() []time.Time { return node.SPDKRestarts(pod) }, "30s").ShouldNot(BeEmpty())
		fencedAt := node.SPDKRestarts(pod)[0]
		var moved string
		Eventually(func(g Gomega) {
			got := getVolume("vol-1")
			g.Expect(got.Status.Target.OSD).NotTo(Equal(old))
			moved = got.Status.Target.OSD
		}, "30s").Should(Succeed())
		movedAt := eventTime("vol-1", "TargetMoved", "the target's OSD "+old+" has not served")
		Eventually(func(g Gomega) {
			g.Expect(eventsAbout("vol-1")).To(ContainElement(HaveField("Note", ContainSubstring("the target serves from OSD "+moved))))
		}, "30s").Should(Succeed())
		servedAt := eventTime("vol-1", "TargetMoved", "the target serves from OSD "+moved)
		Expect(fencedAt).To(BeTemporally("<", servedAt), "the old target must be fenced before the new one serves")
		GinkgoWriter.Printf("agent of %s hung; SPDK restarted by its liveness probe at %s; target moved to %s at %s, served there at %s\n",
			old, fencedAt.Format(time.StampMilli), moved, movedAt.Format(time.StampMilli), servedAt.Format(time.StampMilli))

		Expect(node.FreezeAgent(pod, false)).To(Succeed())
		vol1WholeWithTargetOn(moved)
		Expect(hostsOf(old, agentv1.VolumeNQN(uidOf("vol-1")))).To(BeEmpty(), "the returning OSD lets no host reach the Volume")
		expectVolumeIdentity(getVolume("vol-1"))
	})

	It("holds a host's write for a replica its target lost until the status records that replica out of sync", func() {
		v := getVolume("vol-1")
		lost, target := otherThanTarget(v), v.Status.Target
		Expect(v.Status.Phase).To(Equal(flintv1.VolumePhaseReady))
		before := replicaOSDs(v)
		e := target.Endpoints[0]
		write := func() (uint64, spdktest.WriteOutcome) {
			return fabric.Write(e.Address, int(e.Port), target.NQN, v.Spec.PublishedHosts[0])
		}
		_, out := write()
		Expect(out).To(Equal(spdktest.WriteAcked))

		node.Target("osd-" + lost).Kill()
		restarted := false
		DeferCleanup(func() {
			if !restarted {
				_ = node.Target("osd-" + lost).Restart()
			}
		})
		seq, out := write()
		Expect(out).To(Equal(spdktest.WriteHeld), "a write while the target's connection to %s is down", lost)
		heldAt := time.Now()
		Eventually(func() spdktest.WriteOutcome { return fabric.Outcome(seq) }, "30s", "5ms").Should(Equal(spdktest.WriteAcked))
		held := time.Since(heldAt)
		// Read after the acknowledgement: the status that let it go.
		for _, r := range getVolume("vol-1").Status.Replicas {
			if r.OSD == lost {
				Expect(r.State).NotTo(Equal(flintv1.ReplicaStateOnline), "the write was acknowledged while the status counted the replica on %s in sync", lost)
			}
		}
		GinkgoWriter.Printf("write held %s, until the replica on %s was recorded out of sync\n", held.Round(time.Millisecond), lost)
		Expect(eventNotes("vol-1", "ReplicaOutOfSync")).To(ContainElement(And(ContainSubstring(lost), ContainSubstring("holds writes"), ContainSubstring("connection to the target is down"))),
			"the Event says why the target held the writes")

		Expect(node.Target("osd-" + lost).Restart()).To(Succeed())
		restarted = true
		Eventually(func(g Gomega) {
			got := getVolume("vol-1")
			g.Expect(got.Status.Phase).To(Equal(flintv1.VolumePhaseReady), "%+v", got.Status.Replicas)
			g.Expect(replicaOSDs(got)).To(Equal(before), "rebuilt in place")
		}, "60s").Should(Succeed())
	})

	It("records a member that drops out of the target's raid at the next lease renewal, says so, and rebuilds it", func() {
		v := getVolume("vol-1")
		dropped := otherThanTarget(v)
		Expect(v.Status.Phase).To(Equal(flintv1.VolumePhaseReady))
		dropMember("vol-1", v.Status.Target.OSD, dropped)
		Eventually(func() []string { return eventNotes("vol-1", "ReplicaOutOfSync") }, "30s").Should(ContainElement(ContainSubstring(dropped)))
		Eventually(func(g Gomega) {
			got := getVolume("vol-1")
			g.Expect(got.Status.Phase).To(Equal(flintv1.VolumePhaseReady), "%+v", got.Status.Replicas)
			g.Expect(replicaOSDs(got)).To(ContainElement(dropped), "rebuilt in place")
		}, "60s").Should(Succeed())
	})

	It("rebuilds, rather than trusts, a replica that dropped out of the raid just before a planned target move", func() {
		v := getVolume("vol-1")
		target, dropped := v.Status.Target.OSD, otherThanTarget(v)
		Expect(v.Status.Phase).To(Equal(flintv1.VolumePhaseReady))
		// The replica's member leaves the target's raid without the
		// operator hearing of it (as after a fast I/O failure), and the
		// target's OSD starts draining at once.
		dropMember("vol-1", target, dropped)
		setDrain(target, true)
		DeferCleanup(setDrain, target, false)

		// Whichever comes first, the stopped target's report (ReplicaStale)
		// or the lease renewal's (ReplicaOutOfSync), names the replica.
		Eventually(func() []string {
			return append(eventNotes("vol-1", "ReplicaStale"), eventNotes("vol-1", "ReplicaOutOfSync")...)
		}, "30s").Should(ContainElement(ContainSubstring(dropped)))
		Eventually(func(g Gomega) {
			got := getVolume("vol-1")
			g.Expect(got.Status.Target.OSD).NotTo(Equal(target))
			g.Expect(got.Status.Phase).To(Equal(flintv1.VolumePhaseReady), "%+v", got.Status.Replicas)
		}, "60s").Should(Succeed())
	})

	It("moves replicas off a draining OSD", func() {
		v := getVolume("vol-1")
		drained := otherThanTarget(v)
		setDrain(drained, true)
		DeferCleanup(setDrain, drained, false)
		Eventually(func(g Gomega) {
			got := getVolume("vol-1")
			g.Expect(replicaOSDs(got)).NotTo(ContainElement(drained), "%+v", got.Status)
			g.Expect(got.Status.Phase).To(Equal(flintv1.VolumePhaseReady), "%+v", got.Status.Replicas)
		}, "60s").Should(Succeed())
		Eventually(func() []string { return lvolsOn(drained) }, "30s").ShouldNot(ContainElement(uidOf("vol-1")))
	})

	It("is not deleted while published, then leaves no lvol behind", func() {
		v := getVolume("vol-1")
		osds := append(replicaOSDs(v), v.Status.Target.OSD)
		Expect(k8sClient.Delete(ctx, v)).To(Succeed())
		Eventually(func() *metav1.Condition { return conditionOf(getVolume("vol-1"), flintv1.DeletionBlockedCondition) }).
			Should(PointTo(MatchFields(IgnoreExtras, Fields{"Reason": Equal("Published")})))
		Consistently(func() error { return k8sClient.Get(ctx, client.ObjectKey{Name: "vol-1"}, &flintv1.Volume{}) }, "2s").Should(Succeed())
		updateVolume("vol-1", func(v *flintv1.Volume) { v.Spec.PublishedHosts = nil })
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Name: "vol-1"}, &flintv1.Volume{}))
		}).Should(BeTrue())
		for _, o := range osds {
			Expect(lvolsOn(o)).NotTo(ContainElement(string(v.UID)), "OSD %s", o)
		}
	})

	It("serves a Volume with the longest name Kubernetes allows: SPDK objects are named by its uid", func() {
		name := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61)
		Expect(name).To(HaveLen(253))
		Expect(k8sClient.Create(ctx, newVolume(name, "vols", "16Mi"))).To(Succeed())
		Eventually(func() flintv1.VolumePhase { return getVolume(name).Status.Phase }, "30s").Should(Equal(flintv1.VolumePhaseReady))
		got := getVolume(name)
		Expect(got.Status.Target.NQN).To(Equal(agentv1.VolumeNQN(string(got.UID))))
		for _, r := range got.Status.Replicas {
			Expect(lvolsOn(r.OSD)).To(ContainElement(string(got.UID)), "OSD %s", r.OSD)
		}
		deleteVolume(name)
	})

	It("re-created under the same name while an OSD was away, never meets the old Volume's lvol there", func() {
		Expect(k8sClient.Create(ctx, newVolume("vol-again", "vols", "16Mi"))).To(Succeed())
		Eventually(func() flintv1.VolumePhase { return getVolume("vol-again").Status.Phase }, "30s").Should(Equal(flintv1.VolumePhaseReady))
		old := getVolume("vol-again")
		away := otherThanTarget(old)
		node.Target("osd-" + away).Kill()
		DeferCleanup(func() { _ = node.Target("osd-" + away).Restart() })
		Eventually(func() flintv1.OSDPhase { return getOSD(away).Status.Phase }, "30s").ShouldNot(Equal(flintv1.OSDPhaseReady))
		deleteVolume("vol-again") // the away OSD's lvol stays behind

		// The new Volume wants every OSD, so it is placed on the away one
		// too once it returns, next to the old lvol.
		again := newVolume("vol-again", "vols", "16Mi")
		again.Spec.Replicas = ptr.To[int32](4)
		Expect(k8sClient.Create(ctx, again)).To(Succeed())
		Expect(node.Target("osd-" + away).Restart()).To(Succeed())
		Eventually(func(g Gomega) {
			got := getVolume("vol-again")
			g.Expect(got.Status.Phase).To(Equal(flintv1.VolumePhaseReady), "%+v", got.Status)
			g.Expect(replicaOSDs(got)).To(ContainElement(away))
		}, "60s").Should(Succeed())
		newUID := uidOf("vol-again")
		Expect(newUID).NotTo(Equal(string(old.UID)))
		Eventually(func() []string { return lvolsOn(away) }, "30s").Should(SatisfyAll(ContainElement(newUID), Not(ContainElement(string(old.UID)))))
		deleteVolume("vol-again")
	})

	It("creates and deletes 200 Volumes while agents restart, leaving no lvol on any OSD", func() {
		churn(200)
	})

	It("bounds the rebuilds an OSD takes part in, and keeps a Volume's rebuild to its bandwidth cap", func() {
		setMaxRebuildsPerOSD := func(n int32) {
			Eventually(func() error {
				p := getPool("vols")()
				p.Spec.Rebuild.MaxPerOSD = n
				return k8sClient.Update(ctx, p)
			}).Should(Succeed())
		}
		setMaxRebuildsPerOSD(1)
		DeferCleanup(setMaxRebuildsPerOSD, int32(4))
		// Each Volume has a replica on every OSD, so an OSD that runs
		// neither target takes part in both rebuilds once its SPDK
		// restarts with an empty device. Uncapped, the double rebuilds the
		// 32 MiB in 2 s; vol-slow's cap of 2 MiB/s makes that 16 s.
		for _, name := range []string{"vol-fast", "vol-slow"} {
			v := newVolume(name, "vols", "32Mi")
			v.Spec.Replicas = ptr.To[int32](4)
			if name == "vol-slow" {
				v.Spec.RebuildMaxBandwidthMiBps = ptr.To[int32](2)
			}
			Expect(k8sClient.Create(ctx, v)).To(Succeed())
			DeferCleanup(deleteVolume, name)
		}
		Eventually(func(g Gomega) {
			for _, name := range []string{"vol-fast", "vol-slow"} {
				g.Expect(getVolume(name).Status.Phase).To(Equal(flintv1.VolumePhaseReady))
			}
		}, "30s").Should(Succeed())
		targets := []string{getVolume("vol-fast").Status.Target.OSD, getVolume("vol-slow").Status.Target.OSD}
		shared := ""
		for _, o := range replicaOSDs(getVolume("vol-fast")) {
			if !slices.Contains(targets, o) {
				shared = o
			}
		}
		Expect(node.Target("osd-" + shared).Restart()).To(Succeed())

		// One List is one snapshot of both statuses: the second rebuild
		// is admitted only once the first's status says it is done.
		var waited []string
		var slowFirst, slowLast time.Time
		Eventually(func(g Gomega) {
			var vols flintv1.VolumeList
			g.Expect(k8sClient.List(ctx, &vols)).To(Succeed())
			rebuilding, ready := 0, 0
			for _, v := range vols.Items {
				if v.Name != "vol-fast" && v.Name != "vol-slow" {
					continue
				}
				if v.Status.Phase == flintv1.VolumePhaseReady {
					ready++
				}
				if d := conditionOf(&v, flintv1.DegradedCondition); d != nil && strings.Contains(d.Message, "takes part in 1 rebuilds, the Pool's rebuild.maxPerOSD") {
					waited = append(waited, v.Name)
				}
				for _, r := range v.Status.Replicas {
					if r.State != flintv1.ReplicaStateRebuilding {
						continue
					}
					rebuilding++
					if v.Name == "vol-slow" {
						if slowFirst.IsZero() {
							slowFirst = time.Now()
						}
						slowLast = time.Now()
					}
				}
			}
			Expect(rebuilding).To(BeNumerically("<=", 1), "two rebuilds on OSD %s at once, over the Pool's rebuild.maxPerOSD of 1", shared)
			g.Expect(slowFirst).NotTo(BeZero(), "vol-slow's rebuild not seen yet")
			g.Expect(ready).To(Equal(2))
		}, "90s", "200ms").Should(Succeed())
		Expect(waited).NotTo(BeEmpty(), "no Volume said its rebuild waited for a slot")
		Eventually(func() []string { return eventNotes(waited[0], flintv1.VolumeRebuildWaitingReason) }).Should(ContainElement(ContainSubstring("takes part in 1 rebuilds")))
		Expect(slowLast.Sub(slowFirst)).To(BeNumerically(">=", 6*time.Second), "vol-slow's rebuild was seen for %v; uncapped it takes 2 s", slowLast.Sub(slowFirst))
	})
})

var _ = Describe("An OSD deleted while a Volume has a replica there", Ordered, func() {
	BeforeAll(func() { makeZonedPool("osdgone") })

	It("is deleted once the Volume is, though the Volume went after the OSD's last observation", func() {
		// A replica on every OSD: none can move off the deleted one before
		// it is observed holding it (with a spare OSD the move raced the
		// observation, and CI once saw no HoldsReplicas).
		vol := newVolume("vol-osdgone", "osdgone", "16Mi")
		vol.Spec.Replicas = ptr.To[int32](4)
		Expect(k8sClient.Create(ctx, vol)).To(Succeed())
		Eventually(func() flintv1.VolumePhase { return getVolume("vol-osdgone").Status.Phase }, "30s").Should(Equal(flintv1.VolumePhaseReady))
		held := otherThanTarget(getVolume("vol-osdgone"))
		Eventually(func() int32 { return getOSD(held).Status.Replicas }, "60s").Should(BeEquivalentTo(1))
		o := getOSD(held)
		Expect(k8sClient.Delete(ctx, o)).To(Succeed())
		Eventually(eventsFor(held)).Should(ContainElement("HoldsReplicas"))

		deleteVolume("vol-osdgone")
		Eventually(func() bool {
			var now flintv1.OSD
			err := k8sClient.Get(ctx, client.ObjectKey{Name: held}, &now)
			return apierrors.IsNotFound(err) || (err == nil && now.UID != o.UID)
		}, "60s").Should(BeTrue(), "OSD %s is not deleted", held)
	})
})

// churn creates and deletes many Volumes while agents restart, and checks
// that nothing is left on any OSD.
func churn(n int) {
	osds := osdsOf("vols")()
	restartSome := func(round int) {
		o := osds[round%len(osds)]
		Expect(node.RestartAgent("osd-" + o.Name)).To(Succeed())
	}
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("churn-%03d", i)
		Expect(k8sClient.Create(ctx, newVolume(names[i], "vols", "1Mi"))).To(Succeed())
		if i%25 == 24 {
			restartSome(i / 25)
		}
	}
	Eventually(func(g Gomega) {
		var l flintv1.VolumeList
		g.Expect(k8sClient.List(ctx, &l)).To(Succeed())
		var waiting []string
		for _, v := range l.Items {
			if v.Status.Phase != flintv1.VolumePhaseReady {
				waiting = append(waiting, fmt.Sprintf("%s %s: %s", v.Name, v.Status.Phase, readyOf(&v).Message))
			}
		}
		g.Expect(waiting).To(BeEmpty())
	}, "300s", "1s").Should(Succeed())
	for i, name := range names {
		Expect(k8sClient.Delete(ctx, &flintv1.Volume{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
		if i%25 == 24 {
			restartSome(i/25 + 1)
		}
	}
	Eventually(func(g Gomega) {
		var l flintv1.VolumeList
		g.Expect(k8sClient.List(ctx, &l)).To(Succeed())
		g.Expect(l.Items).To(BeEmpty())
	}, "300s", "1s").Should(Succeed())
	Eventually(func(g Gomega) {
		for _, o := range osds {
			g.Expect(lvolsOn(o.Name)).To(BeEmpty(), "OSD %s", o.Name)
		}
	}, "60s", "1s").Should(Succeed())
}

func newVolume(name, pool, size string) *flintv1.Volume {
	return &flintv1.Volume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: flintv1.VolumeSpec{Pool: pool, Size: resource.MustParse(size)}}
}

func getVolume(name string) *flintv1.Volume {
	var v flintv1.Volume
	Expect(k8sClient.Get(ctx, client.ObjectKey{Name: name}, &v)).To(Succeed())
	return &v
}

func updateVolume(name string, mutate func(*flintv1.Volume)) {
	Eventually(func() error {
		v := getVolume(name)
		mutate(v)
		return k8sClient.Update(ctx, v)
	}).Should(Succeed())
}

func deleteVolume(name string) {
	Expect(k8sClient.Delete(ctx, &flintv1.Volume{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Name: name}, &flintv1.Volume{}))
	}).Should(BeTrue())
}

// readyOf is v's Ready condition, empty until it is set.
func readyOf(v *flintv1.Volume) *metav1.Condition {
	if c := conditionOf(v, flintv1.ReadyCondition); c != nil {
		return c
	}
	return &metav1.Condition{}
}

func conditionOf(v *flintv1.Volume, typ string) *metav1.Condition {
	for i := range v.Status.Conditions {
		if v.Status.Conditions[i].Type == typ {
			return &v.Status.Conditions[i]
		}
	}
	return nil
}

func replicaOSDs(v *flintv1.Volume) []string {
	var out []string
	for _, r := range v.Status.Replicas {
		out = append(out, r.OSD)
	}
	slices.Sort(out)
	return out
}

func otherThanTarget(v *flintv1.Volume) string {
	for _, r := range v.Status.Replicas {
		if r.OSD != v.Status.Target.OSD {
			return r.OSD
		}
	}
	Fail("the volume has no replica off its target")
	return ""
}

func getOSD(name string) *flintv1.OSD {
	var o flintv1.OSD
	Expect(k8sClient.Get(ctx, client.ObjectKey{Name: name}, &o)).To(Succeed())
	return &o
}

func osdUID(name string) string { return string(getOSD(name).UID) }

func zoneOf(osd string) string {
	var n corev1.Node
	Expect(k8sClient.Get(ctx, client.ObjectKey{Name: getOSD(osd).Spec.NodeName}, &n)).To(Succeed())
	return n.Labels["topology.kubernetes.io/zone"]
}

func setDrain(osd string, drain bool) {
	Eventually(func() error {
		o := getOSD(osd)
		o.Spec.Drain = drain
		return k8sClient.Update(ctx, o)
	}).Should(Succeed())
}

// spdkOf is a client of the SPDK (double) of osd's pod.
func spdkOf(osd string) (*spdkclient.Client, context.Context) {
	c := spdkclient.New(node.Socket("osd-" + osd))
	DeferCleanup(c.Close)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	DeferCleanup(cancel)
	return c, cctx
}

// hostsOf lists the hosts allowed on subsystem nqn of osd's SPDK.
func hostsOf(osd, nqn string) []string {
	c, cctx := spdkOf(osd)
	subs, err := c.NvmfGetSubsystems(cctx, nqn)
	if err != nil {
		return nil
	}
	return subs[0].HostNQNs()
}

// volumeQoS are vol-1's limits from the spec that sets them on.
var volumeQoS = &flintv1.VolumeQoS{IOPS: 2000, ReadWriteMiBps: 100, WriteMiBps: 40}

// qosAt reads the limits SPDK on OSD osd holds on the raid of Volume
// name; nil when none.
func qosAt(osd, name string) *flintv1.VolumeQoS {
	c, cctx := spdkOf(osd)
	b, err := c.BdevGetBdevs(cctx, "raid_"+uidOf(name))
	Expect(err).NotTo(HaveOccurred())
	l := b[0].AssignedRateLimits
	return flintv1.VolumeQoS{IOPS: int64(l.RwIOsPerSec), ReadWriteMiBps: int64(l.RwMbytesPerSec), ReadMiBps: int64(l.RMbytesPerSec), WriteMiBps: int64(l.WMbytesPerSec)}.OrNone()
}

// replicaHostsOf lists the hosts OSD osd exports its replica of Volume
// name to; nil when it does not export one.
func replicaHostsOf(osd, name string) []string {
	c, cctx := spdkOf(osd)
	subs, err := c.NvmfGetSubsystems(cctx, "")
	if err != nil {
		return nil
	}
	for _, s := range subs {
		if strings.HasPrefix(s.NQN, agentv1.ReplicaNQNPrefix(uidOf(name))) {
			return s.HostNQNs()
		}
	}
	return nil
}

// expectVolumeIdentity checks that v's target presents the namespace
// identity derived from v's uid, the same on every target, and numbers
// host controllers from the range of the epoch in v's status.
// vol1WholeWithTargetOn waits until vol-1 is Ready with three Online
// replicas and its target on OSD target ("": anywhere).
func vol1WholeWithTargetOn(target string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		got := getVolume("vol-1")
		g.Expect(got.Status.Phase).To(Equal(flintv1.VolumePhaseReady), "%+v", got.Status.Replicas)
		if target != "" {
			g.Expect(got.Status.Target.OSD).To(Equal(target))
		}
		g.Expect(got.Status.Replicas).To(HaveLen(3))
		for _, r := range got.Status.Replicas {
			g.Expect(r.State).To(Equal(flintv1.ReplicaStateOnline))
		}
	}, "60s").Should(Succeed())
}

func expectVolumeIdentity(v *flintv1.Volume) {
	GinkgoHelper()
	c, cctx := spdkOf(v.Status.Target.OSD)
	subs, err := c.NvmfGetSubsystems(cctx, v.Status.Target.NQN)
	Expect(err).NotTo(HaveOccurred())
	id := agentv1.VolumeIdentity(string(v.UID))
	low, high := agentv1.CntlidRange(uint32(v.Status.Target.Epoch))
	Expect(subs[0].SerialNumber).To(Equal(id.Serial))
	Expect([]uint16{subs[0].MinCntlid, subs[0].MaxCntlid}).To(Equal([]uint16{low, high}), "controller ids of epoch %d", v.Status.Target.Epoch)
	Expect(subs[0].Namespaces).To(HaveLen(1))
	ns := subs[0].Namespaces[0]
	Expect([]string{ns.UUID, ns.NGUID, ns.EUI64}).To(Equal([]string{id.UUID, id.NGUID, id.EUI64}))
}

// lvolsOn lists the lvol names on osd's SPDK.
func lvolsOn(osd string) []string {
	c, cctx := spdkOf(osd)
	lvols, err := c.BdevLvolGetLvols(cctx, types.BdevLvolGetLvolsRequest{})
	Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, l := range lvols {
		names = append(names, l.Name)
	}
	return names
}

func lvolSize(osd, volume string) uint64 {
	c, cctx := spdkOf(osd)
	b, err := c.BdevGetBdevs(cctx, agentv1.LvstoreName(osdUID(osd))+"/"+volume)
	Expect(err).NotTo(HaveOccurred())
	return b[0].SizeBytes()
}

// uidOf is the uid of Volume name: the key of its SPDK objects.
func uidOf(name string) string { return string(getVolume(name).UID) }

// dropMember removes the replica on OSD dropped from the raid of Volume
// name on its target's OSD, as SPDK does after a fast I/O failure, without
// the operator hearing of it.
func dropMember(name, target, dropped string) {
	c, cctx := spdkOf(target)
	ctrlrs, err := c.BdevNvmeGetControllers(cctx, "")
	Expect(err).NotTo(HaveOccurred())
	e := getOSD(dropped).Status.Endpoint
	member := ""
	for _, ctrlr := range ctrlrs {
		for _, p := range ctrlr.Ctrlrs {
			if strings.HasPrefix(p.Trid.Subnqn, agentv1.ReplicaNQNPrefix(uidOf(name))) && p.Trid.Traddr == e.Address && p.Trid.Trsvcid == fmt.Sprint(e.Port) {
				member = ctrlr.Name + "n1"
			}
		}
	}
	Expect(member).NotTo(BeEmpty(), "the target's controller of the replica on %s", dropped)
	// A rebuild just finished may leave the raid settling: wait until the
	// replica is a configured member and nothing rebuilds.
	Eventually(func(g Gomega) []string {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		raids, err := c.BdevRaidGetBdevs(rctx, "all")
		g.Expect(err).NotTo(HaveOccurred())
		var configured []string
		for _, r := range raids {
			configured = append(configured, r.Members()...)
			configured = append(configured, fmt.Sprintf("process=%v", r.Process != nil))
		}
		return configured
	}, "60s").Should(SatisfyAll(ContainElement(member), ContainElement("process=false")))
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	Expect(c.BdevRaidRemoveBaseBdev(rctx, member)).To(Succeed())
}
