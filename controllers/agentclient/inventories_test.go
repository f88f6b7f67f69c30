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

package agentclient

import (
	"testing"
	"time"
)

// TestInventoriesSayNothingFromBeforeACopyWasCut: a copy missing from an
// inventory asked before the cut may simply not have existed yet.
func TestInventoriesSayNothingFromBeforeACopyWasCut(t *testing.T) {
	cut := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	var inv Inventories
	if _, known := inv.HoldsCopy("osd-a", "snap", cut); known {
		t.Fatal("an OSD never asked says something of its copies")
	}
	inv.Record("osd-a", cut.Add(-time.Second), nil)
	if _, known := inv.HoldsCopy("osd-a", "snap", cut); known {
		t.Error("an inventory asked before the cut says the copy is gone")
	}
	inv.Record("osd-a", cut.Add(time.Second), map[string]bool{"snap": true})
	if held, known := inv.HoldsCopy("osd-a", "snap", cut); !held || !known {
		t.Errorf("copy listed after the cut: held %v known %v, want true true", held, known)
	}
	inv.Record("osd-a", cut.Add(2*time.Second), map[string]bool{"other": true})
	if held, known := inv.HoldsCopy("osd-a", "snap", cut); held || !known {
		t.Errorf("copy missing after the cut: held %v known %v, want false true", held, known)
	}
}
