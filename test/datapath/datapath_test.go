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

// Package datapath runs a replicated volume's whole life on the agents'
// code: three OSDs create replicas, one builds the raid1 target, a host
// writes, a replica's SPDK is killed mid-life and comes back, the target
// rebuilds it, and every replica is read back and compared. Against real
// nvmf_tgt processes (FLINT_SPDK_DIR, `make test-spdk`) the host is SPDK's
// own spdk_dd over NVMe/TCP on loopback and the data is checked; the
// double has no data path, so there the same steps run without I/O.
package datapath

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flint-io/flint/internal/fabric"
	"github.com/flint-io/flint/internal/spdk/spdklab"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
	"github.com/flint-io/flint/osd-image/agent/storage"
)

const (
	volume   = "0c7e1d2a-5b3f-4e6d-9a8c-1b2c3d4e5f60" // a Volume uid: the longest key, so the longest SPDK names
	volSize  = 64 << 20
	chunk    = 8 << 20
	hostNQN  = "nqn.2014-08.org.nvmexpress:uuid:d47a7a00-0000-4000-8000-000000000001"
	checker  = "nqn.2014-08.org.nvmexpress:uuid:d47a7a00-0000-4000-8000-000000000002"
	imageLen = 512 << 20
)

func TestThreeReplicasSurviveALostReplica(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lab := spdklab.NewOf(t, 3, spdklab.FlintTgt)
	osds := startOSDs(ctx, t, lab)
	// Every link authenticates both ways, as a Pool's replica links and
	// a Volume's hosts do.
	replicaKeys, hostKeys := newKeys(t), newKeys(t)
	member := func(i int, inSync bool) storage.MemberSpec { return exportTo(ctx, t, osds, i, 0, inSync, replicaKeys) }
	members := []storage.MemberSpec{member(0, true), member(1, true), member(2, true)}
	spec := storage.TargetSpec{Volume: volume, Epoch: 1, Members: members, Hosts: []string{hostNQN}, MemberKeys: replicaKeys, HostKeys: hostKeys}
	ensure := func() storage.Target {
		st, err := osds[0].EnsureTarget(ctx, spec)
		must(t, err)
		return st
	}
	waitFor := func(what string, ok func(storage.Target) bool) {
		t.Helper()
		ensureUntil(ctx, t, osds[0], spec, what, ok)
	}
	if st := ensure(); st.Degraded() || st.SizeBytes != volSize {
		t.Fatalf("new target = %+v, want three online members and %d bytes", st, volSize)
	}
	dd := newHost(t, lab)
	target := osds[0].Endpoint()
	target.NQN = agentv1.VolumeNQN(volume)
	if lab.Real {
		// SPDK's host offers every DH group; the exporting target takes
		// the strongest the OSD allows (launch.DefaultDHGroups), not
		// SPDK's default ffdhe8192.
		for i := 1; i < 3; i++ {
			auth, err := spdklab.QueuesAuthenticated(ctx, lab.Targets[i].Client, members[i].Export.NQN, "ffdhe2048")
			must(t, err)
			t.Logf("the replica link to osd-%d: %s", i, auth)
		}
		if err := dd.tryWrite(target, hostNQN, randomChunk(t), 0); err == nil {
			t.Fatal("a host without the Volume's key wrote to it")
		}
		wrong := newKeys(t)
		wrong.CtrlSecret = hostKeys.CtrlSecret
		if err := dd.with(wrong).tryWrite(target, hostNQN, randomChunk(t), 0); err == nil {
			t.Fatal("a host with a wrong key wrote to the Volume")
		}
	}
	dd = dd.with(hostKeys)

	// The host writes while every replica is in sync, then again while
	// replica 2's SPDK is dead: the raid waits for the lost member, so
	// the write is not acknowledged while the caller counts it in sync.
	// Once it is recorded out of sync, the target lets it go and the
	// write completes without an I/O error.
	want := make([]byte, volSize)
	first, second := randomChunk(t), randomChunk(t)
	copy(want, first)
	copy(want[2*chunk:], second)
	dd.write(target, hostNQN, first, 0)
	lab.Targets[2].Kill()
	done := make(chan error, 1)
	go func() { done <- dd.tryWrite(target, hostNQN, second, 2*chunk) }()
	waitFor("the lost replica holding writes", func(st storage.Target) bool {
		return st.Members[2].State == agentv1.MemberState_MEMBER_STATE_HELD
	})
	if lab.Real {
		select {
		case err := <-done:
			t.Fatalf("the write ended (%v) while a member counted in sync held it", err)
		case <-time.After(3 * time.Second):
		}
	}
	members[2].InSync = false
	waitFor("the lost replica leaving the raid", func(st storage.Target) bool {
		return st.Members[2].State == agentv1.MemberState_MEMBER_STATE_MISSING
	})
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(time.Minute):
		t.Fatal("the write is still held after the lost member left")
	}

	// It comes back with its lvstore on its disk, behind by the second
	// write, and is rebuilt from the others.
	lab.Targets[2].Restart(t)
	must(t, bootstrap(ctx, osds[2]))
	members[2] = member(2, false)
	waitFor("the rebuild finishing", func(st storage.Target) bool { return !st.Degraded() })

	// Stop the target and read every replica back on its own.
	stopped, err := osds[0].DeleteTarget(ctx, volume, []string{"osd-0", "osd-1", "osd-2"}, nil)
	must(t, err)
	if !stopped.RaidFound || len(stopped.InSync) != 3 {
		t.Errorf("the stopped target = %+v, want all three replicas in sync", stopped)
	}
	expectReplicas(ctx, t, dd.with(replicaKeys), osds, []int{0, 1, 2}, want)
}

