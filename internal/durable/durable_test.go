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

package durable

import (
	"os"
	"path/filepath"
	"testing"
)

// A missing file reads as none, a written one reads back, and a torn one
// is an error, never an empty value.
func TestJSONRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	got := map[string]int{"kept": 1}
	if found, err := ReadJSON(path, &got); found || err != nil || got["kept"] != 1 {
		t.Fatalf("a missing file: found %t, %v, value %v", found, err, got)
	}
	if err := WriteJSON(path, map[string]int{"a": 2}, 0o600); err != nil {
		t.Fatal(err)
	}
	got = map[string]int{}
	if found, err := ReadJSON(path, &got); !found || err != nil || got["a"] != 2 {
		t.Fatalf("read back: found %t, %v, value %v", found, err, got)
	}
	if err := os.WriteFile(path, []byte(`{"a":`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadJSON(path, &got); err == nil {
		t.Fatal("a torn file read without error")
	}
}
