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
	"slices"

	"github.com/google/uuid"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// The Snapshot specs run a Pool of four OSDs in four zones, as the Volume
// specs do. The double follows every host write, so they check what a
// cut holds against what a writer (crash_test.go's) saw.
var _ = Describe("A Snapshot", Ordered, func() {
	BeforeAll(func() {
		makeZonedPool("snaps")
		v := newVolume("snap-src", "snaps", "64Mi")
		v.Spec.PublishedHosts = []string{hostA}
		Expect(k8sClient.Create(ctx, v)).To(Succeed())
		Eventually(func() flintv1.VolumePhase { return getVolume("snap-src").Status.Phase }).Should(Equal(flintv1.VolumePhaseReady))
	})

	It("cuts every in-sync replica at one instant under a running writer, which goes on after", func() {
		w := startWriter("snap-src")
		Eventually(func() int { return len(w.acked()) }).Should(BeNumerically(">=", 20))
		Expect(k8sClient.Create(ctx, newSnapshot("snap-1", "snap-src"))).To(Succeed())
		Eventually(func() bool { return getSnapshot("snap-1").Status.ReadyToUse }).Should(BeTrue())
		cutAt := len(w.acked())
		Eventually(func() int { return len(w.acked()) }).Should(BeNumerically(">=", cutAt+20), "the writer goes on after the cut")
		w.stop()

		v, s := getVolume("snap-src"), getSnapshot("snap-1")
		Expect(s.Status.Phase).To(Equal(flintv1.SnapshotPhaseReady))
		Expect(s.Status.VolumeUID).To(Equal(string(v.UID)))
		Expect(s.Status.Size.String()).To(Equal("64Mi"))
		Expect(s.Status.CreationTime).NotTo(BeNil())
		Expect(s.Status.PauseDuration.Duration).To(BeNumerically(">", 0))
		Expect(readyOfSnapshot(s).Reason).To(Equal(flintv1.SnapshotCutReason))
		Eventually(eventsFor("snap-1")).Should(ContainElement(flintv1.SnapshotCutReason))
		Expect(copyOSDsOf(s)).To(ConsistOf(replicaOSDs(v)), "a copy of every in-sync replica")
		GinkgoWriter.Printf("cut of 3 replicas paused the volume for %s\n", s.Status.PauseDuration.Duration)

		cut := expectConsistentCut(w, s)
		for _, osd := range replicaOSDs(v) {
			writes, _ := fabric.Writes(agentv1.LvstoreName(osdUID(osd)) + "/" + string(v.UID))
			Expect(slices.Max(writes)).To(BeNumerically(">", cut), "the replica on %s took the writes after the cut", osd)
		}
	})

	It("counts the copy lost with a replaced replica's OSD, keeps the others through the target move, and the next Snapshot cuts the new replicas", func() {
		v := getVolume("snap-src")
		lost := v.Status.Target.OSD
		node.Target("osd-" + lost).Kill()
		DeferCleanup(func() { _ = node.Target("osd-" + lost).Restart() })
		Eventually(func(g Gomega) {
			got := getVolume("snap-src")
			g.Expect(got.Status.Target.OSD).NotTo(Equal(lost))
			g.Expect(got.Status.Phase).To(Equal(flintv1.VolumePhaseReady), "%+v", got.Status.Replicas)
			g.Expect(replicaOSDs(got)).NotTo(ContainElement(lost))
		}, "60s").Should(Succeed())
		Expect(node.Target("osd-" + lost).Restart()).To(Succeed())
		// Its SPDK came back with an empty (malloc) device: the copy there
		// is lost, the two others serve.
		Eventually(func(g Gomega) {
			got := getSnapshot("snap-1")
			g.Expect(got.Status.Copies).To(ContainElement(MatchFields(IgnoreExtras, Fields{"OSD": Equal(lost), "State": Equal(flintv1.SnapshotCopyLost)})))
			g.Expect(got.Status.Phase).To(Equal(flintv1.SnapshotPhaseDegraded))
			g.Expect(got.Status.ReadyToUse).To(BeTrue())
			g.Expect(conditionOfSnapshot(got, flintv1.DegradedCondition).Message).To(Equal("2 of the 3 copies taken at the cut are left; the others were lost with their OSDs"))
		}, "30s").Should(Succeed())
		Eventually(eventsFor("snap-1")).Should(ContainElement(flintv1.SnapshotCopiesLostReason))

		w := startWriter("snap-src")
		Eventually(func() int { return len(w.acked()) }).Should(BeNumerically(">=", 10))
		Expect(k8sClient.Create(ctx, newSnapshot("snap-2", "snap-src"))).To(Succeed())
		Eventually(func() bool { return getSnapshot("snap-2").Status.ReadyToUse }).Should(BeTrue())
		w.stop()
		moved := getVolume("snap-src")
		Expect(copyOSDsOf(getSnapshot("snap-2"))).To(ConsistOf(replicaOSDs(moved)))
		expectConsistentCut(w, getSnapshot("snap-2"))
	})

	It("reports a copy lost with its OSD's data as Degraded, saying how many are left", func() {
		s := getSnapshot("snap-2")
		victim := s.Status.Copies[0].OSD
		c, cctx := spdkOf(victim)
		Expect(c.BdevLvolDelete(cctx, agentv1.LvstoreName(osdUID(victim))+"/"+string(s.UID))).To(Succeed())
		Eventually(func(g Gomega) {
			got := getSnapshot("snap-2")
			g.Expect(got.Status.Phase).To(Equal(flintv1.SnapshotPhaseDegraded))
			g.Expect(got.Status.ReadyToUse).To(BeTrue())
			g.Expect(conditionOfSnapshot(got, flintv1.DegradedCondition).Message).To(Equal("2 of the 3 copies taken at the cut are left; the others were lost with their OSDs"))
			g.Expect(got.Status.Copies).To(ContainElement(MatchFields(IgnoreExtras, Fields{"OSD": Equal(victim), "State": Equal(flintv1.SnapshotCopyLost)})))
		}).Should(Succeed())
	})

	It("restores into a larger Volume: clones on the OSDs holding copies, a replica rebuilt where the copy is lost, each reading what the cut held", func() {
		s := getSnapshot("snap-2")
		Expect(s.Status.Phase).To(Equal(flintv1.SnapshotPhaseDegraded))
		var held []uint64
		copies := map[string]bool{}
		for _, c := range s.Status.Copies {
			if c.State == flintv1.SnapshotCopyReady {
				held, _ = fabric.Writes(c.Lvol)
				copies[c.OSD] = true
			}
		}
		v := newVolume("snap-restored", "snaps", "128Mi")
		v.Spec.Source = &flintv1.VolumeSource{Snapshot: "snap-2"}
		Expect(k8sClient.Create(ctx, v)).To(Succeed())
		Eventually(func(g Gomega) {
			got := getVolume("snap-restored")
			g.Expect(got.Status.Phase).To(Equal(flintv1.VolumePhaseReady), "%+v", got.Status.Replicas)
			g.Expect(got.Status.Capacity.String()).To(Equal("128Mi"), "grown after the clone")
		}, "60s").Should(Succeed())
		got := getVolume("snap-restored")
		Expect(copies).To(HaveKey(got.Status.Target.OSD), "the target runs where a clone is")
		rebuilt := 0
		for _, rep := range got.Status.Replicas {
			writes, ok := fabric.Writes(rep.Lvol)
			Expect(ok).To(BeTrue())
			Expect(writes).To(Equal(held), "the replica on %s reads what the cut held", rep.OSD)
			if !copies[rep.OSD] {
				rebuilt++
			}
		}
		Expect(rebuilt).To(Equal(1), "the copy lost with its lvol is replaced by a rebuilt replica")
		Eventually(func() []string { return eventNotes("snap-restored", "Restoring") }).Should(ContainElement(ContainSubstring("rebuilt from them on OSDs")))

		// Each copy is now the snapshot of two lvols, the source's replica
		// and the restored one: SPDK keeps it, and the Snapshot, deleted,
		// stays hidden until one of them goes.
		Expect(k8sClient.Delete(ctx, getSnapshot("snap-2"))).To(Succeed())
		Eventually(func(g Gomega) {
			got := getSnapshot("snap-2")
			g.Expect(got.Status.Phase).To(Equal(flintv1.SnapshotPhaseDeleting))
			g.Expect(conditionOfSnapshot(got, flintv1.DeletionBlockedCondition).Reason).To(Equal(flintv1.SnapshotInUseReason))
		}).Should(Succeed())
		Expect(getVolume("snap-restored").Status.Phase).To(Equal(flintv1.VolumePhaseReady))
		deleteVolume("snap-restored")
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Name: "snap-2"}, &flintv1.Snapshot{}))
		}, "30s").Should(BeTrue())
	})

	It("copies a Volume through a Snapshot taken for the copy, released once the copy's replicas are cloned", func() {
		w := startWriter("snap-src")
		Eventually(func() int { return len(w.acked()) }).Should(BeNumerically(">=", 10))
		v := newVolume("snap-copy", "snaps", "64Mi")
		v.Spec.Source = &flintv1.VolumeSource{Volume: "snap-src"}
		Expect(k8sClient.Create(ctx, v)).To(Succeed())
		Eventually(func() flintv1.VolumePhase { return getVolume("snap-copy").Status.Phase }, "60s").Should(Equal(flintv1.VolumePhaseReady))
		acked := w.stop()
		copyVol := getVolume("snap-copy")
		clone := copyVol.CloneSnapshotName()
		Eventually(func() []string { return eventNotes("snap-copy", "CloneSnapshotReleased") }).Should(ContainElement(ContainSubstring(clone)))
		var first []uint64
		for i, rep := range copyVol.Status.Replicas {
			writes, _ := fabric.Writes(rep.Lvol)
			if i == 0 {
				first = writes
			}
			Expect(writes).To(Equal(first), "every replica of the copy reads the same")
		}
		Expect(first).To(ContainElement(acked[0]), "the copy holds the writes before its cut")

		// The Snapshot is hidden until only one lvol clones each copy:
		// deleting the copy lets it go.
		deleteVolume("snap-copy")
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Name: clone}, &flintv1.Snapshot{}))
		}, "30s").Should(BeTrue())
		for _, osd := range replicaOSDs(getVolume("snap-src")) {
			Eventually(func() []string { return lvolsOn(osd) }, "30s").ShouldNot(ContainElement(string(copyVol.UID)))
		}
	})

	It("waits, saying why, for a Volume that does not exist, first removing what an unfinished cut left", func() {
		Expect(k8sClient.Create(ctx, newSnapshot("snap-orphaned", "snap-nowhere"))).To(Succeed())
		Eventually(func() string { return readyOfSnapshot(getSnapshot("snap-orphaned")).Reason }).Should(Equal(flintv1.SnapshotVolumeNotFoundReason))
		s := getSnapshot("snap-orphaned")
		Expect(s.Status.Phase).To(Equal(flintv1.SnapshotPhasePending))
		Expect(readyOfSnapshot(s).Message).To(Equal("Volume snap-nowhere does not exist: snapshot a Volume that exists"))

		// As if an operator died in the middle of a cut: a copy recorded
		// Cutting, and taken.
		v := getVolume("snap-src")
		osd := replicaOSDs(v)[0]
		c, cctx := spdkOf(osd)
		_, err := c.BdevLvolSnapshot(cctx, agentv1.LvstoreName(osdUID(osd))+"/"+string(v.UID), string(s.UID))
		Expect(err).NotTo(HaveOccurred())
		s.Status.Copies = []flintv1.SnapshotCopy{{OSD: osd, State: flintv1.SnapshotCopyCutting}}
		Expect(k8sClient.Status().Update(ctx, s)).To(Succeed())
		Eventually(func() []string { return lvolsOn(osd) }).ShouldNot(ContainElement(string(s.UID)))
		Eventually(func() []flintv1.SnapshotCopy { return getSnapshot("snap-orphaned").Status.Copies }).Should(BeEmpty())
		deleteSnapshot("snap-orphaned")
	})

	It("removes an OSD's copies of Snapshots that do not exist, saying which", func() {
		v := getVolume("snap-src")
		osd := replicaOSDs(v)[0]
		c, cctx := spdkOf(osd)
		// Two in a row: the Events of both must keep their own note, not
		// fold into one series that keeps the first's.
		for range 2 {
			stray := uuid.NewString()
			_, err := c.BdevLvolSnapshot(cctx, agentv1.LvstoreName(osdUID(osd))+"/"+string(v.UID), stray)
			Expect(err).NotTo(HaveOccurred())
			Eventually(func() []string { return lvolsOn(osd) }, "30s").ShouldNot(ContainElement(stray))
			// Events are recorded asynchronously, after the deletion.
			Eventually(func() []string { return eventNotes(osd, "OrphanDeleted") }).Should(ContainElement(ContainSubstring(stray)))
		}
	})

	It("is deleted with its copies; the Volume and its other Snapshots stay, and outlive the Volume", func() {
		Expect(k8sClient.Create(ctx, newSnapshot("snap-3", "snap-src"))).To(Succeed())
		Eventually(func() bool { return getSnapshot("snap-3").Status.ReadyToUse }).Should(BeTrue())
		s1 := getSnapshot("snap-1")
		deleteSnapshot("snap-1")
		var osds flintv1.OSDList
		Expect(k8sClient.List(ctx, &osds, client.MatchingLabels{flintv1.LabelPool: "snaps"})).To(Succeed())
		for _, o := range osds.Items {
			Eventually(func() []string { return lvolsOn(o.Name) }, "30s").ShouldNot(ContainElement(string(s1.UID)), "OSD %s", o.Name)
		}
		Expect(getSnapshot("snap-3").Status.ReadyToUse).To(BeTrue())
		Expect(getVolume("snap-src").Status.Phase).To(Equal(flintv1.VolumePhaseReady))

		// A Volume with Snapshots is deleted; its Snapshots keep their
		// copies (SPDK keeps a snapshot whose clone goes).
		Expect(k8sClient.Update(ctx, withoutHosts(getVolume("snap-src")))).To(Succeed())
		deleteVolume("snap-src")
		s3 := getSnapshot("snap-3")
		for _, cp := range s3.Status.Copies {
			Consistently(func() []string { return lvolsOn(cp.OSD) }, "2s").Should(ContainElement(string(s3.UID)), "OSD %s", cp.OSD)
		}
		deleteSnapshot("snap-3")
		for _, o := range osds.Items {
			Eventually(func() []string { return lvolsOn(o.Name) }, "30s").Should(BeEmpty(), "OSD %s", o.Name)
		}
	})
})

