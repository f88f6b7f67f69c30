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
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/pool"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// The rollout specs run a Pool of four OSDs in four zones under a host
// writing to a 3-replica Volume, and change what the OSD pods run.
var _ = Describe("A Pool's rollout", Ordered, func() {
	const name = "vol-roll"
	BeforeAll(func() {
		makeZonedPool("roll")
		v := newVolume(name, "roll", "64Mi")
		v.Spec.PublishedHosts = []string{hostA}
		Expect(k8sClient.Create(ctx, v)).To(Succeed())
		Eventually(func() flintv1.VolumePhase { return getVolume(name).Status.Phase }, "60s").Should(Equal(flintv1.VolumePhaseReady))
	})
	// Other specs count every Volume of the cluster.
	AfterAll(func() {
		updateVolume(name, func(v *flintv1.Volume) { v.Spec.PublishedHosts = nil })
		deleteVolume(name)
	})

	It("keeps a PodDisruptionBudget that lets no drain evict an OSD pod before its OSD stopped", func() {
		var pdb policyv1.PodDisruptionBudget
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: pool.DisruptionBudgetName("roll")}, &pdb)
		}).Should(Succeed())
		Expect(pdb.Spec.MaxUnavailable).To(Equal(ptr.To(intstr.FromInt32(0))))
		Expect(pdb.Spec.Selector.MatchLabels).To(Equal(map[string]string{flintv1.LabelPool: "roll"}))
		Expect(pdb.Spec.Selector.MatchExpressions).To(ConsistOf(metav1.LabelSelectorRequirement{Key: flintv1.LabelStopReady, Operator: metav1.LabelSelectorOpDoesNotExist}))
		Expect(metav1.IsControlledBy(&pdb, getPool("roll")())).To(BeTrue())
	})

	It("replaces every OSD pod a zone at a time, moving targets and letting replicas go first, with no write held", func() {
		before := podUIDs("roll")
		Expect(before).To(HaveLen(4))
		w := startWriter(name)
		watch := watchRollout(name, "roll")
		Eventually(func() int { return len(w.acked()) }, "10s").Should(BeNumerically(">", 10))

		Eventually(func() error {
			p := getPool("roll")()
			p.Spec.OSD.LogLevel = flintv1.LogLevel("notice")
			return k8sClient.Update(ctx, p)
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			after := podUIDs("roll")
			g.Expect(after).To(HaveLen(4))
			for osd, uid := range after {
				g.Expect(uid).NotTo(Equal(before[osd]), "the pod of OSD %s", osd)
			}
			p := getPool("roll")()
			g.Expect(p.Status.Rollout).To(BeNil(), "%+v", p.Status.Rollout)
			g.Expect(meta.FindStatusCondition(p.Status.Conditions, flintv1.RollingOutCondition)).To(HaveField("Reason", flintv1.PoolUpToDateReason))
			g.Expect(getVolume(name).Status.Phase).To(Equal(flintv1.VolumePhaseReady))
		}, "180s", "500ms").Should(Succeed())
		acked := w.stop()
		zones, minInSync := watch.stop()
		held, longest := w.stalls()

		GinkgoWriter.Printf("rolling update: %d writes acknowledged, %d held, longest gap %s; zones stopped at once: at most %d; in-sync replicas: at least %d\n",
			len(acked), held, longest.Round(time.Millisecond), zones, minInSync)
		Expect(held).To(BeZero(), "a write waited for a replica lost unplanned")
		Expect(zones).To(Equal(1), "zones with an OSD stopping or away at once")
		Expect(minInSync).To(BeNumerically(">=", 2), "the Volume's in-sync replicas")
		Expect(eventNotes("roll", "RolloutStarted")).To(HaveLen(4))
		Expect(eventNotes(name, "TargetMoved")).To(ContainElement(ContainSubstring("it stops for the Pool's rollout")))
		// The suite's host writes without holding a controller, so each
		// move waits out the suite's StandbyWait for it.
		Expect(eventNotes(name, "TargetMoved")).To(ContainElement(ContainSubstring("0 of 1 published hosts connected to its standby first")))
		served := ContainSubstring("and its endpoints are recorded")
		Eventually(func() []string { return eventNotes(name, "TargetMoved") }).Should(ContainElement(served),
			"a planned move tells how long its hosts waited for the new target")
		for _, m := range eventNotes(name, "TargetMoved") {
			if ok, _ := served.Match(m); ok {
				GinkgoWriter.Println(m)
			}
		}
		expectEveryReplicaHolds(name, acked)
	})

	It("stops a cordoned node's OSD cleanly before a drain may evict its pod, and resyncs it once uncordoned", func() {
		v := getVolume(name)
		target := v.Status.Target.OSD
		other := otherThanTarget(v)
		w := startWriter(name)
		Eventually(func() int { return len(w.acked()) }, "10s").Should(BeNumerically(">", 10))

		// The drain's first eviction comes before the OSD stopped: refused.
		Expect(evict(osdPod(target))).To(MatchError(apierrors.IsTooManyRequests, "TooManyRequests"), "an OSD pod that has not stopped")
		setUnschedulable(getOSD(target).Spec.NodeName, true)
		DeferCleanup(setUnschedulable, getOSD(target).Spec.NodeName, false)

		Eventually(func(g Gomega) {
			o := getOSD(target)
			g.Expect(meta.FindStatusCondition(o.Status.Conditions, flintv1.StoppingCondition)).To(HaveField("Reason", flintv1.OSDNodeCordonedReason))
			g.Expect(osdPod(target).Labels).To(HaveKey(flintv1.LabelStopReady))
		}, "60s").Should(Succeed())
		got := getVolume(name)
		Expect(got.Status.Target.OSD).NotTo(Equal(target), "the target moved off before the pod may go")
		Expect(got.Status.Target.Members).NotTo(ContainElement(target))
		Expect(evict(osdPod(other))).To(MatchError(apierrors.IsTooManyRequests, "TooManyRequests"), "an OSD pod whose node is not drained")
		old := osdPod(target)
		Expect(evict(old)).To(Succeed())
		Eventually(func() types.UID { return podUIDs("roll")[target] }, "60s").ShouldNot(BeElementOf(old.UID, types.UID("")))

		setUnschedulable(getOSD(target).Spec.NodeName, false)
		Eventually(func(g Gomega) {
			got := getVolume(name)
			g.Expect(got.Status.Phase).To(Equal(flintv1.VolumePhaseReady), "%+v", got.Status.Replicas)
			g.Expect(replicaOSDs(got)).To(ContainElement(target), "rebuilt in place")
			g.Expect(getPool("roll")().Status.Rollout).To(BeNil())
		}, "120s", "500ms").Should(Succeed())
		acked := w.stop()
		held, longest := w.stalls()
		GinkgoWriter.Printf("drain: %d writes acknowledged, %d held, longest gap %s\n", len(acked), held, longest.Round(time.Millisecond))
		Expect(held).To(BeZero(), "a write waited for a replica lost unplanned")
		expectEveryReplicaHolds(name, acked)
	})
})

