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
	"sync"
	"time"
)

// Inventories keeps, per OSD, the Snapshot copies its agent listed at
// the OSD controller's latest observation, and when it was asked. Copies
// are counted from it: asking each OSD once per copy cost the agents in
// proportion to the number of Snapshots.
type Inventories struct {
	mu   sync.Mutex
	osds map[string]inventory
}

type inventory struct {
	asked  time.Time
	copies map[string]bool
}

// Record keeps the copies osd's agent listed when asked at asked; the
// caller no longer changes the set.
func (i *Inventories) Record(osd string, asked time.Time, copies map[string]bool) {
	inv := inventory{asked: asked, copies: copies}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.osds == nil {
		i.osds = map[string]inventory{}
	}
	i.osds[osd] = inv
}

// HoldsCopy says whether osd listed the copy name when last asked; known
// is false when it was not asked after since (an inventory from before a
// copy was cut cannot say it is gone).
func (i *Inventories) HoldsCopy(osd, name string, since time.Time) (held, known bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	inv, ok := i.osds[osd]
	if !ok || !inv.asked.After(since) {
		return false, false
	}
	return inv.copies[name], true
}