// expectConsistentCut checks s's copies against what w, the only writer
// since it started, saw: every copy holds the same of its writes, the
// last of them the cut, and every write acknowledged up to the cut. The
// writer writes one at a time, so a write numbered before the cut was
// settled before the cut was taken. It returns the cut.
func expectConsistentCut(w *writer, s *flintv1.Snapshot) uint64 {
	GinkgoHelper()
	acked := w.acked()
	Expect(acked).NotTo(BeEmpty())
	first := acked[0]
	var held [][]uint64
	for _, c := range s.Status.Copies {
		all, ok := fabric.Writes(c.Lvol)
		Expect(ok).To(BeTrue(), "copy %s", c.Lvol)
		held = append(held, slices.DeleteFunc(slices.Clone(all), func(seq uint64) bool { return seq < first }))
	}
	Expect(held[0]).NotTo(BeEmpty(), "the writer wrote before the cut")
	for i := range held {
		Expect(held[i]).To(Equal(held[0]), "copy %s holds other writes than copy %s", s.Status.Copies[i].Lvol, s.Status.Copies[0].Lvol)
	}
	cut := slices.Max(held[0])
	for _, seq := range acked {
		if seq <= cut {
			Expect(held[0]).To(ContainElement(seq), "write %d was acknowledged before the cut", seq)
		}
	}
	return cut
}

