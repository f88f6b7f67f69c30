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
	"path/filepath"
	"testing"
	"time"

	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// answeredAfter asks the target's members until they all answered a Keep
// Alive sent after t, and returns when the oldest of those was sent.
func (c *cluster) answeredAfter(t time.Time) time.Time {
	c.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		since, err := c.osds[0].AskMembers(context.Background())
		if err != nil {
			c.t.Fatal(err)
		}
		if at, ok := since[volume]; ok && at.After(t) {
			return at
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the target's members did not all answer a Keep Alive sent after %s: %v", t.Format(time.StampMicro), since)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A target's members answer its Keep Alives until one is cut off it:
// after the cut, the volume's answers date from before it for good, and
// the replica refuses an export for the old target.
func TestATargetsMembersAnswerItUntilOneIsCut(t *testing.T) {
	ctx := context.Background()
	c, m0, m1, m2 := threeReplicas(t)
	c.ensure(m0, m1, m2)
	c.answeredAfter(time.Now())

	if err := c.osds[2].CutReplica(ctx, volume, 2); err != nil {
		t.Fatal(err)
	}
	cut := time.Now() // a Keep Alive sent while the cut ran may be answered
	for range 20 {
		since, err := c.osds[0].AskMembers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if at, ok := since[volume]; ok && !at.Before(cut) {
			t.Fatalf("the members all answered a Keep Alive sent at %s, after OSD 2's replica was cut at %s", at.Format(time.StampMicro), cut.Format(time.StampMicro))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := c.osds[2].ExportReplica(ctx, volume, agentv1.HostNQN(c.osds[0].cfg.UID), 1, Keys{}); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("an export for the cut target's epoch = %v, want ErrStaleEpoch", err)
	}
	if err := c.osds[2].CutReplica(ctx, volume, 1); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("a cut for an older move = %v, want ErrStaleEpoch", err)
	}
	if err := c.osds[2].CutReplica(ctx, volume, 2); err != nil {
		t.Fatalf("a repeated cut = %v, want success", err)
	}
}

// A member the last EnsureTarget called out of sync is not asked, unless
// the raid holds it; one whose SPDK stopped keeps the volume's answers
// from advancing; a target with no remote member in sync answers for
// itself; a target stopped here is asked no more.
func TestTheMembersATargetCountsOn(t *testing.T) {
	ctx := context.Background()
	c, m0, m1, m2 := threeReplicas(t)
	c.ensure(m0, m1, m2)
	c.answeredAfter(time.Now())

	c.targets[2].Kill()
	killed := time.Now()
	for range 20 {
		since, err := c.osds[0].AskMembers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if at, ok := since[volume]; ok && at.After(killed) {
			t.Fatalf("the members all answered at %s, after OSD 2's SPDK stopped", at.Format(time.StampMicro))
		}
	}
	// Recorded out of sync, OSD 2 leaves the raid and is asked no more.
	m2.InSync = false
	m2.Leaving = true
	c.ensure(m0, m1, m2)
	c.answeredAfter(time.Now())

	if _, err := c.osds[0].DeleteTarget(ctx, volume, []string{"osd-0", "osd-1", "osd-2"}, []string{"osd-2"}); err != nil {
		t.Fatal(err)
	}
	since, err := c.osds[0].AskMembers(ctx)
	if err != nil || len(since) != 0 {
		t.Fatalf("after the target stopped AskMembers = %v, %v; want nothing", since, err)
	}

	c.ensure(m0)
	before := time.Now()
	since, err = c.osds[0].AskMembers(ctx)
	if at := since[volume]; err != nil || at.Before(before) {
		t.Fatalf("a target whose only in-sync member is its own answered at %s (%v), want now", at, err)
	}
}

// An agent that restarts while SPDK runs on counts on the members its
// predecessor's last EnsureTarget named: its held targets stay held on
// their answers, not on a drive that may not come.
func TestARestartedAgentCountsOnTheSameMembers(t *testing.T) {
	c, m0, m1, m2 := threeReplicas(t)
	cfg := c.osds[0].cfg
	cfg.MembersFile = filepath.Join(t.TempDir(), "target-members")
	c.osds[0] = New(cfg, c.spdks[0])
	c.ensure(m0, m1, m2)
	c.osds[0] = New(cfg, c.spdks[0])
	c.answeredAfter(time.Now())
}
