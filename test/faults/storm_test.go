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

// Package faults is the fault storm (make test-faults): a 3-replica
// Volume on real SPDK, built by the real operator (two leader-elected
// processes) and agents over OSDs launched as their pods say, written by
// SPDK's own initiator while a seeded scheduler kills, freezes and cuts
// off its parts, alone and overlapping. After every round of faults, and
// at the end from each in-sync replica's lvol on its disk, a checker reads
// every block back and counts acknowledged writes lost or corrupted and
// reads of data never written.
package faults

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
	"github.com/flint-io/flint/test/ledger"
	"github.com/flint-io/flint/test/localcluster"
	"github.com/flint-io/flint/test/localnode"
)

const (
	volSize   = 64 << 20
	imageSize = 1 << 30
	// recoveryTimeout bounds how long the Volume may take to acknowledge
	// a write again once a round's faults have ended.
	recoveryTimeout = 3 * time.Minute
)

// timings are the operator's: short enough that a held fault moves a
// target within a round, and the least target grace the lease allows.
var timings = controllers.Options{
	Resync: 5 * time.Second, ReplicaGrace: 2 * time.Minute, TargetGrace: 17 * time.Second, AgentLease: 10 * time.Second,
	OrphanGrace: 24 * time.Hour, VolumeWorkers: 2, NetworkPolicy: true,
}

// budget is a storm's size: FAULTS faults (default 100) or FAULT_DURATION
// (default 20m), whichever ends first, for each seed of FAULT_SEEDS
// (comma-separated; "new" draws one; default "new").
type budget struct {
	faults   int
	duration time.Duration
	seeds    []uint64
}

func budgetFromEnv() (budget, error) {
	b := budget{faults: 100, duration: 20 * time.Minute}
	if s := os.Getenv("FAULTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return b, fmt.Errorf("FAULTS=%q: want a count of faults, at least 1", s)
		}
		b.faults = n
	}
	if s := os.Getenv("FAULT_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 || d > time.Hour {
			return b, fmt.Errorf("FAULT_DURATION=%q: want a duration up to 1h, such as 20m", s)
		}
		b.duration = d
	}
	for _, s := range strings.Split(cmp.Or(os.Getenv("FAULT_SEEDS"), "new"), ",") {
		if s = strings.TrimSpace(s); s == "new" {
			b.seeds = append(b.seeds, rand.Uint64()%1_000_000)
			continue
		}
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return b, fmt.Errorf("FAULT_SEEDS=%q: want seeds (numbers) or new, comma-separated", os.Getenv("FAULT_SEEDS"))
		}
		b.seeds = append(b.seeds, seed)
	}
	return b, nil
}

func TestFaultStorm(t *testing.T) {
	own, err := ownNetwork()
	if err != nil {
		t.Fatal(err)
	}
	spdkDir := os.Getenv("FLINT_SPDK_DIR")
	if !own || spdkDir == "" {
		t.Skip("the storm runs real SPDK (FLINT_SPDK_DIR) and cuts links with iptables, only in a network namespace of its own: run it with make test-faults")
	}
	b, err := budgetFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	for _, seed := range b.seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("seed %d; replay with: make test-faults FAULT_SEEDS=%d FAULTS=%d", seed, seed, b.faults)
			storm(t, spdkDir, seed, b)
		})
	}
}

// figures are a storm's results.
type figures struct {
	faults   map[kind]int
	injected int
	rounds   int
	overlaps int
	skipped  int
	moves    int
	checks   int
	recovery time.Duration
	// lastRecovery is the last round's time to a write acknowledged.
	lastRecovery time.Duration
}

