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

// Command kubectl-flint is the kubectl plugin for Flint status, benchmarks and diagnosis.
package main

import (
	"errors"

	"github.com/flint-io/flint/internal/cli"
)

func main() {
	cmd := &cli.Command{
		Name:        "kubectl-flint",
		Summary:     "kubectl plugin for Flint status, benchmarks and diagnosis",
		Description: "Install on PATH as kubectl-flint and run as 'kubectl flint'; it uses the current kubeconfig context.",
	}
	cmd.Main(func() error {
		return errors.New("this build has no kubectl-flint logic yet: it arrives with issue #4")
	})
}
