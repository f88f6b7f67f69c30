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

import "testing"

// spdk_dd exits 0 after a failed I/O; a test sees the failure only in what
// SPDK printed, or it takes a failed write for an acknowledged one.
func TestDDFailures(t *testing.T) {
	clean := "[2026-11-27 10:13:57.600000] app.c: 964:spdk_app_start: *NOTICE*: Total cores available: 1\n" +
		"[2026-11-27 10:13:57.700000] reactor.c: 996:reactor_run: *NOTICE*: Reactor started on core 0\n"
	if got := DDFailures([]byte(clean)); len(got) != 0 {
		t.Errorf("DDFailures(a clean run) = %q, want none", got)
	}
	failed := clean +
		"[2026-11-27 10:14:06.800000] nvme_qpair.c: 243:nvme_io_qpair_print_command: *NOTICE*: WRITE sqid:1 cid:3 nsid:1 lba:9567 len:1 SGL DATA BLOCK OFFSET 0x0 len:0x1000\n" +
		"[2026-11-27 10:14:06.800001] nvme_qpair.c: 474:spdk_nvme_print_completion: *NOTICE*: ABORTED - SQ DELETION (00/08) qid:1 cid:3 cdw0:0 sqhd:0000 p:0 m:0 dnr:0\n"
	if got := DDFailures([]byte(failed)); len(got) != 1 {
		t.Errorf("DDFailures(a run whose write was aborted) = %q, want the failed WRITE", got)
	}
	transport := clean + "[2026-11-27 10:14:06.800000] nvme_qpair.c: 885:spdk_nvme_qpair_process_completions: *ERROR*: CQ transport error -6 (No such device or address) on qpair id 1\n"
	if got := DDFailures([]byte(transport)); len(got) != 1 {
		t.Errorf("DDFailures(a run whose connection failed) = %q, want the error", got)
	}
}
