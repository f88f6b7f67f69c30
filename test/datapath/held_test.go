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

package datapath

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/flint-io/flint/internal/spdk/spdklab"
	"github.com/flint-io/flint/internal/spdk/types"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
	"github.com/flint-io/flint/osd-image/agent/storage"
)

// A replica whose lvstore is full fails the writes that need a new
// cluster (ENOSPC). SPDK's raid1 would drop it and acknowledge the write
// on the others while the caller still counts it in sync; instead the
// target holds the write, reports the member HELD, keeps DeleteTarget
// refused, and lets it go only once it is recorded out of sync, or as
// leaving (its OSD stops): either way its controller is disabled before
// the detach, which would otherwise wait on the held write.
func TestAReplicaThatFailsWritesHoldsThemUntilRecordedOutOfSync(t *testing.T) {
	for _, leaving := range []bool{false, true} {
		t.Run(fmt.Sprintf("leaving=%v", leaving), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			lab := spdklab.NewOf(t, 3, spdklab.FlintTgt)
			if !lab.Real {
				t.Skip("the double keeps no data, so no lvstore fills up: run with FLINT_SPDK_DIR (make test-spdk)")
			}
			osds := startOSDs(ctx, t, lab)
			h := holdUntilLetGo(ctx, t, lab, osds, "full", leaving, func() { fillLvstore(ctx, t, lab.Targets[2], osds[2]) })
			if !strings.Contains(h.heldReason, "device failed") {
				t.Errorf("the full replica's reason = %q, want its device's errors named", h.heldReason)
			}
			stopWithoutReplica2(ctx, t, osds, h)
		})
	}
}

// stopWithoutReplica2 stops the target of holdUntilLetGo with replica 2
// out of sync: the two others took every acknowledged write.
func stopWithoutReplica2(ctx context.Context, t *testing.T, osds []*storage.Engine, h held) {
	t.Helper()
	stopped, err := osds[0].DeleteTarget(ctx, volume, []string{"osd-0", "osd-1", "osd-2"}, []string{"osd-2"})
	must(t, err)
	if len(stopped.InSync) != 2 {
		t.Errorf("the stopped target = %+v, want the two replicas that took every write in sync", stopped)
	}
	expectReplicas(ctx, t, h.dd, osds, []int{0, 1}, h.want)
}

// held is what holdUntilLetGo wrote, the host it wrote with, how long
// after the fault the member read HELD, and the reason it gave.
type held struct {
	dd         *host
	want       []byte
	heldAfter  time.Duration
	heldReason string
}

// holdUntilLetGo runs the shape of a replica that holds writes: a
// 3-replica target on osds[0] takes a write, fault strikes replica 2, and
// a second write must stay pending, the member HELD and DeleteTarget
// refused, until replica 2 is recorded out of sync (leaving: as the
// replica of a stopping OSD); then the write completes and the Volume
// reads back every acknowledged byte.
func holdUntilLetGo(ctx context.Context, t *testing.T, lab *spdklab.Lab, osds []*storage.Engine, what string, leaving bool, fault func()) held {
	t.Helper()
	spec := threeReplicaSpec(ctx, t, osds)
	if st := ensureUntil(ctx, t, osds[0], spec, "a healthy target", func(st storage.Target) bool { return !st.Degraded() }); st.SizeBytes != volSize {
		t.Fatalf("new target = %+v, want %d bytes", st, volSize)
	}
	h := held{dd: newHost(t, lab), want: make([]byte, volSize)}
	target := osds[0].Endpoint()
	target.NQN = agentv1.VolumeNQN(volume)
	first, second := randomChunk(t), randomChunk(t)
	copy(h.want, first)
	copy(h.want[2*chunk:], second)
	h.dd.write(target, hostNQN, first, 0)

	fault()
	struck := time.Now()
	done := make(chan error, 1)
	go func() { done <- h.dd.tryWrite(target, hostNQN, second, 2*chunk) }()
	st := ensureUntil(ctx, t, osds[0], spec, "the "+what+" replica holding writes", func(st storage.Target) bool {
		return st.Members[2].State == agentv1.MemberState_MEMBER_STATE_HELD
	})
	h.heldAfter, h.heldReason = time.Since(struck), st.Members[2].HeldReason
	t.Logf("the %s replica reads HELD: %s", what, h.heldReason)
	select {
	case err := <-done:
		t.Fatalf("the write ended (%v) while a member counted in sync lacks it", err)
	case <-time.After(3 * time.Second):
	}
	if _, err := osds[0].DeleteTarget(ctx, volume, []string{"osd-0", "osd-1", "osd-2"}, nil); err == nil {
		t.Fatalf("the target stopped while the %s replica, counted in sync, held a write", what)
	}

	spec.Members[2].InSync = false
	spec.Members[2].Leaving = leaving
	recorded := time.Now()
	ensureUntil(ctx, t, osds[0], spec, "the "+what+" replica leaving the raid", func(st storage.Target) bool {
		return st.Members[2].State != agentv1.MemberState_MEMBER_STATE_HELD && st.Members[2].State != agentv1.MemberState_MEMBER_STATE_ONLINE
	})
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(time.Minute):
		t.Fatalf("the write is still held after the %s replica left", what)
	}
	t.Logf("the %s replica left, and the held write completed, %.1fs after it was recorded out of sync", what, time.Since(recorded).Seconds())
	if got := h.dd.read(target, hostNQN, volSize); !bytes.Equal(got, h.want) {
		t.Error("the volume does not read back what was acknowledged")
	}
	return h
}

