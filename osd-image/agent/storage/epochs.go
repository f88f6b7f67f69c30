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
	"errors"
	"fmt"
	"sync"

	"github.com/flint-io/flint/internal/durable"
)

// ErrStaleEpoch means the call names a target epoch below one this OSD has
// already served the volume for.
var ErrStaleEpoch = errors.New("stale target epoch")

// exportEpochs keeps, per volume, the highest target epoch its replica was
// exported for, in a file when it has a path: a restarted agent refuses
// what its predecessor would have. Its lock is held across an export, so
// that an export admitted at a lower epoch never lands after a higher one.
type exportEpochs struct {
	path string

	mu      sync.Mutex
	highest map[string]uint32
}

// lock holds the epochs until unlock, loading them on first use.
func (e *exportEpochs) lock() error {
	e.mu.Lock()
	if e.highest == nil {
		highest, err := e.load()
		if err != nil {
			e.mu.Unlock()
			return err
		}
		e.highest = highest
	}
	return nil
}

func (e *exportEpochs) load() (map[string]uint32, error) {
	highest := map[string]uint32{}
	if e.path == "" {
		return highest, nil
	}
	if _, err := durable.ReadJSON(e.path, &highest); err != nil {
		return nil, fmt.Errorf("read the replicas' export epochs from %s: %w", e.path, err)
	}
	return highest, nil
}

func (e *exportEpochs) unlock() { e.mu.Unlock() }

// admit records epoch for volume unless a higher one was; e is locked.
// Epoch 0 comes from an operator from before epochs: admitted, unrecorded,
// so that a rollback leaves the replicas exported.
func (e *exportEpochs) admit(volume string, epoch uint32) error {
	if epoch == 0 {
		return nil
	}
	if had := e.highest[volume]; epoch < had {
		return fmt.Errorf("%w: replica %s was exported for the target of epoch %d; epoch %d is an older target's", ErrStaleEpoch, volume, had, epoch)
	} else if epoch == had {
		return nil
	}
	e.highest[volume] = epoch
	if err := e.save(); err != nil {
		delete(e.highest, volume)
		return err
	}
	return nil
}

// forget drops volume's epoch, with its replica; e is locked.
func (e *exportEpochs) forget(volume string) error {
	had, ok := e.highest[volume]
	if !ok {
		return nil
	}
	delete(e.highest, volume)
	if err := e.save(); err != nil {
		e.highest[volume] = had
		return err
	}
	return nil
}

// save writes the epochs durably.
func (e *exportEpochs) save() error {
	if e.path == "" {
		return nil
	}
	if err := durable.WriteJSON(e.path, e.highest, 0o644); err != nil {
		return fmt.Errorf("record the replicas' export epochs: %w", err)
	}
	return nil
}
