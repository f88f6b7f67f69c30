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

// Package version carries the build's version, set by the linker.
package version

import (
	"fmt"
	"runtime"
)

// Version is the Flint release, set with -ldflags
// "-X github.com/flint-io/flint/internal/version.Version=..." (make build
// uses git describe).
var Version = "dev"

// String describes the build of the named binary on one line.
func String(binary string) string {
	return fmt.Sprintf("%s %s (%s, %s/%s)", binary, Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// The SPDK the OSD image builds and runs: the pair SPDK supports without
// patches, as upstream tags.
const (
	SPDK = "v25.09"
	DPDK = "v25.07"
)
