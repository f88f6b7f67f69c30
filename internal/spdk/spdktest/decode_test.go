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

	"github.com/flint-io/flint/internal/spdk/jsonrpc"
)

// SPDK's decoders each want one JSON type, and null is none of them: a
// parameter given as null fails the decode, whichever method takes it.
func TestANullParameterFailsTheDecode(t *testing.T) {
	tg, err := NewFabric().StartTarget(filepath.Join(t.TempDir(), "t.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Kill()
	if _, err := tg.handle(context.Background(), "bdev_malloc_create", json.RawMessage(`{"name":"m0","num_blocks":4096,"block_size":4096}`)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, params string }{
		{"bdev_set_qos_limit", `{"name":"m0","rw_ios_per_sec":null}`},
		{"bdev_malloc_create", `{"name":null,"num_blocks":4096,"block_size":4096}`},
	} {
		if _, err := tg.handle(context.Background(), c.method, json.RawMessage(c.params)); err == nil || err.Code != jsonrpc.CodeInternalError {
			t.Errorf("%s %s: %v, want SPDK's decode failure", c.method, c.params, err)
		}
	}
}
