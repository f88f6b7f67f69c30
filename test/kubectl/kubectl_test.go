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

// Package kubectl runs kubectl-flint's commands against a real
// kube-apiserver (envtest) holding Pools, OSDs, Volumes and Events as the
// operator writes them.
package kubectl

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/internal/kubectl"
)

var c client.Client

func TestMain(m *testing.M) {
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		panic("start envtest; is KUBEBUILDER_ASSETS set? run 'make test-envtest': " + err.Error())
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = flintv1.AddToScheme(scheme)
	if c, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		panic(err)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

var now = time.Now()

// create writes obj and then its status, as the operator would.
func create(t *testing.T, obj client.Object, status func()) {
	t.Helper()
	ctx := context.Background()
	if err := c.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	if status != nil {
		status()
		if err := c.Status().Update(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
}

func condition(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(now)}
}

// cluster is a Pool of two OSDs on nodes in zones a and b, a healthy
// Volume and one rebuilding a replica, with an Event about it.
func cluster(t *testing.T) {
	t.Helper()
	for _, n := range []struct{ name, zone string }{{"node-a", "a"}, {"node-b", "b"}} {
		create(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{corev1.LabelTopologyZone: n.zone}}}, nil)
	}
	pool := &flintv1.Pool{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Spec: flintv1.PoolSpec{
		Replicas: 2, FailureDomain: corev1.LabelTopologyZone, Devices: flintv1.PoolDevices{Driver: flintv1.DriverMalloc, Malloc: &flintv1.MallocDevice{Size: resource.MustParse("2Gi")}},
	}}
	create(t, pool, func() {
		pool.Status = flintv1.PoolStatus{
			OSDs: flintv1.OSDCounts{Total: 2, Ready: 2}, Volumes: 2,
			Capacity: &flintv1.PoolCapacity{Raw: resource.MustParse("4Gi"), Usable: resource.MustParse("2Gi"), Allocated: resource.MustParse("2Gi")},
			Conditions: []metav1.Condition{
				condition(flintv1.ReadyCondition, metav1.ConditionTrue, "OSDsReady", "2 of 2 OSDs are Ready"),
				condition(flintv1.RollingOutCondition, metav1.ConditionTrue, flintv1.PoolRollingReason, "stopping OSDs in topology.kubernetes.io/zone b: osd-b"),
			},
			Rollout: &flintv1.RolloutStatus{Domains: []string{"b"}, OSDs: []string{"osd-b"}},
		}
	})
	for _, o := range []struct{ name, node string }{{"osd-a", "node-a"}, {"osd-b", "node-b"}} {
		osd := &flintv1.OSD{ObjectMeta: metav1.ObjectMeta{Name: o.name}, Spec: flintv1.OSDSpec{
			Pool: "fast", NodeName: o.node, Device: flintv1.OSDDevice{Driver: flintv1.DriverMalloc, Malloc: &flintv1.MallocDevice{Size: resource.MustParse("2Gi")}},
		}}
		create(t, osd, func() {
			osd.Status = flintv1.OSDStatus{Phase: flintv1.OSDPhaseReady, Replicas: 2,
				Capacity: &flintv1.OSDCapacity{Total: resource.MustParse("2Gi"), Free: resource.MustParse("1Gi")}}
			if o.name == "osd-b" { // the rollout replaces its pod
				osd.Status.Conditions = []metav1.Condition{
					condition(flintv1.UpToDateCondition, metav1.ConditionFalse, flintv1.OSDPodOutdatedReason, "the pod runs an older spec"),
					condition(flintv1.StoppingCondition, metav1.ConditionTrue, flintv1.OSDRollingUpdateReason, "1 targets move off first"),
				}
			}
		})
	}
	ok := &flintv1.Volume{ObjectMeta: metav1.ObjectMeta{Name: "vol-ok"}, Spec: flintv1.VolumeSpec{Pool: "fast", Size: resource.MustParse("1Gi")}}
	create(t, ok, func() {
		ok.Status = flintv1.VolumeStatus{Phase: flintv1.VolumePhaseReady,
			Replicas:   []flintv1.ReplicaStatus{{OSD: "osd-a", State: flintv1.ReplicaStateOnline}, {OSD: "osd-b", State: flintv1.ReplicaStateOnline}},
			Target:     &flintv1.VolumeTarget{OSD: "osd-a", NQN: "nqn.2026-01.io.flint:volume:ok", Epoch: 1},
			Conditions: []metav1.Condition{condition(flintv1.ReadyCondition, metav1.ConditionTrue, "Serving", "the target serves")},
		}
	})
	since := metav1.NewTime(now.Add(-90 * time.Second))
	degraded := &flintv1.Volume{ObjectMeta: metav1.ObjectMeta{Name: "vol-degraded"}, Spec: flintv1.VolumeSpec{Pool: "fast", Size: resource.MustParse("1Gi"),
		Claim:          &flintv1.ClaimReference{Namespace: "shop", Name: "orders"},
		PublishedHosts: []string{"nqn.2014-08.org.nvmexpress:uuid:6b1c2d3e-4f50-4a61-8b72-9c8d7e6f5a4b"},
		QoS:            &flintv1.VolumeQoS{IOPS: 2000, WriteMiBps: 40}, NearNode: "node-a"}}
	create(t, degraded, func() {
		degraded.Status = flintv1.VolumeStatus{Phase: flintv1.VolumePhaseDegraded,
			Replicas: []flintv1.ReplicaStatus{
				{OSD: "osd-a", State: flintv1.ReplicaStateOnline},
				{OSD: "osd-b", State: flintv1.ReplicaStateRebuilding, RebuildPercent: ptr.To[int32](42), LastTransitionTime: &since},
			},
			Target: &flintv1.VolumeTarget{OSD: "osd-a", NQN: "nqn.2026-01.io.flint:volume:degraded", Epoch: 2,
				Endpoints:    []flintv1.Endpoint{{Transport: flintv1.TransportTCP, Address: "10.0.0.1", Port: 4420}},
				AllowedHosts: []string{"nqn.2014-08.org.nvmexpress:uuid:6b1c2d3e-4f50-4a61-8b72-9c8d7e6f5a4b"},
				QoS:          &flintv1.VolumeQoS{IOPS: 3000}},
			Conditions: []metav1.Condition{
				condition(flintv1.ReadyCondition, metav1.ConditionTrue, "Serving", "the target serves"),
				condition(flintv1.DegradedCondition, metav1.ConditionTrue, "ReplicaRebuilding", "the replica on osd-b rebuilds"),
			},
		}
	})
	// vol-ok predates recorded claims: its claim is found through its PV.
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, nil)
	create(t, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-ok"}, Spec: corev1.PersistentVolumeSpec{
		Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "csi.flint.io", VolumeHandle: "vol-ok"}},
	}}, nil)
	create(t, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "legacy"}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: "pv-ok",
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}, nil)
	snap := &flintv1.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "snap-1"}, Spec: flintv1.SnapshotSpec{Volume: "vol-degraded"}}
	create(t, snap, func() {
		snap.Status = flintv1.SnapshotStatus{Phase: flintv1.SnapshotPhaseDegraded, ReadyToUse: true, Size: ptr.To(resource.MustParse("1Gi")),
			CreationTime: &since, PauseDuration: &metav1.Duration{Duration: 400 * time.Millisecond},
			Copies: []flintv1.SnapshotCopy{{OSD: "osd-a", Lvol: "snap_1", State: flintv1.SnapshotCopyReady}, {OSD: "osd-b", State: flintv1.SnapshotCopyLost}},
		}
	})
	create(t, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vol-degraded.1"},
		EventTime:  metav1.NewMicroTime(now.Add(-time.Minute)), ReportingController: "flint.io/operator", ReportingInstance: "test",
		Action: "EnsureTarget", Reason: "ReplicaOutOfSync", Type: corev1.EventTypeWarning,
		Note:      "the replica on osd-b missed writes; it is rebuilt",
		Regarding: corev1.ObjectReference{APIVersion: flintv1.GroupVersion.String(), Kind: "Volume", Name: "vol-degraded", UID: degraded.UID},
	}, nil)
}

