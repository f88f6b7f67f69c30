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
	"math/rand/v2"
	"testing"
	"time"
)

// A long round is what moves targets; the faults it carries must end
// within it and never be of its kind, which could end it early.
func TestPlanKeepsALongRoundsFaultsWithinIt(t *testing.T) {
	const grace = 17 * time.Second
	rng := rand.New(rand.NewPCG(1, 0))
	long, faults, rounds := 0, 0, 1000
	for range rounds {
		round := plan(rng, grace)
		faults += len(round)
		first := round[0]
		if first.hold <= grace {
			if len(round) > 2 {
				t.Fatalf("a short round of %d faults: %+v", len(round), round)
			}
			continue
		}
		long++
		if len(round) != 4 {
			t.Fatalf("a long round with %d faults, want 4: %+v", len(round), round)
		}
		for _, f := range round[1:] {
			if f.kind == first.kind {
				t.Fatalf("a long %s carries another: %+v", first.kind, round)
			}
			if end := f.after + f.hold; end > first.hold {
				t.Fatalf("a fault ends at %s, after the long one's %s: %+v", end, first.hold, round)
			}
		}
	}
	if long == 0 || long == rounds {
		t.Fatalf("%d long rounds in %d: want some, not all", long, rounds)
	}
	t.Logf("%d rounds, %d long, %.2f faults a round", rounds, long, float64(faults)/float64(rounds))
}
