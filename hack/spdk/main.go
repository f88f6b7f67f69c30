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

// Command spdk (make spdk) builds SPDK on DPDK from SPDK_SRC and DPDK_SRC
// with the OSD image's recipe, once per sources and recipe, and prints the
// build's directory: the FLINT_SPDK_DIR that make test-spdk and make
// bench-datapath use, the same build the OSD image takes flint_tgt and
// nvmf_tgt from.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/flint-io/flint/hack/internal/spdkbuild"
)

func main() {
	spdkSrc := flag.String("spdk-src", os.Getenv("SPDK_SRC"), "SPDK's sources: its archive (checked against the SHA256SUMS beside it) or a git repository (a path or a URL)")
	dpdkSrc := flag.String("dpdk-src", os.Getenv("DPDK_SRC"), "DPDK's sources, as -spdk-src")
	cache := flag.String("cache", spdkbuild.Cache(), "where builds are kept, one folder per sources and recipe")
	flag.Parse()
	b, err := spdkbuild.Ensure(*spdkSrc, *dpdkSrc, *cache)
	if err != nil {
		fmt.Fprintf(os.Stderr, "spdk: %v\n", err)
		os.Exit(1)
	}
	if missing := b.MissingHostPackages(); len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "spdk: its programs link libraries not installed here: apt-get install %s\n", strings.Join(missing, " "))
	}
	fmt.Println(b.Dir)
}
