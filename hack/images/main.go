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

// Command images builds Flint's container images with no container
// engine: each is, at most, a Debian bookworm root made by mmdebstrap
// with the packages the binary uses, plus a layer with the static Go
// binary; the OSD image has flint_tgt and nvmf_tgt, built from SPDK's and DPDK's
// sources in a Debian build root (osd.go), in between. Each is written as
// an OCI image archive, which `ctr images import` and `skopeo copy
// oci-archive:` take, and pushed when a registry is given.
package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	flintversion "github.com/flint-io/flint/internal/version"
)

// image is one of Flint's images.
type image struct {
	name string
	// binary is the command under cmd/ the image runs.
	binary string
	// packages are the Debian packages its base holds; none: the binary
	// alone.
	packages []string
	// user runs the binary; the CSI node plugin mounts and must be root.
	user string
	// layers go between the base and the binary: the OSD image's SPDK.
	layers []v1.Layer
	// ref names the image instead of -repository, name and -version;
	// aliases are more names of the same image.
	ref     string
	aliases []string
	// compile builds the binary; by default from cmd/<binary>.
	compile func(version string) ([]byte, error)
	// entrypoint and cmd replace the default entrypoint, the binary.
	entrypoint, cmd []string
}

var images = []image{
	{name: "flint-operator", binary: "operator", user: "65532:65532"},
	// What NodeStage and NodeExpand run: mkfs.ext4, resize2fs (e2fsprogs),
	// mkfs.xfs, xfs_growfs (xfsprogs), mount and blkid (mount, util-linux).
	{name: "flint-csi-driver", binary: "csi-driver", packages: []string{"e2fsprogs", "xfsprogs", "mount"}, user: "0:0"},
	// kubectl flint bench runs it on a raw block PVC, which only root opens.
	{name: "flint-bench", binary: "flint-bench", packages: []string{"fio"}, user: "0:0"},
}

func main() {
	out := flag.String("out", "_output/images", "where the OCI image archives are written")
	version := flag.String("version", "dev", "the images' tag and the binaries' version")
	repo := flag.String("repository", "ghcr.io/flint-io", "the repository the images are named in")
	push := flag.String("push", "", "a registry (host[/path]) to push the images to, named as in -repository otherwise")
	cache := flag.String("cache", filepath.Join(os.Getenv("HOME"), ".cache", "flint", "images"), "where Debian bases and sidecar builds are kept between builds (SPDK builds: make spdk's cache)")
	var srcs spdkSources
	flag.StringVar(&srcs.spdk, "spdk-src", "", "SPDK's sources for the OSD image: the archive of tag "+flintversion.SPDK+" (checked against the SHA256SUMS beside it) or a git repository holding the tag (a path or a URL); built once into make spdk's cache")
	flag.StringVar(&srcs.dpdk, "dpdk-src", "", "DPDK's sources for the OSD image, of tag "+flintversion.DPDK+", as -spdk-src")
	lab := flag.Bool("lab", false, "also build the e2e lab's images: the pod sandbox and the CSI sidecars charts/flint/values.yaml names")
	var labSrcs labSources
	flag.StringVar(&labSrcs.registrar, "registrar-src", "", "node-driver-registrar's sources (its archive, checked against the SHA256SUMS beside it, or a git repository: a path or a URL), for -lab")
	flag.StringVar(&labSrcs.livenessProbe, "livenessprobe-src", "", "livenessprobe's sources, as -registrar-src, for -lab")
	flag.StringVar(&labSrcs.suiteAssets, "suite-assets", "", "a directory holding e2e.test and agnhost (hack/envtest-assets.sh e2e.test agnhost), for -lab: also build the images Kubernetes' storage e2e suite runs")
	flag.Parse()
	if err := run(*out, *version, *repo, *push, *cache, srcs, *lab, labSrcs); err != nil {
		fmt.Fprintf(os.Stderr, "images: %v\n", err)
		os.Exit(1)
	}
}

func run(out, version, repo, push, cache string, srcs spdkSources, lab bool, labSrcs labSources) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	created, err := commitTime()
	if err != nil {
		return err
	}
	all := images
	if srcs == (spdkSources{}) {
		fmt.Printf("flint-osd skipped: it builds SPDK %s on DPDK %s from their sources; give SPDK_SRC and DPDK_SRC (archives or git repositories)\n", flintversion.SPDK, flintversion.DPDK)
	} else {
		osd, err := osdImage(srcs)
		if err != nil {
			return fmt.Errorf("flint-osd: %w", err)
		}
		all = append(all, osd)
	}
	if lab {
		labs, skipped, err := labImages(labSrcs, cache, created)
		if err != nil {
			return err
		}
		for _, why := range skipped {
			fmt.Println(why)
		}
		all = append(all, labs...)
	}
	for _, im := range all {
		img, err := build(im, version, cache, created)
		if err != nil {
			return fmt.Errorf("%s: %w", im.name, err)
		}
		ref := repo + "/" + im.name + ":" + version
		if im.ref != "" {
			ref = im.ref
		}
		archive := filepath.Join(out, im.name+".tar")
		refs := append([]string{ref}, im.aliases...)
		if err := writeArchive(img, refs, archive); err != nil {
			return fmt.Errorf("%s: %w", im.name, err)
		}
		fmt.Printf("%s -> %s\n", strings.Join(refs, ", "), archive)
		if push != "" && im.ref == "" {
			dst := push + "/" + im.name + ":" + version
			tag, err := name.NewTag(dst)
			if err != nil {
				return err
			}
			if err := remote.Write(tag, img, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
				return fmt.Errorf("push %s: %w", dst, err)
			}
			fmt.Printf("pushed %s\n", dst)
		}
	}
	return nil
}

