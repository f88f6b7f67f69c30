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

// Package contract holds the SPDK contract suite: one table of scenarios,
// each the way Flint uses SPDK, run against the double always and against
// real nvmf_tgt processes when FLINT_SPDK_DIR names an SPDK build tree
// (make test-spdk). Expectations are the same for both, modulo uuids.
package contract

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flint-io/flint/internal/fabric"
	"github.com/flint-io/flint/internal/spdk/client"
	"github.com/flint-io/flint/internal/spdk/jsonrpc"
	"github.com/flint-io/flint/internal/spdk/spdklab"
	"github.com/flint-io/flint/internal/spdk/types"
)

const (
	mib       = 1 << 20
	imageSize = 256 * mib // 63 data clusters of 4 MiB once the lvstore's metadata is off
	hostNQN   = "nqn.2014-08.org.nvmexpress:uuid:2c7a1d36-3a3f-4b57-9c2b-1f0e6a5d4c3b"
)

var scenarios = []struct {
	name    string
	targets int
	run     func(t *testing.T, l *spdklab.Lab)
}{
	{"the methods it lists are those of its modules", 1, methodsListed},
	{"lvstore on an aio device", 1, lvstoreOnAio},
	{"thin and thick lvols", 1, thinAndThickLvols},
	{"snapshot and clone rules", 1, snapshotsAndClones},
	{"lvstore survives a restart, exports do not", 1, lvstoreSurvivesRestart},
	{"export an lvol to one host", 1, exportToOneHost},
	{"a namespace identity and controller-id range given by the caller", 2, identityAndCntlidRange},
	{"raid1 over a local and two remote replicas", 3, raid1AcrossTargets},
	{"raid1 created degraded, with a placeholder", 1, raid1CreatedDegraded},
	{"raid1 grows once every member grew", 2, raid1GrowsWithMembers},
	{"a rebuild keeps the bandwidth cap set when it started", 1, rebuildCappedByOptions},
	{"latency histogram of an exported bdev", 1, latencyHistogram},
	{"queue-depth sampling of a bdev", 1, queueDepthSampling},
	{"QoS limits of a raid1, set whole and lost on a restart", 1, qosLimitsOfARaid},
	{"NVMe options are taken only before the first controller", 2, nvmeOptionsBeforeControllers},
	{"a listener removed takes its hosts' controllers, re-added lets them back", 2, listenerCutsHosts},
	{"an inaccessible listener keeps its hosts' controllers", 2, anaKeepsHosts},
	{"file keys of the keyring", 1, keyringFileKeys},
	{"DH-HMAC-CHAP: a host proves its key, the subsystem its own", 2, dhchapBothWays},
}

func TestContract(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			l := spdklab.New(t, sc.targets)
			if l.Real {
				t.Logf("against real SPDK in %s", l.Dir)
			}
			defer func() {
				if r := recover(); r != nil {
					f, isFailure := r.(failure)
					if !isFailure {
						panic(r)
					}
					t.Fatalf("unexpected SPDK error: %v", f.err)
				}
			}()
			sc.run(t, l)
		})
	}
}

