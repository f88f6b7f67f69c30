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

// Package keylock holds one lock per key, taken with a context: callers
// that act on one object's state wait for each other, callers on other
// keys do not. The operator's Volume and Snapshot controllers both act on
// a Volume's target (controller-runtime never reconciles one object twice
// at once, but a Volume reconcile that re-drove the target while a
// snapshot paused it would let hosts write in the middle of the cut), and
// the OSD agent's target calls for one Volume run one at a time (a call
// whose caller gave up still runs, and a delta resync's join must meet no
// other call's resume of the volume).
package keylock

import (
	"context"
	"sync"
)

// Locks holds one lock per key. The zero value is ready.
type Locks struct {
	mu   sync.Mutex
	keys map[string]*key
}

// key is the lock of one key: a semaphore of one, and how many hold it
// or wait for it (the key goes when none does).
type key struct {
	sem   chan struct{}
	users int
}

// Lock takes the lock of name, waiting until it is free or ctx ends;
// the returned function releases it.
func (l *Locks) Lock(ctx context.Context, name string) (unlock func(), err error) {
	l.mu.Lock()
	if l.keys == nil {
		l.keys = map[string]*key{}
	}
	k := l.keys[name]
	if k == nil {
		k = &key{sem: make(chan struct{}, 1)}
		l.keys[name] = k
	}
	k.users++
	l.mu.Unlock()
	select {
	case k.sem <- struct{}{}:
		return func() {
			<-k.sem
			l.release(name, k)
		}, nil
	case <-ctx.Done():
		l.release(name, k)
		return nil, ctx.Err()
	}
}

func (l *Locks) release(name string, k *key) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k.users--; k.users == 0 {
		delete(l.keys, name)
	}
}
