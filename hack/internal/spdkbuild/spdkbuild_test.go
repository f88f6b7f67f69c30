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

package spdkbuild

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flint-io/flint/hack/internal/upstream"
	"github.com/flint-io/flint/internal/version"
)

// sources makes the SPDK and DPDK archives of the pinned tags, each
// holding marker, with their SHA256SUMS.
func sources(t *testing.T, marker string) (spdk, dpdk string) {
	t.Helper()
	dir := t.TempDir()
	var sums []string
	for _, top := range []string{"spdk-" + version.SPDK, "dpdk-" + version.DPDK} {
		tree := filepath.Join(t.TempDir(), top)
		if err := os.MkdirAll(tree, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tree, "marker"), []byte(marker), 0o644); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, top+".tar.gz")
		if out, err := exec.Command("tar", "-czf", path, "-C", filepath.Dir(tree), top).CombinedOutput(); err != nil {
			t.Fatalf("tar: %v: %s", err, out)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		sums = append(sums, hex.EncodeToString(sum[:])+"  "+filepath.Base(path))
	}
	if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(strings.Join(sums, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "spdk-"+version.SPDK+".tar.gz"), filepath.Join(dir, "dpdk-"+version.DPDK+".tar.gz")
}

// A build of the same sources and recipe is taken from the cache; other
// sources are another entry, which is built (here: refused, as there is
// no mmdebstrap on PATH).
func TestCachedBuildKeyedBySources(t *testing.T) {
	cache := t.TempDir()
	spdkRef, dpdkRef := sources(t, "one")
	spdk, err := upstream.Open(spdkRef, "spdk", version.SPDK, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dpdk, err := upstream.Open(dpdkRef, "dpdk", version.DPDK, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir, err := entry(cache, spdk, dpdk)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"packages": "libaio1\nlibssl3\n", "host-packages": "libaio1\nlibnuma1\nlibssl3\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// What unpacking needs, and no mmdebstrap.
	bin := t.TempDir()
	for _, tool := range []string{"sh", "tar", "gzip", "head"} {
		path, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(path, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)

	b, err := Ensure(spdkRef, dpdkRef, cache)
	if err != nil {
		t.Fatalf("Ensure with a cached build: %v", err)
	}
	if b.Dir != dir || b.ImageRoot != filepath.Join(dir, "image-root.tar") {
		t.Errorf("build in %s (image root %s), want the cached %s", b.Dir, b.ImageRoot, dir)
	}
	if !slices.Equal(b.ImagePackages, []string{"libaio1", "libssl3"}) || !slices.Equal(b.HostPackages, []string{"libaio1", "libnuma1", "libssl3"}) {
		t.Errorf("packages %v, host packages %v", b.ImagePackages, b.HostPackages)
	}

	otherSPDK, otherDPDK := sources(t, "two")
	if _, err := Ensure(otherSPDK, otherDPDK, cache); err == nil || !strings.Contains(err.Error(), "apt-get install mmdebstrap") {
		t.Fatalf("Ensure with other sources: %v, want a build, refused for want of mmdebstrap", err)
	}
}

func TestSourcesRequired(t *testing.T) {
	if _, err := Ensure("", "", t.TempDir()); err == nil || !strings.Contains(err.Error(), "SPDK_SRC and DPDK_SRC") {
		t.Fatalf("Ensure without sources: %v", err)
	}
}
