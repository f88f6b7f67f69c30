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

package volume

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

const gi = int64(1) << 30

// osdSpec is one OSD of a placement case: its zone, phase, capacity,
// what its lvstore has allocated and what is committed on it.
type osdSpec struct {
	name, zone string
	phase      flintv1.OSDPhase
	capacity   int64
	allocated  int64
	committed  int64
	drain      bool
	cordon     bool
}

func worldOf(overcommit int32, osds ...osdSpec) *world {
	w := &world{
		pool:      &flintv1.Pool{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: flintv1.PoolSpec{FailureDomain: corev1.LabelTopologyZone, OvercommitPercent: overcommit}},
		osds:      map[string]*flintv1.OSD{},
		nodes:     map[string]*corev1.Node{},
		committed: map[string]int64{},
	}
	for _, o := range osds {
		node := "node-" + o.name
		labels := map[string]string{}
		if o.zone != "" {
			labels[corev1.LabelTopologyZone] = o.zone
		}
		w.nodes[node] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: labels}}
		w.osds[o.name] = &flintv1.OSD{
			ObjectMeta: metav1.ObjectMeta{Name: o.name},
			Spec:       flintv1.OSDSpec{NodeName: node, Drain: o.drain, Cordon: o.cordon},
			Status: flintv1.OSDStatus{Phase: o.phase, Capacity: &flintv1.OSDCapacity{
				Total: *resource.NewQuantity(o.capacity, resource.BinarySI),
				Free:  *resource.NewQuantity(o.capacity-o.allocated, resource.BinarySI),
			}},
		}
		w.committed[o.name] = o.committed
	}
	return w
}

func ready(name, zone string, capacity, committed int64) osdSpec {
	return osdSpec{name: name, zone: zone, phase: flintv1.OSDPhaseReady, capacity: capacity, committed: committed}
}

func TestPlacement(t *testing.T) {
	cases := []struct {
		name       string
		overcommit int32
		osds       []osdSpec
		n          int
		size       int64
		taken      map[string]bool
		want       []string
		why        string // a substring of the shortfall, when short
	}{
		{
			name: "distinct zones, least committed first",
			osds: []osdSpec{ready("a1", "a", 10*gi, 5*gi), ready("a2", "a", 10*gi, 1*gi), ready("b1", "b", 10*gi, 3*gi), ready("c1", "c", 10*gi, 2*gi)},
			n:    3, size: gi,
			want: []string{"a2", "c1", "b1"},
		},
		{
			name: "ties broken by name",
			osds: []osdSpec{ready("z", "a", 10*gi, 0), ready("y", "b", 10*gi, 0), ready("x", "c", 10*gi, 0)},
			n:    2, size: gi,
			want: []string{"x", "y"},
		},
		{
			name: "two OSDs in one zone count once",
			osds: []osdSpec{ready("a1", "a", 10*gi, 0), ready("a2", "a", 10*gi, 0), ready("b1", "b", 10*gi, 0)},
			n:    3, size: gi,
			want: []string{"a1", "b1"},
			why:  "eligible domains: 2 (a, b)",
		},
		{
			name: "an OSD without room is refused, saying how full it is",
			osds: []osdSpec{ready("a1", "a", 10*gi, 9*gi+gi/2), ready("b1", "b", 10*gi, 0)},
			n:    2, size: gi,
			want: []string{"b1"},
			why:  "a1 (full: 9728Mi of 10Gi committed)",
		},
		{
			name:       "overcommit raises the limit",
			overcommit: 200,
			osds:       []osdSpec{ready("a1", "a", 10*gi, 19*gi), ready("b1", "b", 10*gi, 0)},
			n:          2, size: gi,
			want: []string{"b1", "a1"},
		},
		{
			name: "an OSD with less than the reserve free is refused, however little is committed",
			osds: []osdSpec{
				{name: "a1", zone: "a", phase: flintv1.OSDPhaseReady, capacity: 10 * gi, allocated: 9 * gi},
				{name: "a2", zone: "a", phase: flintv1.OSDPhaseReady, capacity: 10 * gi, allocated: 8 * gi, committed: gi},
				ready("b1", "b", 10*gi, 5*gi),
			},
			n: 2, size: gi,
			want: []string{"a2", "b1"},
		},
		{
			name: "a full lvstore says so",
			osds: []osdSpec{{name: "a1", zone: "a", phase: flintv1.OSDPhaseReady, capacity: 10 * gi, allocated: 9 * gi}, ready("b1", "b", 10*gi, 0)},
			n:    2, size: gi,
			want: []string{"b1"},
			why:  "a1 (space low: 1Gi free of 10Gi, under the 20% reserve)",
		},
		{
			name: "exactly full fits",
			osds: []osdSpec{ready("a1", "a", 10*gi, 9*gi)},
			n:    1, size: gi,
			want: []string{"a1"},
		},
		{
			name: "not serving, draining, cordoned and unlabelled OSDs are refused",
			osds: []osdSpec{
				{name: "s", zone: "a", phase: flintv1.OSDPhaseStarting, capacity: 10 * gi},
				{name: "d", zone: "b", phase: flintv1.OSDPhaseReady, capacity: 10 * gi, drain: true},
				{name: "k", zone: "d", phase: flintv1.OSDPhaseReady, capacity: 10 * gi, cordon: true},
				{name: "u", phase: flintv1.OSDPhaseReady, capacity: 10 * gi},
				ready("ok", "c", 10*gi, 0),
			},
			n: 2, size: gi,
			want: []string{"ok"},
			why:  "not eligible: d (draining), k (cordoned), s (Starting), u (node node-u has no topology.kubernetes.io/zone label)",
		},
		{
			name: "a replacement avoids the zones of the remaining replicas",
			osds: []osdSpec{ready("a1", "a", 10*gi, 0), ready("b1", "b", 10*gi, 0), ready("c1", "c", 10*gi, 5*gi)},
			n:    1, size: gi,
			taken: map[string]bool{"a": true, "b": true},
			want:  []string{"c1"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := worldOf(tc.overcommit, tc.osds...)
			p := offer(w, tc.size, nil)
			got := p.choose(tc.n, tc.taken)
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("chose %v, want %v (refused: %v)", got, tc.want, p.refused)
			}
			if len(got) < tc.n {
				msg := p.shortfall("p", tc.n, tc.size, tc.taken)
				if tc.why == "" || !strings.Contains(msg, tc.why) {
					t.Fatalf("shortfall %q does not say %q", msg, tc.why)
				}
			}
		})
	}
}

