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

package upstream

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// archive makes dir/<top>.tar.gz holding top/hello and returns its path.
func archive(t *testing.T, dir, top string) string {
	t.Helper()
	tree := filepath.Join(t.TempDir(), top)
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "hello"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, top+".tar.gz")
	if out, err := exec.Command("tar", "-czf", path, "-C", filepath.Dir(tree), top).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v: %s", err, out)
	}
	return path
}

func writeSums(t *testing.T, dir string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestArchiveListedInSumsUnpacksWithoutItsTopFolder(t *testing.T) {
	dir := t.TempDir()
	path := archive(t, dir, "spdk-v25.09")
	digest, err := fileDigest(path)
	if err != nil {
		t.Fatal(err)
	}
	writeSums(t, dir, "0000  other.tar.gz", digest+"  spdk-v25.09.tar.gz")
	src, err := Open(path, "spdk", "v25.09", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if src.Digest != digest {
		t.Errorf("digest %s, want the archive's %s", src.Digest, digest)
	}
	into := t.TempDir()
	if err := src.Unpack(into); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(into, "hello")); err != nil || string(data) != "hello\n" {
		t.Errorf("unpacked hello: %q, %v", data, err)
	}
}

func TestArchiveRefused(t *testing.T) {
	for _, tc := range []struct {
		name, top, want string
		sums            func(digest string) []string
	}{
		{"digest differs", "spdk-v25.09", "the archive is damaged", func(string) []string {
			return []string{strings.Repeat("0", 64) + "  spdk-v25.09.tar.gz"}
		}},
		{"not listed", "spdk-v25.09", "does not list spdk-v25.09.tar.gz", func(string) []string {
			return []string{strings.Repeat("0", 64) + "  dpdk-v25.07.tar.gz"}
		}},
		{"another tag inside", "spdk-v24.01", `holds "spdk-v24.01/", not spdk-v25.09/`, func(digest string) []string {
			return []string{digest + "  spdk-v24.01.tar.gz"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := archive(t, dir, tc.top)
			digest, err := fileDigest(path)
			if err != nil {
				t.Fatal(err)
			}
			writeSums(t, dir, tc.sums(digest)...)
			_, err = Open(path, "spdk", "v25.09", t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestArchiveWithoutSumsRefused(t *testing.T) {
	path := archive(t, t.TempDir(), "dpdk-v25.07")
	if _, err := Open(path, "dpdk", "v25.07", t.TempDir()); err == nil || !strings.Contains(err.Error(), "SHA256SUMS") {
		t.Fatalf("Open: %v, want an error naming SHA256SUMS", err)
	}
}

func TestRepositoryAtTag(t *testing.T) {
	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(repo, "hello"), []byte("v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "hello")
	git("commit", "-q", "-m", "one")
	git("tag", "v1")
	commit := git("rev-parse", "HEAD")
	src, err := Open(repo, "x", "v1", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if src.Digest != commit {
		t.Errorf("digest %s, want the tag's commit %s", src.Digest, commit)
	}
	into := t.TempDir()
	if err := src.Unpack(into); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(into, "hello")); string(data) != "v1\n" {
		t.Errorf("unpacked hello: %q", data)
	}
	if _, err := Open(repo, "x", "v2", t.TempDir()); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("holds no tag %s", "v2")) {
		t.Errorf("Open at a missing tag: %v", err)
	}
}
