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

package spdktest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A host write reaches every member of a raid1, local and remote; a
// member whose subsystem no longer admits the target fails the write and
// leaves the raid while the write is acknowledged by the others, as
// SPDK's raid1 completes it; a host the subsystem does not admit writes
// nothing.
func TestHostWritesFollowTheRaid(t *testing.T) {
	f := NewFabric()
	replica, _ := raidOverFabric(t, f, "")
	if seq, out := volumeWrite(f); out != WriteAcked || seq != 1 {
		t.Fatalf("first write = %d, %v", seq, out)
	}
	if !slices.Equal(writesOf(t, f, "lvsT/l"), []uint64{1}) || !slices.Equal(writesOf(t, f, "lvsR/l"), []uint64{1}) {
		t.Fatalf("after one write: target %v, replica %v", writesOf(t, f, "lvsT/l"), writesOf(t, f, "lvsR/l"))
	}
	if _, out := f.Write("127.0.0.1", 4420, "nqn.2026-01.io.test:v", "nqn.2026-01.io.test:other"); out != WriteFailed {
		t.Fatalf("a host the subsystem does not admit: write %v", out)
	}
	call(t, replica, "nvmf_subsystem_remove_host", cutTarget)
	if _, out := volumeWrite(f); out != WriteAcked {
		t.Fatalf("a write the local member took was %v", out)
	}
	if !slices.Equal(writesOf(t, f, "lvsT/l"), []uint64{1, 3}) || !slices.Equal(writesOf(t, f, "lvsR/l"), []uint64{1}) {
		t.Fatalf("after the replica fenced the target: target %v, replica %v", writesOf(t, f, "lvsT/l"), writesOf(t, f, "lvsR/l"))
	}
}

// A snapshot holds the writes its lvol held when it was taken, and a
// clone of it reads them; later writes reach the lvol only. A host whose
// subsystem lost its listener writes nothing.
func TestASnapshotHoldsTheWritesBeforeIt(t *testing.T) {
	f := NewFabric()
	replica, target := raidOverFabric(t, f, "")
	volumeWrite(f)
	call(t, replica, "bdev_lvol_snapshot", `{"lvol_name":"lvsR/l","snapshot_name":"s"}`)
	call(t, target, "bdev_lvol_snapshot", `{"lvol_name":"lvsT/l","snapshot_name":"s"}`)
	volumeWrite(f)
	call(t, replica, "bdev_lvol_clone", `{"snapshot_name":"lvsR/s","clone_name":"c"}`)
	for alias, want := range map[string][]uint64{"lvsR/s": {1}, "lvsT/s": {1}, "lvsR/c": {1}, "lvsR/l": {1, 2}, "lvsT/l": {1, 2}} {
		if got := writesOf(t, f, alias); !slices.Equal(got, want) {
			t.Errorf("%s holds %v, want %v", alias, got, want)
		}
	}
	call(t, target, "nvmf_subsystem_remove_listener", `{"nqn":"nqn.2026-01.io.test:v","listen_address":{"trtype":"TCP","adrfam":"IPv4","traddr":"127.0.0.1","trsvcid":"4420"}}`)
	if _, out := volumeWrite(f); out != WriteFailed {
		t.Fatalf("a write with the volume's listener gone: %v", out)
	}
	if got := writesOf(t, f, "lvsT/l"); !slices.Equal(got, []uint64{1, 2}) {
		t.Fatalf("with the listener gone the target's replica holds %v, want [1 2]", got)
	}
}

// With fast I/O fail off and a controller that reconnects for ever, a
// member that lost its connection holds writes: none is acknowledged
// without it. It takes them when it reconnects; detaching its controller
// fails them on it (it leaves the raid) and the others acknowledge them.
func TestAMemberThatLostItsConnectionHoldsWrites(t *testing.T) {
	clock := NewFakeClock()
	f := NewFabric(WithClock(clock))
	replica, target := raidOverFabric(t, f, `,"ctrlr_loss_timeout_sec":-1,"reconnect_delay_sec":1`)
	call(t, replica, "nvmf_subsystem_remove_host", cutTarget)
	seq, out := volumeWrite(f)
	if out != WriteHeld {
		t.Fatalf("a write while a member reconnects: %v, want held", out)
	}
	clock.Advance(time.Hour)
	if out := f.Outcome(seq); out != WriteHeld {
		t.Fatalf("an hour later the write is %v, want still held", out)
	}
	if _, err := target.handle(context.Background(), "bdev_raid_remove_base_bdev", json.RawMessage(`{"name":"rn1"}`)); err == nil || err.Code != CodeNotModeled {
		t.Fatalf("removing a member that holds writes: %v, want the endless quiesce refused", err)
	}
	call(t, replica, "nvmf_subsystem_add_host", cutTarget)
	if out := f.Outcome(seq); out != WriteAcked {
		t.Fatalf("after the member reconnected the write is %v", out)
	}
	if w := writesOf(t, f, "lvsR/l"); !slices.Equal(w, []uint64{seq}) {
		t.Fatalf("the member that reconnected holds %v, want [%d]", w, seq)
	}

	call(t, replica, "nvmf_subsystem_remove_host", cutTarget)
	seq, _ = volumeWrite(f)
	call(t, target, "bdev_nvme_detach_controller", `{"name":"r"}`)
	if out := f.Outcome(seq); out != WriteAcked {
		t.Fatalf("after the member was detached the write is %v", out)
	}
	if w := writesOf(t, f, "lvsR/l"); slices.Contains(w, seq) {
		t.Fatalf("the detached member holds write %d", seq)
	}
}

