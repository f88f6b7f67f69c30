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

package jsonrpc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/flint-io/flint/internal/spdk/jsonrpc"
	"github.com/flint-io/flint/internal/spdk/spdktest"
)

// Whatever SPDK answers, a call ends with a result or an error and never
// panics; an answer that is not JSON is never taken, and the next call
// dials again.
func FuzzAnswer(f *testing.F) {
	for _, a := range spdktest.TranscriptAnswers(f) {
		f.Add(a)
	}
	f.Add([]byte(`"error":{"code":-19,"message":"No such device"}}`))
	f.Add([]byte(`"result":`))
	f.Add([]byte("\x00}"))
	f.Fuzz(func(t *testing.T, tail []byte) {
		c := jsonrpc.NewClient(spdktest.AnsweringOnce(t, func(string) []byte { return tail }))
		defer func() { _ = c.Close() }()
		for range 2 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			var result any
			err := c.Call(ctx, "bdev_get_bdevs", nil, &result)
			cancel()
			var answer map[string]any
			if err == nil && json.NewDecoder(bytes.NewReader(append([]byte(`{"id":1,`), tail...))).Decode(&answer) != nil {
				t.Fatalf("an answer that is not JSON was taken: %q", tail)
			}
		}
	})
}
