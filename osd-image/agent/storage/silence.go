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

package storage

import (
	"sync"
	"time"

	"github.com/flint-io/flint/internal/spdk/types"
)

// A remote member whose replica stops answering while its connection
// stays up (its SPDK frozen, a network that drops its packets) holds the
// target's writes and reads as connected, with no errors. SPDK could time
// its commands out, but every action it takes then fails the I/O in
// flight with Do Not Retry, and raid1 drops the member and acknowledges
// the write without it before anything is recorded. So the agent only
// watches: SPDK samples the member's queue depth, and a member that has
// I/O outstanding and completes none for silentAfter counts as holding
// I/O, exactly as one whose connection is down. It is reported HELD, and
// nothing touches its controller until the caller has recorded it out of
// sync (letGo).

const (
	// DefaultSilentAfter is how long a remote member may hold I/O without
	// completing any before it counts as silent: far longer than a
	// healthy replica takes for one I/O, even on a loaded machine.
	DefaultSilentAfter = 10 * time.Second
	// queueDepthPeriodUs is how often SPDK samples a remote member's
	// queue depth, in µs.
	queueDepthPeriodUs = 100_000
)

// silenceWatch remembers, per remote member bdev, its completions and
// since when they have not moved while it held I/O. It lives in memory: an
// agent restart starts the clocks again, so a member is noticed later,
// never sooner.
type silenceWatch struct {
	after time.Duration
	now   func() time.Time

	mu   sync.Mutex
	seen map[string]progress
}

type progress struct {
	completions uint64
	since       time.Time
}

func newSilenceWatch(after time.Duration, now func() time.Time) *silenceWatch {
	if after <= 0 {
		after = DefaultSilentAfter
	}
	return &silenceWatch{after: after, now: now, seen: map[string]progress{}}
}

// silent records st, the counters of a remote member's bdev, and reports
// whether the member has held I/O without completing any for the watch's
// whole span. Only observations count: the span runs from the first one
// that found it holding I/O with its completions unchanged.
func (w *silenceWatch) silent(st types.BdevIostat) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !holdsOutstandingIO(st) {
		// Idle: the clock starts at the next look that finds I/O held,
		// not at this one.
		delete(w.seen, st.Name)
		return false
	}
	now := w.now()
	p, ok := w.seen[st.Name]
	if !ok || p.completions != st.Completions() {
		w.seen[st.Name] = progress{completions: st.Completions(), since: now}
		return false
	}
	return now.Sub(p.since) >= w.after
}

// forget drops what the watch knows of bdevs that are not in keep.
func (w *silenceWatch) forget(keep map[string]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for name := range w.seen {
		if !keep[name] {
			delete(w.seen, name)
		}
	}
}

// holdsOutstandingIO reports whether SPDK's last sample of st's bdev found
// I/O outstanding on it (a retried I/O included: bdev_nvme holds it).
func holdsOutstandingIO(st types.BdevIostat) bool {
	return st.QueueDepthPollingPeriod != 0 && st.QueueDepth != 0 && st.QueueDepth != types.QueueDepthUnsampled
}