func storm(t *testing.T, spdkDir string, seed uint64, b budget) {
	ctx, cancel := context.WithTimeout(t.Context(), b.duration+15*time.Minute)
	defer cancel()
	dir := t.TempDir()
	// Kept when the storm fails: the writer's journal and every log.
	kept, err := os.MkdirTemp("", fmt.Sprintf("flint-faults-%d-", seed))
	if err != nil {
		t.Fatal(err)
	}
	journal, err := os.Create(filepath.Join(kept, "writes.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = journal.Close() }()
	c, stop := startCluster(ctx, t, spdkDir, dir)
	defer stop()
	var saved sync.Once
	saveLogs := func() {
		saved.Do(func() {
			if err := c.SaveLogs(kept); err != nil {
				t.Logf("save the logs: %v", err)
			}
		})
	}
	defer func() {
		if !t.Failed() && os.Getenv("FAULT_KEEP") == "" {
			_ = os.RemoveAll(kept)
			return
		}
		saveLogs()
		t.Logf("the writer's journal and every log are in %s", kept)
	}()
	vol := &flintv1.Volume{
		ObjectMeta: metav1.ObjectMeta{Name: "storm"},
		Spec:       flintv1.VolumeSpec{Pool: "storm", Size: resource.MustParse("64Mi"), Replicas: ptr.To(int32(3)), PublishedHosts: []string{hostNQN}},
	}
	if err := c.Client.Create(ctx, vol); err != nil {
		t.Fatal(err)
	}
	if err := converge(ctx, c, vol, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("the Volume is Ready: target on %s, replicas %s", vol.Status.Target.OSD, replicaStates(vol))

	h := &host{dd: filepath.Join(spdkDir, "build", "bin", "spdk_dd"), dir: dir}
	fig := figures{faults: map[kind]int{}}
	var targetMu sync.Mutex
	lastTarget := vol.Status.Target.OSD
	w := &writer{host: h, ledger: ledger.New(), rng: rand.New(rand.NewPCG(seed, 1)), blocks: volSize / ledger.BlockSize, journal: journal,
		target: func(ctx context.Context) (endpoint, error) {
			var v flintv1.Volume
			if err := c.Client.Get(ctx, client.ObjectKeyFromObject(vol), &v); err != nil {
				return endpoint{}, err
			}
			tg := v.Status.Target
			if tg == nil || len(tg.Endpoints) == 0 {
				return endpoint{}, errors.New("the Volume has no target")
			}
			targetMu.Lock()
			if tg.OSD != lastTarget {
				fig.moves, lastTarget = fig.moves+1, tg.OSD
			}
			targetMu.Unlock()
			return endpoint{addr: tg.Endpoints[0].Address, port: int(tg.Endpoints[0].Port), nqn: tg.NQN}, nil
		}}
	wctx, stopWriter := context.WithCancel(ctx)
	written := make(chan struct{})
	go func() { defer close(written); w.run(wctx) }()
	defer func() { stopWriter(); <-written }()
	if started := time.Now(); !waitUntil(ctx, time.Minute, func() bool { return w.ackedAfter(started) }) {
		_, _, lastErr := w.figures()
		t.Fatalf("the writer could not write to the healthy Volume for a minute: %v", lastErr)
	}

	s := cluster{c: c, vol: client.ObjectKeyFromObject(vol)}
	rng := rand.New(rand.NewPCG(seed, 0))
	began := time.Now()
	for fig.injected < b.faults && time.Since(began) < b.duration {
		fig.rounds++
		round := plan(rng, timings.TargetGrace)
		if len(round) > 1 {
			fig.overlaps++
		}
		log := runRound(ctx, t, s, round, &fig)
		healed := time.Now()
		if !waitUntil(ctx, recoveryTimeout, func() bool { return w.ackedAfter(healed) }) {
			_, _, lastErr := w.figures()
			t.Errorf("round %d (%s): no write acknowledged within %s of the faults' end; the writer's last error: %v; %s", fig.rounds, log, recoveryTimeout, lastErr, describe(ctx, c, vol))
			break
		}
		fig.lastRecovery = time.Since(healed)
		fig.recovery = max(fig.recovery, fig.lastRecovery)
		_, v, err := checkThroughVolume(ctx, w)
		if err != nil {
			t.Errorf("round %d (%s): %v; %s", fig.rounds, log, err, describe(ctx, c, vol))
			break
		}
		fig.checks++
		t.Logf("round %d [%s, %s] %s; writes again %.1fs after; read back: %s", fig.rounds, time.Since(began).Round(time.Second), time.Now().Format("15:04:05"), log, fig.lastRecovery.Seconds(), v)
		if v.Bad() > 0 {
			t.Errorf("round %d (%s): the Volume read back %s", fig.rounds, log, v)
			break
		}
	}
	stopWriter()
	<-written
	stall, failed, _ := w.figures()

	// The end: the Volume whole again, read through its target, then each
	// in-sync replica from its OSD's disk with every OSD stopped.
	if err := converge(ctx, c, vol, 5*time.Minute); err != nil {
		t.Errorf("after the storm: %v", err)
	}
	whole, final, err := checkThroughVolume(ctx, w)
	if err != nil {
		t.Errorf("after the storm: %v", err)
	} else if final.Bad() > 0 {
		t.Errorf("after the storm the Volume read back %s", final)
	}
	replicas := inSyncReplicas(ctx, t, c, vol)
	saveLogs() // before Stop removes them; dropped unless the storm fails
	stop()
	for _, r := range replicas {
		data, err := h.readLvol(ctx, r.image, agentv1.LvstoreName(r.osdUID), string(vol.UID), volSize)
		if err != nil {
			t.Errorf("read the replica on %s from its disk: %v", r.osd, err)
			continue
		}
		v := w.ledger.Check(data)
		t.Logf("replica on %s, read from its disk: %s; %d blocks differ from the Volume's", r.osd, v, differing(data, whole))
		if v.Bad() > 0 {
			t.Errorf("the in-sync replica on %s read back %s", r.osd, v)
		}
	}

	var byKind []string
	for k := range kinds {
		byKind = append(byKind, fmt.Sprintf("%s %d", k, fig.faults[k]))
	}
	writes, acked := w.ledger.Counts()
	t.Logf("seed %d: %d faults in %d rounds (%d overlapping; %d skipped, nothing to hit) over %s: %s",
		seed, fig.injected, fig.rounds, fig.overlaps, fig.skipped, time.Since(began).Round(time.Second), strings.Join(byKind, ", "))
	t.Logf("seed %d: %d writes of %d KiB tried, %d acknowledged; %d attempts failed (no target to send to, or not acknowledged); %d target moves; longest write stall %.1fs; longest recovery after a round %.1fs; %d checks through the Volume; at the end %s",
		seed, writes, writeBlocks*ledger.BlockSize>>10, acked, failed, fig.moves, stall.Seconds(), fig.recovery.Seconds(), fig.checks, final)
}

// runRound injects each fault of round at its time, holds it, heals it,
// and returns once all have ended, with what it did.
func runRound(ctx context.Context, t *testing.T, s cluster, round []fault, fig *figures) string {
	var mu sync.Mutex
	var parts []string
	// record notes f's start, and says whether it began.
	record := func(f fault, hit string, err error) bool {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case errors.Is(err, errNotNow):
			fig.skipped++
			parts = append(parts, fmt.Sprintf("%s skipped (%v)", f.kind, err))
			return false
		case err != nil:
			t.Errorf("inject %s on %s: %v", f.kind, hit, err)
			return false
		}
		fig.injected++
		fig.faults[f.kind]++
		desc := fmt.Sprintf("%s on %s", f.kind, hit)
		if f.kind.lasts() {
			desc += fmt.Sprintf(" for %.1fs", f.hold.Seconds())
		}
		if f.after > 0 {
			desc = fmt.Sprintf("+%.1fs %s", f.after.Seconds(), desc)
		}
		parts = append(parts, desc)
		return true
	}
	var wg sync.WaitGroup
	for _, f := range round {
		wg.Go(func() {
			sleep(ctx, f.after)
			heal, hit, err := s.inject(ctx, f)
			if !record(f, hit, ended(err)) || heal == nil {
				return
			}
			sleep(ctx, f.hold)
			heal()
		})
	}
	wg.Wait()
	return strings.Join(parts, "; ")
}

// ended makes a signal to a process that had already ended (killed by an
// earlier fault or its fence, not started again yet) a fault with
// nothing to hit.
func ended(err error) error {
	if errors.Is(err, syscall.ESRCH) || errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%w: the process had ended (%v)", errNotNow, err)
	}
	return err
}

// checkThroughVolume reads the whole Volume with the writer paused and
// returns it, judged by the ledger; the read is retried for a minute
// while the target is not there.
func checkThroughVolume(ctx context.Context, w *writer) ([]byte, ledger.Verdict, error) {
	w.pause()
	defer w.resume()
	var lastErr error
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		ep, err := w.target(ctx)
		if err == nil {
			var data []byte
			if data, err = w.host.read(ctx, ep, volSize); err == nil {
				return data, w.ledger.Check(data), nil
			}
		}
		lastErr = err
		sleep(ctx, time.Second)
	}
	return nil, ledger.Verdict{}, fmt.Errorf("the Volume could not be read for a minute: %w", lastErr)
}

