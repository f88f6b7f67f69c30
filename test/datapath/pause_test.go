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
	"slices"
	"testing"
	"time"

	"github.com/flint-io/flint/internal/spdk/spdklab"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// pauseFor is how long the test holds a snapshot's pause: about what a
// pause of three copies takes on real SPDK here.
const pauseFor = 400 * time.Millisecond

// A snapshot's pause holds a host's I/O on its connection: the target's
// listener turns ANA inaccessible, the host's bdev_nvme (retrying for
// ever, as Flint's targets and a kernel host with native multipath do)
// queues the I/O that meets it, and resumes when the listener is optimized
// again. The host keeps the same controller, no write fails, and nothing
// reaches the raid while paused. The test prints the host's stall: the
// pause, and how long after the resume its writes went on.
func TestAPauseKeepsTheHostConnected(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	lab := spdklab.NewOf(t, 3, spdklab.FlintTgt)
	if !lab.Real {
		t.Skip("the double has no host: run with FLINT_SPDK_DIR (make test-spdk)")
	}
	osds, _ := twoReplicas(ctx, t, lab)
	chain, dd := chainedHost(ctx, t, lab, osds[0])
	target, nqn := lab.Targets[0].Client, agentv1.VolumeNQN(volume)
	controllers := func() []uint16 {
		ctrlrs, err := target.NvmfSubsystemGetControllers(ctx, nqn)
		must(t, err)
		var ids []uint16
		for _, c := range ctrlrs {
			ids = append(ids, c.Cntlid)
		}
		return ids
	}
	connected := controllers()
	if len(connected) != 1 {
		t.Fatalf("the host holds controllers %v on the volume, want one", connected)
	}

	// 2 MiB, 4 KiB at a time (a few hundred KiB/s with four SPDKs on
	// two cores): the pause comes after the first 256 KiB.
	done := writeThroughChain(t, lab, dd, chain, 2<<20)
	raid := "raid_" + volume
	start := bytesWritten(ctx, t, target, raid)
	for bytesWritten(ctx, t, target, raid) < start+256<<10 {
		select {
		case err := <-done:
			t.Fatalf("the host's writes ended (%v) before the pause", err)
		case <-time.After(5 * time.Millisecond):
		}
	}

	paused := time.Now()
	_, err := osds[0].PauseTarget(ctx, volume, []string{"osd-0", "osd-1"})
	must(t, err)
	drained := time.Since(paused)
	atPause := bytesWritten(ctx, t, target, raid)
	time.Sleep(pauseFor)
	if got := bytesWritten(ctx, t, target, raid); got != atPause {
		t.Fatalf("the raid took %d bytes of writes while paused", got-atPause)
	}
	if got := controllers(); !slices.Equal(got, connected) {
		t.Errorf("paused, the host holds controllers %v, want %v: it was disconnected", got, connected)
	}
	select {
	case err := <-done:
		t.Fatalf("the host's writes ended while paused: %v", err)
	default:
	}
	must(t, osds[0].ResumeTarget(ctx, volume))
	resumed := time.Now()
	for bytesWritten(ctx, t, target, raid) == atPause {
		if time.Since(resumed) > time.Minute {
			t.Fatal("the host's writes did not go on within a minute of the resume")
		}
		time.Sleep(time.Millisecond)
	}
	goneOn := time.Since(resumed)
	select {
	case err := <-done:
		must(t, err)
	case <-ctx.Done():
		t.Fatal("the host's writes did not end")
	}
	if got := controllers(); !slices.Equal(got, connected) {
		t.Errorf("after the resume the host holds controllers %v, want %v: it reconnected", got, connected)
	}
	t.Logf("the host's writes stalled %s: drained %s after the pause call, held %s, going on %s after the resume; the host kept controller %d, and every write completed",
		(drained + pauseFor + goneOn).Round(time.Millisecond), drained.Round(time.Microsecond), pauseFor, goneOn.Round(time.Microsecond), connected[0])
}