// methodsListed: rpc_get_methods names the methods of the modules linked
// in, and nvmf_tgt has no flint_volume (flint_tgt's module): the agent
// tells the two apart by it.
func methodsListed(t *testing.T, l *spdklab.Lab) {
	methods := must(l.Targets[0].Client.RPCGetMethods(ctx(t)))
	for _, m := range []string{"spdk_get_version", "bdev_raid_create", "nvmf_create_subsystem", "rpc_get_methods"} {
		if !slices.Contains(methods, m) {
			t.Errorf("rpc_get_methods lacks %s: %v", m, methods)
		}
	}
	if slices.Contains(methods, "flint_volume_create") {
		t.Errorf("rpc_get_methods of nvmf_tgt lists flint_volume_create")
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// failure carries an unexpected error out of a scenario to TestContract,
// which fails the scenario with it.
type failure struct{ err error }

// must returns v, or ends the scenario when err is set.
func must[T any](v T, err error) T {
	if err != nil {
		panic(failure{err})
	}
	return v
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErr checks that err is SPDK's refusal of the kind sentinel (or, when
// sentinel is nil, of exactly the code).
func wantErr(t *testing.T, err error, sentinel error, code int) {
	t.Helper()
	if err == nil {
		t.Fatalf("SPDK accepted what it must refuse (want %v, code %d)", sentinel, code)
	}
	if sentinel != nil && !errors.Is(err, sentinel) {
		t.Fatalf("err = %v, want %v", err, sentinel)
	}
	if got := jsonrpc.CodeOf(err); code != 0 && got != code {
		t.Fatalf("err = %v, want code %d", err, code)
	}
}

// aioLvstore creates an aio bdev over a fresh image and an lvstore on it.
func aioLvstore(t *testing.T, l *spdklab.Lab, c *client.Client, name string) types.Lvstore {
	t.Helper()
	path := l.Image(t, name, imageSize)
	must(c.BdevAioCreate(ctx(t), types.BdevAioCreateRequest{Filename: path, Name: name + "_aio", BlockSize: 4096}))
	must(c.BdevLvolCreateLvstore(ctx(t), types.BdevLvolCreateLvstoreRequest{BdevName: name + "_aio", LvsName: name}))
	stores := must(c.BdevLvolGetLvstores(ctx(t), types.LvstoreSelector{LvsName: name}))
	if len(stores) != 1 {
		t.Fatalf("lvstores named %s: %v", name, stores)
	}
	return stores[0]
}

func lvstoreOnAio(t *testing.T, l *spdklab.Lab) {
	c := l.Targets[0].Client
	s := aioLvstore(t, l, c, "lvs0")
	if s.ClusterSize != 4*mib || s.TotalDataClusters != 63 || s.FreeClusters != 63 || s.BaseBdev != "lvs0_aio" {
		t.Errorf("lvstore = %+v, want 63 free clusters of 4 MiB on lvs0_aio", s)
	}
	base := must(c.BdevGetBdevs(ctx(t), "lvs0_aio"))
	if !base[0].Claimed || base[0].ClaimType != "read_many_write_one" {
		t.Errorf("the lvstore's base bdev is not claimed: %+v", base[0])
	}

	_, err := c.BdevLvolCreateLvstore(ctx(t), types.BdevLvolCreateLvstoreRequest{BdevName: "lvs0_aio", LvsName: "other"})
	wantErr(t, err, jsonrpc.ErrNotPermitted, jsonrpc.CodeNotPermitted)
	must(c.BdevMallocCreate(ctx(t), types.BdevMallocCreateRequest{Name: "m0", NumBlocks: 8192, BlockSize: 4096}))
	_, err = c.BdevLvolCreateLvstore(ctx(t), types.BdevLvolCreateLvstoreRequest{BdevName: "m0", LvsName: "lvs0"})
	wantErr(t, err, jsonrpc.ErrExists, jsonrpc.CodeExists)
	_, err = c.BdevLvolCreateLvstore(ctx(t), types.BdevLvolCreateLvstoreRequest{BdevName: "nosuch", LvsName: "x"})
	wantErr(t, err, jsonrpc.ErrNotFound, jsonrpc.CodeNoSuchDevice)
	_, err = c.BdevLvolGetLvstores(ctx(t), types.LvstoreSelector{LvsName: "nosuch"})
	wantErr(t, err, jsonrpc.ErrNotFound, jsonrpc.CodeNoSuchDevice)

	ok(t, c.BdevLvolDeleteLvstore(ctx(t), types.LvstoreSelector{UUID: s.UUID}))
	if stores := must(c.BdevLvolGetLvstores(ctx(t), types.LvstoreSelector{})); len(stores) != 0 {
		t.Errorf("lvstores after delete: %v", stores)
	}
	wantErr(t, c.BdevLvolDeleteLvstore(ctx(t), types.LvstoreSelector{LvsName: "lvs0"}), jsonrpc.ErrNotFound, jsonrpc.CodeNoSuchDevice)
}

func thinAndThickLvols(t *testing.T, l *spdklab.Lab) {
	c := l.Targets[0].Client
	aioLvstore(t, l, c, "lvs0")
	thin := must(c.BdevLvolCreate(ctx(t), types.BdevLvolCreateRequest{LvolName: "thin", SizeInMiB: 64, ThinProvision: true, LvsName: "lvs0"}))
	must(c.BdevLvolCreate(ctx(t), types.BdevLvolCreateRequest{LvolName: "thick", SizeInMiB: 30, LvsName: "lvs0"}))
	s := must(c.BdevLvolGetLvstores(ctx(t), types.LvstoreSelector{LvsName: "lvs0"}))[0]
	if s.FreeClusters != 63-8 {
		t.Errorf("free clusters = %d after a thick 30 MiB lvol (8 clusters, rounded up), want 55", s.FreeClusters)
	}
	b := must(c.BdevGetBdevs(ctx(t), "lvs0/thin"))[0]
	if b.Name != thin || b.SizeBytes() != 64*mib || b.DriverSpecific.Lvol == nil || !b.DriverSpecific.Lvol.ThinProvision {
		t.Errorf("thin lvol bdev = %+v", b)
	}
	if b := must(c.BdevGetBdevs(ctx(t), "lvs0/thick"))[0]; b.SizeBytes() != 32*mib {
		t.Errorf("thick lvol of 30 MiB has %d bytes, want 32 MiB (whole clusters)", b.SizeBytes())
	}

	_, err := c.BdevLvolCreate(ctx(t), types.BdevLvolCreateRequest{LvolName: "thin", SizeInMiB: 4, ThinProvision: true, LvsName: "lvs0"})
	wantErr(t, err, jsonrpc.ErrExists, jsonrpc.CodeExists)
	_, err = c.BdevLvolCreate(ctx(t), types.BdevLvolCreateRequest{LvolName: "huge", SizeInMiB: 4096, LvsName: "lvs0"})
	wantErr(t, err, jsonrpc.ErrNoSpace, jsonrpc.CodeInvalidParams)
	_, err = c.BdevLvolCreate(ctx(t), types.BdevLvolCreateRequest{LvolName: "x", SizeInMiB: 4, LvsName: "nosuch"})
	wantErr(t, err, jsonrpc.ErrNotFound, jsonrpc.CodeNoSuchDevice)

	// Thin lvols may promise more than the store holds; thick may not.
	ok(t, c.BdevLvolResize(ctx(t), "lvs0/thin", 1024))
	if b := must(c.BdevGetBdevs(ctx(t), thin))[0]; b.SizeBytes() != 1024*mib {
		t.Errorf("thin lvol after resize has %d bytes", b.SizeBytes())
	}
	wantErr(t, c.BdevLvolResize(ctx(t), "lvs0/thick", 4096), jsonrpc.ErrNoSpace, jsonrpc.CodeInvalidParams)
	wantErr(t, c.BdevLvolResize(ctx(t), "lvs0/nosuch", 8), jsonrpc.ErrNotFound, jsonrpc.CodeNoSuchDevice)

	lvols := must(c.BdevLvolGetLvols(ctx(t), types.BdevLvolGetLvolsRequest{LvsName: "lvs0"}))
	if len(lvols) != 2 {
		t.Errorf("lvols = %+v, want thin and thick", lvols)
	}
	ok(t, c.BdevLvolDelete(ctx(t), "lvs0/thick"))
	wantErr(t, c.BdevLvolDelete(ctx(t), "lvs0/thick"), jsonrpc.ErrNotFound, jsonrpc.CodeNoSuchDevice)
	if s := must(c.BdevLvolGetLvstores(ctx(t), types.LvstoreSelector{LvsName: "lvs0"}))[0]; s.FreeClusters != 63 {
		t.Errorf("free clusters after deleting the thick lvol = %d, want 63", s.FreeClusters)
	}
}

func snapshotsAndClones(t *testing.T, l *spdklab.Lab) {
	c := l.Targets[0].Client
	aioLvstore(t, l, c, "lvs0")
	must(c.BdevLvolCreate(ctx(t), types.BdevLvolCreateRequest{LvolName: "vol", SizeInMiB: 16, LvsName: "lvs0"}))
	must(c.BdevLvolSnapshot(ctx(t), "lvs0/vol", "snap"))
	origin := must(c.BdevGetBdevs(ctx(t), "lvs0/vol"))[0].DriverSpecific.Lvol
	if !origin.Clone || !origin.ThinProvision || origin.BaseSnapshot != "snap" {
		t.Errorf("the snapshot's origin is not its thin clone: %+v", origin)
	}
	_, err := c.BdevLvolSnapshot(ctx(t), "lvs0/vol", "snap")
	wantErr(t, err, jsonrpc.ErrExists, jsonrpc.CodeInvalidParams)
	wantErr(t, c.BdevLvolResize(ctx(t), "lvs0/snap", 64), jsonrpc.ErrNotPermitted, jsonrpc.CodeInvalidParams)
	_, err = c.BdevLvolClone(ctx(t), "lvs0/vol", "x")
	wantErr(t, err, jsonrpc.ErrInvalid, jsonrpc.CodeInvalidParams)

	must(c.BdevLvolClone(ctx(t), "lvs0/snap", "clone"))
	snap := must(c.BdevGetBdevs(ctx(t), "lvs0/snap"))[0].DriverSpecific.Lvol
	if !snap.Snapshot || len(snap.Clones) != 2 {
		t.Errorf("snapshot = %+v, want two clones", snap)
	}
	// Two clones pin the snapshot; with one left it merges into it.
	wantErr(t, c.BdevLvolDelete(ctx(t), "lvs0/snap"), jsonrpc.ErrNotPermitted, jsonrpc.CodeInternalError)
	ok(t, c.BdevLvolDelete(ctx(t), "lvs0/clone"))
	ok(t, c.BdevLvolDelete(ctx(t), "lvs0/snap"))
	vol := must(c.BdevGetBdevs(ctx(t), "lvs0/vol"))[0].DriverSpecific.Lvol
	if vol.Clone || vol.NumAllocatedClusters != 4 {
		t.Errorf("after its snapshot merged, vol = %+v; want no parent and the 4 clusters back", vol)
	}
}

func lvstoreSurvivesRestart(t *testing.T, l *spdklab.Lab) {
	tg := l.Targets[0]
	c := tg.Client
	s := aioLvstore(t, l, c, "lvs0")
	vol := must(c.BdevLvolCreate(ctx(t), types.BdevLvolCreateRequest{LvolName: "vol", SizeInMiB: 32, ThinProvision: true, LvsName: "lvs0"}))
	ok(t, c.BdevLvolResize(ctx(t), "lvs0/vol", 48))
	ok(t, c.NvmfCreateTransport(ctx(t), types.NvmfCreateTransportRequest{Trtype: "TCP"}))
	ok(t, c.NvmfCreateSubsystem(ctx(t), types.NvmfCreateSubsystemRequest{NQN: "nqn.2026-01.io.flint:vol"}))

	tg.Kill()
	tg.Restart(t)

	if subs := must(c.NvmfGetSubsystems(ctx(t), "")); len(subs) != 1 || subs[0].Subtype != "Discovery" {
		t.Errorf("subsystems after restart = %+v, want only discovery", subs)
	}
	if ts := must(c.NvmfGetTransports(ctx(t), "")); len(ts) != 0 {
		t.Errorf("transports after restart = %+v, want none", ts)
	}
	_, err := c.BdevGetBdevs(ctx(t), "lvs0/vol")
	wantErr(t, err, jsonrpc.ErrNotFound, jsonrpc.CodeNoSuchDevice)

	must(c.BdevAioCreate(ctx(t), types.BdevAioCreateRequest{Filename: l.Image(t, "lvs0", imageSize), Name: "again", BlockSize: 4096}))
	ok(t, c.BdevWaitForExamine(ctx(t)))
	back := must(c.BdevLvolGetLvstores(ctx(t), types.LvstoreSelector{}))
	if len(back) != 1 || back[0].UUID != s.UUID || back[0].Name != "lvs0" || back[0].BaseBdev != "again" {
		t.Fatalf("lvstore after restart = %+v, want %s on the new aio bdev", back, s.UUID)
	}
	b := must(c.BdevGetBdevs(ctx(t), "lvs0/vol"))[0]
	if b.Name != vol || b.SizeBytes() != 48*mib {
		t.Errorf("lvol after restart = %s with %d bytes, want %s with 48 MiB", b.Name, b.SizeBytes(), vol)
	}
}

func exportToOneHost(t *testing.T, l *spdklab.Lab) {
	c := l.Targets[0].Client
	aioLvstore(t, l, c, "lvs0")
	must(c.BdevLvolCreate(ctx(t), types.BdevLvolCreateRequest{LvolName: "vol", SizeInMiB: 16, ThinProvision: true, LvsName: "lvs0"}))
	ok(t, c.NvmfCreateTransport(ctx(t), types.NvmfCreateTransportRequest{
		Trtype: "TCP", IOUnitSize: 16384, InCapsuleDataSize: 8192, NumSharedBuffers: 2047, BufCacheSize: 64,
	}))
	tr := must(c.NvmfGetTransports(ctx(t), "tcp"))
	if len(tr) != 1 || tr[0].IOUnitSize != 16384 || tr[0].InCapsuleDataSize != 8192 || tr[0].NumSharedBuffers != 2047 || tr[0].BufCacheSize != 64 {
		t.Errorf("transport = %+v, want the tuning applied", tr)
	}
	wantErr(t, c.NvmfCreateTransport(ctx(t), types.NvmfCreateTransportRequest{Trtype: "TCP"}), jsonrpc.ErrExists, jsonrpc.CodeInternalError)

	nqn := "nqn.2026-01.io.flint:pvc-1"
	ok(t, c.NvmfCreateSubsystem(ctx(t), types.NvmfCreateSubsystemRequest{NQN: nqn, SerialNumber: "FLINT0000000001", ModelNumber: "Flint volume"}))
	wantErr(t, c.NvmfCreateSubsystem(ctx(t), types.NvmfCreateSubsystemRequest{NQN: nqn}), nil, jsonrpc.CodeInternalError)
	wantErr(t, c.NvmfCreateSubsystem(ctx(t), types.NvmfCreateSubsystemRequest{NQN: "nqn.2026-01.io.flint:sn", SerialNumber: "FLINT000000000000000001"}), jsonrpc.ErrInvalid, jsonrpc.CodeInvalidParams)
	nsid := must(c.NvmfSubsystemAddNs(ctx(t), nqn, types.NvmfNamespaceRequest{BdevName: "lvs0/vol"}))
	if nsid != 1 {
		t.Errorf("nsid = %d, want 1", nsid)
	}
	_, err := c.NvmfSubsystemAddNs(ctx(t), nqn, types.NvmfNamespaceRequest{BdevName: "lvs0/vol"})
	wantErr(t, err, jsonrpc.ErrInvalid, jsonrpc.CodeInvalidParams)
	addr := types.ListenAddress{Trtype: "tcp", Adrfam: "ipv4", Traddr: "127.0.0.1", Trsvcid: spdklab.FreePort(t)}
	ok(t, c.NvmfSubsystemAddListener(ctx(t), nqn, addr))
	wantErr(t, c.NvmfSubsystemAddListener(ctx(t), nqn, addr), jsonrpc.ErrInvalid, jsonrpc.CodeInvalidParams)
	ok(t, c.NvmfSubsystemAddHost(ctx(t), types.NvmfSubsystemHostRequest{NQN: nqn, Host: hostNQN}))
	wantErr(t, c.NvmfSubsystemAddHost(ctx(t), types.NvmfSubsystemHostRequest{NQN: nqn, Host: hostNQN}), nil, jsonrpc.CodeInternalError)

	sub := must(c.NvmfGetSubsystems(ctx(t), nqn))[0]
	if sub.AllowAnyHost || len(sub.HostNQNs()) != 1 || sub.HostNQNs()[0] != hostNQN || sub.SerialNumber != "FLINT0000000001" ||
		len(sub.Namespaces) != 1 || len(sub.ListenAddresses) != 1 || sub.ListenAddresses[0].Trtype != "TCP" {
		t.Errorf("subsystem = %+v", sub)
	}
	ok(t, c.NvmfSubsystemRemoveHost(ctx(t), nqn, hostNQN))
	wantErr(t, c.NvmfSubsystemRemoveHost(ctx(t), nqn, hostNQN), nil, jsonrpc.CodeInternalError)

	ok(t, c.NvmfDeleteSubsystem(ctx(t), nqn))
	wantErr(t, c.NvmfDeleteSubsystem(ctx(t), nqn), jsonrpc.ErrInvalid, jsonrpc.CodeInvalidParams)
	if b := must(c.BdevGetBdevs(ctx(t), "lvs0/vol"))[0]; b.Claimed {
		t.Errorf("the lvol stays claimed after its subsystem was deleted")
	}
}

// identityAndCntlidRange is how a volume keeps one identity on every
// target it ever has: the namespace's UUID, NGUID and EUI-64 are the
// caller's, the raid's uuid too, and each incarnation of the subsystem
// numbers its controllers from its own range, so a host never meets a
// controller id that its dead path to the previous target still holds.
func identityAndCntlidRange(t *testing.T, l *spdklab.Lab) {
	const (
		nsUUID   = "6f1c2a4e-9b3d-4e8f-a1c2-3d4e5f60718a"
		nsNGUID  = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
		nsEUI64  = "02a1b2c3d4e5f607"
		raidUUID = "3e7d9c1b-5a2f-4b6e-8d0c-1f2e3a4b5c6d"
	)
	tgt, c := l.Targets[0].Client, l.Targets[1].Client
	aioLvstore(t, l, c, "lvs1")
	must(c.BdevLvolCreate(ctx(t), types.BdevLvolCreateRequest{LvolName: "vol", SizeInMiB: 16, ThinProvision: true, LvsName: "lvs1"}))
	ok(t, c.NvmfCreateTransport(ctx(t), types.NvmfCreateTransportRequest{Trtype: "TCP"}))
	nqn := "nqn.2026-01.io.flint:volume:identity"

	for _, r := range [][2]uint16{{10, 9}, {65000, 65520}} {
		err := c.NvmfCreateSubsystem(ctx(t), types.NvmfCreateSubsystemRequest{NQN: nqn, MinCntlid: r[0], MaxCntlid: r[1]})
		wantErr(t, err, jsonrpc.ErrInvalid, jsonrpc.CodeInvalidParams)
		if _, err := c.NvmfGetSubsystems(ctx(t), nqn); !errors.Is(err, jsonrpc.ErrNotFound) {
			t.Errorf("a subsystem refused for its cntlid range %v was left behind: %v", r, err)
		}
	}

	port := spdklab.FreePort(t)
	incarnation := func(minCntlid, maxCntlid uint16) {
		ok(t, c.NvmfCreateSubsystem(ctx(t), types.NvmfCreateSubsystemRequest{NQN: nqn, SerialNumber: "FL0123456789abcdef01", MinCntlid: minCntlid, MaxCntlid: maxCntlid}))
		must(c.NvmfSubsystemAddNs(ctx(t), nqn, types.NvmfNamespaceRequest{BdevName: "lvs1/vol", NSID: 1, UUID: nsUUID, NGUID: nsNGUID, EUI64: nsEUI64}))
		ok(t, c.NvmfSubsystemAddListener(ctx(t), nqn, types.ListenAddress{Trtype: "tcp", Adrfam: "ipv4", Traddr: "127.0.0.1", Trsvcid: port}))
		ok(t, c.NvmfSubsystemAddHost(ctx(t), types.NvmfSubsystemHostRequest{NQN: nqn, Host: hostNQN}))
		sub := must(c.NvmfGetSubsystems(ctx(t), nqn))[0]
		if sub.MinCntlid != minCntlid || sub.MaxCntlid != maxCntlid || len(sub.Namespaces) != 1 {
			t.Fatalf("subsystem = %+v, want cntlids %d-%d and one namespace", sub, minCntlid, maxCntlid)
		}
		ns := sub.Namespaces[0]
		if ns.UUID != nsUUID || ns.NGUID != strings.ToUpper(nsNGUID) || ns.EUI64 != strings.ToUpper(nsEUI64) {
			t.Errorf("namespace = %+v, want uuid %s, nguid %s and eui64 %s as given (hex upper-case)", ns, nsUUID, nsNGUID, nsEUI64)
		}
		bdevs := must(tgt.BdevNvmeAttachController(ctx(t), types.BdevNvmeAttachControllerRequest{
			Name: "vol", Trtype: "tcp", Adrfam: "ipv4", Traddr: "127.0.0.1", Trsvcid: port, Subnqn: nqn, Hostnqn: hostNQN,
		}))
		ctrlrs := must(tgt.BdevNvmeGetControllers(ctx(t), "vol"))
		if len(ctrlrs) != 1 || len(ctrlrs[0].Ctrlrs) != 1 || ctrlrs[0].Ctrlrs[0].Cntlid != int(minCntlid) {
			t.Errorf("controllers = %+v, want one with cntlid %d", ctrlrs, minCntlid)
		}
		if b := must(tgt.BdevGetBdevs(ctx(t), bdevs[0]))[0]; !strings.EqualFold(strings.ReplaceAll(b.UUID, "-", ""), nsNGUID) {
			t.Errorf("the host's bdev has uuid %s, want the NGUID %s", b.UUID, nsNGUID)
		}
		ok(t, tgt.BdevNvmeDetachController(ctx(t), "vol"))
		ok(t, c.NvmfDeleteSubsystem(ctx(t), nqn))
	}
	incarnation(1025, 2048)
	incarnation(2049, 3072)

	// The raid takes the uuid it is given.
	aioLvstore(t, l, tgt, "lvs0")
	for _, n := range []string{"a", "b"} {
		must(tgt.BdevLvolCreate(ctx(t), types.BdevLvolCreateRequest{LvolName: n, SizeInMiB: 16, ThinProvision: true, LvsName: "lvs0"}))
	}
	ok(t, tgt.BdevRaidCreate(ctx(t), types.BdevRaidCreateRequest{Name: "mirror", RaidLevel: "raid1", BaseBdevs: []string{"lvs0/a", "lvs0/b"}, UUID: raidUUID}))
	if b := must(tgt.BdevGetBdevs(ctx(t), "mirror"))[0]; b.UUID != raidUUID {
		t.Errorf("raid uuid = %s, want %s", b.UUID, raidUUID)
	}
	ok(t, tgt.BdevRaidDelete(ctx(t), "mirror"))
}

// listenerCutsHosts is how the agent pauses a volume for a snapshot: with
// the subsystem's listener gone its hosts' controllers are gone (SPDK
// lists a controller until the I/O outstanding on its queue pairs is
// done), and a host reconnecting is let back in once it is re-added.
func listenerCutsHosts(t *testing.T, l *spdklab.Lab) {
	host, c := l.Targets[0].Client, l.Targets[1].Client
	aioLvstore(t, l, c, "lvs1")
	must(c.BdevLvolCreate(ctx(t), types.BdevLvolCreateRequest{LvolName: "vol", SizeInMiB: 16, ThinProvision: true, LvsName: "lvs1"}))
	ok(t, c.NvmfCreateTransport(ctx(t), types.NvmfCreateTransportRequest{Trtype: "TCP"}))
	nqn := "nqn.2026-01.io.flint:volume:paused"
	listener := types.ListenAddress{Trtype: "tcp", Adrfam: "ipv4", Traddr: "127.0.0.1", Trsvcid: spdklab.FreePort(t)}
	ok(t, c.NvmfCreateSubsystem(ctx(t), types.NvmfCreateSubsystemRequest{NQN: nqn, MinCntlid: 1025, MaxCntlid: 2048}))
	must(c.NvmfSubsystemAddNs(ctx(t), nqn, types.NvmfNamespaceRequest{BdevName: "lvs1/vol", NSID: 1}))
	ok(t, c.NvmfSubsystemAddListener(ctx(t), nqn, listener))
	ok(t, c.NvmfSubsystemAddHost(ctx(t), types.NvmfSubsystemHostRequest{NQN: nqn, Host: hostNQN}))

	_, err := c.NvmfSubsystemGetControllers(ctx(t), "nqn.2026-01.io.flint:volume:nosuch")
	wantErr(t, err, jsonrpc.ErrInvalid, jsonrpc.CodeInvalidParams)
	if got := must(c.NvmfSubsystemGetControllers(ctx(t), nqn)); len(got) != 0 {
		t.Fatalf("controllers before any host connected = %+v, want none", got)
	}
	must(host.BdevNvmeAttachController(ctx(t), types.BdevNvmeAttachControllerRequest{
		Name: "vol", Trtype: listener.Trtype, Adrfam: listener.Adrfam, Traddr: listener.Traddr, Trsvcid: listener.Trsvcid, Subnqn: nqn, Hostnqn: hostNQN,
		CtrlrLossTimeoutSec: -1, ReconnectDelaySec: 1,
	}))
	connected := func() (bool, error) {
		got, err := c.NvmfSubsystemGetControllers(ctx(t), nqn)
		return len(got) == 1 && got[0].HostNQN == hostNQN && got[0].Cntlid >= 1025 && got[0].Cntlid <= 2048, err
	}
	if ok, err := connected(); !ok || err != nil {
		t.Fatalf("controllers with a host connected = %+v, %v; want the host's, with a cntlid of the range", must(c.NvmfSubsystemGetControllers(ctx(t), nqn)), err)
	}

	ok(t, c.NvmfSubsystemRemoveListener(ctx(t), nqn, listener))
	eventually(t, 5*time.Second, "the host's controller going with the listener", func() (bool, error) {
		got, err := c.NvmfSubsystemGetControllers(ctx(t), nqn)
		return len(got) == 0, err
	})
	ok(t, c.NvmfSubsystemAddListener(ctx(t), nqn, listener))
	eventually(t, 10*time.Second, "the host reconnecting to the listener re-added", connected)
	ok(t, host.BdevNvmeDetachController(ctx(t), "vol"))
}

// anaKeepsHosts is how a snapshot pauses a volume without cutting its
// hosts off: its listener turns inaccessible for the namespace's group,
// the namespace's move to the group it is in drains its I/O, and the host's
// controller stays, the same one, until the listener is optimized again.
// Only a subsystem created with ana_reporting has ANA states.
func anaKeepsHosts(t *testing.T, l *spdklab.Lab) {
	host, c := l.Targets[0].Client, l.Targets[1].Client
	aioLvstore(t, l, c, "lvs1")
	must(c.BdevLvolCreate(ctx(t), types.BdevLvolCreateRequest{LvolName: "vol", SizeInMiB: 16, ThinProvision: true, LvsName: "lvs1"}))
	ok(t, c.NvmfCreateTransport(ctx(t), types.NvmfCreateTransportRequest{Trtype: "TCP"}))
	nqn, plain := "nqn.2026-01.io.flint:volume:ana", "nqn.2026-01.io.flint:volume:plain"
	listener := types.ListenAddress{Trtype: "tcp", Adrfam: "ipv4", Traddr: "127.0.0.1", Trsvcid: spdklab.FreePort(t)}
	ok(t, c.NvmfCreateSubsystem(ctx(t), types.NvmfCreateSubsystemRequest{NQN: nqn, AnaReporting: true, MaxNamespaces: 1}))
	must(c.NvmfSubsystemAddNs(ctx(t), nqn, types.NvmfNamespaceRequest{BdevName: "lvs1/vol", NSID: 1}))
	ok(t, c.NvmfSubsystemAddListener(ctx(t), nqn, listener))
	ok(t, c.NvmfSubsystemAddHost(ctx(t), types.NvmfSubsystemHostRequest{NQN: nqn, Host: hostNQN}))
	ok(t, c.NvmfCreateSubsystem(ctx(t), types.NvmfCreateSubsystemRequest{NQN: plain}))
	ok(t, c.NvmfSubsystemAddListener(ctx(t), plain, listener))

	states := func(nqn string) []types.NvmfAnaState {
		got := must(c.NvmfSubsystemGetListeners(ctx(t), nqn))
		if len(got) != 1 || got[0].Address.Traddr != listener.Traddr || got[0].Address.Trsvcid != listener.Trsvcid {
			t.Fatalf("listeners of %s = %+v, want the one added", nqn, got)
		}
		return got[0].AnaStates
	}
	if got := states(nqn); len(got) != 1 || got[0] != (types.NvmfAnaState{AnaGroup: 1, AnaState: types.AnaOptimized}) {
		t.Fatalf("ANA states of a new listener = %+v, want group 1 optimized", got)
	}
	if got := states(plain); len(got) != 0 {
		t.Fatalf("ANA states of a subsystem without ana_reporting = %+v, want none", got)
	}
	wantErr(t, c.NvmfSubsystemListenerSetAnaState(ctx(t), types.NvmfListenerAnaStateRequest{NQN: plain, ListenAddress: listener, AnaState: types.AnaInaccessible}), nil, jsonrpc.CodeInternalError)

	must(host.BdevNvmeAttachController(ctx(t), types.BdevNvmeAttachControllerRequest{
		Name: "vol", Trtype: listener.Trtype, Adrfam: listener.Adrfam, Traddr: listener.Traddr, Trsvcid: listener.Trsvcid, Subnqn: nqn, Hostnqn: hostNQN,
		CtrlrLossTimeoutSec: -1, ReconnectDelaySec: 1,
	}))
	before := must(c.NvmfSubsystemGetControllers(ctx(t), nqn))
	if len(before) != 1 {
		t.Fatalf("controllers with a host connected = %+v, want one", before)
	}

	ok(t, c.NvmfSubsystemListenerSetAnaState(ctx(t), types.NvmfListenerAnaStateRequest{NQN: nqn, ListenAddress: listener, AnaState: types.AnaInaccessible, AnaGrpID: 1}))
	ok(t, c.NvmfSubsystemSetNsAnaGroup(ctx(t), types.NvmfNsAnaGroupRequest{NQN: nqn, NSID: 1, AnaGrpID: 1}))
	if got := states(nqn); got[0].AnaState != types.AnaInaccessible {
		t.Errorf("ANA states after the change = %+v, want group 1 inaccessible", got)
	}
	wantErr(t, c.NvmfSubsystemSetNsAnaGroup(ctx(t), types.NvmfNsAnaGroupRequest{NQN: nqn, NSID: 1, AnaGrpID: 0}), jsonrpc.ErrInvalid, jsonrpc.CodeInvalidParams)
	wantErr(t, c.NvmfSubsystemSetNsAnaGroup(ctx(t), types.NvmfNsAnaGroupRequest{NQN: nqn, NSID: 1, AnaGrpID: 2}), jsonrpc.ErrInvalid, jsonrpc.CodeInvalidParams)
	wantErr(t, c.NvmfSubsystemSetNsAnaGroup(ctx(t), types.NvmfNsAnaGroupRequest{NQN: nqn, NSID: 2, AnaGrpID: 1}), jsonrpc.ErrInvalid, jsonrpc.CodeInvalidParams)
	// The host stays connected through the pause: the same controller.
	time.Sleep(time.Second)
	if got := must(c.NvmfSubsystemGetControllers(ctx(t), nqn)); len(got) != 1 || got[0].Cntlid != before[0].Cntlid {
		t.Errorf("controllers while inaccessible = %+v, want the host's %+v", got, before)
	}

	ok(t, c.NvmfSubsystemListenerSetAnaState(ctx(t), types.NvmfListenerAnaStateRequest{NQN: nqn, ListenAddress: listener, AnaState: types.AnaOptimized, AnaGrpID: 1}))
	if got := states(nqn); got[0].AnaState != types.AnaOptimized {
		t.Errorf("ANA states after the resume = %+v, want group 1 optimized", got)
	}
	if got := must(c.NvmfSubsystemGetControllers(ctx(t), nqn)); len(got) != 1 || got[0].Cntlid != before[0].Cntlid {
		t.Errorf("controllers after the resume = %+v, want the host's %+v", got, before)
	}
	ok(t, host.BdevNvmeDetachController(ctx(t), "vol"))
}

// raid1AcrossTargets is Flint's volume: target 0 holds one replica and the
// raid1, targets 1 and 2 export theirs to it. Losing target 2 empties its
// slot once the controller loss timeout passes; the replica comes back
// with its data on its disk and rebuilds.
func raid1AcrossTargets(t *testing.T, l *spdklab.Lab) {
	const size = 64
	tgtNQN := "nqn.2026-01.io.flint:osd-0"
	replicaNQN := func(i int) string { return "nqn.2026-01.io.flint:osd-" + string(rune('0'+i)) + ":vol" }
	ports := []string{"", spdklab.FreePort(t), spdklab.FreePort(t)}
	export := func(i int, fresh bool) {
		c := l.Targets[i].Client
		if fresh {
			aioLvstore(t, l, c, "lvs"+string(rune('0'+i)))
			must(c.BdevLvolCreate(ctx(t), types.BdevLvolCreateRequest{LvolName: "vol", SizeInMiB: size, ThinProvision: true, LvsName: "lvs" + string(rune('0'+i))}))
		}
		ok(t, c.NvmfCreateTransport(ctx(t), types.NvmfCreateTransportRequest{Trtype: "TCP"}))
		ok(t, c.NvmfCreateSubsystem(ctx(t), types.NvmfCreateSubsystemRequest{NQN: replicaNQN(i)}))
		must(c.NvmfSubsystemAddNs(ctx(t), replicaNQN(i), types.NvmfNamespaceRequest{BdevName: "lvs" + string(rune('0'+i)) + "/vol"}))
		ok(t, c.NvmfSubsystemAddListener(ctx(t), replicaNQN(i), types.ListenAddress{Trtype: "tcp", Adrfam: "ipv4", Traddr: "127.0.0.1", Trsvcid: ports[i]}))
		ok(t, c.NvmfSubsystemAddHost(ctx(t), types.NvmfSubsystemHostRequest{NQN: replicaNQN(i), Host: tgtNQN}))
	}
	tgt := l.Targets[0].Client
	attach := func(i int) string {
		bdevs := must(tgt.BdevNvmeAttachController(ctx(t), types.BdevNvmeAttachControllerRequest{
			Name: "r" + string(rune('0'+i)), Trtype: "tcp", Adrfam: "ipv4", Traddr: "127.0.0.1", Trsvcid: ports[i],
			Subnqn: replicaNQN(i), Hostnqn: tgtNQN, CtrlrLossTimeoutSec: 2, ReconnectDelaySec: 1, FastIOFailTimeoutSec: 1,
		}))
		if len(bdevs) != 1 {
			t.Fatalf("attach replica %d: bdevs %v", i, bdevs)
		}
		return bdevs[0]
	}
	raid := func() types.RaidBdev {
		raids := must(tgt.BdevRaidGetBdevs(ctx(t), types.RaidCategoryAll))
		if len(raids) != 1 {
			t.Fatalf("raids = %+v", raids)
		}
		return raids[0]
	}

	aioLvstore(t, l, tgt, "lvs0")
	must(tgt.BdevLvolCreate(ctx(t), types.BdevLvolCreateRequest{LvolName: "vol", SizeInMiB: size, ThinProvision: true, LvsName: "lvs0"}))
	export(1, true)
	export(2, true)

	// Only the target's host NQN may connect to a replica.
	_, err := tgt.BdevNvmeAttachController(ctx(t), types.BdevNvmeAttachControllerRequest{
		Name: "intruder", Trtype: "tcp", Adrfam: "ipv4", Traddr: "127.0.0.1", Trsvcid: ports[1], Subnqn: replicaNQN(1), Hostnqn: hostNQN,
	})
	wantErr(t, err, nil, jsonrpc.CodeIOError)
	// The reconnect options must be consistent.
	_, err = tgt.BdevNvmeAttachController(ctx(t), types.BdevNvmeAttachControllerRequest{
		Name: "bad", Trtype: "tcp", Adrfam: "ipv4", Traddr: "127.0.0.1", Trsvcid: ports[1], Subnqn: replicaNQN(1), Hostnqn: tgtNQN,
		CtrlrLossTimeoutSec: 2,
	})
	wantErr(t, err, nil, 0)

	r1, r2 := attach(1), attach(2)
	ok(t, tgt.BdevRaidCreate(ctx(t), types.BdevRaidCreateRequest{Name: "vol", RaidLevel: "raid1", BaseBdevs: []string{"lvs0/vol", r1, r2}}))
	if r := raid(); r.State != types.RaidStateOnline || r.NumBaseBdevsOperational != 3 {
		t.Fatalf("raid = %+v, want online with 3 members", r)
	}
	if b := must(tgt.BdevGetBdevs(ctx(t), "vol"))[0]; b.SizeBytes() != size*mib {
		t.Errorf("raid1 size = %d, want %d MiB", b.SizeBytes(), size)
	}
	wantErr(t, tgt.BdevRaidCreate(ctx(t), types.BdevRaidCreateRequest{Name: "vol", RaidLevel: "raid1", BaseBdevs: []string{r1}}), jsonrpc.ErrExists, jsonrpc.CodeExists)

	// Lose replica 2: its controller retries, is deleted after the loss
	// timeout, and the raid goes on degraded.
	l.Targets[2].Kill()
	eventually(t, 20*time.Second, "the lost replica leaving the raid", func() (bool, error) {
		r := raid()
		return r.State == types.RaidStateOnline && r.NumBaseBdevsOperational == 2, nil
	})
	if _, err := tgt.BdevNvmeGetControllers(ctx(t), "r2"); !errors.Is(err, jsonrpc.ErrNotFound) {
		t.Errorf("the lost controller is still there: %v", err)
	}

	// The replica returns with its lvol on its disk; re-export, re-attach
	// and rebuild it.
	l.Targets[2].Restart(t)
	c2 := l.Targets[2].Client
	must(c2.BdevAioCreate(ctx(t), types.BdevAioCreateRequest{Filename: l.Image(t, "lvs2", imageSize), Name: "lvs2_aio", BlockSize: 4096}))
	ok(t, c2.BdevWaitForExamine(ctx(t)))
	export(2, false)
	r2 = attach(2)
	ok(t, tgt.BdevRaidAddBaseBdev(ctx(t), "vol", r2))
	eventually(t, 60*time.Second, "the rebuild finishing", func() (bool, error) {
		r := raid()
		return r.Process == nil && r.NumBaseBdevsOperational == 3, nil
	})
	wantErr(t, tgt.BdevRaidAddBaseBdev(ctx(t), "vol", r2), jsonrpc.ErrInvalid, jsonrpc.CodeInvalid)

	// Remove a member by hand, and delete the raid.
	ok(t, tgt.BdevRaidRemoveBaseBdev(ctx(t), r1))
	wantErr(t, tgt.BdevRaidRemoveBaseBdev(ctx(t), r1), jsonrpc.ErrNotFound, jsonrpc.CodeNoSuchDevice)
	if r := raid(); r.NumBaseBdevsOperational != 2 {
		t.Errorf("raid after removing a member = %+v", r)
	}
	ok(t, tgt.BdevRaidDelete(ctx(t), "vol"))
	wantErr(t, tgt.BdevRaidDelete(ctx(t), "vol"), jsonrpc.ErrNotFound, jsonrpc.CodeNoSuchDevice)
	ok(t, tgt.BdevNvmeDetachController(ctx(t), "r1"))
	wantErr(t, tgt.BdevNvmeDetachController(ctx(t), "r1"), jsonrpc.ErrNotFound, jsonrpc.CodeNoSuchDevice)
}

// raid1CreatedDegraded is how a target is assembled while a replica is
// unreachable or out of sync: a null bdev holds its slot at creation and
// is removed at once, leaving an online raid1 with an empty slot that
// add_base_bdev later fills with a rebuild.
func raid1CreatedDegraded(t *testing.T, l *spdklab.Lab) {
	c := l.Targets[0].Client
	aioLvstore(t, l, c, "lvs0")
	degradedRaid1(t, c, 32)
	wantErr(t, c.BdevNullDelete(ctx(t), "placeholder"), jsonrpc.ErrNotFound, 0)
	ok(t, c.BdevRaidAddBaseBdev(ctx(t), "vol", "lvs0/b"))
	eventually(t, 60*time.Second, "the rebuild onto the empty slot finishing", func() (bool, error) {
		r := must(c.BdevRaidGetBdevs(ctx(t), types.RaidCategoryAll))[0]
		return r.Process == nil && r.NumBaseBdevsOperational == 2, nil
	})
}

// degradedRaid1 makes thin lvols lvs0/a and lvs0/b of sizeMiB and, the way
// a target does, an online raid1 "vol" of a alone with an empty slot.
func degradedRaid1(t *testing.T, c *client.Client, sizeMiB uint64) {
	must(c.BdevLvolCreate(ctx(t), types.BdevLvolCreateRequest{LvolName: "a", SizeInMiB: sizeMiB, ThinProvision: true, LvsName: "lvs0"}))
	must(c.BdevLvolCreate(ctx(t), types.BdevLvolCreateRequest{LvolName: "b", SizeInMiB: sizeMiB, ThinProvision: true, LvsName: "lvs0"}))
	blocks := must(c.BdevGetBdevs(ctx(t), "lvs0/a"))[0].NumBlocks
	must(c.BdevNullCreate(ctx(t), types.BdevNullCreateRequest{Name: "placeholder", NumBlocks: blocks, BlockSize: 4096}))
	_, err := c.BdevNullCreate(ctx(t), types.BdevNullCreateRequest{Name: "placeholder", NumBlocks: blocks, BlockSize: 4096})
	wantErr(t, err, jsonrpc.ErrExists, 0)

	// raid1 needs two base bdevs at least.
	wantErr(t, c.BdevRaidCreate(ctx(t), types.BdevRaidCreateRequest{Name: "vol", RaidLevel: "raid1", BaseBdevs: []string{"lvs0/a"}}), jsonrpc.ErrInvalid, -22)
	ok(t, c.BdevRaidCreate(ctx(t), types.BdevRaidCreateRequest{Name: "vol", RaidLevel: "raid1", BaseBdevs: []string{"lvs0/a", "placeholder"}}))
	ok(t, c.BdevRaidRemoveBaseBdev(ctx(t), "placeholder"))
	ok(t, c.BdevNullDelete(ctx(t), "placeholder"))
	r := must(c.BdevRaidGetBdevs(ctx(t), types.RaidCategoryAll))[0]
	if r.State != types.RaidStateOnline || r.NumBaseBdevs != 2 || r.NumBaseBdevsOperational != 1 || r.BaseBdevsList[1].Name != nil {
		t.Fatalf("raid = %+v, want online with one empty slot", r)
	}
	if b := must(c.BdevGetBdevs(ctx(t), "vol"))[0]; b.SizeBytes() != sizeMiB*mib {
		t.Errorf("degraded raid1 size = %d, want %d MiB", b.SizeBytes(), sizeMiB)
	}
}

// rebuildCappedByOptions is how a target caps a rebuild's bandwidth: the
// raid module's options, set just before add_base_bdev, bind the rebuild
// that starts then for its whole run, whatever is set later. SPDK charges
// each 1 MiB window to the token bucket when the next one starts, so the
// first two go at once: copied ≤ cap × elapsed + 2 MiB, and the whole
// copy takes at least (size − 2 MiB) / cap. Both bounds hold however slow
// the machine is.
func rebuildCappedByOptions(t *testing.T, l *spdklab.Lab) {
	const sizeMiB, capMiBps, burstMiB = 16, 4, 2
	c := l.Targets[0].Client
	aioLvstore(t, l, c, "lvs0")
	degradedRaid1(t, c, sizeMiB)

	start := time.Now()
	ok(t, c.BdevRaidSetOptions(ctx(t), types.BdevRaidSetOptionsRequest{ProcessMaxBandwidthMiBPerSec: capMiBps}))
	ok(t, c.BdevRaidAddBaseBdev(ctx(t), "vol", "lvs0/b"))
	ok(t, c.BdevRaidSetOptions(ctx(t), types.BdevRaidSetOptionsRequest{}))
	eventually(t, 60*time.Second, "the capped rebuild finishing", func() (bool, error) {
		r := must(c.BdevRaidGetBdevs(ctx(t), types.RaidCategoryAll))[0]
		elapsed := time.Since(start).Seconds()
		if r.Process == nil {
			if floor := float64(sizeMiB-burstMiB) / capMiBps; elapsed < floor {
				t.Fatalf("a %d MiB rebuild capped at %d MiB/s finished in %.1f s, under %.1f s", sizeMiB, capMiBps, elapsed, floor)
			}
			return r.NumBaseBdevsOperational == 2, nil
		}
		copied := float64(r.Process.Progress.Blocks*4096) / mib
		if most := capMiBps*elapsed + burstMiB; copied > most {
			t.Fatalf("the rebuild copied %.1f MiB in %.1f s, over the cap of %d MiB/s", copied, elapsed, capMiBps)
		}
		return false, nil
	})
}

// raid1GrowsWithMembers is an online resize: target 0's raid1 joins its
// own lvol and target 1's over NVMe/TCP and is exported in a subsystem.
// Growing one member changes nothing; once the other grew too (the remote
// one seen through a namespace resize), the raid and its namespace take
// the new size by themselves.
func raid1GrowsWithMembers(t *testing.T, l *spdklab.Lab) {
	tgt, rep := l.Targets[0].Client, l.Targets[1].Client
	const tgtNQN, repNQN, volNQN = "nqn.2026-01.io.flint:osd-0", "nqn.2026-01.io.flint:osd-1:vol", "nqn.2026-01.io.flint:vol"
	port := spdklab.FreePort(t)
	aioLvstore(t, l, tgt, "lvs0")
	aioLvstore(t, l, rep, "lvs1")
	must(tgt.BdevLvolCreate(ctx(t), types.BdevLvolCreateRequest{LvolName: "vol", SizeInMiB: 32, ThinProvision: true, LvsName: "lvs0"}))
	must(rep.BdevLvolCreate(ctx(t), types.BdevLvolCreateRequest{LvolName: "vol", SizeInMiB: 32, ThinProvision: true, LvsName: "lvs1"}))
	ok(t, rep.NvmfCreateTransport(ctx(t), types.NvmfCreateTransportRequest{Trtype: "TCP"}))
	ok(t, rep.NvmfCreateSubsystem(ctx(t), types.NvmfCreateSubsystemRequest{NQN: repNQN}))
	must(rep.NvmfSubsystemAddNs(ctx(t), repNQN, types.NvmfNamespaceRequest{BdevName: "lvs1/vol"}))
	ok(t, rep.NvmfSubsystemAddListener(ctx(t), repNQN, types.ListenAddress{Trtype: "tcp", Adrfam: "ipv4", Traddr: "127.0.0.1", Trsvcid: port}))
	ok(t, rep.NvmfSubsystemAddHost(ctx(t), types.NvmfSubsystemHostRequest{NQN: repNQN, Host: tgtNQN}))
	remote := must(tgt.BdevNvmeAttachController(ctx(t), types.BdevNvmeAttachControllerRequest{
		Name: "r1", Trtype: "tcp", Adrfam: "ipv4", Traddr: "127.0.0.1", Trsvcid: port, Subnqn: repNQN, Hostnqn: tgtNQN,
		CtrlrLossTimeoutSec: 2, ReconnectDelaySec: 1, FastIOFailTimeoutSec: 1,
	}))[0]
	ok(t, tgt.BdevRaidCreate(ctx(t), types.BdevRaidCreateRequest{Name: "vol", RaidLevel: "raid1", BaseBdevs: []string{"lvs0/vol", remote}}))
	ok(t, tgt.NvmfCreateTransport(ctx(t), types.NvmfCreateTransportRequest{Trtype: "TCP"}))
	ok(t, tgt.NvmfCreateSubsystem(ctx(t), types.NvmfCreateSubsystemRequest{NQN: volNQN}))
	must(tgt.NvmfSubsystemAddNs(ctx(t), volNQN, types.NvmfNamespaceRequest{BdevName: "vol"}))
	size := func(c *client.Client, name string) uint64 { return must(c.BdevGetBdevs(ctx(t), name))[0].SizeBytes() }

	ok(t, tgt.BdevLvolResize(ctx(t), "lvs0/vol", 64))
	if got := size(tgt, "vol"); got != 32*mib {
		t.Fatalf("raid1 size after one member grew = %d MiB, want 32", got/mib)
	}
	ok(t, rep.BdevLvolResize(ctx(t), "lvs1/vol", 64))
	eventually(t, 20*time.Second, "the remote member and the raid growing to 64 MiB", func() (bool, error) {
		return size(tgt, remote) == 64*mib && size(tgt, "vol") == 64*mib, nil
	})
	if r := must(tgt.BdevRaidGetBdevs(ctx(t), types.RaidCategoryAll))[0]; r.State != types.RaidStateOnline || r.NumBaseBdevsOperational != 2 {
		t.Errorf("raid after the resize = %+v, want online with both members", r)
	}
}

// latencyHistogram is how the agent keeps a histogram on a volume's
// exported bdev: turned on once the namespace has opened its channels,
// read without I/O as empty buckets of the asked shape, and refused once
// turned off, while a channel is open.
func latencyHistogram(t *testing.T, l *spdklab.Lab) {
	c := l.Targets[0].Client
	aioLvstore(t, l, c, "lvs0")
	must(c.BdevLvolCreate(ctx(t), types.BdevLvolCreateRequest{LvolName: "vol", SizeInMiB: 16, ThinProvision: true, LvsName: "lvs0"}))
	_, err := c.BdevGetHistogram(ctx(t), "lvs0/vol")
	wantErr(t, err, nil, -12) // never on: SPDK cannot size it
	nqn := "nqn.2026-01.io.flint:pvc-h"
	ok(t, c.NvmfCreateTransport(ctx(t), types.NvmfCreateTransportRequest{Trtype: "TCP"}))
	ok(t, c.NvmfCreateSubsystem(ctx(t), types.NvmfCreateSubsystemRequest{NQN: nqn, SerialNumber: "FLINT0000000002"}))
	must(c.NvmfSubsystemAddNs(ctx(t), nqn, types.NvmfNamespaceRequest{BdevName: "lvs0/vol"}))

	on := types.BdevEnableHistogramRequest{Name: "lvs0/vol", Enable: true, Granularity: 5, MinNsec: 1_000, MaxNsec: 2_000_000_000}
	ok(t, c.BdevEnableHistogram(ctx(t), on))
	ok(t, c.BdevEnableHistogram(ctx(t), on)) // again while on
	h := must(c.BdevGetHistogram(ctx(t), "lvs0/vol"))
	if h.TscRate == 0 || h.Granularity != 5 {
		t.Fatalf("histogram = granularity %d at %d Hz, want granularity 5 with a tick rate", h.Granularity, h.TscRate)
	}
	// The ranges kept are those of 1 µs and of 2 s in ticks.
	if lo, hi := types.HistogramRange(5, 1_000*h.TscRate/1_000_000_000), types.HistogramRange(5, 2*h.TscRate-1); h.MinRange != lo || h.MaxRange != hi {
		t.Errorf("ranges %d-%d at %d Hz, want %d-%d", h.MinRange, h.MaxRange, h.TscRate, lo, hi)
	}
	buckets, err := h.Buckets()
	ok(t, err)
	for _, b := range buckets {
		if b.Count != 0 {
			t.Fatalf("a histogram without I/O counts %d in [%d, %d)", b.Count, b.StartTicks, b.EndTicks)
		}
	}
	if end := buckets[len(buckets)-1].EndTicks; end < 2*h.TscRate {
		t.Errorf("the last bucket ends at %d ticks, before 2 s (%d)", end, 2*h.TscRate)
	}

	wantErr(t, c.BdevEnableHistogram(ctx(t), types.BdevEnableHistogramRequest{Name: "nosuch", Enable: true}), nil, -19)
	wantErr(t, c.BdevEnableHistogram(ctx(t), types.BdevEnableHistogramRequest{Name: "lvs0/vol", Enable: true, Opc: "bogus"}), nil, jsonrpc.CodeInternalError)
	ok(t, c.BdevEnableHistogram(ctx(t), types.BdevEnableHistogramRequest{Name: "lvs0/vol"}))
	_, err = c.BdevGetHistogram(ctx(t), "lvs0/vol")
	wantErr(t, err, nil, jsonrpc.CodeInternalError) // "Bad address": the namespace's channel has none
	ok(t, c.BdevEnableHistogram(ctx(t), on))
	must(c.BdevGetHistogram(ctx(t), "lvs0/vol"))
}

// qosLimitsOfARaid is how the agent limits a volume: all four limits set
// at once on the target's raid1 once it is exported, read back as SPDK
// applied them, cleared with zeroes, and set again after a restart, which
// loses them. Before the raid is exported (a bdev nobody opened) SPDK
// takes limits once and refuses to change them.
func qosLimitsOfARaid(t *testing.T, l *spdklab.Lab) {
	tg := l.Targets[0]
	c := tg.Client
	aioLvstore(t, l, c, "lvs0")
	for _, name := range []string{"a", "b"} {
		must(c.BdevLvolCreate(ctx(t), types.BdevLvolCreateRequest{LvolName: name, SizeInMiB: 16, ThinProvision: true, LvsName: "lvs0"}))
	}
	ok(t, c.BdevRaidCreate(ctx(t), types.BdevRaidCreateRequest{Name: "vol", RaidLevel: "raid1", BaseBdevs: []string{"lvs0/a", "lvs0/b"}}))
	limitsOf := func(name string) types.QosLimits {
		t.Helper()
		return must(c.BdevGetBdevs(ctx(t), name))[0].AssignedRateLimits
	}
	if got := limitsOf("vol"); got != (types.QosLimits{}) {
		t.Fatalf("a new raid's limits = %+v, want none", got)
	}
	limits := types.QosLimits{RwIOsPerSec: 1500, RwMbytesPerSec: 100, RMbytesPerSec: 5, WMbytesPerSec: 0}
	set := func(name string, l types.QosLimits) error {
		return c.BdevSetQosLimit(ctx(t), types.BdevSetQosLimitRequest{Name: name, QosLimits: l})
	}
	ok(t, set("vol", limits))
	wantErr(t, set("vol", limits), nil, jsonrpc.CodeInvalidParams) // -EAGAIN: nobody opened the raid yet

	nqn := "nqn.2026-01.io.flint:qos"
	ok(t, c.NvmfCreateTransport(ctx(t), types.NvmfCreateTransportRequest{Trtype: "TCP"}))
	ok(t, c.NvmfCreateSubsystem(ctx(t), types.NvmfCreateSubsystemRequest{NQN: nqn, SerialNumber: "FLINT0000000003"}))
	must(c.NvmfSubsystemAddNs(ctx(t), nqn, types.NvmfNamespaceRequest{BdevName: "vol"}))
	ok(t, set("vol", limits))
	ok(t, set("vol", limits)) // again: nothing changes
	if got, want := limitsOf("vol"), (types.QosLimits{RwIOsPerSec: 2000, RwMbytesPerSec: 100, RMbytesPerSec: 5}); got != want || limits.Applied() != want {
		t.Errorf("limits = %+v (Applied says %+v), want %+v: the I/O rate rounded up to a multiple of %d", got, limits.Applied(), want, types.QosIOsStep)
	}
	ok(t, set("vol", types.QosLimits{}))
	if got := limitsOf("vol"); got != (types.QosLimits{}) {
		t.Errorf("limits after zeroes = %+v, want none", got)
	}
	ok(t, set("vol", limits))
	wantErr(t, set("nosuch", limits), jsonrpc.ErrNotFound, jsonrpc.CodeNoSuchDevice)

	tg.Kill()
	tg.Restart(t)
	must(c.BdevAioCreate(ctx(t), types.BdevAioCreateRequest{Filename: l.Image(t, "lvs0", imageSize), Name: "again", BlockSize: 4096}))
	ok(t, c.BdevWaitForExamine(ctx(t)))
	ok(t, c.BdevRaidCreate(ctx(t), types.BdevRaidCreateRequest{Name: "vol", RaidLevel: "raid1", BaseBdevs: []string{"lvs0/a", "lvs0/b"}}))
	if got := limitsOf("vol"); got != (types.QosLimits{}) {
		t.Errorf("the raid's limits after a restart = %+v, want none: SPDK does not keep them", got)
	}
}

func nvmeOptionsBeforeControllers(t *testing.T, l *spdklab.Lab) {
	const nqn = "nqn.2026-01.io.flint:options"
	port := spdklab.FreePort(t)
	replica := l.Targets[1].Client
	must(replica.BdevMallocCreate(ctx(t), types.BdevMallocCreateRequest{Name: "m0", NumBlocks: 8192, BlockSize: 4096}))
	ok(t, replica.NvmfCreateTransport(ctx(t), types.NvmfCreateTransportRequest{Trtype: "TCP"}))
	ok(t, replica.NvmfCreateSubsystem(ctx(t), types.NvmfCreateSubsystemRequest{NQN: nqn, AllowAnyHost: true}))
	must(replica.NvmfSubsystemAddNs(ctx(t), nqn, types.NvmfNamespaceRequest{BdevName: "m0"}))
	ok(t, replica.NvmfSubsystemAddListener(ctx(t), nqn, types.ListenAddress{Trtype: "tcp", Adrfam: "ipv4", Traddr: "127.0.0.1", Trsvcid: port}))

	c := l.Targets[0].Client
	options := types.BdevNvmeSetOptionsRequest{BdevRetryCount: -1, NvmeErrorStat: true, TimeoutUs: 10_000_000, TimeoutAdminUs: 5_000_000, ActionOnTimeout: "reset"}
	wantErr(t, c.BdevNvmeSetOptions(ctx(t), types.BdevNvmeSetOptionsRequest{BdevRetryCount: -2}), nil, jsonrpc.CodeInvalid)
	wantErr(t, c.BdevNvmeSetOptions(ctx(t), types.BdevNvmeSetOptionsRequest{TimeoutAdminUs: 5_000_000}), nil, jsonrpc.CodeInvalid)
	wantErr(t, c.BdevNvmeSetOptions(ctx(t), types.BdevNvmeSetOptionsRequest{TimeoutUs: 1, ActionOnTimeout: "restart"}), nil, jsonrpc.CodeInternalError)
	ok(t, c.BdevNvmeSetOptions(ctx(t), options))
	ok(t, c.BdevNvmeSetOptions(ctx(t), options))
	must(c.BdevNvmeAttachController(ctx(t), types.BdevNvmeAttachControllerRequest{
		Name: "r1", Trtype: "tcp", Adrfam: "ipv4", Traddr: "127.0.0.1", Trsvcid: port, Subnqn: nqn, Hostnqn: hostNQN,
	}))
	wantErr(t, c.BdevNvmeSetOptions(ctx(t), options), nil, jsonrpc.CodeNotPermitted)
	ok(t, c.BdevNvmeDetachController(ctx(t), "r1"))
	ok(t, c.BdevNvmeSetOptions(ctx(t), options))
}

// keyFile writes secret to a file SPDK takes as a key: absolute, 0600.
func keyFile(t *testing.T, l *spdklab.Lab, name, secret string) string {
	t.Helper()
	path := filepath.Join(l.Dir, name)
	ok(t, os.WriteFile(path, []byte(secret), 0o600))
	return path
}

func newSecret(t *testing.T) string {
	t.Helper()
	return must(fabric.NewSecret())
}

// keyringFileKeys is how the agent keeps keys: a file key is checked when
// it is added and listed with its file; a name is taken once; removing
// it frees the name.
func keyringFileKeys(t *testing.T, l *spdklab.Lab) {
	c := l.Targets[0].Client
	path := keyFile(t, l, "k0", newSecret(t))
	open := keyFile(t, l, "open", newSecret(t))
	ok(t, os.Chmod(open, 0o640))

	wantErr(t, c.KeyringFileAddKey(ctx(t), "k0", "k0"), jsonrpc.ErrNotPermitted, jsonrpc.CodeNotPermitted)
	wantErr(t, c.KeyringFileAddKey(ctx(t), "k0", open), jsonrpc.ErrNotPermitted, jsonrpc.CodeNotPermitted)
	wantErr(t, c.KeyringFileAddKey(ctx(t), "k0", path+".missing"), jsonrpc.ErrNotFound, jsonrpc.CodeNoEntry)
	ok(t, c.KeyringFileAddKey(ctx(t), "k0", path))
	wantErr(t, c.KeyringFileAddKey(ctx(t), "k0", path), jsonrpc.ErrExists, jsonrpc.CodeExists)
	keys := must(c.KeyringGetKeys(ctx(t)))
	if len(keys) != 1 || keys[0].Name != "k0" || keys[0].Module != "keyring_file" || keys[0].Path != path || keys[0].Removed {
		t.Fatalf("keys = %+v, want k0 from %s", keys, path)
	}
	ok(t, c.KeyringFileRemoveKey(ctx(t), "k0"))
	wantErr(t, c.KeyringFileRemoveKey(ctx(t), "k0"), jsonrpc.ErrNotFound, jsonrpc.CodeNoKey)
	if keys := must(c.KeyringGetKeys(ctx(t))); len(keys) != 0 {
		t.Fatalf("keys after the removal = %+v, want none", keys)
	}
	ok(t, c.KeyringFileAddKey(ctx(t), "k0", path))
}

// dhchapBothWays is the authentication between a volume's target and a
// replica export, and between a host and a target: the subsystem names
// the keys a host must prove (and, asked, proves its own), the host
// attaches with its keys. Keys are read from their files at every
// authentication, so rewriting a file changes the key for the next one
// while connected hosts stay.
func dhchapBothWays(t *testing.T, l *spdklab.Lab) {
	tgt, rep := l.Targets[0].Client, l.Targets[1].Client
	const tgtNQN, repNQN = "nqn.2026-01.io.flint:osd-0", "nqn.2026-01.io.flint:osd-1:vol"
	port := spdklab.FreePort(t)
	hostSecret, ctrlSecret := newSecret(t), newSecret(t)
	ok(t, rep.KeyringFileAddKey(ctx(t), "host", keyFile(t, l, "rep-host", hostSecret)))
	ok(t, rep.KeyringFileAddKey(ctx(t), "ctrl", keyFile(t, l, "rep-ctrl", ctrlSecret)))
	must(rep.BdevMallocCreate(ctx(t), types.BdevMallocCreateRequest{Name: "m", NumBlocks: 4096, BlockSize: 4096}))
	ok(t, rep.NvmfCreateTransport(ctx(t), types.NvmfCreateTransportRequest{Trtype: "TCP"}))
	ok(t, rep.NvmfCreateSubsystem(ctx(t), types.NvmfCreateSubsystemRequest{NQN: repNQN}))
	must(rep.NvmfSubsystemAddNs(ctx(t), repNQN, types.NvmfNamespaceRequest{BdevName: "m"}))
	ok(t, rep.NvmfSubsystemAddListener(ctx(t), repNQN, types.ListenAddress{Trtype: "tcp", Adrfam: "ipv4", Traddr: "127.0.0.1", Trsvcid: port}))

	host := func(key, ctrlrKey string) types.NvmfSubsystemHostRequest {
		return types.NvmfSubsystemHostRequest{NQN: repNQN, Host: tgtNQN, DhchapKey: key, DhchapCtrlrKey: ctrlrKey}
	}
	wantErr(t, rep.NvmfSubsystemAddHost(ctx(t), host("nokey", "")), jsonrpc.ErrInvalid, jsonrpc.CodeInvalidParams)
	wantErr(t, rep.NvmfSubsystemAddHost(ctx(t), host("", "ctrl")), nil, jsonrpc.CodeInternalError)
	ok(t, rep.NvmfSubsystemAddHost(ctx(t), host("host", "ctrl")))
	sub := must(rep.NvmfGetSubsystems(ctx(t), repNQN))[0]
	if len(sub.Hosts) != 1 || sub.Hosts[0] != (types.NvmfHost{NQN: tgtNQN, DhchapKey: "host", DhchapCtrlrKey: "ctrl"}) {
		t.Fatalf("hosts = %+v, want %s with keys host and ctrl", sub.Hosts, tgtNQN)
	}

	for name, secret := range map[string]string{"host": hostSecret, "ctrl": ctrlSecret, "wrong": newSecret(t)} {
		ok(t, tgt.KeyringFileAddKey(ctx(t), name, keyFile(t, l, "tgt-"+name, secret)))
	}
	attempt := 0
	attach := func(key, ctrlrKey string) error {
		attempt++
		_, err := tgt.BdevNvmeAttachController(ctx(t), types.BdevNvmeAttachControllerRequest{
			Name: fmt.Sprintf("r%d", attempt), Trtype: "tcp", Adrfam: "ipv4", Traddr: "127.0.0.1", Trsvcid: port,
			Subnqn: repNQN, Hostnqn: tgtNQN, DhchapKey: key, DhchapCtrlrKey: ctrlrKey,
		})
		return err
	}
	detach := func() { ok(t, tgt.BdevNvmeDetachController(ctx(t), fmt.Sprintf("r%d", attempt))) }
	// SPDK refuses an authentication that fails as it refuses an
	// unreachable subsystem.
	wantErr(t, attach("nokey", ""), jsonrpc.ErrNotFound, jsonrpc.CodeNoKey)
	for _, refused := range []struct{ what, key, ctrlrKey string }{
		{"no key", "", ""},
		{"a wrong key", "wrong", ""},
		{"the right key, but a wrong key expected of the subsystem", "host", "wrong"},
	} {
		t.Log(refused.what)
		wantErr(t, attach(refused.key, refused.ctrlrKey), nil, jsonrpc.CodeIOError)
	}
	ok(t, attach("host", "ctrl"))
	if ctrlrs := must(rep.NvmfSubsystemGetControllers(ctx(t), repNQN)); len(ctrlrs) != 1 {
		t.Fatalf("controllers = %+v, want the one authenticated", ctrlrs)
	}

	// A rotation, the subsystem's file first: the connected host stays, a
	// new connection needs the new key.
	rotated := newSecret(t)
	keyFile(t, l, "rep-host", rotated)
	if c := must(tgt.BdevNvmeGetControllers(ctx(t), fmt.Sprintf("r%d", attempt))); len(c) != 1 || len(c[0].Ctrlrs) != 1 || c[0].Ctrlrs[0].State != "enabled" {
		t.Fatalf("the controller connected before the rotation = %+v, want it enabled", c)
	}
	detach()
	wantErr(t, attach("host", "ctrl"), nil, jsonrpc.CodeIOError)
	keyFile(t, l, "tgt-host", rotated)
	ok(t, attach("host", "ctrl"))
	detach()

	// A key removed while a host holds it stays listed as removed until
	// the host goes, and no longer authenticates.
	ok(t, rep.KeyringFileRemoveKey(ctx(t), "host"))
	if keys := must(rep.KeyringGetKeys(ctx(t))); !slices.ContainsFunc(keys, func(k types.Key) bool { return k.Name == "host" && k.Removed }) {
		t.Fatalf("keys = %+v, want host listed as removed while held", keys)
	}
	wantErr(t, attach("host", "ctrl"), nil, jsonrpc.CodeIOError)
	ok(t, rep.NvmfSubsystemRemoveHost(ctx(t), repNQN, tgtNQN))
	if keys := must(rep.KeyringGetKeys(ctx(t))); slices.ContainsFunc(keys, func(k types.Key) bool { return k.Name == "host" }) {
		t.Fatalf("keys = %+v, want host gone with its last holder", keys)
	}

	// A subsystem that asks no key of a host lets it in with its keys.
	ok(t, rep.NvmfSubsystemAddHost(ctx(t), host("", "")))
	ok(t, attach("host", ""))
	detach()
	// A host that asks the subsystem to prove itself needs it to.
	wantErr(t, attach("host", "ctrl"), nil, jsonrpc.CodeIOError)
}

// queueDepthSampling checks what the agent's silence watch reads: once a
// bdev's queue depth is sampled, bdev_get_iostat reports the period and
// the depth, SPDK's "unsampled" value until the first sample, a period
// after the sampling is set.
func queueDepthSampling(t *testing.T, l *spdklab.Lab) {
	c := l.Targets[0].Client
	aioLvstore(t, l, c, "lvs0")
	must(c.BdevLvolCreate(ctx(t), types.BdevLvolCreateRequest{LvolName: "vol", SizeInMiB: 16, ThinProvision: true, LvsName: "lvs0"}))
	stat := func() types.BdevIostat {
		t.Helper()
		st := must(c.BdevGetIostat(ctx(t), "lvs0/vol"))
		if len(st.Bdevs) != 1 {
			t.Fatalf("iostat of lvs0/vol = %+v", st)
		}
		return st.Bdevs[0]
	}
	if st := stat(); st.QueueDepthPollingPeriod != 0 || st.QueueDepth != 0 {
		t.Fatalf("iostat before sampling = %+v, want no queue depth", st)
	}
	ok(t, c.BdevSetQdSamplingPeriod(ctx(t), "lvs0/vol", 10_000_000))
	if st := stat(); st.QueueDepthPollingPeriod != 10_000_000 || st.QueueDepth != types.QueueDepthUnsampled {
		t.Fatalf("iostat before the first sample = %+v, want period 10000000 and queue depth %d", st, uint64(types.QueueDepthUnsampled))
	}
	ok(t, c.BdevSetQdSamplingPeriod(ctx(t), "lvs0/vol", 1_000))
	eventually(t, 5*time.Second, "the idle lvol sampled every 1 ms reading queue depth 0", func() (bool, error) {
		st := stat()
		return st.QueueDepthPollingPeriod == 1_000 && st.QueueDepth == 0, nil
	})
	ok(t, c.BdevSetQdSamplingPeriod(ctx(t), "lvs0/vol", 0))
	eventually(t, 5*time.Second, "sampling off hiding the queue depth", func() (bool, error) { return stat().QueueDepthPollingPeriod == 0, nil })
	wantErr(t, c.BdevSetQdSamplingPeriod(ctx(t), "nosuch", 1_000), nil, -19)
}
