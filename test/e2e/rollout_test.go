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
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/test/e2e/lab"
)

// rolloutStallBound is the longest the writer may wait for a write while
// the OSDs roll (#34): a planned stop holds no write, and a planned target
// move costs the host one path switch to the standby it connected first.
// On the emulated host, under two polling OSDs on two cores, the standby
// brought the longest wait from 1.4-5.6 s to 0.7-0.9 s (1.5 s once with
// a compile beside it; docs/development.md); an unplanned move waits out
// --target-grace (40 s in this lab).
const rolloutStallBound = 2 * time.Second

// rollingUpdate changes a setting of the replicated Pool that every OSD
// pod renders, under the storm's writer (no faults; it reads back only at
// the end, so every gap between acknowledgements is the rollout's): the
// operator replaces one storage node's OSD pod at a time, moving the
// target off by a planned move and letting the replica go first. No write
// fails, none waits longer than rolloutStallBound, and every acknowledged
// write reads back.
func rollingUpdate(t *testing.T) {
	clients := inLab(t)
	if cluster.Worker == nil {
		t.Skip("no workload node")
	}
	needStorage(t)
	if !cluster.SecondStorageNode || !haveImage("storm-writer") {
		t.Skip("needs the second storage node and the storm writer's image")
	}
	ctx := t.Context()
	c := flintClient(t)
	t.Cleanup(func() { removeReplicatedPool(t, clients, c, []string{stormWriter}, stormClaim) })
	replicatedPoolReady(t, clients, c)
	createClaim(t, clients, stormClaim, replicatedClass, corev1.PersistentVolumeBlock)
	startStormWriter(t, clients, 1, time.Hour)
	acked := waitWrites(t, clients, 20, 20*time.Minute, "before the rollout (20 of them)")
	vol := volumeOfClaim(t, clients, c, stormClaim)
	t.Logf("Volume %s: %s", vol.Name, volumeState(vol))

	before := osdPodUIDs(t, clients)
	inSync := watchInSync(ctx, c, vol.Name)
	patch := []byte(`{"spec":{"osd":{"logLevel":"notice"}}}`)
	if err := c.Patch(ctx, &flintv1.Pool{ObjectMeta: metav1.ObjectMeta{Name: replicatedPool}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	eventually(t, 15*time.Minute, func() error {
		after := osdPodUIDs(t, clients)
		for osd, uid := range before {
			if after[osd] == "" || after[osd] == uid {
				return fmt.Errorf("the pod of OSD %s is not replaced yet; pool: %s", osd, rolloutState(t, c))
			}
		}
		var pool flintv1.Pool
		if err := c.Get(ctx, client.ObjectKey{Name: replicatedPool}, &pool); err != nil {
			return err
		}
		if pool.Status.Rollout != nil {
			return fmt.Errorf("the rollout goes on: %s", rolloutState(t, c))
		}
		return nil
	})
	volumeWhole(t, c, vol, 10*time.Minute)
	t.Logf("both OSD pods replaced and the Volume whole %s after the change: %s", time.Since(began).Round(time.Second), volumeState(vol))
	// A domain stops only while each Volume keeps its replicas less
	// maxUnavailableDomains in sync elsewhere (the Pool's default, 1).
	low, least := inSync(), max(len(vol.Status.Replicas)-1, 1)
	t.Logf("in sync during the rollout: at least %d of %d replicas in %d looks at the Volume, the fewest when %s", low.online, len(vol.Status.Replicas), low.looks, low.state)
	if low.looks == 0 || low.online < least {
		t.Errorf("the Volume had %d replicas in sync during the rollout (%d looks); the Pool keeps at least %d", low.online, low.looks, least)
	}
	waitWrites(t, clients, acked, time.Minute, "after the rollout")

	stopStormWriter(t, clients)
	j := checkedJournal(t, clients)
	moves := eventsOf(t, clients, vol.Name, "TargetMoved", time.Time{})
	t.Logf("rolling update: %d writes tried, %d acknowledged, %d failed; longest write stall %.1fs; target moves: %s",
		j.tried, j.acked, j.failed, j.stall.Seconds(), strings.Join(moves, " | "))
	// Where the stall goes (#34 asks for 2 s): the operator's Events say
	// how long each move took to serve on the host's clock; the writer's
	// gaps and the node plugin's follows are on the workload node's.
	t.Logf("the writer's waits over 1s: %s; the node plugin's follows: %s", strings.Join(j.gaps, ", "), strings.Join(follows(t, clients), " | "))
	if j.stall > rolloutStallBound {
		t.Errorf("a write waited %.1fs during the rolling update; the bound is %s", j.stall.Seconds(), rolloutStallBound)
	}
	if len(moves) == 0 {
		t.Error("the target never moved: the rollout did not stop its OSD by a planned move")
	}
}

// inSyncLow is the fewest replicas in sync (Online) a watched Volume had,
// its state then, and how often it was read.
type inSyncLow struct {
	online, looks int
	state         string
}

// watchInSync reads Volume name every 200 ms until the returned func is
// called, which says the fewest replicas in sync it saw.
func watchInSync(ctx context.Context, c client.Client, name string) func() inSyncLow {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan inSyncLow, 1)
	go func() {
		low := inSyncLow{online: math.MaxInt}
		for {
			var vol flintv1.Volume
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &vol); err == nil {
				low.looks++
				if n := onlineReplicas(&vol); n < low.online {
					low.online, low.state = n, volumeState(&vol)
				}
			}
			select {
			case <-ctx.Done():
				done <- low
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return func() inSyncLow {
		cancel()
		return <-done
	}
}

// follows are the node plugin's log lines, on the workload node, of the
// targets it followed.
func follows(t *testing.T, clients *kubernetes.Clientset) []string {
	pods, err := clients.CoreV1().Pods(namespace).List(t.Context(), metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=flint-csi-node", FieldSelector: "spec.nodeName=" + lab.WorkerNode})
	if err != nil || len(pods.Items) != 1 {
		return []string{fmt.Sprintf("no node plugin on %s (%v)", lab.WorkerNode, err)}
	}
	data, err := clients.CoreV1().Pods(namespace).GetLogs(pods.Items[0].Name, &corev1.PodLogOptions{Container: "csi-driver"}).DoRaw(t.Context())
	if err != nil {
		return []string{err.Error()}
	}
	var lines []string
	for line := range strings.Lines(string(data)) {
		if strings.Contains(line, "Target moved: following") || strings.Contains(line, "Followed the moved target") {
			lines = append(lines, strings.TrimSpace(line))
		}
	}
	return lines
}

// osdPodUIDs maps each OSD of the replicated Pool to its pod's uid.
func osdPodUIDs(t *testing.T, clients *kubernetes.Clientset) map[string]types.UID {
	pods, err := clients.CoreV1().Pods(namespace).List(t.Context(), metav1.ListOptions{LabelSelector: flintv1.LabelPool + "=" + replicatedPool})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp.IsZero() && p.Status.Phase == corev1.PodRunning {
			out[p.Labels[flintv1.LabelOSD]] = p.UID
		}
	}
	return out
}

// rolloutState is the replicated Pool's RollingOut condition.
func rolloutState(t *testing.T, c client.Client) string {
	var pool flintv1.Pool
	if err := c.Get(t.Context(), client.ObjectKey{Name: replicatedPool}, &pool); err != nil {
		return err.Error()
	}
	if cond := meta.FindStatusCondition(pool.Status.Conditions, flintv1.RollingOutCondition); cond != nil {
		return cond.Reason + ": " + cond.Message
	}
	return "no RollingOut condition"
}

// eventsOf lists the notes of the Events with reason about the cluster-
// scoped object name, from since on (the zero time for all).
func eventsOf(t *testing.T, clients *kubernetes.Clientset, name, reason string, since time.Time) []string {
	list, err := clients.EventsV1().Events("default").List(t.Context(), metav1.ListOptions{FieldSelector: "regarding.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, e := range list.Items {
		if e.Reason == reason && !e.EventTime.Time.Before(since) {
			notes = append(notes, e.Note)
		}
	}
	return notes
}