func newSnapshot(name, volume string) *flintv1.Snapshot {
	return &flintv1.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: flintv1.SnapshotSpec{Volume: volume}}
}

func getSnapshot(name string) *flintv1.Snapshot {
	var s flintv1.Snapshot
	Expect(k8sClient.Get(ctx, client.ObjectKey{Name: name}, &s)).To(Succeed())
	return &s
}

func deleteSnapshot(name string) {
	Expect(k8sClient.Delete(ctx, &flintv1.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Name: name}, &flintv1.Snapshot{}))
	}, "30s").Should(BeTrue())
}

func readyOfSnapshot(s *flintv1.Snapshot) metav1.Condition {
	if c := conditionOfSnapshot(s, flintv1.ReadyCondition); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func conditionOfSnapshot(s *flintv1.Snapshot, typ string) *metav1.Condition {
	for i := range s.Status.Conditions {
		if s.Status.Conditions[i].Type == typ {
			return &s.Status.Conditions[i]
		}
	}
	return &metav1.Condition{}
}

func copyOSDsOf(s *flintv1.Snapshot) []string {
	var out []string
	for _, c := range s.Status.Copies {
		out = append(out, c.OSD)
	}
	return out
}

func withoutHosts(v *flintv1.Volume) *flintv1.Volume {
	v.Spec.PublishedHosts = nil
	return v
}