// startCluster runs the control plane, the operator as two processes and
// a Pool of three aio OSDs, one per zone, on images in dir; stop (safe to
// call twice) stops it all. The OSDs poll (a target in interrupt mode
// attaches no replica): three pollers on this machine's cores.
func startCluster(ctx context.Context, t *testing.T, spdkDir, dir string) (*localcluster.Cluster, func()) {
	nodes := []localcluster.Node{{Name: "storm-a", Zone: "a"}, {Name: "storm-b", Zone: "b"}, {Name: "storm-c", Zone: "c"}}
	c, err := localcluster.Start(ctx, localcluster.Options{
		Root: filepath.Join("..", ".."), Nodes: nodes, Pools: []string{"storm"},
		StartSPDK: localnode.RealSPDK(spdkDir), Operator: timings, OperatorProcesses: 2,
	})
	var once sync.Once
	stop := func() {
		once.Do(func() {
			if c != nil {
				if err := c.Stop(); err != nil {
					t.Logf("stop the cluster: %v", err)
				}
			}
		})
	}
	if err != nil {
		stop()
		t.Fatal(err)
	}
	pool := &flintv1.Pool{
		ObjectMeta: metav1.ObjectMeta{Name: "storm"},
		Spec: flintv1.PoolSpec{Replicas: 3, Devices: flintv1.PoolDevices{Driver: flintv1.DriverAIO},
			OSD: flintv1.OSDTemplate{OSDResources: flintv1.OSDResources{CPUs: 1, Memory: ptr.To(resource.MustParse("1Gi"))}}},
	}
	for _, n := range nodes {
		image := filepath.Join(dir, n.Name+".img")
		if err := os.WriteFile(image, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(image, imageSize); err != nil {
			t.Fatal(err)
		}
		pool.Spec.Devices.Nodes = append(pool.Spec.Devices.Nodes, flintv1.NodeDevices{Node: n.Name, Devices: []string{image}})
	}
	if err := c.Client.Create(ctx, pool); err != nil {
		stop()
		t.Fatal(err)
	}
	return c, stop
}

// converge waits up to timeout for vol to be Ready with every replica
// Online, and leaves its status in vol.
func converge(ctx context.Context, c *localcluster.Cluster, vol *flintv1.Volume, timeout time.Duration) error {
	ok := waitUntil(ctx, timeout, func() bool {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(vol), vol); err != nil {
			return false
		}
		online := 0
		for _, r := range vol.Status.Replicas {
			if r.State == flintv1.ReplicaStateOnline {
				online++
			}
		}
		return vol.Status.Phase == flintv1.VolumePhaseReady && vol.Status.Target != nil && len(vol.Status.Target.Endpoints) > 0 && online == int(*vol.Spec.Replicas)
	})
	if !ok {
		return fmt.Errorf("the Volume is not Ready with every replica Online within %s: %s", timeout, describe(ctx, c, vol))
	}
	return nil
}

