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

package faults

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/flint-io/flint/test/ledger"
)

// writeBlocks is how many blocks one write covers.
const writeBlocks = 64

// writer writes self-describing blocks at random places of the Volume,
// one write after another, and records in its ledger each write it
// tries and each one acknowledged.
type writer struct {
	host   *host
	ledger *ledger.Ledger
	// target is where the Volume's target serves now.
	target func(context.Context) (endpoint, error)
	rng    *rand.Rand
	blocks uint64
	// journal gets a line per write: when, where, and how it ended.
	journal io.Writer

	// turn is held through each write; the checker takes it to read a
	// Volume no write changes meanwhile.
	turn sync.Mutex

	mu      sync.Mutex
	lastAck time.Time
	// longestStall is the longest time between two acknowledged writes,
	// the checker's reads left out; failed counts writes not acknowledged.
	longestStall time.Duration
	failed       int
	lastError    error
}

// run writes until ctx ends.
func (w *writer) run(ctx context.Context) {
	w.mu.Lock()
	w.lastAck = time.Now()
	w.mu.Unlock()
	var seq uint64
	for ctx.Err() == nil {
		seq++
		if err := w.writeOnce(ctx, seq); err != nil {
			w.mu.Lock()
			w.failed, w.lastError = w.failed+1, err
			w.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	// A stall the storm's end cut short counts too.
	w.mu.Lock()
	w.longestStall = max(w.longestStall, time.Since(w.lastAck))
	w.mu.Unlock()
}

// writeOnce writes write seq to writeBlocks blocks from a random one.
func (w *writer) writeOnce(ctx context.Context, seq uint64) error {
	w.turn.Lock()
	defer w.turn.Unlock()
	ep, err := w.target(ctx)
	if err != nil {
		return err
	}
	first := w.rng.Uint64N(w.blocks - writeBlocks + 1)
	data := make([]byte, 0, writeBlocks*ledger.BlockSize)
	for b := first; b < first+writeBlocks; b++ {
		data = append(data, ledger.EncodeBlock(b, seq)...)
	}
	w.ledger.Try(seq, first, writeBlocks)
	start := time.Now()
	err = w.host.write(ctx, ep, first, data)
	_, _ = fmt.Fprintf(w.journal, "%s write %d blocks %d-%d to %s:%d took %s: %v\n",
		start.Format(time.RFC3339Nano), seq, first, first+writeBlocks-1, ep.addr, ep.port, time.Since(start).Round(time.Millisecond), cmp.Or[any](err, "acknowledged"))
	if err != nil {
		return err
	}
	w.ledger.Ack(seq, first, writeBlocks)
	now := time.Now()
	w.mu.Lock()
	w.longestStall = max(w.longestStall, now.Sub(w.lastAck))
	w.lastAck = now
	w.mu.Unlock()
	return nil
}

// ackedAfter reports whether a write was acknowledged after t.
func (w *writer) ackedAfter(t time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastAck.After(t)
}

// pause waits for the write in flight and holds the next; resume lets
// it go, the pause not counted as a stall.
func (w *writer) pause() { w.turn.Lock() }

func (w *writer) resume() {
	w.mu.Lock()
	w.lastAck = time.Now()
	w.mu.Unlock()
	w.turn.Unlock()
}

// figures are the writer's counts so far.
func (w *writer) figures() (stall time.Duration, failed int, lastError error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.longestStall, w.failed, w.lastError
}