// A Pool whose OSDs run in interrupt mode serves single-replica Volumes
// only: SPDK attaches no NVMe-oF controller there.
func TestInterruptModeServesOneReplica(t *testing.T) {
	pool := &flintv1.Pool{ObjectMeta: metav1.ObjectMeta{Name: "dev"}}
	pool.Spec.OSD.InterruptMode = true
	if why := interruptModeRefuses(pool, 1); why != "" {
		t.Errorf("one replica refused: %s", why)
	}
	if why := interruptModeRefuses(pool, 3); !strings.Contains(why, "interrupt mode") || !strings.Contains(why, "3-replica") {
		t.Errorf("three replicas: %q, want a refusal naming interrupt mode and the replicas", why)
	}
	pool.Spec.OSD.InterruptMode = false
	if why := interruptModeRefuses(pool, 3); why != "" {
		t.Errorf("polling OSDs refused: %s", why)
	}
}

// In a Pool that mixes transports, the target goes to an OSD that can
// attach every replica: one serving RDMA, since an OSD serving TCP may
// have no RDMA device to reach an RDMA replica with.
func TestTargetReachesEveryReplica(t *testing.T) {
	w := worldOf(100, ready("a", "z1", 1<<30, 0), ready("b", "z2", 1<<30, 0), ready("c", "z3", 1<<30, 0))
	transports := map[string]flintv1.Transport{"a": flintv1.TransportTCP, "b": flintv1.TransportRDMA, "c": flintv1.TransportTCP}
	for name, tr := range transports {
		w.osds[name].Spec.Network.Transport = tr
	}
	if got := targetOf(w, []string{"a", "b", "c"}, nil, ""); got != "b" {
		t.Errorf("new Volume on a (tcp), b (rdma), c (tcp): target on %s, want b", got)
	}
	if got := targetOf(w, []string{"a", "c"}, nil, ""); got != "a" {
		t.Errorf("new Volume on a and c (both tcp): target on %s, want the least committed, a", got)
	}
	if got := targetOf(w, []string{"a", "b", "c"}, map[string]bool{"a": true}, ""); got != "a" {
		t.Errorf("restored Volume whose only copy is on a: target on %s, want a, the OSD with the data", got)
	}
	online := func(osd string) flintv1.ReplicaStatus {
		return flintv1.ReplicaStatus{OSD: osd, State: flintv1.ReplicaStateOnline}
	}
	vol := &flintv1.Volume{Status: flintv1.VolumeStatus{
		Target:   &flintv1.VolumeTarget{OSD: "c"},
		Replicas: []flintv1.ReplicaStatus{online("a"), online("b"), online("c")},
	}}
	if got := newTarget(vol, w); got != "b" {
		t.Errorf("target moving off c: to %s, want b, the one that reaches the rdma replica", got)
	}
	w.osds["b"].Spec.Network.Transport = flintv1.TransportTCP
	if got := newTarget(vol, w); got != "a" {
		t.Errorf("all tcp, target moving off c: to %s, want a, the first", got)
	}
}