// fillLvstore takes every free cluster of o's lvstore with a thick lvol, so
// that a write to a cluster its thin replica has not allocated fails.
func fillLvstore(ctx context.Context, t *testing.T, target *spdklab.Target, o *storage.Engine) {
	t.Helper()
	lvs, err := o.Lvstore(ctx)
	must(t, err)
	_, err = target.Client.BdevLvolCreate(ctx, types.BdevLvolCreateRequest{LvsName: lvs.Name, LvolName: "filler", SizeInMiB: lvs.FreeBytes() >> 20})
	must(t, err)
	if lvs, err = o.Lvstore(ctx); err != nil || lvs.FreeClusters != 0 {
		t.Fatalf("the filled lvstore = %+v (%v), want no free cluster", lvs, err)
	}
}

// A replica that goes silent for seconds (its SPDK frozen, as the storm's
// SIGSTOP does, or a network that drops its packets) holds the target's
// writes and stays in the raid: nothing may reset its controller, since
// SPDK fails the I/O in flight on a reset with Do Not Retry and the raid
// then drops the member and acknowledges the write without it, while the
// caller still counts it in sync (a target lost then was re-assembled
// from it in the e2e storm, and lost 41 acknowledged writes). Silent for
// less than the agent's silence watch waits, it is not even reported: the
// writes complete on every member once it answers. The caller is played
// as the operator plays it: the target is driven every 100 ms, and a
// member reported HELD or MISSING would be recorded out of sync. The
// storm's freezes last about 5 s; 12 s outlasted SPDK's command timeouts
// when Flint set them, so the watch waits a minute there.
func TestASilentReplicaHoldsWritesAndStaysInSync(t *testing.T) {
	for _, tc := range []struct {
		silent, silentAfter time.Duration
	}{{5500 * time.Millisecond, storage.DefaultSilentAfter}, {12 * time.Second, time.Minute}} {
		t.Run(fmt.Sprintf("%s of %s", tc.silent, tc.silentAfter), func(t *testing.T) {
			silentUnderWrites(t, tc.silent, func(c *storage.Config) { c.SilentAfter = tc.silentAfter })
		})
	}
}

