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
	"slices"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/volume"
	"github.com/flint-io/flint/internal/spdk/spdktest"
)

// The operator dies between every pair of steps of a planned target move
// while a host writes; a new operator takes over, and the Volume converges
// with every write the host saw acknowledged on every replica called in
// sync. The SPDK double records the writes each lvol received.
var _ = Describe("An operator that dies in the middle of a target move", Ordered, func() {
	BeforeAll(func() { makeZonedPool("crash") })

	for _, point := range []volume.Point{volume.PointTargetStopped, volume.PointIntentRecorded, volume.PointReplicasEnsured, volume.PointTargetEnsured} {
		It("loses no acknowledged write when it dies at "+string(point), func() {
			name := "crash-" + string(point)
			v := newVolume(name, "crash", "16Mi")
			v.Spec.PublishedHosts = []string{hostA}
			Expect(k8sClient.Create(ctx, v)).To(Succeed())
			DeferCleanup(func() {
				updateVolume(name, func(v *flintv1.Volume) { v.Spec.PublishedHosts = nil })
				deleteVolume(name)
			})
			Eventually(func(g Gomega) {
				got := getVolume(name)
				g.Expect(got.Status.Phase).To(Equal(flintv1.VolumePhaseReady))
				g.Expect(got.Status.Target.AllowedHosts).To(ContainElement(hostA))
			}).Should(Succeed())
			old := getVolume(name).Status.Target.OSD

			w := startWriter(name)
			Eventually(w.acked).ShouldNot(BeEmpty(), "the host writes through the first target")

			// The operator restarts with a death planted at point, and the
			// target's OSD drains: a planned move.
			died := make(chan struct{})
			var armed atomic.Bool
			armed.Store(true)
			stopOperator()
			stopOperator = startOperator(func(ictx context.Context, vol *flintv1.Volume, p volume.Point) {
				// Every point but the first is passed before the move too.
				moving := p == volume.PointTargetStopped || vol.Status.Target.OSD != old
				if vol.Name != name || p != point || !moving || !armed.CompareAndSwap(true, false) {
					return
				}
				close(died)
				<-ictx.Done() // nothing this reconcile does from here on takes effect
			})
			setDrain(old, true)
			DeferCleanup(setDrain, old, false)
			Eventually(died, "60s").Should(BeClosed(), "the move reached %s", point)
			stopOperator()
			stopOperator = startOperator(nil)

			Eventually(func(g Gomega) {
				got := getVolume(name)
				g.Expect(got.Status.Target.OSD).NotTo(Equal(old))
				g.Expect(got.Status.Phase).To(Equal(flintv1.VolumePhaseReady), "%+v", got.Status.Replicas)
				g.Expect(got.Status.Replicas).To(HaveLen(3))
				for _, r := range got.Status.Replicas {
					g.Expect(r.State).To(Equal(flintv1.ReplicaStateOnline), "%+v", got.Status.Replicas)
				}
			}, "90s").Should(Succeed())
			before := len(w.acked())
			Eventually(func() int { return len(w.acked()) }, "30s").Should(BeNumerically(">", before), "the host writes through the moved target")
			acked := w.stop()

			expectEveryReplicaHolds(name, acked)
			got := getVolume(name)
			GinkgoWriter.Printf("died at %s: target %s -> %s, %d writes acknowledged, all on every replica\n", point, old, got.Status.Target.OSD, len(acked))
		})
	}
})

// writer is a host writing to a Volume through whichever target its status
// names, as a host's multipath follows the paths it is given.
type writer struct {
	mu   sync.Mutex
	seqs []uint64
	// held counts the writes a member held (a replica lost unplanned);
	// longest is the longest time between two acknowledgements.
	held    int
	longest time.Duration
	quit    chan struct{}
	done    chan struct{}
}

// startWriter writes every 20 ms, at most 20000 times.
func startWriter(name string) *writer {
	w := &writer{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(w.done)
		var target *flintv1.VolumeTarget
		lastAck := time.Now()
		for i := range 20000 {
			select {
			case <-w.quit:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if i%10 == 0 || target == nil || len(target.Endpoints) == 0 {
				target = getVolume(name).Status.Target
			}
			if target == nil || len(target.Endpoints) == 0 {
				continue
			}
			e := target.Endpoints[0]
			seq, out := fabric.Write(e.Address, int(e.Port), target.NQN, hostA)
			if out == spdktest.WriteHeld {
				w.mu.Lock()
				w.held++
				w.mu.Unlock()
			}
			// One write at a time: a held write is waited for.
			for out == spdktest.WriteHeld {
				select {
				case <-w.quit:
					return
				case <-time.After(20 * time.Millisecond):
				}
				out = fabric.Outcome(seq)
			}
			if out == spdktest.WriteAcked {
				w.mu.Lock()
				w.seqs = append(w.seqs, seq)
				w.longest = max(w.longest, time.Since(lastAck))
				w.mu.Unlock()
				lastAck = time.Now()
			}
		}
	}()
	DeferCleanup(func() { w.stop() })
	return w
}

func (w *writer) acked() []uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.seqs)
}

// stalls is how many writes were held, and the longest time between two
// acknowledgements.
func (w *writer) stalls() (held int, longest time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.held, w.longest
}

// stop ends the writes and returns the acknowledged ones.
func (w *writer) stop() []uint64 {
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
	<-w.done
	return w.acked()
}
