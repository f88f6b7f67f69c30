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

// Package spdkbuild builds SPDK on DPDK from the pinned sources once, with
// the OSD image's recipe, into a cache that serves both the OSD image and
// the tests and benchmarks that run SPDK on this machine (FLINT_SPDK_DIR):
// one compile, one recipe.
package spdkbuild

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/flint-io/flint/hack/internal/upstream"
	"github.com/flint-io/flint/internal/version"
	"github.com/flint-io/flint/osd-image/flinttgt"
)

// suite is the Debian release of the build root, and so of the libraries
// the programs link.
const suite = "bookworm"

// buildPackages are what building DPDK and SPDK (with RDMA and io_uring)
// needs in the Debian build root.
var buildPackages = []string{
	"build-essential", "pkg-config", "meson", "ninja-build", "python3", "python3-pyelftools",
	"libnuma-dev", "libaio-dev", "libssl-dev", "uuid-dev", "libncurses-dev",
	"liburing-dev", "libibverbs-dev", "librdmacm-dev",
}

// buildScript runs in the build root with DPDK's and SPDK's sources under
// /src, and flint_tgt's (package flinttgt) in /src/flint. It builds
// flint_tgt against that SPDK tree as SPDK builds nvmf_tgt, and checks
// that it starts. It installs nvmf_tgt and flint_tgt under /out/usr (the
// image's /usr), the
// programs the host tests drive under /out/host (an SPDK build tree's
// layout: build/bin, build/examples), and writes the Debian packages
// holding the libraries they link: /out/packages for nvmf_tgt (the
// image), /out/host-packages for all of them.
//
// Both are built for x86-64-v2 (SSE4.2, as DPDK needs), not for the build
// machine's CPU. DPDK is static, with only what SPDK's NVMe driver uses
// (PCI and vdev buses, the ring mempool), so nvmf_tgt needs no DPDK at run
// time. io_uring serves the uring bdev only: the uring socket layer is
// not linked (SOCK_MODULES_LIST), because SPDK gives every TCP poll group
// a group of each linked socket layer and the uring one cannot run in
// interrupt mode ("Interrupt mode is not supported in the uring sock
// implementation": the TCP transport is never created). ISA-L is left
// out (it needs its own submodule and nasm): without nasm, SPDK's
// configure turns it off once the submodule's autogen.sh exists, and
// CRC32C falls back to SPDK's software code. Of the examples only
// bdevperf is built: the transcript recorder's NVMe-oF host.
const buildScript = `set -eux
jobs=$(nproc)
cd /src/dpdk
meson setup build --prefix=/opt/dpdk --libdir=lib --buildtype=release -Ddefault_library=static \
  -Dcpu_instruction_set=x86-64-v2 -Dtests=false -Ddisable_apps='*' -Dexamples= -Denable_docs=false \
  -Denable_drivers=bus/pci,bus/vdev,mempool/ring -Dmax_lcores=128
ninja -C build -j "$jobs" install
cd /src/spdk
mkdir -p isa-l && touch isa-l/autogen.sh
./configure --target-arch=x86-64-v2 --with-dpdk=/opt/dpdk --with-rdma --with-uring \
  --disable-tests --disable-unit-tests --disable-examples \
  --without-crypto --without-vhost --without-virtio --without-nvme-cuse --without-fsdev --without-uring-zns
make -j "$jobs" SOCK_MODULES_LIST=sock_posix
make -j "$jobs" -C examples/bdev/bdevperf SOCK_MODULES_LIST=sock_posix
make -C /src/flint -j "$jobs" SPDK_ROOT_DIR=/src/spdk SOCK_MODULES_LIST=sock_posix
install -D -m 0755 -t /out/usr/local/bin build/bin/nvmf_tgt /src/flint/flint_tgt
/out/usr/local/bin/nvmf_tgt --version
/out/usr/local/bin/flint_tgt --version
install -D -m 0755 -t /out/host/build/bin build/bin/nvmf_tgt /src/flint/flint_tgt build/bin/spdk_dd build/bin/spdk_nvme_perf
install -D -m 0755 -t /out/host/build/examples build/examples/bdevperf
packages() {
  for lib in $(ldd "$@" | awk '$2 == "=>" && $3 ~ /^\// {print $3}'); do
    dpkg -S "$lib" 2>/dev/null || dpkg -S "/usr$lib"
  done | cut -d: -f1 | sort -u
}
packages build/bin/nvmf_tgt /src/flint/flint_tgt > /out/packages
packages /out/host/build/bin/* /out/host/build/examples/* > /out/host-packages
`

// Build is one cached build.
type Build struct {
	// Dir is an SPDK build tree's layout (build/bin/nvmf_tgt, flint_tgt,
	// spdk_dd, spdk_nvme_perf; build/examples/bdevperf): what
	// FLINT_SPDK_DIR names.
	Dir string
	// ImageRoot is a tar of what the OSD image gets (usr/local/bin/nvmf_tgt
	// and flint_tgt).
	ImageRoot string
	// ImagePackages hold the libraries nvmf_tgt and flint_tgt link;
	// HostPackages those
	// every program in Dir links, to install where they run.
	ImagePackages, HostPackages []string
}

// Cache is where builds are kept: $FLINT_CACHE/spdk, by default
// ~/.cache/flint/spdk.
func Cache() string {
	if dir := os.Getenv("FLINT_CACHE"); dir != "" {
		return filepath.Join(dir, "spdk")
	}
	return filepath.Join(os.Getenv("HOME"), ".cache", "flint", "spdk")
}

