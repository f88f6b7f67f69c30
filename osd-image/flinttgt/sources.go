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

// Package flinttgt holds flint_tgt's C sources: SPDK's NVMe-oF target
// application with Flint's flint_volume bdev module (docs/spdk.md). The
// SPDK build (hack/internal/spdkbuild) compiles them beside nvmf_tgt.
package flinttgt

import "embed"

// Sources are the C sources and their Makefile, under src/.
//
//go:embed src
var Sources embed.FS
