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
)

// A host write reaches every member of a raid1, local and remote; a
// member whose subsystem no longer admits the target fails the write and
// leaves the raid while the write is acknowledged by the others, as
// SPDK's raid1 completes it; a host the subsystem does not admit writes
// nothing.
func TestHostWritesFollowTheRaid(t *testing.T) {
	f := NewFabric()
	start := func(name string) func(method, params string) {
		tg, err := f.StartTarget(filepath.Join(t.TempDir(), name+".sock"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tg.Kill)
		return func(method, params string) {
			t.Helper()
			if _, err := tg.handle(context.Background(), method, json.RawMessage(params)); err != nil {
				t.Fatalf("%s %s: %v", method, params, err)
			}
		}
	}
	replica, target := start("replica"), start("target")
	for _, c := range []struct {
		call func(method, params string)
		lvs  string
	}{{replica, "lvsR"}, {target, "lvsT"}} {
		c.call("bdev_malloc_create", `{"name":"m`+c.lvs+`","num_blocks":8192,"block_size":4096}`)
		c.call("bdev_lvol_create_lvstore", `{"bdev_name":"m`+c.lvs+`","lvs_name":"`+c.lvs+`"}`)
		c.call("bdev_lvol_create", `{"lvol_name":"l","size_in_mib":8,"lvs_name":"`+c.lvs+`"}`)
		c.call("nvmf_create_transport", `{"trtype":"TCP"}`)
	}
	export := func(call func(method, params string), nqn, bdev, host, port string) {
		call("nvmf_create_subsystem", `{"nqn":"`+nqn+`"}`)
		call("nvmf_subsystem_add_host", `{"nqn":"`+nqn+`","host":"`+host+`"}`)
		call("nvmf_subsystem_add_ns", `{"nqn":"`+nqn+`","namespace":{"bdev_name":"`+bdev+`"}}`)
		call("nvmf_subsystem_add_listener", `{"nqn":"`+nqn+`","listen_address":{"trtype":"TCP","adrfam":"IPv4","traddr":"127.0.0.1","trsvcid":"`+port+`"}}`)
	}
	export(replica, "nqn.2026-01.io.test:r", "lvsR/l", "nqn.2026-01.io.test:t", "4421")
	target("bdev_nvme_attach_controller", `{"name":"r","trtype":"TCP","adrfam":"IPv4","traddr":"127.0.0.1","trsvcid":"4421","subnqn":"nqn.2026-01.io.test:r","hostnqn":"nqn.2026-01.io.test:t"}`)
	target("bdev_raid_create", `{"name":"raid","raid_level":"raid1","base_bdevs":["lvsT/l","rn1"]}`)
	export(target, "nqn.2026-01.io.test:v", "raid", "nqn.2026-01.io.test:h", "4420")

	writes := func(alias string) []uint64 {
		w, ok := f.Writes(alias)
		if !ok {
			t.Fatalf("no lvol %s", alias)
		}
		return w
	}
	if seq, acked := f.Write("127.0.0.1", 4420, "nqn.2026-01.io.test:v", "nqn.2026-01.io.test:h"); !acked || seq != 1 {
		t.Fatalf("first write = %d, %v", seq, acked)
	}
	if !slices.Equal(writes("lvsT/l"), []uint64{1}) || !slices.Equal(writes("lvsR/l"), []uint64{1}) {
		t.Fatalf("after one write: target %v, replica %v", writes("lvsT/l"), writes("lvsR/l"))
	}
	if _, acked := f.Write("127.0.0.1", 4420, "nqn.2026-01.io.test:v", "nqn.2026-01.io.test:other"); acked {
		t.Fatal("a host the subsystem does not admit had a write acknowledged")
	}
	replica("nvmf_subsystem_remove_host", `{"nqn":"nqn.2026-01.io.test:r","host":"nqn.2026-01.io.test:t"}`)
	if _, acked := f.Write("127.0.0.1", 4420, "nqn.2026-01.io.test:v", "nqn.2026-01.io.test:h"); !acked {
		t.Fatal("a write the local member took was not acknowledged")
	}
	if !slices.Equal(writes("lvsT/l"), []uint64{1, 3}) || !slices.Equal(writes("lvsR/l"), []uint64{1}) {
		t.Fatalf("after the replica fenced the target: target %v, replica %v", writes("lvsT/l"), writes("lvsR/l"))
	}
}