func TestCommands(t *testing.T) {
	cluster(t)
	ctx := context.Background()
	var out bytes.Buffer
	p := &kubectl.Plugin{Client: c, Out: &out}

	t.Run("status", func(t *testing.T) {
		out.Reset()
		s, err := p.ReadStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.PrintStatus(s, ""); err != nil {
			t.Fatal(err)
		}
		t.Logf("kubectl flint status:\n%s", out.String())
		for _, want := range []string{
			"fast  2/2   2        2Gi     2Gi        true", "osd-a  fast  node-a  Ready ", "VOLUMES: 2, 1 healthy",
			"ROLLOUT fast: Rolling: stopping OSDs in topology.kubernetes.io/zone b: osd-b", "osd-b  fast  node-b  Ready,Stopping",
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("status lacks %q", want)
			}
		}
		// 42% of 1Gi since 90 s ago: about 4.8 MiB/s, 2 minutes to go;
		// rebuildRate's own test checks the figures.
		if !regexp.MustCompile(`(?m)^vol-degraded +fast +1Gi +Degraded +1/2 +42% [0-9.]+MiB/s ETA [0-9]+m[0-9]+s +osd-a +ReplicaRebuilding: the replica on osd-b rebuilds$`).MatchString(out.String()) {
			t.Error("status lacks vol-degraded's rebuild with its rate and ETA")
		}
		if strings.Contains(out.String(), "vol-ok") {
			t.Error("status lists a healthy Volume among those that need attention")
		}
	})

	t.Run("status -o json", func(t *testing.T) {
		out.Reset()
		s, err := p.ReadStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.PrintStatus(s, "json"); err != nil {
			t.Fatal(err)
		}
		var got kubectl.Status
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Pools) != 1 || len(got.OSDs) != 2 || len(got.Volumes) != 2 {
			t.Fatalf("status -o json = %+v", got)
		}
		if err := p.PrintStatus(s, "xml"); err == nil {
			t.Error("an unknown output format is accepted")
		}
	})

	t.Run("volume describe", func(t *testing.T) {
		out.Reset()
		if err := p.Describe(ctx, "volume", "vol-degraded", "", now); err != nil {
			t.Fatal(err)
		}
		t.Logf("kubectl flint volume describe vol-degraded:\n%s", out.String())
		for _, want := range []string{
			"OSD osd-a on node node-a, epoch 2", "tcp 10.0.0.1:4420", "Near node:          node-a",
			"osd-b  node-b  b     Rebuilding  42%      90s",
			"Degraded  True    ReplicaRebuilding",
			"Warning  ReplicaOutOfSync  the replica on osd-b missed writes; it is rebuilt",
			"3000 IOPS", "2000 IOPS, 40 MiB/s write",
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("describe lacks %q", want)
			}
		}
		if err := p.Describe(ctx, "volume", "vol-none", "", now); err == nil || !strings.Contains(err.Error(), "no Volume vol-none") {
			t.Errorf("describe of a missing Volume: %v", err)
		}
	})

	t.Run("volume describe -o json", func(t *testing.T) {
		out.Reset()
		if err := p.Describe(ctx, "volume", "shop/orders", "json", now); err != nil {
			t.Fatal(err)
		}
		var got kubectl.VolumeDescription
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if got.Name != "vol-degraded" || got.Claim != "shop/orders" || len(got.Replicas) != 2 || got.Replicas[1].Domain != "b" ||
			ptr.Deref(got.Replicas[1].Rebuild, 0) != 42 || got.Target == nil || got.Target.Epoch != 2 || len(got.Conditions) != 2 || len(got.Events) != 1 {
			t.Fatalf("volume describe -o json:\n%s", out.String())
		}
		out.Reset()
		if err := p.Describe(ctx, "volume", "vol-degraded", "yaml", now); err != nil || !strings.Contains(out.String(), "claim: shop/orders") {
			t.Errorf("volume describe -o yaml (%v):\n%s", err, out.String())
		}
	})

	t.Run("osd, pool and snapshot describe", func(t *testing.T) {
		for _, tc := range []struct {
			kind, name string
			want       []string
		}{
			{"osd", "osd-b", []string{"Device:", "malloc 2Gi", "Free:", "1Gi", "vol-degraded  shop/orders  Rebuilding  -", "vol-ok        -            Online      -"}},
			{"osd", "osd-a", []string{"vol-degraded  shop/orders  Online   yes"}},
			{"pool", "fast", []string{"Failure domain:", "topology.kubernetes.io/zone", "osd-a  node-a  a     Ready", "OSDsReady"}},
			{"snapshot", "snap-1", []string{"Volume:", "vol-degraded", "Write pause:", "400ms", "osd-a  snap_1  Ready", "osd-b  -       Lost", "Created:", "90s ago"}},
		} {
			out.Reset()
			if err := p.Describe(ctx, tc.kind, tc.name, "", now); err != nil {
				t.Fatalf("%s describe %s: %v", tc.kind, tc.name, err)
			}
			t.Logf("kubectl flint %s describe %s:\n%s", tc.kind, tc.name, out.String())
			for _, want := range tc.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("%s describe %s lacks %q", tc.kind, tc.name, want)
				}
			}
			if err := p.Describe(ctx, tc.kind, "nothing", "", now); err == nil || !strings.Contains(err.Error(), "nothing") {
				t.Errorf("%s describe of a missing one: %v", tc.kind, err)
			}
		}
		out.Reset()
		var got kubectl.SnapshotDescription
		if err := p.Describe(ctx, "snapshot", "snap-1", "json", now); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got.Copies) != 2 || got.Pause != "400ms" {
			t.Fatalf("snapshot describe -o json (%v):\n%s", err, out.String())
		}
		if err := p.Describe(ctx, "node", "node-a", "", now); err == nil {
			t.Error("describe of a kind Flint does not have is accepted")
		}
	})

	t.Run("volume describe by claim", func(t *testing.T) {
		field := func(name string) string {
			for l := range strings.Lines(out.String()) {
				if rest, ok := strings.CutPrefix(l, name+":"); ok {
					return strings.TrimSpace(rest)
				}
			}
			return ""
		}
		for claim, want := range map[string]struct{ name, claim string }{
			"shop/orders": {"vol-degraded", "shop/orders"}, // recorded
			"shop/legacy": {"vol-ok", "-"},                 // through its PV
		} {
			out.Reset()
			if err := p.Describe(ctx, "volume", claim, "", now); err != nil {
				t.Fatalf("describe %s: %v", claim, err)
			}
			if field("Name") != want.name || field("Claim") != want.claim {
				t.Errorf("describe %s: Name %q, Claim %q; want %q, %q", claim, field("Name"), field("Claim"), want.name, want.claim)
			}
		}
		if err := p.Describe(ctx, "volume", "shop/missing", "", now); err == nil || !strings.Contains(err.Error(), "no Volume records claim shop/missing") {
			t.Errorf("describe of a missing claim: %v", err)
		}
	})

	t.Run("drain and undrain", func(t *testing.T) {
		drained := func() bool {
			var o flintv1.OSD
			if err := c.Get(ctx, client.ObjectKey{Name: "osd-b"}, &o); err != nil {
				t.Fatal(err)
			}
			return o.Spec.Drain
		}
		out.Reset()
		if err := p.Drain(ctx, "osd-b", true); err != nil || !drained() {
			t.Fatalf("drain: %v, drained %v", err, drained())
		}
		if !strings.Contains(out.String(), "osd/osd-b drained") {
			t.Errorf("drain said %q", out.String())
		}
		if err := p.Drain(ctx, "osd-b", false); err != nil || drained() {
			t.Fatalf("undrain: %v, drained %v", err, drained())
		}
		if err := p.Drain(ctx, "osd-none", true); err == nil || !strings.Contains(err.Error(), "no OSD osd-none") {
			t.Errorf("drain of a missing OSD: %v", err)
		}
	})

	t.Run("drain follows the replicas off the OSD", func(t *testing.T) {
		// osd-b holds a replica of each Volume (vol-degraded's rebuilds).
		// Their replacements rebuild on osd-c, then are in sync.
		var vols [2]*flintv1.Volume
		for i, name := range []string{"vol-ok", "vol-degraded"} {
			vols[i] = &flintv1.Volume{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, vols[i]); err != nil {
				t.Fatal(err)
			}
		}
		replicasOnC := func(state flintv1.ReplicaState, percent *int32) {
			t.Helper()
			started := metav1.NewTime(time.Now().Add(-10 * time.Second))
			for _, v := range vols {
				got := &flintv1.Volume{}
				if err := c.Get(ctx, client.ObjectKey{Name: v.Name}, got); err != nil {
					t.Fatal(err)
				}
				got.Status.Replicas = []flintv1.ReplicaStatus{{OSD: "osd-a", State: flintv1.ReplicaStateOnline}, {OSD: "osd-c", State: state, RebuildPercent: percent, LastTransitionTime: &started}}
				if err := c.Status().Update(ctx, got); err != nil {
					t.Fatal(err)
				}
				// The follower sees the first Volume change alone: the
				// line the rate must not be read from.
				time.Sleep(300 * time.Millisecond)
			}
		}
		t.Cleanup(func() {
			for _, v := range vols {
				got := &flintv1.Volume{}
				if err := c.Get(ctx, client.ObjectKey{Name: v.Name}, got); err == nil {
					got.Status = v.Status
					_ = c.Status().Update(ctx, got)
				}
			}
			_ = p.Drain(ctx, "osd-b", false)
		})

		var follow syncBuffer
		follower := &kubectl.Plugin{Client: c, Out: &follow}
		if err := follower.Drain(ctx, "osd-b", true); err != nil {
			t.Fatal(err)
		}
		waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- follower.WaitDrained(waitCtx, "osd-b", 50*time.Millisecond) }()
		says := func(line string) {
			t.Helper()
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(follow.String(), line) {
				if time.Now().After(deadline) {
					t.Fatalf("the drain never said %q; it said:\n%s", line, follow.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		says("osd/osd-b: 2 replicas and 0 targets to move; 0 rebuilding, 0 of 2Gi rebuilt")
		replicasOnC(flintv1.ReplicaStateRebuilding, ptr.To[int32](50))
		// Half of each 1Gi in 10 s (and the moments since): at most
		// 2 × 51.2 MiB/s, and at least 10 s to go.
		// The Volumes change one at a time, so a line with one of them
		// rebuilding may come first: read the rate from the line with both.
		both := "osd/osd-b: 0 replicas and 0 targets to move; 2 rebuilding, 1Gi of 2Gi rebuilt at "
		says(both)
		m := regexp.MustCompile(regexp.QuoteMeta(both) + `([0-9.]+) MiB/s, ETA ([0-9]+)s`).FindStringSubmatch(follow.String())
		if m == nil {
			t.Fatalf("no rate and ETA in:\n%s", follow.String())
		}
		if rate, _ := strconv.ParseFloat(m[1], 64); rate > 102.4 || rate < 60 {
			t.Errorf("rate %v MiB/s, want at most 102.4 and not far below", rate)
		}
		if eta, _ := strconv.Atoi(m[2]); eta < 10 || eta > 20 {
			t.Errorf("ETA %d s, want 10 s or a little more", eta)
		}
		replicasOnC(flintv1.ReplicaStateOnline, nil)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		says("osd/osd-b holds no replica or target any more and their replacements are in sync: drained")
	})

	t.Run("diagnose", func(t *testing.T) {
		storageNodes(t)
		checks, err := p.Diagnose(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		out.Reset()
		err = p.PrintChecks(checks, "")
		t.Logf("kubectl flint diagnose:\n%s", out.String())
		if err == nil || !strings.Contains(err.Error(), "checks failed") {
			t.Errorf("diagnose with failing checks returned %v, want an error counting them", err)
		}
		out.Reset()
		var asJSON []kubectl.Check
		if err := p.PrintChecks(checks, "json"); err == nil || !strings.Contains(err.Error(), "checks failed") {
			t.Errorf("diagnose -o json with failing checks returned %v, want an error counting them", err)
		}
		if err := json.Unmarshal(out.Bytes(), &asJSON); err != nil || len(asJSON) != len(checks) {
			t.Errorf("diagnose -o json (%v):\n%s", err, out.String())
		}
		verdict := func(node, pool, what string) *kubectl.Check {
			for i := range checks {
				if c := &checks[i]; c.Node == node && c.Pool == pool && c.What == what {
					return c
				}
			}
			t.Fatalf("diagnose has no %s check of Pool %s on %s", what, pool, node)
			return nil
		}
		for _, want := range []struct {
			node, what string
			ok         bool
			says       string
		}{
			{"storage-a", "hugepages", false, "512Mi of 2Mi pages allocatable, 1 OSD(s) need 2Gi: reserve 768 more 2Mi pages"},
			{"storage-a", "rdma functions", false, "0 nvidia.com/rdma_vf allocatable"},
			{"storage-a", "nvme devices", true, "1 flint.io/nvme allocatable"},
			{"storage-b", "hugepages", true, "4Gi of 2Mi pages allocatable"},
			{"storage-b", "cores", true, "8 allocatable, 1 OSD(s) x 2 whole cores"},
			{"-", "operator: NetworkAttachmentMissing", false, "install Multus"},
		} {
			c := verdict(want.node, "rdma", want.what)
			if c.OK != want.ok || !strings.Contains(c.Detail, want.says) {
				t.Errorf("%s on %s: ok=%v %q, want ok=%v saying %q", want.what, want.node, c.OK, c.Detail, want.ok, want.says)
			}
		}
		one, err := p.Diagnose(ctx, "storage-b")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range one {
			if c.Node != "storage-b" && c.Node != "-" {
				t.Errorf("diagnose storage-b checked %s", c.Node)
			}
		}
		if _, err := p.Diagnose(ctx, "node-nowhere"); err == nil || !strings.Contains(err.Error(), "no Pool selects node node-nowhere") {
			t.Errorf("diagnose of a node no Pool selects: %v", err)
		}
	})

	t.Run("cordon and uncordon", func(t *testing.T) {
		cordoned := func() bool {
			var o flintv1.OSD
			if err := c.Get(ctx, client.ObjectKey{Name: "osd-a"}, &o); err != nil {
				t.Fatal(err)
			}
			return o.Spec.Cordon
		}
		out.Reset()
		if err := p.Cordon(ctx, "osd-a", true); err != nil || !cordoned() {
			t.Fatalf("cordon: %v, cordoned %v", err, cordoned())
		}
		s, err := p.ReadStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.PrintStatus(s, ""); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "osd/osd-a cordoned") || !strings.Contains(out.String(), "Ready,Cordoned") {
			t.Errorf("cordon, then status, said:\n%s", out.String())
		}
		if err := p.Cordon(ctx, "osd-a", false); err != nil || cordoned() {
			t.Fatalf("uncordon: %v, cordoned %v", err, cordoned())
		}
	})
}

// storageNodes is an RDMA Pool over two labelled nodes: storage-a short of
// hugepages and RDMA functions, storage-b with all it needs; the operator
// found no Multus.
func storageNodes(t *testing.T) {
	t.Helper()
	alloc := map[string]corev1.ResourceList{
		"storage-a": {"cpu": resource.MustParse("8"), "hugepages-2Mi": resource.MustParse("512Mi"), "flint.io/nvme": resource.MustParse("1")},
		"storage-b": {"cpu": resource.MustParse("8"), "hugepages-2Mi": resource.MustParse("4Gi"), "flint.io/nvme": resource.MustParse("2"), "nvidia.com/rdma_vf": resource.MustParse("4")},
	}
	for name, res := range alloc {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"flint.io/storage": "true"}}}
		create(t, n, func() { n.Status.Allocatable, n.Status.Capacity = res, res })
	}
	pool := &flintv1.Pool{ObjectMeta: metav1.ObjectMeta{Name: "rdma"}, Spec: flintv1.PoolSpec{
		Replicas: 2, NodeSelector: map[string]string{"flint.io/storage": "true"},
		Devices: flintv1.PoolDevices{Driver: flintv1.DriverPCIe, ResourceName: "flint.io/nvme"},
		OSD:     flintv1.OSDTemplate{OSDResources: flintv1.OSDResources{CPUs: 2, HugePages: &flintv1.HugePages{Size: flintv1.HugePageSize2Mi, Amount: resource.MustParse("2Gi")}}},
		Network: flintv1.Network{Transport: flintv1.TransportRDMA, Attachment: "flint-system/sriov-rdma", ResourceName: "nvidia.com/rdma_vf"},
	}}
	create(t, pool, func() {
		pool.Status.Conditions = []metav1.Condition{condition(flintv1.PoolNetworkAttachmentMissingCondition, metav1.ConditionTrue, flintv1.PoolNetworkAttachmentMissingCondition,
			"the cluster has no NetworkAttachmentDefinition kind: install Multus, then create flint-system/sriov-rdma")}
	})
}
