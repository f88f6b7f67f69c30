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

package keylock

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// One holder per Volume at a time, others wait; other Volumes do not; a
// waiter gives up with its context; no key outlives its users.
func TestOneHolderPerVolume(t *testing.T) {
	var l Locks
	ctx := context.Background()
	unlockA, err := l.Lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	unlockB, err := l.Lock(ctx, "b")
	if err != nil {
		t.Fatalf("another Volume's lock waited: %v", err)
	}
	unlockB()

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Lock(cancelled, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a held lock was taken (%v), want the waiter's context error", err)
	}

	const waiters = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	inside, most := 0, 0
	for range waiters {
		wg.Go(func() {
			unlock, err := l.Lock(ctx, "a")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inside++
			most = max(most, inside)
			mu.Unlock()
			mu.Lock()
			inside--
			mu.Unlock()
			unlock()
		})
	}
	unlockA()
	wg.Wait()
	if most != 1 {
		t.Fatalf("%d holders at once, want 1", most)
	}
	if len(l.keys) != 0 {
		t.Fatalf("keys left after every holder released: %v", l.keys)
	}
}