// A replica silent for longer than storage.DefaultSilentAfter is reported
// HELD, from its queue depth and completions alone: its controller is not
// touched, so no write is acknowledged without it, and DeleteTarget stays
// refused, until the caller records it out of sync. Then it leaves the
// raid, still frozen, and the write completes on the other two.
func TestASilentReplicaIsLetGoOnceRecordedOutOfSync(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lab := spdklab.NewOf(t, 3, spdklab.FlintTgt)
	if lab.Targets[2].Freeze == nil {
		t.Skip("the double cannot freeze: run with FLINT_SPDK_DIR (make test-spdk)")
	}
	osds := startOSDs(ctx, t, lab)
	defer lab.Targets[2].Freeze(false)
	h := holdUntilLetGo(ctx, t, lab, osds, "silent", false, func() { lab.Targets[2].Freeze(true) })
	t.Logf("the frozen replica read HELD %.1fs after it went silent", h.heldAfter.Seconds())
	if h.heldAfter < storage.DefaultSilentAfter {
		t.Errorf("the frozen replica read HELD after %s, sooner than the %s it may be silent", h.heldAfter, storage.DefaultSilentAfter)
	}
	if !strings.Contains(h.heldReason, "answered no I/O") {
		t.Errorf("the frozen replica's reason = %q, want its silence named", h.heldReason)
	}
	stopWithoutReplica2(ctx, t, osds, h)
}

func silentUnderWrites(t *testing.T, silent time.Duration, watch func(*storage.Config)) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lab := spdklab.NewOf(t, 3, spdklab.FlintTgt)
	if lab.Targets[2].Freeze == nil {
		t.Skip("the double cannot freeze: run with FLINT_SPDK_DIR (make test-spdk)")
	}
	osds := startOSDs(ctx, t, lab, watch)
	defer lab.Targets[2].Freeze(false)
	spec := threeReplicaSpec(ctx, t, osds)
	if st := ensureUntil(ctx, t, osds[0], spec, "a healthy target", func(st storage.Target) bool { return !st.Degraded() }); st.SizeBytes != volSize {
		t.Fatalf("new target = %+v, want %d bytes", st, volSize)
	}
	dd := newHost(t, lab)
	target := osds[0].Endpoint()
	target.NQN = agentv1.VolumeNQN(volume)
	want := make([]byte, volSize)
	first := randomChunk(t)
	copy(want, first)
	dd.write(target, hostNQN, first, 0)

	chunks := make([][]byte, volSize/chunk)
	for i := 1; i < len(chunks); i++ {
		chunks[i] = randomChunk(t)
	}
	acked := make(chan int, len(chunks))
	go func() {
		defer close(acked)
		for i := 1; i < len(chunks); i++ {
			if err := dd.tryWrite(target, hostNQN, chunks[i], i*chunk); err != nil {
				t.Errorf("write %d: %v", i, err)
				return
			}
			acked <- i
		}
	}()
	lab.Targets[2].Freeze(true)
	struck := time.Now()
	var thawed time.Duration
	var left string
	for written := 0; written < len(chunks)-1; {
		if thawed == 0 && time.Since(struck) >= silent {
			lab.Targets[2].Freeze(false)
			thawed = time.Since(struck)
		}
		st, err := osds[0].EnsureTarget(ctx, spec)
		must(t, err)
		if state := st.Members[2].State; state != agentv1.MemberState_MEMBER_STATE_ONLINE && left == "" {
			left = fmt.Sprintf("%s %.1fs after it went silent", state, time.Since(struck).Seconds())
		}
		select {
		case i, ok := <-acked:
			if !ok {
				t.Fatalf("the writer stopped after %d writes", written)
			}
			if thawed == 0 {
				t.Errorf("write %d was acknowledged %.1fs into the silence, without the silent member", i, time.Since(struck).Seconds())
			}
			copy(want[i*chunk:], chunks[i])
			written++
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("%d of %d writes acknowledged when the test ran out of time", written, len(chunks)-1)
		}
	}
	t.Logf("silent for %s: every write waited for it and completed once it answered", thawed.Round(100*time.Millisecond))
	if left != "" {
		t.Errorf("the silent member read as %s, not online in the raid: its controller was reset, which fails the write in flight with Do Not Retry", left)
	}
	if got := dd.read(target, hostNQN, volSize); !bytes.Equal(got, want) {
		t.Error("the volume does not read back what was acknowledged")
	}
	_, err := osds[0].DeleteTarget(ctx, volume, []string{"osd-0", "osd-1", "osd-2"}, nil)
	must(t, err)
	expectReplicas(ctx, t, dd, osds, []int{0, 1, 2}, want)
}
