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

package osd

import (
	"sync"
	"time"

	"github.com/flint-io/flint/controllers/metrics"
)

// Kinds of orphan that hold data, and so are quarantined; and orphan
// targets whose members hold writes, which wait for their hosts.
const (
	orphanReplica    = "replica"
	orphanSnapshot   = "snapshot-copy"
	orphanHeldTarget = "held-target"
)

// heldOrphanWait is how long an orphan target whose members hold writes
// keeps them held: longer than its hold (agentv1.TargetHold), after
// which it has no host, plus a kernel host's I/O timeout
// (nvme_core.io_timeout, 30 s), after which the host has dropped the
// connections the writes came on.
const heldOrphanWait = 2 * time.Minute

// quarantine keeps, per OSD, when each orphan that holds data was first
// found. Restoring the custom resources with new uids (a backup tool, an
// etcd restore) makes every lvol look orphan: they are kept for a grace
// period, with an Event and a metric, before they are deleted. It lives in
// memory: an operator restart only starts the grace again.
type quarantine struct {
	mu    sync.Mutex
	since map[orphan]time.Time
}

type orphan struct{ osd, kind, uid string }

// found records o as found at now unless it was already; it returns when
// it was first found and whether that is now.
func (q *quarantine) found(o orphan, now time.Time) (since time.Time, first bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.since == nil {
		q.since = map[orphan]time.Time{}
	}
	if t, ok := q.since[o]; ok {
		return t, false
	}
	q.since[o] = now
	return now, true
}

// settle forgets what osd no longer holds as orphan (claimed, or deleted)
// and counts the rest in flint_osd_orphans.
func (q *quarantine) settle(osd string, orphans map[orphan]bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	counts := map[string]int{orphanReplica: 0, orphanSnapshot: 0}
	for o := range q.since {
		if o.osd != osd {
			continue
		}
		if !orphans[o] {
			delete(q.since, o)
			continue
		}
		if _, ok := counts[o.kind]; ok {
			counts[o.kind]++
		}
	}
	for kind, n := range counts {
		metrics.OSDOrphans.WithLabelValues(osd, kind).Set(float64(n))
	}
}

// count is how many orphans of kind osd keeps now.
func (q *quarantine) count(osd, kind string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for o := range q.since {
		if o.osd == osd && o.kind == kind {
			n++
		}
	}
	return n
}

// forget drops osd's orphans and their series, with the OSD.
func (q *quarantine) forget(osd string) {
	q.settle(osd, nil)
	metrics.ForgetOSD(osd)
}