// With fast_io_fail_timeout_sec, held writes fail on the member once it
// has run out; the member leaves and the others acknowledge them.
func TestFastIOFailEndsTheHold(t *testing.T) {
	clock := NewFakeClock()
	f := NewFabric(WithClock(clock))
	replica, _ := raidOverFabric(t, f, `,"ctrlr_loss_timeout_sec":-1,"reconnect_delay_sec":1,"fast_io_fail_timeout_sec":2`)
	call(t, replica, "nvmf_subsystem_remove_host", cutTarget)
	seq, out := volumeWrite(f)
	if out != WriteHeld {
		t.Fatalf("a write within fast_io_fail_timeout_sec: %v, want held", out)
	}
	clock.Advance(2 * time.Second)
	if out := f.Outcome(seq); out != WriteAcked {
		t.Fatalf("after fast_io_fail_timeout_sec the write is %v", out)
	}
	if w := writesOf(t, f, "lvsR/l"); slices.Contains(w, seq) {
		t.Fatalf("the member whose I/O failed holds write %d", seq)
	}
}

// cutTarget names the target's host on the replica's subsystem.
const cutTarget = `{"nqn":"nqn.2026-01.io.test:r","host":"nqn.2026-01.io.test:t"}`

// raidOverFabric builds, on f, a raid1 "raid" on a target over its own
// lvol (lvsT/l) and a replica's (lvsR/l), the latter attached with the
// reconnect options opts (JSON members, may be empty), exported to host
// nqn.2026-01.io.test:h on port 4420.
func raidOverFabric(t *testing.T, f *Fabric, opts string) (replica, target *Target) {
	start := func(name string) *Target {
		tg, err := f.StartTarget(filepath.Join(t.TempDir(), name+".sock"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tg.Kill)
		return tg
	}
	replica, target = start("replica"), start("target")
	for _, c := range []struct {
		tg  *Target
		lvs string
	}{{replica, "lvsR"}, {target, "lvsT"}} {
		call(t, c.tg, "bdev_malloc_create", `{"name":"m`+c.lvs+`","num_blocks":8192,"block_size":4096}`)
		call(t, c.tg, "bdev_lvol_create_lvstore", `{"bdev_name":"m`+c.lvs+`","lvs_name":"`+c.lvs+`"}`)
		call(t, c.tg, "bdev_lvol_create", `{"lvol_name":"l","size_in_mib":8,"lvs_name":"`+c.lvs+`"}`)
		call(t, c.tg, "nvmf_create_transport", `{"trtype":"TCP"}`)
	}
	export := func(tg *Target, nqn, bdev, host, port string) {
		call(t, tg, "nvmf_create_subsystem", `{"nqn":"`+nqn+`"}`)
		call(t, tg, "nvmf_subsystem_add_host", `{"nqn":"`+nqn+`","host":"`+host+`"}`)
		call(t, tg, "nvmf_subsystem_add_ns", `{"nqn":"`+nqn+`","namespace":{"bdev_name":"`+bdev+`"}}`)
		call(t, tg, "nvmf_subsystem_add_listener", `{"nqn":"`+nqn+`","listen_address":{"trtype":"TCP","adrfam":"IPv4","traddr":"127.0.0.1","trsvcid":"`+port+`"}}`)
	}
	export(replica, "nqn.2026-01.io.test:r", "lvsR/l", "nqn.2026-01.io.test:t", "4421")
	call(t, target, "bdev_nvme_attach_controller", `{"name":"r","trtype":"TCP","adrfam":"IPv4","traddr":"127.0.0.1","trsvcid":"4421","subnqn":"nqn.2026-01.io.test:r","hostnqn":"nqn.2026-01.io.test:t"`+opts+`}`)
	call(t, target, "bdev_raid_create", `{"name":"raid","raid_level":"raid1","base_bdevs":["lvsT/l","rn1"]}`)
	export(target, "nqn.2026-01.io.test:v", "raid", "nqn.2026-01.io.test:h", "4420")
	return replica, target
}

func call(t *testing.T, tg *Target, method, params string) {
	t.Helper()
	if _, err := tg.handle(context.Background(), method, json.RawMessage(params)); err != nil {
		t.Fatalf("%s %s: %v", method, params, err)
	}
}

// volumeWrite is the host's write to the volume of raidOverFabric.
func volumeWrite(f *Fabric) (uint64, WriteOutcome) {
	return f.Write("127.0.0.1", 4420, "nqn.2026-01.io.test:v", "nqn.2026-01.io.test:h")
}

func writesOf(t *testing.T, f *Fabric, alias string) []uint64 {
	t.Helper()
	w, ok := f.Writes(alias)
	if !ok {
		t.Fatalf("no lvol %s", alias)
	}
	return w
}
