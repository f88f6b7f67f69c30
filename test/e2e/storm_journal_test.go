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

package e2e

import (
	"testing"
	"time"
)

// The kernel host's storm rests on reading its writer's journal right:
// each read judged against the writes before it, not after, and the last
// read only if no write follows it. Runs without the lab.
func TestTheStormJournalJudgesEachReadByTheWritesBeforeIt(t *testing.T) {
	journal := `try 1 0
ack 1 0 1000
try 2 1
ack 2 1 1500
read 2000 1:1 1:2
try 3 0
fail 3 0 2500 input/output error
try 4 1
ack 4 1 5500
read 6000 0:1 1:2
try 5 0
`
	j, err := parseJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	if j.tried != 5 || j.acked != 3 || j.failed != 1 || j.reads != 2 {
		t.Errorf("tried %d, acked %d, failed %d, reads %d; want 5, 3, 1, 2", j.tried, j.acked, j.failed, j.reads)
	}
	// The first read finds block 0 holding block 1's write: corrupt. The
	// second finds block 1 holding write 2 after write 4 was
	// acknowledged: lost.
	if j.bad != 2 {
		t.Errorf("%d bad reads (the first: %s), want 2", j.bad, j.firstBad)
	}
	if j.final != nil {
		t.Errorf("a read before the last write counted as the last: %s", j.final)
	}
	if j.stall != 4*time.Second {
		t.Errorf("longest stall %s, want 4s", j.stall)
	}
	// Read after write 5 (tried, not acknowledged): block 0 may hold
	// write 1 still.
	ended, err := parseJournal(journal + "read 7000 0:1 1:4\ndone\n")
	if err != nil {
		t.Fatal(err)
	}
	if ended.final == nil || ended.final.Bad() != 0 {
		t.Errorf("the last read, after the last write: %v, want a whole one", ended.final)
	}
	if _, err := parseJournal("ack one 0 1000"); err == nil {
		t.Error("a journal line that does not parse was taken")
	}
}
