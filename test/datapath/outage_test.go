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
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/flint-io/flint/internal/spdk/spdklab"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
	"github.com/flint-io/flint/osd-image/agent/lease"
	"github.com/flint-io/flint/osd-image/agent/storage"
)

// The timings of the outage test, shrunk from the defaults (a 20 s lease,
// an 8 s hold, a 2 s lead, a check every second) in proportion.
const (
	outageLease = 2 * time.Second
	outageHold  = 3 * time.Second
	outageLead  = time.Second
	outageCheck = 250 * time.Millisecond
)

// TestATargetOutlivesItsOperatorUntilItIsCut is #34's operator outage on
// real SPDK, at the agents: the operator renews the lease with holds on,
// then stops for ten lease periods while a host writes. The target keeps
// its host (no fence, no write error, and the SPDK container's probe
// passes), because its member answers its Keep Alives; halfway, the
// target's agent restarts (SPDK runs on) and goes on from the holds and
// the members its predecessor recorded. Then the operator
// returns to find the target lost to it and moves it, unplanned: it cuts
// the old target off the new target's replica, and the old target fences
// within the hold; renewed, it stays fenced; its host's writes fail, and
// the probe passes. The new target, built from the cut replica alone,
// serves every write the old one acknowledged. On the double the host's
// writes are not made; what the targets let in is checked.
func TestATargetOutlivesItsOperatorUntilItIsCut(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lab := spdklab.NewOf(t, 2, spdklab.FlintTgt)
	// The agents keep their state in files, as in their pods, so that the
	// target's can restart.
	var targetConfig storage.Config
	osds, spec := twoReplicas(ctx, t, lab, func(cfg *storage.Config) {
		cfg.EpochFile = filepath.Join(lab.Dir, cfg.UID+"-export-epochs")
		cfg.MembersFile = filepath.Join(lab.Dir, cfg.UID+"-target-members")
		if cfg.UID == "osd-0" {
			targetConfig = *cfg
		}
	})
	file := lease.File{Path: filepath.Join(lab.Dir, "lease")}
	keeper, err := lease.New(file, osds[0], time.Now, outageLead)
	must(t, err)
	_, err = keeper.Renew(outageLease, time.Now().Add(outageLease), outageHold)
	must(t, err)
	must(t, keeper.Serve(volume, false, func() error { _, err := osds[0].EnsureTarget(ctx, spec); return err }))
	checkErrs := make(chan error, 100)
	run := func(k *lease.Keeper) (stop func()) {
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			k.Run(runCtx, outageCheck, func(err error) {
				if runCtx.Err() != nil {
					return // a check the agent's stop cut short
				}
				select {
				case checkErrs <- err:
				default:
				}
			})
		}()
		return func() { cancel(); <-done }
	}
	stop := run(keeper)
	defer func() { stop() }()

	dd := newHost(t, lab)
	target := osds[0].Endpoint()
	target.NQN = agentv1.VolumeNQN(volume)
	// Each write is a chunk of its own: the new target must serve every
	// one the old target acknowledged.
	const chunks = 48
	acked := map[int][]byte{}
	served := func() bool {
		v, err := storage.VolumesServed(ctx, lab.Targets[0].Client)
		must(t, err)
		return slices.Contains(v, volume)
	}
	probe := func() error {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return lease.Probe(pctx, file, time.Now(), func(ctx context.Context) ([]string, error) {
			return storage.VolumesServed(ctx, lab.Targets[0].Client)
		})
	}

	// The operator is gone for ten lease periods; the host writes on.
	outage := time.Now()
	writes := 0
	restarted := false
	for time.Since(outage) < 10*outageLease {
		if !restarted && time.Since(outage) > 5*outageLease {
			// The agent dies, and a new one starts a check later from the
			// same files, over the same SPDK. It must check within the
			// hold less the lead (2 s here, 6 s by default) of its
			// predecessor's last answered Keep Alive.
			stop()
			died := time.Now()
			time.Sleep(outageCheck)
			agent := storage.New(targetConfig, lab.Targets[0].Client)
			must(t, bootstrap(ctx, agent))
			keeper, err = lease.New(file, agent, time.Now, outageLead)
			must(t, err)
			stop = run(keeper)
			restarted = true
			t.Logf("the target's agent restarted %s into the outage, %s after its predecessor stopped", time.Since(outage).Round(time.Millisecond), time.Since(died).Round(time.Millisecond))
		}
		i, data := writes%chunks, randomBytes(t, 1<<20)
		if err := dd.tryWrite(target, hostNQN, data, i<<20); err != nil {
			t.Fatalf("write %d, %s into the outage, failed: %v", writes+1, time.Since(outage).Round(time.Millisecond), err)
		}
		acked[i] = data
		writes++
		if !served() {
			t.Fatalf("the target let its host go %s into the outage (fenced %v), while its member answers", time.Since(outage).Round(time.Millisecond), keeper.Fenced())
		}
		if err := probe(); err != nil {
			t.Fatalf("the probe failed %s into the outage: %v", time.Since(outage).Round(time.Millisecond), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case err := <-checkErrs:
		t.Fatalf("a check failed during the outage: %v", err)
	default:
	}
	what := "host writes acknowledged"
	if !lab.Real {
		what = "checks that the target lets its host in (the double writes nothing)"
	}
	t.Logf("the operator was away %s (ten leases of %s): %d %s; the target never fenced", time.Since(outage).Round(time.Millisecond), outageLease, writes, what)

	// An unplanned move cuts the old target off the new target's replica.
	must(t, osds[1].CutReplica(ctx, volume, 2))
	cut := time.Now()
	for served() {
		if time.Since(cut) > outageHold+time.Second {
			t.Fatalf("the target still lets its host in %s after its member was cut (hold %s)", time.Since(cut).Round(time.Millisecond), outageHold)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the cut answered; the target fenced %s later (hold %s, lead %s)", time.Since(cut).Round(time.Millisecond), outageHold, outageLead)
	retryUntil(t, time.Second, "the fence recorded (else the target would serve again unconfirmed)", func() error {
		if _, ok := keeper.Fenced()[volume]; !ok {
			return fmt.Errorf("fenced %v", keeper.Fenced())
		}
		return nil
	})
	_, err = keeper.Renew(outageLease, time.Now().Add(outageLease), outageHold)
	must(t, err)
	if err := keeper.Serve(volume, false, func() error { return nil }); !errors.Is(err, lease.ErrFenced) {
		t.Fatalf("the cut target, renewed, took an unconfirmed drive: %v, want ErrFenced", err)
	}
	if err := dd.tryWrite(target, hostNQN, randomBytes(t, 1<<20), 0); lab.Real && err == nil {
		t.Fatal("the fenced target acknowledged a host write")
	}
	must(t, probe())

	// The new target, epoch 2, from the cut replica alone.
	moved := storage.TargetSpec{Volume: volume, Epoch: 2, Hosts: []string{hostNQN},
		Members: []storage.MemberSpec{{OSD: "osd-1", InSync: true}, {OSD: "osd-0"}}}
	_, err = osds[1].EnsureTarget(ctx, moved)
	must(t, err)
	next := osds[1].Endpoint()
	next.NQN = agentv1.VolumeNQN(volume)
	got := dd.read(next, hostNQN, chunks<<20)
	if lab.Real {
		for i, want := range acked {
			if !bytes.Equal(got[i<<20:(i+1)<<20], want) {
				t.Fatalf("chunk %d, acknowledged by the old target before the cut, differs on the new target", i)
			}
		}
		t.Logf("the new target serves all %d chunks the old target acknowledged", len(acked))
	}
}
