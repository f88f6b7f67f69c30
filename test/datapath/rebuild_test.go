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
	"context"
	"testing"
	"time"

	"github.com/flint-io/flint/internal/spdk/spdklab"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
	"github.com/flint-io/flint/osd-image/agent/storage"
)

// A rebuild the target starts with a bandwidth cap keeps it for its whole
// copy, through the agent and SPDK's raid module; the same replica let go
// and rebuilt without the cap shows what the cap held back. SPDK lets the
// first two 1 MiB windows go at once, so the capped copy of volSize takes
// at least (volSize − 2 MiB) / cap.
func TestARebuildKeepsItsBandwidthCap(t *testing.T) {
	const capMiBps = 8
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lab := spdklab.NewOf(t, 2, spdklab.FlintTgt)
	osds := startOSDs(ctx, t, lab)
	replica := exportTo(ctx, t, osds, 1, 0, false, storage.Keys{})
	spec := storage.TargetSpec{Volume: volume, Epoch: 1, Hosts: []string{hostNQN}, RebuildMaxMiBPerSec: capMiBps,
		Members: []storage.MemberSpec{exportTo(ctx, t, osds, 0, 0, true, storage.Keys{}), replica}}
	rebuild := func(what string) time.Duration {
		t.Helper()
		start := time.Now()
		ensureUntil(ctx, t, osds[0], spec, what, func(st storage.Target) bool { return !st.Degraded() })
		return time.Since(start)
	}

	capped := rebuild("the capped rebuild finishing")
	if floor := time.Duration(float64(volSize>>20-2) / capMiBps * float64(time.Second)); capped < floor {
		t.Errorf("a %d MiB rebuild capped at %d MiB/s took %v, under %v", volSize>>20, capMiBps, capped, floor)
	}

	// Let the replica go, then rebuild it with no cap.
	spec.Members[1] = storage.MemberSpec{OSD: replica.OSD, Leaving: true}
	ensureUntil(ctx, t, osds[0], spec, "the replica leaving", func(st storage.Target) bool {
		return st.Members[1].State == agentv1.MemberState_MEMBER_STATE_MISSING
	})
	spec.Members[1], spec.RebuildMaxMiBPerSec = replica, 0
	uncapped := rebuild("the uncapped rebuild finishing")
	mib := float64(volSize >> 20)
	t.Logf("a %v MiB rebuild over NVMe/TCP (real SPDK: %v): capped at %d MiB/s %.1f s (%.1f MiB/s); uncapped %.1f s (%.1f MiB/s); each measured from the call that starts it to the first status in sync, polled every 500 ms",
		mib, lab.Real, capMiBps, capped.Seconds(), mib/capped.Seconds(), uncapped.Seconds(), mib/uncapped.Seconds())
}
