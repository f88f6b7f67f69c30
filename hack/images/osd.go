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

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/flint-io/flint/internal/version"
)

const (
	spdkTag = version.SPDK
	dpdkTag = version.DPDK
)

// spdkBuildPackages are what building DPDK and SPDK (with RDMA and
// io_uring) needs in the Debian build root.
var spdkBuildPackages = []string{
	"build-essential", "pkg-config", "meson", "ninja-build", "python3", "python3-pyelftools",
	"libnuma-dev", "libaio-dev", "libssl-dev", "uuid-dev", "libncurses-dev",
	"liburing-dev", "libibverbs-dev", "librdmacm-dev",
}

// spdkBuildScript runs in the build root with DPDK's and SPDK's sources
// under /src. It installs nvmf_tgt under /out/usr (the image's /usr) and
// writes to /out/packages the Debian packages that hold the libraries
// nvmf_tgt links.
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
// CRC32C falls back to SPDK's software code.
const spdkBuildScript = `set -eux
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
install -D -m 0755 build/bin/nvmf_tgt /out/usr/local/bin/nvmf_tgt
/out/usr/local/bin/nvmf_tgt --version
for lib in $(ldd build/bin/nvmf_tgt | awk '$2 == "=>" && $3 ~ /^\// {print $3}'); do
  dpkg -S "$lib" 2>/dev/null || dpkg -S "/usr$lib"
done | cut -d: -f1 | sort -u > /out/packages
`

// spdkSources says where DPDK and SPDK come from: git repositories, as
// paths (a clone or a bare mirror) or URLs, that hold the pinned tags.
type spdkSources struct{ spdk, dpdk string }

// osdImage is the OSD image: nvmf_tgt built from srcs on a Debian base
// with the libraries it links, and osd-agent.
func osdImage(srcs spdkSources, cache string) (image, error) {
	root, packages, err := buildSPDK(srcs, cache)
	if err != nil {
		return image{}, err
	}
	layer, err := tarball.LayerFromFile(root)
	if err != nil {
		return image{}, err
	}
	// What nvmf_tgt opens at run time, which ldd does not name: the
	// providers libibverbs drives an RDMA NIC with (mlx5, rxe, …), and
	// OpenSSL's configuration, without which SPDK's environment does not
	// start ("Failed to initialize OpenSSL").
	packages = append(packages, "ibverbs-providers", "openssl")
	return image{name: "flint-osd", binary: "osd-agent", packages: packages, user: "0:0", layers: []v1.Layer{layer}}, nil
}

// buildSPDK builds nvmf_tgt from srcs in a Debian bookworm build root
// (mmdebstrap) and returns a tar of what the image gets and the Debian
// packages it needs. The result is kept in cache, keyed by the tags'
// commits and the recipe.
func buildSPDK(srcs spdkSources, cache string) (string, []string, error) {
	if srcs.spdk == "" || srcs.dpdk == "" {
		return "", nil, errors.New("the OSD image needs both SPDK_SRC and DPDK_SRC")
	}
	// The build's files are renamed into the cache: same file system.
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", nil, err
	}
	tmp, err := os.MkdirTemp(cache, "spdk-build-")
	if err != nil {
		return "", nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	spdkRepo, spdkCommit, err := checkout(srcs.spdk, spdkTag, filepath.Join(tmp, "spdk.git"))
	if err != nil {
		return "", nil, fmt.Errorf("SPDK_SRC: %w", err)
	}
	dpdkRepo, dpdkCommit, err := checkout(srcs.dpdk, dpdkTag, filepath.Join(tmp, "dpdk.git"))
	if err != nil {
		return "", nil, fmt.Errorf("DPDK_SRC: %w", err)
	}
	key := sha256.Sum256([]byte(spdkCommit + dpdkCommit + spdkBuildScript + strings.Join(spdkBuildPackages, ",")))
	dir := filepath.Join(cache, "spdk-"+spdkTag+"-"+hex.EncodeToString(key[:8]))
	root, packagesFile := filepath.Join(dir, "root.tar"), filepath.Join(dir, "packages")
	if packages, err := os.ReadFile(packagesFile); err == nil {
		return root, strings.Fields(string(packages)), nil
	}

	for _, src := range []struct{ repo, tag, name string }{{spdkRepo, spdkTag, "spdk"}, {dpdkRepo, dpdkTag, "dpdk"}} {
		archive := filepath.Join(tmp, src.name+".tar")
		if out, err := exec.Command("git", "-C", src.repo, "archive", "--prefix="+src.name+"/", "-o", archive, src.tag).CombinedOutput(); err != nil {
			return "", nil, fmt.Errorf("git archive %s of %s: %v: %s", src.tag, src.repo, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, "build.sh"), []byte(spdkBuildScript), 0o644); err != nil {
		return "", nil, err
	}
	if err := needMmdebstrap("the root SPDK is built in"); err != nil {
		return "", nil, err
	}
	fmt.Fprintf(os.Stderr, "building SPDK %s on DPDK %s (tens of minutes on two cores; kept in %s)\n", spdkTag, dpdkTag, dir)
	args := []string{"--quiet", "--variant=apt", "--include=" + strings.Join(spdkBuildPackages, ","),
		`--customize-hook=mkdir -p "$1/src"`,
		"--customize-hook=tar-in " + filepath.Join(tmp, "dpdk.tar") + " /src",
		"--customize-hook=tar-in " + filepath.Join(tmp, "spdk.tar") + " /src",
		"--customize-hook=upload " + filepath.Join(tmp, "build.sh") + " /src/build.sh",
		`--customize-hook=chroot "$1" /bin/sh /src/build.sh`,
		"--customize-hook=tar-out /out/usr " + filepath.Join(tmp, "root.tar"),
		"--customize-hook=download /out/packages " + filepath.Join(tmp, "packages"),
		"bookworm", "/dev/null",
	}
	cmd := exec.Command("mmdebstrap", args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", nil, fmt.Errorf("build SPDK in a Debian root (mmdebstrap): %w", err)
	}
	packages, err := os.ReadFile(filepath.Join(tmp, "packages"))
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	if err := os.Rename(filepath.Join(tmp, "root.tar"), root); err != nil {
		return "", nil, err
	}
	// The packages file is written last: it marks the cache entry whole.
	return root, strings.Fields(string(packages)), os.WriteFile(packagesFile, packages, 0o644)
}

// checkout returns a git repository that holds tag, and the tag's commit:
// src itself when it is a local repository, else a shallow clone of the
// URL into dst.
func checkout(src, tag, dst string) (string, string, error) {
	repo := src
	if strings.Contains(src, "://") || strings.HasPrefix(src, "git@") {
		if out, err := exec.Command("git", "clone", "--quiet", "--bare", "--depth=1", "--branch", tag, src, dst).CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("clone %s at %s: %v: %s", src, tag, err, out)
		}
		repo = dst
	}
	out, err := exec.Command("git", "-C", repo, "rev-parse", "--verify", tag+"^{commit}").CombinedOutput()
	if err != nil {
		return "", "", fmt.Errorf("%s holds no tag %s (a git repository of it, a path or a URL): %v: %s", src, tag, err, strings.TrimSpace(string(out)))
	}
	return repo, strings.TrimSpace(string(out)), nil
}
