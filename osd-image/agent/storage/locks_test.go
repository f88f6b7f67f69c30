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
	"context"
	"errors"
	"testing"
	"time"
)

// One volume's calls run one at a time; another volume's do not wait; a
// caller whose context ends stops waiting, and the lock is dropped once
// nobody holds or waits for it.
func TestKeyedLocksSerialiseOneKey(t *testing.T) {
	var k keyedLocks
	ctx := context.Background()
	unlock, err := k.lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	other, err := k.lock(ctx, "b")
	if err != nil {
		t.Fatalf("another key waited: %v", err)
	}
	other()

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := k.lock(short, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second caller of a held key got %v, want its deadline", err)
	}
	got := make(chan struct{})
	go func() {
		second, err := k.lock(ctx, "a")
		if err != nil {
			t.Error(err)
			return
		}
		second()
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("a second caller took the key while it was held")
	case <-time.After(50 * time.Millisecond):
	}
	unlock()
	<-got
	if len(k.held) != 0 {
		t.Errorf("locks left after every caller ended: %v", k.held)
	}
}
