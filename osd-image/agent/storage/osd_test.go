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
	"strings"
	"testing"

	"github.com/flint-io/flint/internal/spdk/client"
	"github.com/flint-io/flint/internal/spdk/spdktest"
	"github.com/flint-io/flint/internal/spdk/types"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

const (
	gib     = 1 << 30
	hostA   = agentv1.NQNPrefix + ":osd:a"
	hostB   = agentv1.NQNPrefix + ":osd:b"
	osdUID  = "0b9c6f1e-6a55-4c1d-9a51-2f6a3c1e8d01"
	otherID = "7f1d2e3c-0000-4000-8000-000000000001"
)

type rig struct {
	t      *testing.T
	dir    string
	fabric *spdktest.Fabric
	target *spdktest.Target
	spdk   *client.Client
}

func newRig(t *testing.T) *rig {
	dir, err := os.MkdirTemp("", "flint-osd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	f := spdktest.NewFabric()
	tg, err := f.StartTarget(filepath.Join(dir, "spdk.sock"))
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(tg.Socket())
	t.Cleanup(func() { _ = c.Close(); tg.Kill() })
	return &rig{t: t, dir: dir, fabric: f, target: tg, spdk: c}
}

func (r *rig) file(name string, size int64) string {
	path := filepath.Join(r.dir, name)
	f, err := os.Create(path)
	if err != nil {
		r.t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if err := f.Truncate(size); err != nil {
		r.t.Fatal(err)
	}
	return path
}

func (r *rig) osd(uid, path string, tuning Tuning) *Engine {
	return New(Config{
		UID:      uid,
		Device:   Device{Driver: DriverAIO, Path: path},
		Listener: Listener{Transport: "tcp", Address: "127.0.0.1", Port: 4420},
		Tuning:   tuning,
	}, r.spdk)
}

func TestBootstrapIsIdempotentAndSurvivesRestart(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	o := r.osd(osdUID, r.file("dev", gib), Tuning{IOUnitSize: 16384})
	first, err := o.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if first.Name != agentv1.LvstoreName(osdUID) || first.TotalBytes() == 0 {
		t.Fatalf("lvstore = %+v", first)
	}
	again, err := o.Bootstrap(ctx)
	if err != nil || again.UUID != first.UUID {
		t.Fatalf("second bootstrap: %+v, %v; want the same lvstore", again, err)
	}
	if _, err := o.CreateReplica(ctx, "pvc-1", 64<<20); err != nil {
		t.Fatal(err)
	}

	// SPDK restarts with nothing: bootstrap reloads the lvstore from the
	// device and re-creates the transport.
	if err := r.target.Restart(); err != nil {
		t.Fatal(err)
	}
	back, err := o.Bootstrap(ctx)
	if err != nil || back.UUID != first.UUID {
		t.Fatalf("bootstrap after restart: %+v, %v; want lvstore %s back", back, err, first.UUID)
	}
	if tr, err := r.spdk.NvmfGetTransports(ctx, "tcp"); err != nil || tr[0].IOUnitSize != 16384 {
		t.Errorf("transport after restart: %+v, %v", tr, err)
	}
	if rep, err := o.CreateReplica(ctx, "pvc-1", 64<<20); err != nil || rep.SizeBytes != 64<<20 {
		t.Errorf("the replica did not survive the restart: %+v, %v", rep, err)
	}
}

func TestBootstrapRefusesForeignDevices(t *testing.T) {
	ctx := context.Background()
	t.Run("another OSD's lvstore", func(t *testing.T) {
		r := newRig(t)
		path := r.file("dev", gib)
		if _, err := r.osd(otherID, path, Tuning{}).Bootstrap(ctx); err != nil {
			t.Fatal(err)
		}
		_, err := r.osd(osdUID, path, Tuning{}).Bootstrap(ctx)
		if !errors.Is(err, ErrForeignDevice) {
			t.Fatalf("err = %v, want ErrForeignDevice", err)
		}
		stores, _ := r.spdk.BdevLvolGetLvstores(ctx, types.LvstoreSelector{})
		if len(stores) != 1 || stores[0].Name != agentv1.LvstoreName(otherID) {
			t.Errorf("the other OSD's lvstore was touched: %+v", stores)
		}
	})
	t.Run("data that is no lvstore", func(t *testing.T) {
		r := newRig(t)
		path := r.file("dev", gib)
		if err := os.WriteFile(path, []byte("\x53\xef ext4 superblock, say"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, gib); err != nil {
			t.Fatal(err)
		}
		_, err := r.osd(osdUID, path, Tuning{}).Bootstrap(ctx)
		if !errors.Is(err, ErrForeignDevice) {
			t.Fatalf("err = %v, want ErrForeignDevice", err)
		}
		if stores, _ := r.spdk.BdevLvolGetLvstores(ctx, types.LvstoreSelector{}); len(stores) != 0 {
			t.Errorf("an lvstore was written over unknown data: %+v", stores)
		}
	})
	t.Run("transport running with other tuning", func(t *testing.T) {
		r := newRig(t)
		path := r.file("dev", gib)
		if _, err := r.osd(osdUID, path, Tuning{IOUnitSize: 16384}).Bootstrap(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := r.osd(osdUID, path, Tuning{IOUnitSize: 8192}).Bootstrap(ctx); !errors.Is(err, ErrConflict) {
			t.Fatalf("err = %v, want ErrConflict", err)
		}
	})
}

func TestBootstrapDrivers(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.fabric.AddPCIeDevice("0000:3b:00.0", 4*gib, "S4EVNF0M123456", "Samsung SSD 980 PRO")
	for _, d := range []Device{
		{Driver: DriverPCIe, PCIAddress: "0000:3b:00.0"},
		{Driver: DriverMalloc, MallocBytes: 256 << 20},
		{Driver: DriverURing, Path: r.file("uring-dev", gib)},
	} {
		t.Run(d.Driver, func(t *testing.T) {
			if err := r.target.Restart(); err != nil {
				t.Fatal(err)
			}
			o := New(Config{UID: osdUID, Device: d, Listener: Listener{Transport: "tcp", Address: "127.0.0.1", Port: 4420}}, r.spdk)
			s, err := o.Bootstrap(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if s.Name != agentv1.LvstoreName(osdUID) {
				t.Errorf("lvstore %+v", s)
			}
			if _, err := o.Bootstrap(ctx); err != nil {
				t.Errorf("second bootstrap: %v", err)
			}
		})
	}
	o := New(Config{UID: osdUID, Device: Device{Driver: "nvme"}}, r.spdk)
	if _, err := o.Bootstrap(ctx); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown driver: %v, want ErrInvalid", err)
	}
}

func TestReplicas(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	o := r.osd(osdUID, r.file("dev", gib), Tuning{})
	if _, err := o.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		op      func() error
		wantErr error
	}{
		{"create", func() error { _, err := o.CreateReplica(ctx, "pvc-1", 100<<20); return err }, nil},
		{"create again, same size", func() error { _, err := o.CreateReplica(ctx, "pvc-1", 100<<20); return err }, nil},
		{"create again, other size", func() error { _, err := o.CreateReplica(ctx, "pvc-1", 200<<20); return err }, ErrConflict},
		{"create with a bad name", func() error { _, err := o.CreateReplica(ctx, "PVC_1", 1<<20); return err }, ErrInvalid},
		{"create with a key longer than a uid", func() error {
			_, err := o.CreateReplica(ctx, "0c7e1d2a-5b3f-4e6d-9a8c-1b2c3d4e5f60a", 1<<20)
			return err
		}, ErrInvalid},
		{"create without size", func() error { _, err := o.CreateReplica(ctx, "pvc-2", 0); return err }, ErrInvalid},
		{"thin beyond the device", func() error { _, err := o.CreateReplica(ctx, "pvc-3", 10*gib); return err }, nil},
		{"grow", func() error { _, err := o.ResizeReplica(ctx, "pvc-1", 300<<20); return err }, nil},
		{"grow again", func() error { _, err := o.ResizeReplica(ctx, "pvc-1", 300<<20); return err }, nil},
		{"shrink", func() error { _, err := o.ResizeReplica(ctx, "pvc-1", 100<<20); return err }, ErrInvalid},
		{"resize a missing replica", func() error { _, err := o.ResizeReplica(ctx, "pvc-9", 1<<20); return err }, ErrNotFound},
		{"export to the target", func() error { _, err := o.ExportReplica(ctx, "pvc-1", hostA, 1, Keys{}); return err }, nil},
		{"export again", func() error { _, err := o.ExportReplica(ctx, "pvc-1", hostA, 1, Keys{}); return err }, nil},
		{"export a missing replica", func() error { _, err := o.ExportReplica(ctx, "pvc-9", hostA, 1, Keys{}); return err }, ErrNotFound},
		{"delete", func() error { return o.DeleteReplica(ctx, "pvc-3") }, nil},
		{"delete again", func() error { return o.DeleteReplica(ctx, "pvc-3") }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.op()
			if (tt.wantErr == nil && err != nil) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
	rep, err := o.CreateReplica(ctx, "pvc-1", 300<<20)
	if err != nil || rep.SizeBytes != 300<<20 || rep.Lvol != agentv1.LvstoreName(osdUID)+"/pvc-1" {
		t.Errorf("replica after grow: %+v, %v", rep, err)
	}
}

// exportedReplica is a bootstrapped OSD with replica pvc-1 of 64 MiB
// exported to hostA.
func exportedReplica(t *testing.T) (*rig, *Engine, Subsystem) {
	t.Helper()
	ctx := context.Background()
	r := newRig(t)
	o := r.osd(osdUID, r.file("dev", gib), Tuning{})
	if _, err := o.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := o.CreateReplica(ctx, "pvc-1", 64<<20); err != nil {
		t.Fatal(err)
	}
	exp, err := o.ExportReplica(ctx, "pvc-1", hostA, 1, Keys{})
	if err != nil {
		t.Fatal(err)
	}
	return r, o, exp
}

// Exporting to a new target host removes the old one: the old target is
// fenced from the replica.
func TestExportFencesTheOldTarget(t *testing.T) {
	ctx := context.Background()
	r, o, exp := exportedReplica(t)
	if !strings.HasPrefix(exp.NQN, agentv1.ReplicaNQNPrefix("pvc-1")) || exp.Address != "127.0.0.1" || exp.Port != 4420 || exp.Transport != "tcp" {
		t.Errorf("export = %+v", exp)
	}
	if _, err := o.ExportReplica(ctx, "pvc-1", hostB, 1, Keys{}); err != nil {
		t.Fatal(err)
	}
	subs, err := r.spdk.NvmfGetSubsystems(ctx, exp.NQN)
	if err != nil {
		t.Fatal(err)
	}
	if hosts := subs[0].HostNQNs(); len(hosts) != 1 || hosts[0] != hostB || subs[0].AllowAnyHost {
		t.Errorf("hosts = %v (allow any %v), want only %s", hosts, subs[0].AllowAnyHost, hostB)
	}
	if len(subs[0].Namespaces) != 1 || len(subs[0].ListenAddresses) != 1 {
		t.Errorf("subsystem = %+v, want one namespace and one listener", subs[0])
	}
}

// An export for an older target epoch than one already served is refused
// and changes nothing, also by the next agent on the same file; a deleted
// replica's epoch is forgotten.
func TestExportRefusesAnOlderEpoch(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	cfg := Config{
		UID: osdUID, Device: Device{Driver: DriverAIO, Path: r.file("dev", gib)},
		Listener:  Listener{Transport: "tcp", Address: "127.0.0.1", Port: 4420},
		EpochFile: filepath.Join(r.dir, "epochs"),
	}
	o := New(cfg, r.spdk)
	if _, err := o.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := o.CreateReplica(ctx, "pvc-1", 64<<20); err != nil {
		t.Fatal(err)
	}
	exp, err := o.ExportReplica(ctx, "pvc-1", hostB, 2, Keys{})
	if err != nil {
		t.Fatal(err)
	}
	hostsNow := func() []string {
		t.Helper()
		subs, err := r.spdk.NvmfGetSubsystems(ctx, exp.NQN)
		if err != nil {
			t.Fatal(err)
		}
		return subs[0].HostNQNs()
	}
	restarted := New(cfg, r.spdk)
	for name, agent := range map[string]*Engine{"the agent": o, "a restarted agent": restarted} {
		if _, err := agent.ExportReplica(ctx, "pvc-1", hostA, 1, Keys{}); !errors.Is(err, ErrStaleEpoch) {
			t.Errorf("%s exported for epoch 1 after epoch 2: %v, want %v", name, err, ErrStaleEpoch)
		}
		if hosts := hostsNow(); !slices.Equal(hosts, []string{hostB}) {
			t.Errorf("after %s refused epoch 1 the replica lets in %v, want only %s", name, hosts, hostB)
		}
	}
	if _, err := restarted.ExportReplica(ctx, "pvc-1", hostA, 3, Keys{}); err != nil {
		t.Fatalf("export for a newer epoch: %v", err)
	}
	if _, err := restarted.ExportReplica(ctx, "pvc-1", hostA, 0, Keys{}); err != nil {
		t.Errorf("export from an operator before epochs: %v", err)
	}
	if _, err := New(cfg, r.spdk).ExportReplica(ctx, "pvc-1", hostB, 2, Keys{}); !errors.Is(err, ErrStaleEpoch) {
		t.Errorf("epoch 0 lowered the floor: an export for epoch 2 after 3 answered %v", err)
	}
	if err := restarted.DeleteReplica(ctx, "pvc-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := restarted.CreateReplica(ctx, "pvc-1", 64<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg, r.spdk).ExportReplica(ctx, "pvc-1", hostA, 1, Keys{}); err != nil {
		t.Errorf("a replica made again after its deletion starts from no epoch: %v", err)
	}
}

func TestDeleteReplicaRefusesARaidMember(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	o := r.osd(osdUID, r.file("dev", gib), Tuning{})
	if _, err := o.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := o.CreateReplica(ctx, "pvc-1", 64<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := r.spdk.BdevNullCreate(ctx, types.BdevNullCreateRequest{Name: "other", NumBlocks: 16384, BlockSize: 4096}); err != nil {
		t.Fatal(err)
	}
	if err := r.spdk.BdevRaidCreate(ctx, types.BdevRaidCreateRequest{Name: raidName("pvc-1"), RaidLevel: "raid1", BaseBdevs: []string{agentv1.LvstoreName(osdUID) + "/pvc-1", "other"}}); err != nil {
		t.Fatal(err)
	}
	if err := o.DeleteReplica(ctx, "pvc-1"); !errors.Is(err, ErrInUse) {
		t.Fatalf("err = %v, want ErrInUse", err)
	}
	if _, err := o.CreateReplica(ctx, "pvc-1", 64<<20); err != nil {
		t.Errorf("the refused delete touched the replica: %v", err)
	}
}

// An export left by an earlier lvol of the volume (its lvol deleted
// behind the agent's back) goes when the new lvol is first exported.
func TestExportReplicaRemovesAnEarlierLvolsExport(t *testing.T) {
	ctx := context.Background()
	r, o, earlier := exportedReplica(t)
	if err := r.spdk.BdevLvolDelete(ctx, o.lvolAlias("pvc-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := o.CreateReplica(ctx, "pvc-1", 64<<20); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the first export, then a re-drive
		now, err := o.ExportReplica(ctx, "pvc-1", hostA, 1, Keys{})
		if err != nil {
			t.Fatal(err)
		}
		if now.NQN == earlier.NQN {
			t.Fatalf("the new lvol is exported under the earlier lvol's NQN %s", now.NQN)
		}
		subs, err := r.spdk.NvmfGetSubsystems(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		var exports []string
		for _, s := range subs {
			if strings.HasPrefix(s.NQN, agentv1.ReplicaNQNPrefix("pvc-1")) {
				exports = append(exports, s.NQN)
			}
		}
		if !slices.Equal(exports, []string{now.NQN}) {
			t.Fatalf("the volume's exports are %v, want only %s", exports, now.NQN)
		}
	}
}

// A namespace formatted with 512-byte blocks is refused before anything is
// written to it: its lvols could not be mirrored with any other OSD's, and
// a raid1 placeholder of 4096-byte blocks would not join them either.
func TestBootstrapRefusesAnotherBlockSize(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	const addr = "0000:3b:00.0"
	r.fabric.AddPCIeDevice(addr, 4*gib, "S4EVNF0M123456", "Samsung SSD 980 PRO", spdktest.WithLogicalBlockSize(512))
	o := New(Config{UID: osdUID, Device: Device{Driver: DriverPCIe, PCIAddress: addr},
		Listener: Listener{Transport: "tcp", Address: "127.0.0.1", Port: 4420}}, r.spdk)
	_, err := o.Bootstrap(ctx)
	if !errors.Is(err, ErrBlockSize) || !strings.Contains(err.Error(), "0000:3b:00.0 is formatted with 512-byte logical blocks") {
		t.Fatalf("Bootstrap = %v, want ErrBlockSize naming the device and its 512-byte blocks", err)
	}
	if stores, _ := r.spdk.BdevLvolGetLvstores(ctx, types.LvstoreSelector{}); len(stores) != 0 {
		t.Errorf("an lvstore was made on the device: %+v", stores)
	}
}
