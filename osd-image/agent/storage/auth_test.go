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
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/flint-io/flint/internal/fabric"
	"github.com/flint-io/flint/internal/spdk/types"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

func newKeys(t *testing.T) Keys {
	t.Helper()
	secret, err := fabric.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := fabric.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return Keys{Secret: secret, CtrlSecret: ctrl}
}

// keyFiles lists the key files OSD i keeps.
func (c *cluster) keyFiles(i int) []string {
	c.t.Helper()
	entries, err := os.ReadDir(c.osds[i].cfg.KeyDir)
	if err != nil {
		c.t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			c.t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			c.t.Errorf("key file %s has mode %v, want 0600", e.Name(), info.Mode().Perm())
		}
		names = append(names, e.Name())
	}
	return names
}

func TestReplicaLinksAndHostsAuthenticate(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, 2)
	c.createReplicas(64 << 20)
	links, hosts := newKeys(t), newKeys(t)
	exp, err := c.osds[1].ExportReplica(ctx, volume, agentv1.HostNQN(c.osds[0].cfg.UID), 1, links)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := c.spdks[1].NvmfGetSubsystems(ctx, exp.NQN)
	if err != nil {
		t.Fatal(err)
	}
	if h := sub[0].Hosts; len(h) != 1 || h[0].DhchapKey != volume+".export.key" || h[0].DhchapCtrlrKey != volume+".export.ctrl" {
		t.Fatalf("the export's hosts = %+v, want the target with the link's keys", h)
	}
	if got := c.keyFiles(1); !slices.Equal(got, []string{volume + ".export.ctrl", volume + ".export.key"}) {
		t.Fatalf("key files = %v", got)
	}

	m0, m1 := MemberSpec{OSD: c.osds[0].cfg.UID, InSync: true}, MemberSpec{OSD: c.osds[1].cfg.UID, InSync: true, Export: exp}
	// The export asks for the link's keys: the member is online only if
	// the target attached with them.
	spec := TargetSpec{Volume: volume, Epoch: 1, Hosts: []string{publishedHost}, Members: []MemberSpec{m0, m1}, HostKeys: hosts}
	spec.MemberKeys = links
	wantStates(t, c.ensureAs(spec), agentv1.MemberState_MEMBER_STATE_ONLINE, agentv1.MemberState_MEMBER_STATE_ONLINE)
	sub, err = c.spdks[0].NvmfGetSubsystems(ctx, agentv1.VolumeNQN(volume))
	if err != nil {
		t.Fatal(err)
	}
	if h := sub[0].Hosts; len(h) != 1 || h[0].DhchapKey != volume+".host.key" || h[0].DhchapCtrlrKey != volume+".host.ctrl" {
		t.Fatalf("the volume's hosts = %+v, want the published host with the host keys", h)
	}

	// A re-drive neither writes nor registers a key: it costs the RPCs of
	// one without keys.
	keyless := spec
	keyless.MemberKeys, keyless.HostKeys = Keys{}, Keys{}
	before := c.rpcs(0)
	c.ensureAs(keyless)
	without := c.rpcs(0) - before
	before = c.rpcs(0)
	c.ensureAs(spec)
	if with := c.rpcs(0) - before; with != without {
		t.Fatalf("a re-drive with keys costs %d RPCs, without %d; want the same", with, without)
	}

	// A rotated host secret is a rewritten file, under the same name.
	rotated := hosts
	rotated.Secret = newKeys(t).Secret
	spec.HostKeys = rotated
	c.ensureAs(spec)
	if b, err := os.ReadFile(filepath.Join(c.osds[0].cfg.KeyDir, volume+".host.key")); err != nil || string(b) != rotated.Secret {
		t.Fatalf("the host key file holds %q (%v), want the rotated secret", b, err)
	}

	// SPDK restarted: its keyring is empty, and the next drive after the
	// bootstrap registers the keys again.
	if err := c.targets[0].Restart(); err != nil {
		t.Fatal(err)
	}
	c.bootstrap(0)
	spec.Resume = false
	c.ensureAs(spec)
	keys, err := c.spdks[0].KeyringGetKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(keys, func(k types.Key) bool { return k.Name == volume+".host.key" }) {
		t.Fatalf("keys after an SPDK restart = %+v, want the host key registered again", keys)
	}

	// Stopping the target and the export removes their keys.
	if _, err := c.osds[0].DeleteTarget(ctx, volume, []string{m0.OSD, m1.OSD}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.osds[1].UnexportReplica(ctx, volume); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if files := c.keyFiles(i); len(files) != 0 {
			t.Errorf("OSD %d keeps key files %v after its links stopped", i, files)
		}
		if keys, err := c.spdks[i].KeyringGetKeys(ctx); err != nil || len(keys) != 0 {
			t.Errorf("OSD %d keeps keys %+v (%v) after its links stopped", i, keys, err)
		}
	}
}

func TestKeysNeedAKeyDirectoryAndValidSecrets(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, 1)
	c.createReplicas(64 << 20)
	bad := newKeys(t)
	bad.Secret = "DHHC-1:00:not-a-key:"
	if _, err := c.osds[0].ExportReplica(ctx, volume, publishedHost, 1, bad); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an export with a malformed secret = %v, want ErrInvalid", err)
	}
	c.osds[0].cfg.KeyDir = ""
	if _, err := c.osds[0].ExportReplica(ctx, volume, publishedHost, 1, newKeys(t)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an export with keys on an agent without a key directory = %v, want ErrInvalid", err)
	}
	if _, err := c.osds[0].ExportReplica(ctx, volume, publishedHost, 1, Keys{}); err != nil {
		t.Fatalf("an export without keys on an agent without a key directory = %v", err)
	}
}

// ensureAs drives OSD 0's target with spec as given.
func (c *cluster) ensureAs(spec TargetSpec) Target {
	c.t.Helper()
	st, err := c.osds[0].EnsureTarget(context.Background(), spec)
	if err != nil {
		c.t.Fatal(err)
	}
	return st
}

// rpcs counts the RPCs OSD i's SPDK answered.
func (c *cluster) rpcs(i int) uint64 {
	return c.fabric.RPCs()[c.targets[i].Socket()]
}