// A Volume used on a node puts its target on a replica there, else in the
// node's zone; its other replicas spread as they would anyway.
func TestTargetNearItsNode(t *testing.T) {
	osds := []osdSpec{ready("a", "z1", 10*gi, 0), ready("b", "z2", 10*gi, 0), ready("c", "z3", 10*gi, 5*gi), ready("d", "z3", 10*gi, 4*gi)}
	cases := []struct {
		name, node string
		n          int
		want       []string // the chosen OSDs, the target's first
	}{
		{"no node: least committed", "", 3, []string{"a", "b", "d"}},
		{"on the node, however committed", "node-c", 3, []string{"c", "a", "b"}},
		{"a node without an OSD: the least committed in its zone", "app-z3", 3, []string{"d", "a", "b"}},
		{"a node in a zone without an OSD: least committed", "app-z9", 3, []string{"a", "b", "d"}},
		{"an unknown node: least committed", "gone", 2, []string{"a", "b"}},
		{"one replica, on the node", "node-d", 1, []string{"d"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := worldOf(100, osds...)
			w.nodes["app-z3"] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "app-z3", Labels: map[string]string{corev1.LabelTopologyZone: "z3"}}}
			w.nodes["app-z9"] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "app-z9", Labels: map[string]string{corev1.LabelTopologyZone: "z9"}}}
			got := offer(w, gi, nil).chooseNear(tc.n, w, tc.node)
			if target := targetOf(w, got, nil, tc.node); strings.Join(got, ",") != strings.Join(tc.want, ",") || target != tc.want[0] {
				t.Fatalf("chose %v with the target on %s, want %v with the target on %s", got, target, tc.want, tc.want[0])
			}
		})
	}
}

// A served Volume whose replicas are all Online and whose target lets no
// host in moves its target, planned, to a replica nearer its node that
// reaches every replica; nothing else moves it, and it never moves away
// from its node.
func TestNearerTarget(t *testing.T) {
	served := []flintv1.Endpoint{{Transport: flintv1.TransportTCP, Address: "10.0.0.1", Port: 4420}}
	replicas := func(states ...flintv1.ReplicaState) []flintv1.ReplicaStatus {
		var out []flintv1.ReplicaStatus
		for i, s := range states {
			out = append(out, flintv1.ReplicaStatus{OSD: []string{"a", "b", "c"}[i], State: s})
		}
		return out
	}
	online := flintv1.ReplicaStateOnline
	cases := []struct {
		name, node, target string
		endpoints          []flintv1.Endpoint
		replicas           []flintv1.ReplicaStatus
		allowed            []string
		tcpNode            bool // the node's OSD serves TCP, the others RDMA
		want               string
	}{
		{"to the node's replica", "node-c", "a", served, replicas(online, online, online), nil, false, "c"},
		{"to the zone's replica", "app-z2", "a", served, replicas(online, online, online), nil, false, "b"},
		{"already on the node", "node-c", "c", served, replicas(online, online, online), nil, false, ""},
		{"already in the zone", "app-z2", "b", served, replicas(online, online, online), nil, false, ""},
		{"no node", "", "a", served, replicas(online, online, online), nil, false, ""},
		{"not served yet", "node-c", "a", nil, replicas(online, online, online), nil, false, ""},
		{"a replica rebuilds", "node-c", "a", served, replicas(online, flintv1.ReplicaStateRebuilding, online), nil, false, ""},
		{"the node's replica is stale", "node-c", "a", served, replicas(online, online, flintv1.ReplicaStateStale), nil, false, ""},
		{"a host is let in", "node-c", "a", served, replicas(online, online, online), []string{"nqn.2014-08.org.nvmexpress:uuid:a"}, false, ""},
		{"the node's OSD cannot reach the others", "node-c", "a", served, []flintv1.ReplicaStatus{{OSD: "a", State: online}, {OSD: "c", State: online}}, nil, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := worldOf(100, ready("a", "z1", 10*gi, 0), ready("b", "z2", 10*gi, 0), ready("c", "z3", 10*gi, 0))
			w.nodes["app-z2"] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "app-z2", Labels: map[string]string{corev1.LabelTopologyZone: "z2"}}}
			if tc.tcpNode {
				w.osds["a"].Spec.Network.Transport, w.osds["b"].Spec.Network.Transport = flintv1.TransportRDMA, flintv1.TransportRDMA
				w.osds["c"].Spec.Network.Transport = flintv1.TransportTCP
			}
			vol := &flintv1.Volume{
				Spec:   flintv1.VolumeSpec{NearNode: tc.node},
				Status: flintv1.VolumeStatus{Target: &flintv1.VolumeTarget{OSD: tc.target, Endpoints: tc.endpoints, AllowedHosts: tc.allowed}, Replicas: tc.replicas},
			}
			if got := nearerTarget(vol, w); got != tc.want {
				t.Errorf("target on %s, node %q: moves to %q, want %q", tc.target, tc.node, got, tc.want)
			}
		})
	}
}
