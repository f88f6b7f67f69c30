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

// Command operator reconciles Pools into OSDs and OSD pods, and Volumes into replicas, raid1 targets and exports.
package main

import (
	"errors"

	"github.com/flint-io/flint/internal/cli"
)

func main() {
	cmd := &cli.Command{
		Name:        "operator",
		Summary:     "reconciles Pools into OSDs and OSD pods, and Volumes into replicas, raid1 targets and exports",
		Description: "Runs as a leader-elected Deployment in the flint-system namespace; talks to the Kubernetes API and, over mutual TLS, to the OSD agents.",
	}
	cmd.Main(func() error {
		return errors.New("this build has no operator logic yet: it arrives with issue #4")
	})
}