// exportTo is replica i of osds as a member of the target on OSD target:
// exported to that target alone (fencing any other), unless it is the
// target's own.
func exportTo(ctx context.Context, t testing.TB, osds []*storage.Engine, i, target int, inSync bool, keys storage.Keys) storage.MemberSpec {
	t.Helper()
	m := storage.MemberSpec{OSD: fmt.Sprintf("osd-%d", i), InSync: inSync}
	if i != target {
		e, err := osds[i].ExportReplica(ctx, volume, agentv1.HostNQN(fmt.Sprintf("osd-%d", target)), 1, keys)
		must(t, err)
		m.Export = e
	}
	return m
}

// threeReplicaSpec is the volume's target on osds[0] over the replicas of
// osds 0, 1 and 2, all in sync, serving hostNQN.
func threeReplicaSpec(ctx context.Context, t *testing.T, osds []*storage.Engine) storage.TargetSpec {
	t.Helper()
	members := []storage.MemberSpec{exportTo(ctx, t, osds, 0, 0, true, storage.Keys{}), exportTo(ctx, t, osds, 1, 0, true, storage.Keys{}), exportTo(ctx, t, osds, 2, 0, true, storage.Keys{})}
	return storage.TargetSpec{Volume: volume, Epoch: 1, Members: members, Hosts: []string{hostNQN}}
}

// expectReplicas reads back, each on its own, the replicas on the OSDs
// numbered in replicas, exported to dd with its keys, and compares them
// with want; the double has no data to compare.
func expectReplicas(ctx context.Context, t *testing.T, dd *host, osds []*storage.Engine, replicas []int, want []byte) {
	t.Helper()
	for _, i := range replicas {
		e, err := osds[i].ExportReplica(ctx, volume, checker, 1, dd.keys)
		must(t, err)
		got := dd.read(e, checker, volSize)
		if got == nil {
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("replica on osd-%d: sha256 %x, want %x", i, sha256.Sum256(got), sha256.Sum256(want))
		} else {
			t.Logf("replica on osd-%d: sha256 %x (every acknowledged write)", i, sha256.Sum256(got))
		}
	}
}

