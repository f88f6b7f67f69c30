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

package lease

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/flint-io/flint/internal/durable"
)

// A target whose lease lapsed keeps its hosts while its remote members
// answer it, when the operator promised to cut a target off a member
// before it moves it (docs/volumes.md, "The hold"). Such a target is
// held: it stays held after a renewal, which does not say that the
// operator did not move it meanwhile, until a confirmed call (one the
// operator makes after reading the Volume from the apiserver), and it is
// fenced a lead before its hold runs out, renewed or not.

// holdsFile is what the agent records of the holds, beside the lease, for
// the probe and for an agent that restarts.
type holdsFile struct {
	// Hold is how long past its members' last answers a target keeps its
	// hosts, as the last renewal promised; 0 none.
	Hold time.Duration `json:"hold"`
	// Until is, per volume, when its members' answers hold its target no
	// longer: the probe's deadline (the agent fences a lead before).
	Until map[string]time.Time `json:"until,omitempty"`
	// Held are the targets kept past a lapse and not confirmed since,
	// with when they were first kept.
	Held map[string]time.Time `json:"held,omitempty"`
}

// holding is the keeper's record of the holds, as last written.
type holding struct{ holdsFile }

// holdsPath keeps the holds beside the lease.
func (f File) holdsPath() string { return f.Path + ".holds" }

// readHolds returns the recorded holds; none when there is no file.
func (f File) readHolds() (holdsFile, error) {
	var h holdsFile
	if _, err := durable.ReadJSON(f.holdsPath(), &h); err != nil {
		return holdsFile{}, fmt.Errorf("read the targets' holds from %s: %w", f.holdsPath(), err)
	}
	return h, nil
}

func (f File) writeHolds(h holdsFile) error {
	if err := durable.WriteJSON(f.holdsPath(), h, 0o644); err != nil {
		return fmt.Errorf("record the targets' holds: %w", err)
	}
	return nil
}

// HeldTargets lists the targets kept past a lapse and not confirmed since.
func (k *Keeper) HeldTargets() map[string]time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return maps.Clone(k.Held)
}

// holds says whether volume's members' answers keep its target's hosts at
// now; k.mu held. An agent that restarted goes by the answers its
// predecessor recorded until its own come: they were heard, and told to
// the probe, as its own are.
func (k *Keeper) holds(volume string, now time.Time) bool {
	return k.Hold > 0 && now.Before(k.Until[volume].Add(-k.lead))
}

// write records next, and keeps it once recorded; k.mu held.
func (k *Keeper) write(next holdsFile) error {
	if err := k.file.writeHolds(next); err != nil {
		return err
	}
	k.holdsFile = next
	return nil
}

// recordHeld records as held the targets a fence kept, and no other;
// k.mu held.
func (k *Keeper) recordHeld(kept map[string]bool, now time.Time) error {
	held := map[string]time.Time{}
	for v := range kept {
		held[v] = now
		if at, ok := k.Held[v]; ok {
			held[v] = at
		}
	}
	if maps.Equal(held, k.Held) {
		return nil
	}
	next := k.holdsFile
	next.Held = held
	return k.write(next)
}

// heldSet is the volumes of held.
func heldSet(held map[string]time.Time) map[string]bool {
	set := map[string]bool{}
	for v := range held {
		set[v] = true
	}
	return set
}

// release records volume's target confirmed; k.mu held.
func (k *Keeper) release(volume string) error {
	next := k.holdsFile
	next.Held = maps.Clone(k.Held)
	delete(next.Held, volume)
	return k.write(next)
}

// askMembers asks the targets' members, while holds are on and the lease
// has less than half left before it counts as lapsed (a healthy
// operator's renewals come sooner), a target is held, or the agent has
// not been renewed since it started (it does not know how long the
// lease it inherited was), and records until when each target's
// members' answers hold it. A hold only grows: answers that arrive
// late, or an agent that restarted and has heard none yet, never
// shorten one the probe was told of.
func (k *Keeper) askMembers(ctx context.Context) error {
	k.mu.Lock()
	now := k.now()
	asking := k.Hold > 0 && (k.granted == 0 || !now.Before(k.lapsesAt().Add(-k.granted/2)) || len(k.Held) > 0)
	k.mu.Unlock()
	if !asking {
		return nil
	}
	answered, err := k.targets.AskMembers(ctx)
	if err != nil {
		return fmt.Errorf("ask the targets' members whether they still admit them: %w", err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	until := map[string]time.Time{}
	for v, at := range k.Until {
		if _, held := k.Held[v]; held || now.Before(at) {
			until[v] = at // an expired one of a target not held is dropped
		}
	}
	for v, at := range answered {
		if t := at.Add(k.Hold); t.After(until[v]) {
			until[v] = t
		}
	}
	if maps.EqualFunc(until, k.Until, time.Time.Equal) {
		return nil
	}
	next := k.holdsFile
	next.Until = until
	return k.write(next)
}
