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

package transcript

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestImageIsMadeOnceAndNamedBack(t *testing.T) {
	dir := t.TempDir()
	path, ok := Image(dir, "/tmp/r1.img")
	if !ok || path != filepath.Join(dir, "r1.img") {
		t.Fatalf("Image = %q, %v", path, ok)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != ImageSize {
		t.Fatalf("the image: %v, %v", st, err)
	}
	if recorded, ok := Recorded(dir, path); !ok || recorded != "/tmp/r1.img" {
		t.Errorf("Recorded = %q, %v", recorded, ok)
	}
	for _, s := range []string{"/tmp/r1.bin", "r1.img", "/var/tmp/r1.img"} {
		if _, ok := Image(dir, s); ok {
			t.Errorf("Image took %q for an image", s)
		}
	}
	if _, ok := Recorded(dir, filepath.Join(dir, "sub", "r1.img")); ok {
		t.Error("Recorded named a file below dir's own images")
	}
}

func TestWriteThenRead(t *testing.T) {
	lines := []Line{
		{Step: "start", Target: "tgt", Event: "nvmf_tgt --no-huge -s 2048 -m 0x1"},
		{Step: "version", Target: "tgt", Request: []byte(`{"jsonrpc":"2.0","method":"spdk_get_version","id":1}`),
			Response: []byte(`{"jsonrpc":"2.0","id":1,"result":{"version":"SPDK v25.09 <x>"}}`)},
	}
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := Write(path, lines); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, lines) {
		t.Errorf("read back %+v, want %+v", got, lines)
	}
}
