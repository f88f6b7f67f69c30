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
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/flint-io/flint/internal/spdk/spdklab"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
	"github.com/flint-io/flint/osd-image/agent/lease"
	"github.com/flint-io/flint/osd-image/agent/storage"
)

// TestALapsedLeaseFencesTheTarget: a target whose lease lapses stops
// acknowledging host writes (the agent removed the host) and serves again
// only on a confirmed re-drive; a target whose SPDK is frozen when the
// lease lapses makes the SPDK container's liveness probe fail, and the
// SPDK started again (as the kubelet does) serves nothing. On real SPDK
// the host is spdk_dd; on the double what the target lets in is checked.
func TestALapsedLeaseFencesTheTarget(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lab := spdklab.NewOf(t, 2, spdklab.FlintTgt)
	osds := startOSDs(ctx, t, lab)
	e1, err := osds[1].ExportReplica(ctx, volume, agentv1.HostNQN("osd-0"), 1, storage.Keys{})
	must(t, err)
	file := lease.File{Path: filepath.Join(lab.Dir, "lease")}
	keeper, err := lease.New(file, osds[0], time.Now, 0)
	must(t, err)
	spec := storage.TargetSpec{Volume: volume, Epoch: 1, Hosts: []string{hostNQN},
		Members: []storage.MemberSpec{{OSD: "osd-0", InSync: true}, {OSD: "osd-1", InSync: true, Export: e1}}}
	ensure := func(confirmed bool) error {
		return keeper.Serve(volume, confirmed, func() error { _, err := osds[0].EnsureTarget(ctx, spec); return err })
	}
	served := func() []string {
		v, err := storage.VolumesServed(ctx, lab.Targets[0].Client)
		must(t, err)
		return v
	}
	probe := func() error {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return lease.Probe(pctx, file, time.Now(), func(ctx context.Context) ([]string, error) {
			return storage.VolumesServed(ctx, lab.Targets[0].Client)
		})
	}
	dd := newHost(t, lab)
	target := osds[0].Endpoint()
	target.NQN = agentv1.VolumeNQN(volume)
	data := randomChunk(t)

	_, err = keeper.Renew(2*time.Second, time.Now().Add(2*time.Second), 0)
	must(t, err)
	must(t, ensure(false))
	if lab.Real {
		must(t, dd.tryWrite(target, hostNQN, data, 0))
	}

	time.Sleep(2 * time.Second)
	must(t, keeper.Check(ctx))
	if got := served(); len(got) != 0 {
		t.Fatalf("a lapsed lease left hosts let in to %v", got)
	}
	if lab.Real {
		if err := dd.tryWrite(target, hostNQN, data, 0); err == nil {
			t.Fatal("the fenced target acknowledged a host write")
		}
	}
	must(t, probe())
	if err := ensure(true); !errors.Is(err, lease.ErrLapsed) {
		t.Fatalf("a re-drive while the lease is lapsed: %v, want ErrLapsed", err)
	}
	_, err = keeper.Renew(2*time.Second, time.Now().Add(2*time.Second), 0)
	must(t, err)
	if err := ensure(false); !errors.Is(err, lease.ErrFenced) {
		t.Fatalf("an unconfirmed re-drive of the fenced target: %v, want ErrFenced", err)
	}
	must(t, ensure(true))
	if lab.Real {
		must(t, dd.tryWrite(target, hostNQN, data, 0))
	}

	// SPDK freezes while it serves; the lease lapses. The agent cannot
	// fence through a frozen SPDK, and the probe fails.
	if f := lab.Targets[0].Freeze; f != nil {
		f(true)
	} else {
		lab.Targets[0].Kill() // the double cannot freeze: a silent one
	}
	time.Sleep(2 * time.Second)
	frozenAt := time.Now()
	if err := probe(); err == nil {
		t.Fatal("the probe passed with a lapsed lease and a frozen SPDK")
	} else {
		t.Logf("probe %s after the lapse: %v", time.Since(frozenAt).Round(time.Millisecond), err)
	}
	lab.Targets[0].Restart(t) // the kubelet kills the container and starts it again
	if got := served(); len(got) != 0 {
		t.Fatalf("the SPDK started again serves %v", got)
	}
	must(t, probe())
}

// TestAFenceCutsOffATargetThatHoldsWrites: a target whose raid waits for
// a lost member (the host's write is held) still fences at once: the
// host is removed while SPDK holds the write, and no host is let in.
// Stopping it is refused until the member is out of sync, then prompt.
func TestAFenceCutsOffATargetThatHoldsWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lab := spdklab.NewOf(t, 2, spdklab.FlintTgt)
	osds := startOSDs(ctx, t, lab)
	spec := storage.TargetSpec{Volume: volume, Epoch: 1, Hosts: []string{hostNQN},
		Members: []storage.MemberSpec{{OSD: "osd-0", InSync: true}, exportTo(ctx, t, osds, 1, 0, true, storage.Keys{})}}
	_, err := osds[0].EnsureTarget(ctx, spec)
	must(t, err)
	dd := newHost(t, lab)
	target := osds[0].Endpoint()
	target.NQN = agentv1.VolumeNQN(volume)

	lab.Targets[1].Kill()
	go func() { _ = dd.tryWrite(target, hostNQN, randomChunk(t), 0) }()
	ensureUntil(ctx, t, osds[0], spec, "the lost member holding writes", func(st storage.Target) bool {
		return st.Members[1].State == agentv1.MemberState_MEMBER_STATE_HELD
	})
	time.Sleep(time.Second) // the host's write is in flight, held

	fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
	defer fcancel()
	began := time.Now()
	fenced, err := osds[0].FenceTargets(fctx, func(string) bool { return false })
	must(t, err)
	t.Logf("fenced %v in %s while a member held writes", fenced, time.Since(began).Round(time.Millisecond))
	if served, err := storage.VolumesServed(ctx, lab.Targets[0].Client); err != nil || len(served) != 0 {
		t.Fatalf("after the fence hosts are let in to %v (%v)", served, err)
	}

	// Stopping the target waits for the member only as long as the caller
	// counts it in sync: refused then, done at once once it does not.
	names := []string{"osd-0", "osd-1"}
	var held *storage.MembersHeldError
	if _, err := osds[0].DeleteTarget(fctx, volume, names, nil); !errors.As(err, &held) || len(held.OSDs) != 1 || held.OSDs[0] != "osd-1" {
		t.Fatalf("stopping the target while osd-1 holds writes: %v, want it refused naming osd-1", err)
	}
	began = time.Now()
	stopped, err := osds[0].DeleteTarget(fctx, volume, names, []string{"osd-1"})
	must(t, err)
	t.Logf("stopped in %s once osd-1 was out of sync: %+v", time.Since(began).Round(time.Millisecond), stopped)
	if !stopped.RaidFound || len(stopped.InSync) != 1 || stopped.InSync[0] != "osd-0" {
		t.Fatalf("stopped = %+v, want osd-0 alone in sync", stopped)
	}
}