// ensureUntil drives the target on o with spec, every 500 ms for at most
// 90 s, until ok holds for its status, and returns that status.
func ensureUntil(ctx context.Context, t testing.TB, o *storage.Engine, spec storage.TargetSpec, what string, ok func(storage.Target) bool) storage.Target {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		st, err := o.EnsureTarget(ctx, spec)
		must(t, err)
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %+v", what, st)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// bootstrap brings an OSD up, retrying while a restarted SPDK examines
// its device.
func bootstrap(ctx context.Context, o *storage.Engine) error {
	var err error
	for range 50 {
		if _, err = o.Bootstrap(ctx); err == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return err
}

func randomChunk(t *testing.T) []byte { return randomBytes(t, chunk) }

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Error(err)
	}
	return b
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// host is an NVMe/TCP host: spdk_dd of the SPDK build tree, one run per
// transfer, or nothing on the double. With keys it authenticates with
// them, both ways.
type host struct {
	t    *testing.T
	bin  string
	dir  string
	keys storage.Keys
}

// with is h authenticating with keys.
func (h *host) with(keys storage.Keys) *host {
	c := *h
	c.keys = keys
	return &c
}

// newKeys makes a pair of DH-HMAC-CHAP secrets.
func newKeys(t *testing.T) storage.Keys {
	t.Helper()
	secret, err := fabric.NewSecret()
	must(t, err)
	ctrl, err := fabric.NewSecret()
	must(t, err)
	return storage.Keys{Secret: secret, CtrlSecret: ctrl}
}

// startOSDs bootstraps an OSD (osd-0, osd-1, ...) on each of lab's
// targets, each with a replica of the volume.
func startOSDs(ctx context.Context, t *testing.T, lab *spdklab.Lab, options ...func(*storage.Config)) []*storage.Engine {
	return startOSDsSized(ctx, t, lab, volSize, options...)
}

// startOSDsSized is startOSDs with replicas of size bytes, on devices
// with room for two of them.
func startOSDsSized(ctx context.Context, t testing.TB, lab *spdklab.Lab, size int64, options ...func(*storage.Config)) []*storage.Engine {
	var osds []*storage.Engine
	for i, target := range lab.Targets {
		port, _ := strconv.Atoi(spdklab.FreePort(t))
		keyDir := filepath.Join(lab.Dir, fmt.Sprintf("keys-osd%d", i))
		must(t, os.Mkdir(keyDir, 0o700))
		cfg := storage.Config{
			UID:      fmt.Sprintf("osd-%d", i),
			KeyDir:   keyDir,
			Device:   storage.Device{Driver: storage.DriverAIO, Path: lab.Image(t, fmt.Sprintf("osd%d", i), max(imageLen, 2*size))},
			Listener: storage.Listener{Transport: "tcp", Address: "127.0.0.1", Port: port},
		}
		for _, option := range options {
			option(&cfg)
		}
		o := storage.New(cfg, target.Client)
		must(t, bootstrap(ctx, o))
		_, err := o.CreateReplica(ctx, volume, uint64(size))
		must(t, err)
		osds = append(osds, o)
	}
	return osds
}

func newHost(t *testing.T, lab *spdklab.Lab) *host {
	h := &host{t: t, dir: lab.Dir}
	if lab.Real {
		h.bin = filepath.Join(os.Getenv("FLINT_SPDK_DIR"), "build", "bin", "spdk_dd")
	}
	return h
}

// write copies data to the namespace of e at offset.
func (h *host) write(e storage.Subsystem, nqn string, data []byte, offset int) {
	must(h.t, h.tryWrite(e, nqn, data, offset))
}

// read returns size bytes of the namespace of e; nil on the double.
func (h *host) read(e storage.Subsystem, nqn string, size int) []byte {
	if h.bin == "" {
		return nil
	}
	out := filepath.Join(h.dir, "out.bin")
	h.run(e, nqn, "--ib=hn1", "--of="+out, "--bs=1048576", fmt.Sprintf("--count=%d", size>>20))
	data, err := os.ReadFile(out)
	must(h.t, err)
	return data
}

func (h *host) run(e storage.Subsystem, nqn string, args ...string) {
	h.t.Helper()
	if out, err := h.try(e, nqn, args...); err != nil {
		h.t.Fatalf("spdk_dd %v: %v\n%s", args, err, out)
	}
}

// tryWrite writes data at offset and returns spdk_dd's error; nil on the
// double, which has no host.
func (h *host) tryWrite(e storage.Subsystem, nqn string, data []byte, offset int) error {
	if h.bin == "" {
		return nil
	}
	in := filepath.Join(h.dir, fmt.Sprintf("in-%d.bin", offset))
	if err := os.WriteFile(in, data, 0o600); err != nil {
		return err
	}
	out, err := h.try(e, nqn, "--if="+in, "--ob=hn1", "--bs=1048576", fmt.Sprintf("--count=%d", len(data)>>20), fmt.Sprintf("--seek=%d", offset>>20))
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

func (h *host) try(e storage.Subsystem, nqn string, args ...string) ([]byte, error) {
	attach := map[string]any{"name": "h", "trtype": e.Transport, "adrfam": "ipv4", "traddr": e.Address, "trsvcid": strconv.Itoa(e.Port), "subnqn": e.NQN, "hostnqn": nqn}
	var keyring []any
	for _, k := range []struct{ name, param, secret string }{{"hk", "dhchap_key", h.keys.Secret}, {"hc", "dhchap_ctrlr_key", h.keys.CtrlSecret}} {
		if k.secret == "" {
			continue
		}
		path := filepath.Join(h.dir, "dd-"+k.name)
		must(h.t, os.WriteFile(path, []byte(k.secret), 0o600))
		keyring = append(keyring, map[string]any{"method": "keyring_file_add_key", "params": map[string]any{"name": k.name, "path": path}})
		attach[k.param] = k.name
	}
	conf := map[string]any{"subsystems": []any{
		map[string]any{"subsystem": "keyring", "config": keyring},
		map[string]any{"subsystem": "bdev", "config": []any{map[string]any{"method": "bdev_nvme_attach_controller", "params": attach}}},
	}}
	data, err := json.Marshal(conf)
	must(h.t, err)
	path := filepath.Join(h.dir, "dd.json")
	must(h.t, os.WriteFile(path, data, 0o600))
	args = append([]string{"--no-huge", "-s", "1024", "-m", "0x2", "--disable-cpumask-locks", "--no-rpc-server", "--json", path}, args...)
	// A host that lost its connection fails its I/O (SPDK's defaults);
	// the bound only keeps a hang from holding the suite.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, args...)
	// A test that ends first must not leave spdk_dd polling a core.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if failed := spdklab.DDFailures(out); err == nil && len(failed) > 0 {
		err = fmt.Errorf("spdk_dd exited 0, but its I/O failed: %s", strings.Join(failed, " | "))
	}
	return out, err
}