// Ensure returns the build of spdkRef and dpdkRef (archives or git
// repositories, see package upstream) from cache, building it first when
// cache has none. The key is the sources' digests and the recipe.
func Ensure(spdkRef, dpdkRef, cache string) (Build, error) {
	if spdkRef == "" || dpdkRef == "" {
		return Build{}, errors.New("SPDK is built from SPDK_SRC and DPDK_SRC (archives in ../shared/sources by default, or git repositories); give both")
	}
	// The build's files are renamed into the cache: same file system.
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return Build{}, err
	}
	tmp, err := os.MkdirTemp(cache, "build-")
	if err != nil {
		return Build{}, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	spdk, err := upstream.Open(spdkRef, "spdk", version.SPDK, tmp)
	if err != nil {
		return Build{}, fmt.Errorf("SPDK_SRC: %w", err)
	}
	dpdk, err := upstream.Open(dpdkRef, "dpdk", version.DPDK, tmp)
	if err != nil {
		return Build{}, fmt.Errorf("DPDK_SRC: %w", err)
	}
	dir, err := entry(cache, spdk, dpdk)
	if err != nil {
		return Build{}, err
	}
	b := Build{Dir: dir}
	b.ImageRoot = filepath.Join(b.Dir, "image-root.tar")
	if err := b.load(); err == nil {
		return b, nil
	}

	src := filepath.Join(tmp, "src")
	for _, s := range []struct {
		name string
		src  upstream.Source
	}{{"spdk", spdk}, {"dpdk", dpdk}} {
		dir := filepath.Join(src, s.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return Build{}, err
		}
		if err := s.src.Unpack(dir); err != nil {
			return Build{}, err
		}
	}
	if err := writeFlintSources(filepath.Join(src, "flint")); err != nil {
		return Build{}, err
	}
	if err := os.WriteFile(filepath.Join(src, "build.sh"), []byte(buildScript), 0o644); err != nil {
		return Build{}, err
	}
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		return Build{}, errors.New("SPDK is built in a Debian root that mmdebstrap makes: apt-get install mmdebstrap")
	}
	fmt.Fprintf(os.Stderr, "building SPDK %s on DPDK %s (about 5 minutes on two cores; kept in %s)\n", version.SPDK, version.DPDK, b.Dir)
	out := filepath.Join(tmp, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return Build{}, err
	}
	args := []string{"--quiet", "--variant=apt", "--include=" + strings.Join(buildPackages, ","),
		`--customize-hook=mkdir -p "$1/src"`,
		"--customize-hook=sync-in " + src + " /src",
		`--customize-hook=chroot "$1" /bin/sh /src/build.sh`,
		"--customize-hook=tar-out /out/usr " + filepath.Join(out, "image-root.tar"),
		"--customize-hook=sync-out /out/host " + filepath.Join(out, "host"),
		"--customize-hook=download /out/packages " + filepath.Join(out, "packages"),
		"--customize-hook=download /out/host-packages " + filepath.Join(out, "host-packages"),
		suite, "/dev/null",
	}
	if err := os.MkdirAll(filepath.Join(out, "host"), 0o755); err != nil {
		return Build{}, err
	}
	cmd := exec.Command("mmdebstrap", args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return Build{}, fmt.Errorf("build SPDK in a Debian root (mmdebstrap): %w", err)
	}
	// Moved into place last, whole: a cache entry is never half a build.
	if err := os.Rename(filepath.Join(out, "image-root.tar"), filepath.Join(out, "host", "image-root.tar")); err != nil {
		return Build{}, err
	}
	for _, f := range []string{"packages", "host-packages"} {
		if err := os.Rename(filepath.Join(out, f), filepath.Join(out, "host", f)); err != nil {
			return Build{}, err
		}
	}
	if err := os.Rename(filepath.Join(out, "host"), b.Dir); err != nil {
		// Another build of the same key finished first: it is as good.
		if b.load() == nil {
			return b, nil
		}
		return Build{}, fmt.Errorf("keep the build in %s (remove it if it is left from an interrupted build): %w", b.Dir, err)
	}
	return b, b.load()
}

// entry is the cache's folder for a build of these sources with this
// recipe.
func entry(cache string, spdk, dpdk upstream.Source) (string, error) {
	h := sha256.New()
	h.Write([]byte(spdk.Digest + dpdk.Digest + suite + buildScript + strings.Join(buildPackages, ",")))
	err := fs.WalkDir(flinttgt.Sources, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := flinttgt.Sources.ReadFile(path)
		_, _ = fmt.Fprintf(h, "%s %d\n", path, len(data))
		h.Write(data)
		return err
	})
	return filepath.Join(cache, version.SPDK+"-"+hex.EncodeToString(h.Sum(nil)[:8])), err
}

// writeFlintSources writes flint_tgt's sources into dir.
func writeFlintSources(dir string) error {
	srcs, err := fs.Sub(flinttgt.Sources, "src")
	if err != nil {
		return err
	}
	return fs.WalkDir(srcs, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, path), 0o755)
		}
		data, err := fs.ReadFile(srcs, path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, path), data, 0o644)
	})
}

// load reads a cached build's package lists; it fails when there is none.
func (b *Build) load() error {
	image, err := os.ReadFile(filepath.Join(b.Dir, "packages"))
	if err != nil {
		return err
	}
	host, err := os.ReadFile(filepath.Join(b.Dir, "host-packages"))
	if err != nil {
		return err
	}
	b.ImagePackages, b.HostPackages = strings.Fields(string(image)), strings.Fields(string(host))
	return nil
}

// MissingHostPackages are the HostPackages not installed here.
func (b Build) MissingHostPackages() []string {
	var missing []string
	for _, p := range b.HostPackages {
		out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", p).Output()
		if err != nil || !strings.Contains(string(out), "ok installed") {
			missing = append(missing, p)
		}
	}
	return missing
}
