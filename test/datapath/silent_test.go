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
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
	"github.com/flint-io/flint/osd-image/agent/storage"
)

// A replica that goes silent (its SPDK frozen: no reset, no answer, as
// behind a network that drops its packets) holds the target's writes.
// The target must notice within seconds and report it HELD, or the
// Volume's writes wait for as long as the replica stays silent.
func TestASilentReplicaIsReportedWithinSeconds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lab := spdklab.New(t, 3)
	if lab.Targets[2].Freeze == nil {
		t.Skip("the double cannot freeze: run with FLINT_SPDK_DIR (make test-spdk)")
	}
	osds := startOSDs(ctx, t, lab)
	members := []storage.Member{exportTo(ctx, t, osds, 0, 0, true), exportTo(ctx, t, osds, 1, 0, true), exportTo(ctx, t, osds, 2, 0, true)}
	spec := storage.TargetSpec{Volume: volume, Epoch: 1, Members: members, Hosts: []string{hostNQN}}
	ensureUntil(ctx, t, osds[0], spec, "a healthy target", func(st storage.TargetStatus) bool { return !st.Degraded() })
	dd := newHost(t, lab)
	target := osds[0].Endpoint()
	target.NQN = agentv1.VolumeNQN(volume)

	want := make([]byte, volSize)
	first, second := randomChunk(t), randomChunk(t)
	copy(want, first)
	copy(want[2*chunk:], second)
	dd.write(target, hostNQN, first, 0)
	lab.Targets[2].Freeze(true)
	defer lab.Targets[2].Freeze(false)
	frozen := time.Now()
	done := make(chan error, 1)
	go func() { done <- dd.tryWrite(target, hostNQN, second, 2*chunk) }()
	ensureUntil(ctx, t, osds[0], spec, "the silent replica reported holding writes", func(st storage.TargetStatus) bool {
		return st.Members[2].State == agentv1.MemberState_MEMBER_STATE_HELD
	})
	t.Logf("the silent replica was reported HELD %.1fs after it froze", time.Since(frozen).Seconds())
	select {
	case err := <-done:
		t.Fatalf("the write ended (%v) while a member counted in sync lacks it", err)
	default:
	}

	spec.Members[2].InSync = false
	ensureUntil(ctx, t, osds[0], spec, "the silent replica leaving the raid", func(st storage.TargetStatus) bool {
		return st.Members[2].State != agentv1.MemberState_MEMBER_STATE_HELD && st.Members[2].State != agentv1.MemberState_MEMBER_STATE_ONLINE
	})
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(time.Minute):
		t.Fatal("the write is still held after the silent replica left")
	}
	t.Logf("the write completed %.1fs after the replica froze", time.Since(frozen).Seconds())
	if got := dd.read(target, hostNQN, volSize); !bytes.Equal(got, want) {
		t.Error("the volume does not read back what was acknowledged")
	}
}
