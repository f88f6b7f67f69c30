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

// Package volumelock lets one controller at a time act on a Volume's
// target. controller-runtime never reconciles one object twice at once,
// but the Volume and Snapshot controllers both act on a Volume's target:
// a Volume reconcile that re-drove the target while a snapshot paused it
// would let hosts write in the middle of the cut, and one that moved the
// target would pause nothing.
package volumelock

import (
	"context"
	"sync"
)

// Locks holds one lock per Volume name. The zero value is ready.
type Locks struct {
	mu   sync.Mutex
	keys map[string]*key
}

// key is the lock of one name: a semaphore of one, and how many hold it
// or wait for it (the key goes when none does).
type key struct {
	sem   chan struct{}
	users int
}

// Lock takes the lock of volume, waiting until it is free or ctx ends;
// the returned function releases it.
func (l *Locks) Lock(ctx context.Context, volume string) (unlock func(), err error) {
	l.mu.Lock()
	if l.keys == nil {
		l.keys = map[string]*key{}
	}
	k := l.keys[volume]
	if k == nil {
		k = &key{sem: make(chan struct{}, 1)}
		l.keys[volume] = k
	}
	k.users++
	l.mu.Unlock()
	select {
	case k.sem <- struct{}{}:
		return func() {
			<-k.sem
			l.release(volume, k)
		}, nil
	case <-ctx.Done():
		l.release(volume, k)
		return nil, ctx.Err()
	}
}

func (l *Locks) release(volume string, k *key) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k.users--; k.users == 0 {
		delete(l.keys, volume)
	}
}
