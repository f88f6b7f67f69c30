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
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/flint-io/flint/hack/internal/spdkbuild"
)

// spdkSources say where DPDK and SPDK come from: archives (checked against
// the SHA256SUMS beside them) or git repositories holding the pinned tags.
type spdkSources struct{ spdk, dpdk string }

// osdImage is the OSD image: flint_tgt and nvmf_tgt of the SPDK build
// that make spdk keeps (built first if there is none) on a Debian base
// with the libraries they link, and osd-agent.
func osdImage(srcs spdkSources) (image, error) {
	b, err := spdkbuild.Ensure(srcs.spdk, srcs.dpdk, spdkbuild.Cache())
	if err != nil {
		return image{}, err
	}
	layer, err := tarball.LayerFromFile(b.ImageRoot)
	if err != nil {
		return image{}, fmt.Errorf("the SPDK build's image root: %w", err)
	}
	// What SPDK opens at run time, which ldd does not name: the
	// providers libibverbs drives an RDMA NIC with (mlx5, rxe, …), and
	// OpenSSL's configuration, without which SPDK's environment does not
	// start ("Failed to initialize OpenSSL").
	packages := append(b.ImagePackages, "ibverbs-providers", "openssl")
	return image{name: "flint-osd", binary: "osd-agent", packages: packages, user: "0:0", layers: []v1.Layer{layer}}, nil
}
