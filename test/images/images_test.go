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

// Package images runs each image `make images` built with runc, the way a
// kubelet's runtime would: from its OCI archive, unpacked, with its own
// entrypoint and user, asking for --version.
package images

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

func TestImagesRun(t *testing.T) {
	dir, version := os.Getenv("FLINT_IMAGES_DIR"), os.Getenv("FLINT_IMAGES_VERSION")
	if dir == "" || version == "" {
		t.Skip("make test-images builds the images and sets FLINT_IMAGES_DIR and FLINT_IMAGES_VERSION")
	}
	for image, binary := range map[string]string{"flint-operator": "operator", "flint-csi-driver": "csi-driver", "flint-bench": "flint-bench"} {
		t.Run(image, func(t *testing.T) {
			bundle := t.TempDir()
			entrypoint, user := unpack(t, filepath.Join(dir, image+".tar"), "ghcr.io/flint-io/"+image+":"+version, filepath.Join(bundle, "rootfs"))
			out := runc(t, bundle, image, append(entrypoint, "--version"), user)
			if want := binary + " " + version + " ("; !strings.HasPrefix(out, want) {
				t.Fatalf("%s --version printed %q, want it to start with %q", image, out, want)
			}
			t.Logf("%s: %s", image, strings.TrimSpace(out))
		})
	}
	tools := []string{"/usr/sbin/mkfs.ext4", "/usr/sbin/mkfs.xfs", "/usr/sbin/resize2fs", "/usr/sbin/xfs_growfs", "/usr/sbin/blkid", "/usr/bin/mount"}
	t.Run("flint-csi-driver holds what NodeStage runs", func(t *testing.T) {
		bundle := t.TempDir()
		unpack(t, filepath.Join(dir, "flint-csi-driver.tar"), "ghcr.io/flint-io/flint-csi-driver:"+version, filepath.Join(bundle, "rootfs"))
		for _, tool := range tools {
			if _, err := os.Stat(filepath.Join(bundle, "rootfs", tool)); err != nil {
				t.Errorf("the CSI image lacks %s", tool)
			}
		}
		out := runc(t, bundle, "csi-tools", []string{"/usr/sbin/mkfs.xfs", "-V"}, "0:0")
		if !strings.Contains(out, "mkfs.xfs version") {
			t.Errorf("mkfs.xfs -V printed %q", out)
		}
	})
	t.Run("flint-bench runs fio", func(t *testing.T) {
		bundle := t.TempDir()
		unpack(t, filepath.Join(dir, "flint-bench.tar"), "ghcr.io/flint-io/flint-bench:"+version, filepath.Join(bundle, "rootfs"))
		if out := runc(t, bundle, "bench-fio", []string{"fio", "--version"}, "0:0"); !strings.HasPrefix(out, "fio-") {
			t.Errorf("fio --version printed %q", out)
		}
	})
}

// unpack reads the OCI archive, checks the image is named ref, writes its
// filesystem to rootfs and returns its entrypoint and user.
func unpack(t *testing.T, archive, ref, rootfs string) ([]string, string) {
	t.Helper()
	dir := t.TempDir()
	untar(t, openFile(t, archive), dir)
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) != 1 {
		t.Fatalf("index of %s: %v, %+v", archive, err, m)
	}
	if got := m.Manifests[0].Annotations["io.containerd.image.name"]; got != ref {
		t.Fatalf("%s names its image %q, want %q", archive, got, ref)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	fs := mutate.Extract(img)
	defer func() { _ = fs.Close() }()
	untar(t, fs, rootfs)
	return cfg.Config.Entrypoint, cfg.Config.User
}

func openFile(t *testing.T, path string) io.Reader {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// untar writes a tar stream's directories, files and links under dst.
func untar(t *testing.T, r io.Reader, dst string) {
	t.Helper()
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dst, filepath.Clean("/"+hdr.Name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, os.FileMode(hdr.Mode)&os.ModePerm|0o700)
		case tar.TypeReg:
			var f *os.File
			if f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(hdr.Mode)&os.ModePerm); err == nil {
				_, err = io.Copy(f, tr)
				_ = f.Close()
			}
		case tar.TypeSymlink:
			_ = os.Remove(path)
			err = os.Symlink(hdr.Linkname, path)
		case tar.TypeLink:
			_ = os.Remove(path)
			err = os.Link(filepath.Join(dst, filepath.Clean("/"+hdr.Linkname)), path)
		}
		if err != nil {
			t.Fatalf("%s: %v", hdr.Name, err)
		}
	}
}

// runc runs args in the bundle as user ("uid:gid") with runc's default
// spec and a read-only root, and returns what it printed.
func runc(t *testing.T, bundle, id string, args []string, user string) string {
	t.Helper()
	writeSpec(t, bundle, func(spec map[string]any) {
		process := spec["process"].(map[string]any)
		process["args"] = args
		var uid, gid int
		if _, err := fmt.Sscanf(user, "%d:%d", &uid, &gid); err != nil {
			t.Fatalf("image user %q: %v", user, err)
		}
		process["user"] = map[string]any{"uid": uid, "gid": gid}
		spec["root"] = map[string]any{"path": "rootfs", "readonly": true}
	})
	cmd := exec.Command("runc", "--root", filepath.Join(bundle, "state"), "run", "--bundle", bundle, "flint-test-"+id)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("runc run %v: %v: %s", args, err, out)
	}
	return string(out)
}

// writeSpec writes runc's default spec, without a terminal, as edit
// changes it, into the bundle.
func writeSpec(t *testing.T, bundle string, edit func(spec map[string]any)) {
	t.Helper()
	if out, err := exec.Command("runc", "spec", "--bundle", bundle).CombinedOutput(); err != nil {
		t.Fatalf("runc spec: %v: %s (apt-get install runc)", err, out)
	}
	path := filepath.Join(bundle, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	spec["process"].(map[string]any)["terminal"] = false
	edit(spec)
	if data, err = json.Marshal(spec); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
