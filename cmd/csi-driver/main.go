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

// Command csi-driver is the csi.flint.io CSI driver: its controller and node services.
package main

import (
	"errors"

	"github.com/flint-io/flint/internal/cli"
)

func main() {
	cmd := &cli.Command{
		Name:        "csi-driver",
		Summary:     "the csi.flint.io CSI driver (controller and node services)",
		Description: "Runs as the CSI controller Deployment (beside the provisioner, attacher, resizer and snapshotter sidecars) and as the node DaemonSet that connects volumes with the kernel NVMe-oF host.",
	}
	cmd.Main(func() error {
		return errors.New("this build has no csi-driver logic yet: it arrives with issue #6")
	})
}