// rolloutWatch samples, while a rollout runs, how many zones have an OSD
// stopping or away at once and how few replicas of a Volume are in sync.
type rolloutWatch struct {
	quit, done chan struct{}
	mu         sync.Mutex
	zones      int
	minInSync  int
}

func watchRollout(volume, poolName string) *rolloutWatch {
	rw := &rolloutWatch{quit: make(chan struct{}), done: make(chan struct{}), minInSync: 99}
	go func() {
		defer GinkgoRecover()
		defer close(rw.done)
		for range 3000 {
			select {
			case <-rw.quit:
				return
			case <-time.After(50 * time.Millisecond):
			}
			away := map[string]bool{}
			for _, o := range osdsOf(poolName)() {
				if o.Stopping() || !o.Status.Phase.Serving() {
					away[zoneOf(o.Name)] = true
				}
			}
			inSync := 0
			for _, r := range getVolume(volume).Status.Replicas {
				if r.State == flintv1.ReplicaStateOnline {
					inSync++
				}
			}
			rw.mu.Lock()
			rw.zones, rw.minInSync = max(rw.zones, len(away)), min(rw.minInSync, inSync)
			rw.mu.Unlock()
		}
	}()
	DeferCleanup(func() { rw.stop() })
	return rw
}

func (rw *rolloutWatch) stop() (zones, minInSync int) {
	select {
	case <-rw.quit:
	default:
		close(rw.quit)
	}
	<-rw.done
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.zones, rw.minInSync
}

// expectEveryReplicaHolds checks that every replica of the Volume holds
// every acknowledged write.
func expectEveryReplicaHolds(name string, acked []uint64) {
	GinkgoHelper()
	got := getVolume(name)
	for _, r := range got.Status.Replicas {
		writes, ok := fabric.Writes(agentv1.LvstoreName(osdUID(r.OSD)) + "/" + string(got.UID))
		Expect(ok).To(BeTrue(), "the replica on %s", r.OSD)
		var missing []uint64
		for _, seq := range acked {
			if !slices.Contains(writes, seq) {
				missing = append(missing, seq)
			}
		}
		Expect(missing).To(BeEmpty(), "acknowledged writes missing from the replica on %s (of %d acknowledged)", r.OSD, len(acked))
	}
}

// podUIDs maps each OSD of the Pool to its pod's uid.
func podUIDs(poolName string) map[string]types.UID {
	var pods corev1.PodList
	Expect(k8sClient.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{flintv1.LabelPool: poolName})).To(Succeed())
	out := map[string]types.UID{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp.IsZero() {
			out[p.Labels[flintv1.LabelOSD]] = p.UID
		}
	}
	return out
}

func osdPod(osd string) *corev1.Pod {
	var p corev1.Pod
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "osd-" + osd}, &p)).To(Succeed())
	return &p
}

// evict asks the apiserver once to evict p, as a drain does (which tries
// again every 5 s; client-go would retry a refusal by itself for a
// while). envtest runs no disruption controller: a budget that covers p
// refuses it as not yet processed, where a cluster's would refuse it as
// allowing no disruption.
func evict(p *corev1.Pod) error {
	clients, err := kubernetes.NewForConfig(testEnv.Config)
	Expect(err).NotTo(HaveOccurred())
	return clients.CoreV1().RESTClient().Post().Namespace(p.Namespace).Resource("pods").Name(p.Name).SubResource("eviction").
		Body(&policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}).MaxRetries(0).Do(ctx).Error()
}

func setUnschedulable(nodeName string, cordoned bool) {
	Eventually(func() error {
		var n corev1.Node
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: nodeName}, &n); err != nil {
			return err
		}
		n.Spec.Unschedulable = cordoned
		return k8sClient.Update(ctx, &n)
	}).Should(Succeed())
}