// describe says where vol stands, for an error.
func describe(ctx context.Context, c *localcluster.Cluster, vol *flintv1.Volume) string {
	var v flintv1.Volume
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(vol), &v); err != nil {
		return fmt.Sprintf("the Volume cannot be read: %v", err)
	}
	target := "none"
	if v.Status.Target != nil {
		target = fmt.Sprintf("%s (epoch %d)", v.Status.Target.OSD, v.Status.Target.Epoch)
	}
	var conds []string
	for _, cond := range v.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s %s: %s", cond.Type, cond.Status, cond.Reason, cond.Message))
	}
	return fmt.Sprintf("the Volume is %s, target %s, replicas %s, conditions [%s]", v.Status.Phase, target, replicaStates(&v), strings.Join(conds, "; "))
}

func replicaStates(vol *flintv1.Volume) string {
	var parts []string
	for _, r := range vol.Status.Replicas {
		parts = append(parts, fmt.Sprintf("%s %s", r.OSD, r.State))
	}
	return strings.Join(parts, ", ")
}

// replicaOnDisk is an in-sync replica and where its OSD keeps it.
type replicaOnDisk struct{ osd, osdUID, image string }

func inSyncReplicas(ctx context.Context, t *testing.T, c *localcluster.Cluster, vol *flintv1.Volume) []replicaOnDisk {
	var out []replicaOnDisk
	for _, r := range vol.Status.Replicas {
		if r.State != flintv1.ReplicaStateOnline {
			continue
		}
		var o flintv1.OSD
		if err := c.Client.Get(ctx, client.ObjectKey{Name: r.OSD}, &o); err != nil {
			t.Errorf("read OSD %s: %v", r.OSD, err)
			continue
		}
		out = append(out, replicaOnDisk{osd: r.OSD, osdUID: string(o.UID), image: o.Spec.Device.Path})
	}
	return out
}

// differing counts the blocks where a and b differ.
func differing(a, b []byte) int {
	n := 0
	for i := 0; i+ledger.BlockSize <= min(len(a), len(b)); i += ledger.BlockSize {
		if !bytes.Equal(a[i:i+ledger.BlockSize], b[i:i+ledger.BlockSize]) {
			n++
		}
	}
	return n
}

func waitUntil(ctx context.Context, timeout time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		sleep(ctx, 500*time.Millisecond)
	}
	return true
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
