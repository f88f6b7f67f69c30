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
	"testing"
	"time"
)

// A raid1 rebuild follows the Fabric's clock, and the raid takes no other
// member while it runs (as SPDK v25.09 answered in make test-spdk).
func TestRaidRebuildFollowsTheClock(t *testing.T) {
	clock := NewFakeClock()
	f := NewFabric(WithClock(clock), WithRebuildRate(1024))
	tg, err := f.StartTarget(filepath.Join(t.TempDir(), "t.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Kill()
	call := func(method, params string) (any, *rpcError) {
		return tg.handle(context.Background(), method, json.RawMessage(params))
	}
	for _, m := range []string{"m0", "m1", "m2"} {
		if _, err := call("bdev_malloc_create", `{"name":"`+m+`","num_blocks":4096,"block_size":4096}`); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := call("bdev_raid_create", `{"name":"r","raid_level":"raid1","base_bdevs":["m0","m1"]}`); err != nil {
		t.Fatal(err)
	}
	if _, err := call("bdev_raid_remove_base_bdev", `{"name":"m1"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := call("bdev_raid_add_base_bdev", `{"raid_bdev":"r","base_bdev":"m2"}`); err != nil {
		t.Fatal(err)
	}
	progress := func() any {
		res, err := call("bdev_raid_get_bdevs", `{"category":"all"}`)
		if err != nil {
			t.Fatal(err)
		}
		return res.([]any)[0].(map[string]any)["process"]
	}
	clock.Advance(2 * time.Second)
	p, _ := progress().(map[string]any)
	if p == nil || p["target"] != "m2" || p["progress"].(map[string]any)["percent"] != 50 {
		t.Fatalf("after 2 s at 1024 blocks/s of 4096: process = %v, want m2 at 50%%", p)
	}
	if _, err := call("bdev_raid_add_base_bdev", `{"raid_bdev":"r","base_bdev":"m1"}`); err == nil || err.Code != -1 {
		t.Errorf("adding a member during a rebuild: %v, want -1 Operation not permitted", err)
	}
	clock.Advance(2 * time.Second)
	if p := progress(); p != nil {
		t.Errorf("after 4 s the rebuild should be done: %v", p)
	}
}
