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
// target holds the write, reports the member HELD, and lets it go only
// once it is recorded out of sync.
func TestAReplicaThatFailsWritesHoldsThemUntilRecordedOutOfSync(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lab := spdklab.New(t, 3)
	if !lab.Real {
		t.Skip("the double keeps no data, so no lvstore fills up: run with FLINT_SPDK_DIR (make test-spdk)")
	}
	osds := startOSDs(ctx, t, lab)
	members := []storage.Member{exportTo(ctx, t, osds, 0, 0, true), exportTo(ctx, t, osds, 1, 0, true), exportTo(ctx, t, osds, 2, 0, true)}
	spec := storage.TargetSpec{Volume: volume, Epoch: 1, Members: members, Hosts: []string{hostNQN}}
	if st := ensureUntil(ctx, t, osds[0], spec, "a healthy target", func(st storage.TargetStatus) bool { return !st.Degraded() }); st.SizeBytes != volSize {
		t.Fatalf("new target = %+v, want %d bytes", st, volSize)
	}
	dd := newHost(t, lab)
	target := osds[0].Endpoint()
	target.NQN = agentv1.VolumeNQN(volume)

	want := make([]byte, volSize)
	first, second := randomChunk(t), randomChunk(t)
	copy(want, first)
	copy(want[2*chunk:], second)
	dd.write(target, hostNQN, first, 0)
	fillLvstore(ctx, t, lab.Targets[2], osds[2])

	done := make(chan error, 1)
	go func() { done <- dd.tryWrite(target, hostNQN, second, 2*chunk) }()
	ensureUntil(ctx, t, osds[0], spec, "the full replica holding writes", func(st storage.TargetStatus) bool {
		return st.Members[2].State == agentv1.MemberState_MEMBER_STATE_HELD
	})
	select {
	case err := <-done:
		t.Fatalf("the write ended (%v) while a member counted in sync lacks it", err)
	case <-time.After(3 * time.Second):
	}
	if _, err := osds[0].DeleteTarget(ctx, volume, []string{"osd-0", "osd-1", "osd-2"}, nil); err == nil {
		t.Fatal("the target stopped while the full replica, counted in sync, held a write")
	}

	spec.Members[2].InSync = false
	ensureUntil(ctx, t, osds[0], spec, "the full replica leaving the raid", func(st storage.TargetStatus) bool {
		return st.Members[2].State != agentv1.MemberState_MEMBER_STATE_HELD && st.Members[2].State != agentv1.MemberState_MEMBER_STATE_ONLINE
	})
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(time.Minute):
		t.Fatal("the write is still held after the full replica left")
	}
	if got := dd.read(target, hostNQN, volSize); !bytes.Equal(got, want) {
		t.Error("the volume does not read back what was acknowledged")
	}
	stopped, err := osds[0].DeleteTarget(ctx, volume, []string{"osd-0", "osd-1", "osd-2"}, []string{"osd-2"})
	must(t, err)
	if len(stopped.InSync) != 2 {
		t.Errorf("the stopped target = %+v, want the two replicas that took every write in sync", stopped)
	}
	expectReplicas(ctx, t, dd, osds, []int{0, 1}, want)
}

// fillLvstore takes every free cluster of o's lvstore with a thick lvol, so
// that a write to a cluster its thin replica has not allocated fails.
func fillLvstore(ctx context.Context, t *testing.T, target *spdklab.Target, o *storage.OSD) {
	t.Helper()
	lvs, err := o.Lvstore(ctx)
	must(t, err)
	_, err = target.Client.BdevLvolCreate(ctx, types.BdevLvolCreateRequest{LvsName: lvs.Name, LvolName: "filler", SizeInMiB: lvs.FreeBytes() >> 20})
	must(t, err)
	if lvs, err = o.Lvstore(ctx); err != nil || lvs.FreeClusters != 0 {
		t.Fatalf("the filled lvstore = %+v (%v), want no free cluster", lvs, err)
	}
}
