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

package spdklab

import (
	"fmt"
	"strings"
)

// DDFailures are the lines of spdk_dd's output that say an I/O failed.
// spdk_dd does not look at its bdev I/O's status (its completion callbacks
// ignore success) and exits 0 after a failed write or read, so a test
// that takes its exit status for an acknowledgement must also look here:
// SPDK's NVMe driver prints each command that completes in error or is
// aborted ("WRITE sqid:1 cid:… lba:…"), and errors otherwise. A run that
// printed any is to be taken as failed.
func DDFailures(out []byte) []string {
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "*ERROR*") || strings.Contains(l, " sqid:") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	if len(lines) > 4 {
		lines = append(lines[:4], fmt.Sprintf("and %d more", len(lines)-4))
	}
	return lines
}
