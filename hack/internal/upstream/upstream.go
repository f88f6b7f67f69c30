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

// Package upstream opens the upstream sources Flint builds but no package
// registry serves (SPDK, DPDK, two CSI sidecars): a `git archive` tarball
// checked against the SHA256SUMS beside it, or a git repository (a path or
// a URL) that holds the pinned tag. Nothing of them is ever committed.
package upstream

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Source is one project's source tree at a pinned tag.
type Source struct {
	// Ref is what was given: an archive's path, a repository's path or URL.
	Ref string
	// Digest names the tree: the archive's SHA-256, or the tag's commit.
	Digest string
	unpack func(dir string) error
}

// IsArchive says whether ref names a tarball rather than a git repository.
func IsArchive(ref string) bool {
	for _, ext := range []string{".tar.gz", ".tgz", ".tar"} {
		if strings.HasSuffix(ref, ext) {
			return true
		}
	}
	return false
}

// Open resolves ref to the sources of project at tag. An archive must be
// `<project>-<tag>` in one top folder and listed, with its digest, in the
// SHA256SUMS beside it. A URL is cloned (shallow, bare) under work.
func Open(ref, project, tag, work string) (Source, error) {
	if IsArchive(ref) {
		return openArchive(ref, project, tag)
	}
	return openRepository(ref, tag, work)
}

// Unpack writes the tree into dir, which must exist.
func (s Source) Unpack(dir string) error { return s.unpack(dir) }

func openArchive(path, project, tag string) (Source, error) {
	path, err := filepath.Abs(path)
	if err != nil {
		return Source{}, err
	}
	digest, err := fileDigest(path)
	if err != nil {
		return Source{}, err
	}
	sums := filepath.Join(filepath.Dir(path), "SHA256SUMS")
	want, err := listedDigest(sums, filepath.Base(path))
	if err != nil {
		return Source{}, err
	}
	if digest != want {
		return Source{}, fmt.Errorf("%s: SHA-256 %s, but %s lists %s: the archive is damaged or not the pinned one; copy it again", path, digest, sums, want)
	}
	top := project + "-" + tag
	if err := checkTopFolder(path, top); err != nil {
		return Source{}, err
	}
	return Source{Ref: path, Digest: digest, unpack: func(dir string) error {
		out, err := exec.Command("tar", "-x", "-f", path, "-C", dir, "--strip-components=1", top).CombinedOutput()
		if err != nil {
			return fmt.Errorf("unpack %s: %v: %s", path, err, out)
		}
		return nil
	}}, nil
}

func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// listedDigest is name's digest in a sha256sum-style list.
func listedDigest(sums, name string) (string, error) {
	f, err := os.Open(sums)
	if err != nil {
		return "", fmt.Errorf("an archive is checked against the SHA256SUMS beside it: %w", err)
	}
	defer func() { _ = f.Close() }()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) == 2 && strings.TrimPrefix(fields[1], "*") == name {
			return fields[0], nil
		}
	}
	if err := scanner.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s does not list %s: add its digest (sha256sum) or give the pinned archive", sums, name)
}

// checkTopFolder fails unless the archive's first entry is top/: a tarball
// of another tag would otherwise build silently.
func checkTopFolder(path, top string) error {
	out, err := exec.Command("sh", "-c", `tar -t -f "$1" | head -n 1`, "sh", path).Output()
	if err != nil {
		return fmt.Errorf("list %s: %w", path, err)
	}
	if first := strings.TrimSpace(string(out)); strings.TrimSuffix(first, "/") != top {
		return fmt.Errorf("%s holds %q, not %s/: give the archive of the pinned tag", path, first, top)
	}
	return nil
}

func openRepository(ref, tag, work string) (Source, error) {
	repo := ref
	if strings.Contains(ref, "://") || strings.HasPrefix(ref, "git@") {
		repo = filepath.Join(work, filepath.Base(strings.TrimSuffix(ref, ".git"))+".git")
		if out, err := exec.Command("git", "clone", "--quiet", "--bare", "--depth=1", "--branch", tag, ref, repo).CombinedOutput(); err != nil {
			return Source{}, fmt.Errorf("clone %s at %s: %v: %s", ref, tag, err, out)
		}
	}
	out, err := exec.Command("git", "-C", repo, "rev-parse", "--verify", tag+"^{commit}").CombinedOutput()
	if err != nil {
		return Source{}, fmt.Errorf("%s holds no tag %s (give its archive, or a git repository of it: a path or a URL): %v: %s", ref, tag, err, strings.TrimSpace(string(out)))
	}
	return Source{Ref: ref, Digest: strings.TrimSpace(string(out)), unpack: func(dir string) error {
		out, err := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", repo, tag, dir).CombinedOutput()
		if err != nil {
			return fmt.Errorf("git archive %s of %s: %v: %s", tag, ref, err, out)
		}
		return nil
	}}, nil
}
