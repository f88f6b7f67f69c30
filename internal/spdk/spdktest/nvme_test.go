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

	"github.com/flint-io/flint/internal/spdk/types"
)

// bdev_nvme_send_cmd reaches the device as the NVMe specification says: a
// volatile write cache is on after every attach (a controller reset), Set
// Features turns it off, a controller without one fails the feature with
// Invalid Field, and an unknown controller is SPDK's -32602.
func TestSendCmdModelsTheWriteCache(t *testing.T) {
	f := NewFabric()
	f.AddPCIeDevice("0000:3b:00.0", 1<<30, "SN1", "cached", WithVolatileWriteCache())
	f.AddPCIeDevice("0000:5e:00.0", 1<<30, "SN2", "plain")
	tg, err := f.StartTarget(filepath.Join(t.TempDir(), "t.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Kill()
	call := func(method string, params any) (any, *rpcError) {
		b, _ := json.Marshal(params)
		return tg.handle(context.Background(), method, b)
	}
	attach := func(name, addr string) {
		if _, err := call("bdev_nvme_attach_controller", map[string]string{"name": name, "trtype": "pcie", "traddr": addr}); err != nil {
			t.Fatal(err)
		}
	}
	send := func(name string, cmd types.NvmeCommand) types.NvmeCompletion {
		res, err := call("bdev_nvme_send_cmd", types.BdevNvmeSendCmdRequest{Name: name, CmdType: "admin", DataDirection: "c2h", Cmdbuf: cmd.Encode()})
		if err != nil {
			t.Fatal(err)
		}
		cpl, derr := types.DecodeNvmeCompletion(res.(map[string]any)["cpl"].(string))
		if derr != nil {
			t.Fatal(derr)
		}
		return cpl
	}
	get := types.NvmeCommand{Opcode: types.NvmeOpcodeGetFeatures, CDW10: types.NvmeFeatureVolatileWriteCache}
	off := types.NvmeCommand{Opcode: types.NvmeOpcodeSetFeatures, CDW10: types.NvmeFeatureVolatileWriteCache}

	attach("c", "0000:3b:00.0")
	if cpl := send("c", get); !cpl.OK() || cpl.CDW0 != 1 {
		t.Fatalf("a fresh controller's cache: %+v, want on", cpl)
	}
	if cpl := send("c", off); !cpl.OK() {
		t.Fatalf("set features: %s", cpl)
	}
	if cpl := send("c", get); cpl.CDW0 != 0 || !f.disks[pcieKey("0000:3b:00.0")].volatileWriteCache || f.WriteCacheEnabled("0000:3b:00.0") {
		t.Fatalf("after set features: %+v, want off", cpl)
	}
	if _, err := call("bdev_nvme_detach_controller", map[string]string{"name": "c"}); err != nil {
		t.Fatal(err)
	}
	attach("c", "0000:3b:00.0")
	if cpl := send("c", get); cpl.CDW0 != 1 {
		t.Errorf("after a re-attach: %+v, want the cache on again", cpl)
	}

	attach("p", "0000:5e:00.0")
	if cpl := send("p", get); cpl.OK() || cpl.StatusCode != 0x02 {
		t.Errorf("the feature on a controller without a cache: %+v, want Invalid Field", cpl)
	}
	if _, err := call("bdev_nvme_send_cmd", types.BdevNvmeSendCmdRequest{Name: "nope", CmdType: "admin", DataDirection: "c2h", Cmdbuf: get.Encode()}); err == nil || err.Code != -32602 {
		t.Errorf("an unknown controller: %v, want -32602", err)
	}
}