// build makes one image: its base, then its binary.
func build(im image, version, cache string, created time.Time) (v1.Image, error) {
	img := empty.Image
	if len(im.packages) > 0 {
		base, err := debianBase(im.packages, cache)
		if err != nil {
			return nil, err
		}
		layer, err := tarball.LayerFromFile(base)
		if err != nil {
			return nil, err
		}
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			return nil, err
		}
	}
	img, err := mutate.AppendLayers(img, im.layers...)
	if err != nil {
		return nil, err
	}
	entrypoint := im.entrypoint
	if im.binary != "" {
		compile := im.compile
		if compile == nil {
			compile = func(version string) ([]byte, error) { return goBuild(version, ".", "./cmd/"+im.binary) }
		}
		bin, err := compile(version)
		if err != nil {
			return nil, err
		}
		layer, err := fileLayer("usr/local/bin/"+im.binary, bin, created)
		if err != nil {
			return nil, err
		}
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			return nil, err
		}
		if entrypoint == nil {
			entrypoint = []string{"/usr/local/bin/" + im.binary}
		}
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS, cfg.Created = "amd64", "linux", v1.Time{Time: created}
	cfg.Config.Entrypoint, cfg.Config.Cmd = entrypoint, im.cmd
	cfg.Config.User = im.user
	cfg.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    im.name,
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.source":   "https://github.com/flint-io/flint",
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	if im.ref != "" {
		// Built by the lab from another project's sources, at the ref's tag.
		_, tag := refNameTag(im.ref)
		cfg.Config.Labels = map[string]string{"org.opencontainers.image.title": im.name, "org.opencontainers.image.version": tag}
	}
	return mutate.ConfigFile(img, cfg)
}

// debianBase is a tar of a Debian bookworm root holding packages (and
// Debian's essential set), made by mmdebstrap once and kept in cache.
func debianBase(packages []string, cache string) (string, error) {
	key := sha256.Sum256([]byte("bookworm essential " + strings.Join(packages, ",")))
	path := filepath.Join(cache, "bookworm-"+hex.EncodeToString(key[:8])+".tar")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := needMmdebstrap("the Debian base of the image"); err != nil {
		return "", err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	tmp := strings.TrimSuffix(path, ".tar") + ".partial.tar" // mmdebstrap picks the format by extension
	args := []string{"--quiet", "--variant=essential", "--include=" + strings.Join(packages, ",")}
	for _, dir := range []string{"doc", "man", "info", "locale"} {
		args = append(args, "--dpkgopt=path-exclude=/usr/share/"+dir+"/*")
	}
	cmd := exec.Command("mmdebstrap", append(args, "bookworm", tmp)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("mmdebstrap: %w", err)
	}
	return path, os.Rename(tmp, path)
}

// needMmdebstrap says what to install when mmdebstrap, which makes what,
// is missing.
func needMmdebstrap(what string) error {
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		return fmt.Errorf("mmdebstrap is missing: apt-get install mmdebstrap (it makes %s)", what)
	}
	return nil
}

// fileLayer is a layer holding one executable file at path, below its
// directories.
func fileLayer(path string, data []byte, mtime time.Time) (v1.Layer, error) {
	return tarLayer(func(tw *tar.Writer) error {
		if dir := filepath.Dir(path); dir != "." {
			parts := strings.Split(dir, "/")
			for i := range parts {
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.Join(parts[:i+1], "/") + "/", Mode: 0o755, ModTime: mtime}); err != nil {
					return err
				}
			}
		}
		return writeExecutable(tw, path, data, mtime)
	})
}

// writeExecutable writes an executable file into a layer's tar.
func writeExecutable(tw *tar.Writer, path string, data []byte, mtime time.Time) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path, Mode: 0o755, Size: int64(len(data)), ModTime: mtime}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// tarLayer is a layer of the tar write writes, kept in memory.
func tarLayer(write func(tw *tar.Writer) error) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := write(tw); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layer := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layer)), nil })
}

// writeArchive writes img, named refs, as an OCI image layout in a tar.
func writeArchive(img v1.Image, refs []string, archive string) error {
	dir, err := os.MkdirTemp("", "flint-oci-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	// containerd names an imported image by io.containerd.image.name.
	for _, ref := range refs {
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
			"org.opencontainers.image.ref.name": ref, "io.containerd.image.name": ref,
		})); err != nil {
			return err
		}
	}
	f, err := os.Create(archive)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name, hdr.ModTime = filepath.ToSlash(rel), time.Unix(0, 0)
		if d.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil || d.IsDir() {
			return err
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer func() { _ = src.Close() }()
		_, err = io.Copy(tw, src)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// commitTime is when HEAD was committed: the images' creation time, so
// that the same commit builds the same images.
func commitTime() (time.Time, error) {
	out, err := exec.Command("git", "log", "-1", "--format=%ct").Output()
	if err != nil {
		return time.Time{}, fmt.Errorf("read HEAD's commit time (run in the repository): %w", err)
	}
	secs, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(secs, 0).UTC(), nil
}
