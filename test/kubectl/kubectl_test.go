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
			Capacity:   &flintv1.PoolCapacity{Raw: resource.MustParse("4Gi"), Usable: resource.MustParse("2Gi"), Allocated: resource.MustParse("2Gi")},
			Conditions: []metav1.Condition{condition(flintv1.ReadyCondition, metav1.ConditionTrue, "OSDsReady", "2 of 2 OSDs are Ready")},
		}
	})
	for _, o := range []struct{ name, node string }{{"osd-a", "node-a"}, {"osd-b", "node-b"}} {
		osd := &flintv1.OSD{ObjectMeta: metav1.ObjectMeta{Name: o.name}, Spec: flintv1.OSDSpec{
			Pool: "fast", NodeName: o.node, Device: flintv1.OSDDevice{Driver: flintv1.DriverMalloc, Malloc: &flintv1.MallocDevice{Size: resource.MustParse("2Gi")}},
		}}
		create(t, osd, func() {
			osd.Status = flintv1.OSDStatus{Phase: flintv1.OSDPhaseReady, Replicas: 2,
				Capacity: &flintv1.OSDCapacity{Total: resource.MustParse("2Gi"), Free: resource.MustParse("1Gi")}}
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
		PublishedHosts: []string{"nqn.2014-08.org.nvmexpress:uuid:6b1c2d3e-4f50-4a61-8b72-9c8d7e6f5a4b"}}}
	create(t, degraded, func() {
		degraded.Status = flintv1.VolumeStatus{Phase: flintv1.VolumePhaseDegraded,
			Replicas: []flintv1.ReplicaStatus{
				{OSD: "osd-a", State: flintv1.ReplicaStateOnline},
				{OSD: "osd-b", State: flintv1.ReplicaStateRebuilding, RebuildPercent: ptr.To[int32](42), LastTransitionTime: &since},
			},
			Target: &flintv1.VolumeTarget{OSD: "osd-a", NQN: "nqn.2026-01.io.flint:volume:degraded", Epoch: 2,
				Endpoints:    []flintv1.Endpoint{{Transport: flintv1.TransportTCP, Address: "10.0.0.1", Port: 4420}},
				AllowedHosts: []string{"nqn.2014-08.org.nvmexpress:uuid:6b1c2d3e-4f50-4a61-8b72-9c8d7e6f5a4b"}},
			Conditions: []metav1.Condition{
				condition(flintv1.ReadyCondition, metav1.ConditionTrue, "Serving", "the target serves"),
				condition(flintv1.DegradedCondition, metav1.ConditionTrue, "ReplicaRebuilding", "the replica on osd-b rebuilds"),
			},
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
			"fast  2/2   2        2Gi     2Gi        true", "osd-a  fast  node-a  Ready", "VOLUMES: 2, 1 healthy",
			"vol-degraded  fast  1Gi   Degraded  1/2       42%      osd-a   ReplicaRebuilding: the replica on osd-b rebuilds",
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("status lacks %q", want)
			}
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
		if err := p.DescribeVolume(ctx, "vol-degraded", now); err != nil {
			t.Fatal(err)
		}
		t.Logf("kubectl flint volume describe vol-degraded:\n%s", out.String())
		for _, want := range []string{
			"OSD osd-a, epoch 2", "tcp 10.0.0.1:4420",
			"osd-b  node-b  b     Rebuilding  42%      90s",
			"Degraded  True    ReplicaRebuilding",
			"Warning  ReplicaOutOfSync  the replica on osd-b missed writes; it is rebuilt",
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("describe lacks %q", want)
			}
		}
		if err := p.DescribeVolume(ctx, "vol-none", now); err == nil || !strings.Contains(err.Error(), "no Volume vol-none") {
			t.Errorf("describe of a missing Volume: %v", err)
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

	t.Run("diagnose", func(t *testing.T) {
		storageNodes(t)
		checks, err := p.Diagnose(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		out.Reset()
		err = p.PrintChecks(checks)
		t.Logf("kubectl flint diagnose:\n%s", out.String())
		if err == nil || !strings.Contains(err.Error(), "checks failed") {
			t.Errorf("diagnose with failing checks returned %v, want an error counting them", err)
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
