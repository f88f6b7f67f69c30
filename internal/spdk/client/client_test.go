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

package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/flint-io/flint/internal/spdk/jsonrpc"
	"github.com/flint-io/flint/internal/spdk/spdktest"
	"github.com/flint-io/flint/internal/spdk/types"
)

// emptyLists answers every call with an empty list, as no SPDK does for a
// lookup by name: a malformed answer the agent must not index into.
func emptyLists(t *testing.T) string {
	return spdktest.Answering(t, func(string) []byte { return []byte(`"jsonrpc":"2.0","result":[]}`) })
}

func TestLookupsByNameNeverAnswerAnEmptyList(t *testing.T) {
	c := New(emptyLists(t))
	defer func() { _ = c.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lookups := map[string]func(string) (int, error){
		"bdev_get_bdevs": func(n string) (int, error) { l, err := c.BdevGetBdevs(ctx, n); return len(l), err },
		"bdev_lvol_get_lvstores": func(n string) (int, error) {
			l, err := c.BdevLvolGetLvstores(ctx, types.LvstoreSelector{LvsName: n})
			return len(l), err
		},
		"nvmf_get_subsystems": func(n string) (int, error) { l, err := c.NvmfGetSubsystems(ctx, n); return len(l), err },
		"nvmf_get_transports": func(n string) (int, error) { l, err := c.NvmfGetTransports(ctx, n); return len(l), err },
	}
	for method, lookup := range lookups {
		if _, err := lookup("x"); !errors.Is(err, jsonrpc.ErrNotFound) {
			t.Errorf("%s by name answered an empty list: err = %v, want ErrNotFound", method, err)
		}
		if n, err := lookup(""); err != nil || n != 0 {
			t.Errorf("%s of everything: %d items, %v; an empty list is a valid answer", method, n, err)
		}
	}
}
