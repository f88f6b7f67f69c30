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
	"github.com/flint-io/flint/internal/spdk/types"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
	"github.com/flint-io/flint/osd-image/agent/storage"
)

// The lease rule docs/proposals/majority-lease.md weighs ("the replicas'
// connections as grants") counts a member's answer to an admin command
// as proof that its export still admits the target. The test pins the
// SPDK behaviour it rests on: a member's Keep Alive completes while its
// export admits the target; a frozen member (as a partition looks from
// the target) answers nothing while bdev_nvme still reads its controller
// "enabled", so that state proves nothing; once the member's agent has
// removed the export, no Keep Alive completes; and exporting the replica
// again at the same epoch lets the target back in.
func TestAMemberAnswersItsTargetOnlyWhileItsExportAdmitsIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	lab := spdklab.NewOf(t, 2, spdklab.FlintTgt)
	if lab.Targets[1].Freeze == nil {
		t.Skip("the double has no bdev_nvme_send_cmd and cannot freeze: run with FLINT_SPDK_DIR (make test-spdk)")
	}
	osds, _ := twoReplicas(ctx, t, lab)
	target := lab.Targets[0].Client
	ctrlrs, err := target.BdevNvmeGetControllers(ctx, "")
	must(t, err)
	if len(ctrlrs) != 1 {
		t.Fatalf("the target holds controllers %+v, want the one of its remote member", ctrlrs)
	}
	member := ctrlrs[0].Name
	keepAlive := func(within time.Duration) error {
		kctx, cancel := context.WithTimeout(ctx, within)
		defer cancel()
		cmd := make([]byte, 64)
		cmd[0] = types.NvmeOpcodeKeepAlive
		_, err := sendCommand(kctx, lab.Targets[0].Client.Socket(), member, "admin", cmd)
		return err
	}
	state := func() string {
		c, err := target.BdevNvmeGetControllers(ctx, member)
		if err != nil || len(c) != 1 || len(c[0].Ctrlrs) == 0 {
			return "unknown"
		}
		return c[0].Ctrlrs[0].State
	}

	answered := time.Now()
	if err := keepAlive(5 * time.Second); err != nil {
		t.Fatalf("the member did not answer a Keep Alive while its export admits the target: %v", err)
	}
	t.Logf("a Keep Alive to the member completed in %s", time.Since(answered).Round(time.Microsecond))

	lab.Targets[1].Freeze(true)
	err = keepAlive(3 * time.Second)
	frozenState := state()
	lab.Targets[1].Freeze(false)
	if err == nil {
		t.Fatal("a Keep Alive completed while the member's SPDK was frozen")
	}
	if frozenState != "enabled" {
		t.Errorf("bdev_nvme read the frozen member's controller %q; the test means to show that \"enabled\" proves nothing", frozenState)
	}
	t.Logf("frozen, the member answered nothing within 3s (%v) while bdev_nvme read its controller %q", err, frozenState)
	retryUntil(t, 10*time.Second, "the thawed member answers again", func() error { return keepAlive(2 * time.Second) })

	cut := time.Now()
	must(t, osds[1].UnexportReplica(ctx, volume))
	cutTook := time.Since(cut)
	if err := keepAlive(3 * time.Second); err == nil {
		t.Fatal("a Keep Alive sent after the member's export was removed completed")
	} else {
		t.Logf("the export's removal answered in %s; a Keep Alive sent after it ended in %s: %v (controller %q)",
			cutTook.Round(time.Millisecond), time.Since(cut).Round(time.Millisecond), err, state())
	}

	_, err = osds[1].ExportReplica(ctx, volume, agentv1.HostNQN("osd-0"), 1, storage.Keys{})
	must(t, err)
	back := time.Now()
	retryUntil(t, 20*time.Second, "the member answers once exported again", func() error { return keepAlive(2 * time.Second) })
	t.Logf("exported again at the same epoch, the member answered the target %s later (bdev_nvme reconnects every 2s)", time.Since(back).Round(100*time.Millisecond))
}

// retryUntil calls try until it succeeds, failing the test with what
// after within.
func retryUntil(t *testing.T, within time.Duration, what string, try func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := try()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, within, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
