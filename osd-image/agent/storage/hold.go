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
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flint-io/flint/internal/durable"
	"github.com/flint-io/flint/internal/spdk/types"
)

// A target keeps its hosts past its OSD's lease while its remote members
// admit it (docs/volumes.md, "The hold"): a member's export admits one
// host, and an operator moves a target unplanned only after it cut the
// target off a member (CutReplica), which SPDK answers once the target's
// connections are gone. So a Keep Alive that a member completes was sent
// before any cut of it, and a target whose every member completed one
// sent at t cannot have been cut off before t.

// keepAlive is the command a target asks its members with.
var keepAlive = types.NvmeCommand{Opcode: types.NvmeOpcodeKeepAlive}

// keepAliveGiveUp bounds how long an unanswered Keep Alive is waited
// for: SPDK v25.09 ignores bdev_nvme_send_cmd's timeout, and a frozen
// member keeps it outstanding. One at most is outstanding per member, so
// a member that never answers costs one command a minute.
const keepAliveGiveUp = time.Minute

// memberAnswers is what the agent knows of its targets' remote members'
// answers, since it started.
type memberAnswers struct {
	// path keeps counted (beside the lease), so that an agent that
	// restarts while SPDK runs on counts on the same members; empty
	// keeps it in memory.
	path string

	mu sync.Mutex
	// counted maps each volume whose target the agent drove to the OSDs
	// of the remote members its last EnsureTarget named in sync; nil
	// until loaded.
	counted map[string][]string
	// answered maps a member's controller to when the last Keep Alive it
	// completed was sent; asking holds those with one outstanding.
	answered map[string]time.Time
	asking   map[string]bool
}

// load reads counted on first use; m.mu held.
func (m *memberAnswers) load() error {
	if m.counted != nil {
		return nil
	}
	counted := map[string][]string{}
	if m.path != "" {
		if _, err := durable.ReadJSON(m.path, &counted); err != nil {
			return fmt.Errorf("read the members the targets count on from %s: %w", m.path, err)
		}
	}
	m.counted = counted
	return nil
}

// set records osds as the members volume's target counts on (none: the
// target stopped), durably before it counts; m.mu held.
func (m *memberAnswers) set(volume string, osds []string, served bool) error {
	if err := m.load(); err != nil {
		return err
	}
	had, ok := m.counted[volume]
	if ok == served && slices.Equal(had, osds) {
		return nil
	}
	next := maps.Clone(m.counted)
	if served {
		next[volume] = osds
	} else {
		delete(next, volume)
	}
	if m.path != "" {
		if err := durable.WriteJSON(m.path, next, 0o644); err != nil {
			return fmt.Errorf("record the members the targets count on: %w", err)
		}
	}
	m.counted = next
	return nil
}

// count records the members spec's target counts on, before the drive:
// one that fails half-way keeps the new ones, which the raid holds or is
// about to.
func (m *memberAnswers) count(spec TargetSpec, self string) error {
	osds := []string{}
	for _, mem := range spec.Members {
		if mem.OSD != self && mem.InSync {
			osds = append(osds, mem.OSD)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.set(spec.Volume, osds, true)
}

// forget drops volume, whose target stopped here.
func (m *memberAnswers) forget(volume string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.set(volume, nil, false)
}

// AskMembers sends a Keep Alive to every remote member of every target
// this agent drove since it started, unless one to it is outstanding,
// and returns, per such volume served here, when the oldest of the
// latest Keep Alives its members completed was sent: the target's
// members all admitted it then. A volume is left out while one of its
// members has not answered since the agent started, or is not attached.
// The members counted are those the last EnsureTarget named in sync and
// any remote member of the raid (a rebuild may have brought one in since).
// Answers arrive after the call returns: call it periodically.
func (e *Engine) AskMembers(ctx context.Context) (map[string]time.Time, error) {
	raids, err := e.spdk.BdevRaidGetBdevs(ctx, types.RaidCategoryAll)
	if err != nil {
		return nil, fmt.Errorf("list raids: %w", err)
	}
	raidMembers := map[string][]string{}
	for _, r := range raids {
		raidMembers[r.Name] = r.Members()
	}
	ctrlrs, err := e.spdk.BdevNvmeGetControllers(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("list NVMe controllers: %w", err)
	}
	attached := map[string]bool{}
	for _, c := range ctrlrs {
		attached[c.Name] = true
	}
	m := &e.members
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.load(); err != nil {
		return nil, err
	}
	since := map[string]time.Time{}
	for volume, osds := range m.counted {
		asked := map[string]bool{}
		for _, osd := range osds {
			asked[remoteName(volume, osd)] = true
		}
		for _, b := range raidMembers[raidName(volume)] {
			if name, ok := strings.CutSuffix(b, "n1"); ok && isRemoteName(name) {
				asked[name] = true
			}
		}
		oldest, all := time.Time{}, true
		for _, name := range slices.Sorted(maps.Keys(asked)) {
			if !attached[name] {
				all = false
				continue
			}
			e.askMember(ctx, name)
			at, ok := m.answered[name]
			if !ok {
				all = false
				continue
			}
			if oldest.IsZero() || at.Before(oldest) {
				oldest = at
			}
		}
		switch {
		case !all:
		case len(asked) == 0:
			// No remote member holds the volume's data in sync: no
			// other OSD can take the target over.
			since[volume] = time.Now()
		default:
			since[volume] = oldest
		}
	}
	return since, nil
}

// askMember sends ctrlr a Keep Alive unless one is outstanding; m.mu held.
func (e *Engine) askMember(ctx context.Context, ctrlr string) {
	m := &e.members
	if m.asking[ctrlr] {
		return
	}
	if m.asking == nil {
		m.asking, m.answered = map[string]bool{}, map[string]time.Time{}
	}
	m.asking[ctrlr] = true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keepAliveGiveUp)
	go func() {
		defer cancel()
		sent := time.Now()
		cpl, _, err := e.spdk.BdevNvmeAdminCmd(ctx, ctrlr, keepAlive, 0)
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.asking, ctrlr)
		if err == nil && cpl.OK() && sent.After(m.answered[ctrlr]) {
			m.answered[ctrlr] = sent
		}
	}()
}

// CutReplica removes volume's replica's export, which cuts off the target
// it was exported to, and records epoch, the target's that an unplanned
// move makes, as the replica's highest: no export for an older target
// lands after it. It fails with ErrStaleEpoch when a newer target's epoch
// was exported.
func (e *Engine) CutReplica(ctx context.Context, volume string, epoch uint32) error {
	if err := checkVolumeName(volume); err != nil {
		return err
	}
	if epoch == 0 {
		return fmt.Errorf("%w: a cut names the epoch of the target the move makes (1 or more)", ErrInvalid)
	}
	if err := e.epochs.lock(); err != nil {
		return err
	}
	defer e.epochs.unlock()
	if err := e.epochs.admit(volume, epoch); err != nil {
		return err
	}
	return e.UnexportReplica(ctx, volume)
}
