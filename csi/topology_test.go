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

package csi

import (
	"context"
	"fmt"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

func topologyScheme(t *testing.T) *runtime.Scheme {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{flintv1.AddToScheme, storagev1.AddToScheme, corev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

// The node a CreateVolume prefers first is the Volume's nearNode; a
// requirement alone names none.
func TestNearNode(t *testing.T) {
	node := func(n string) *csi.Topology { return &csi.Topology{Segments: map[string]string{TopologyKeyNode: n}} }
	zone := &csi.Topology{Segments: map[string]string{corev1.LabelTopologyZone: "z1"}}
	for _, tt := range []struct {
		name string
		req  *csi.TopologyRequirement
		want string
	}{
		{"none", nil, ""},
		{"the first preferred", &csi.TopologyRequirement{Requisite: []*csi.Topology{node("a"), node("b")}, Preferred: []*csi.Topology{node("b"), node("a")}}, "b"},
		{"requisite only", &csi.TopologyRequirement{Requisite: []*csi.Topology{node("a")}}, ""},
		{"the first preferred naming a node", &csi.TopologyRequirement{Preferred: []*csi.Topology{zone, node("c")}}, "c"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := nearNode(tt.req); got != tt.want {
				t.Fatalf("nearNode = %q, want %q", got, tt.want)
			}
		})
	}
}

// A claim's Volume may be used where its StorageClass's allowedTopologies
// say, each term spread into segments; everywhere without them.
func TestAccessibleTopology(t *testing.T) {
	restricted := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "zoned"}, Provisioner: DriverName, AllowedTopologies: []corev1.TopologySelectorTerm{
		{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: "zone", Values: []string{"z1", "z2"}}, {Key: "rack", Values: []string{"r1"}}}},
		{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: TopologyKeyNode, Values: []string{"n9"}}}},
	}}
	open := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "open"}, Provisioner: DriverName}
	claim := func(name, class string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class)}}
	}
	k := fake.NewClientBuilder().WithScheme(topologyScheme(t)).WithObjects(restricted, open, claim("zoned", "zoned"), claim("open", "open"), claim("classless", "gone")).Build()
	for _, tt := range []struct {
		name  string
		claim *flintv1.ClaimReference
		want  string
	}{
		{"allowedTopologies", &flintv1.ClaimReference{Namespace: "ns", Name: "zoned"}, "[map[rack:r1 zone:z1] map[rack:r1 zone:z2] map[topology.flint.io/node:n9]]"},
		{"a class without them", &flintv1.ClaimReference{Namespace: "ns", Name: "open"}, "[]"},
		{"a class gone", &flintv1.ClaimReference{Namespace: "ns", Name: "classless"}, "[]"},
		{"a claim gone", &flintv1.ClaimReference{Namespace: "ns", Name: "gone"}, "[]"},
		{"no claim", nil, "[]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := accessibleTopology(context.Background(), k, tt.claim)
			if err != nil {
				t.Fatal(err)
			}
			var segments []map[string]string
			for _, s := range got {
				segments = append(segments, s.GetSegments())
			}
			if fmt.Sprint(segments) != tt.want {
				t.Fatalf("accessible from %v, want %s", segments, tt.want)
			}
		})
	}
}

// Publishing a Volume published nowhere else puts it near the node: its
// Pod moved there.
func TestPublishPutsTheVolumeNearItsNode(t *testing.T) {
	const host = "nqn.2014-08.org.nvmexpress:uuid:6b1c2d3e-4f50-4a61-8b72-9c8d7e6f5a4b"
	vol := &flintv1.Volume{
		ObjectMeta: metav1.ObjectMeta{Name: "v1"},
		Spec:       flintv1.VolumeSpec{Pool: "p", NearNode: "worker-a"},
		Status: flintv1.VolumeStatus{
			Conditions: []metav1.Condition{{Type: flintv1.ReadyCondition, Status: metav1.ConditionTrue, ObservedGeneration: 100}},
			Target:     &flintv1.VolumeTarget{OSD: "o", Endpoints: []flintv1.Endpoint{{Transport: flintv1.TransportTCP, Address: "10.0.0.1", Port: 4420}}, AllowedHosts: []string{host}},
		},
	}
	csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "worker-b"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: DriverName, NodeID: host}}}}
	k := fake.NewClientBuilder().WithScheme(topologyScheme(t)).WithObjects(vol, csiNode).WithStatusSubresource(vol).Build()
	c := &Controller{Client: k, APIReader: k}
	if _, err := c.ControllerPublishVolume(context.Background(), &csi.ControllerPublishVolumeRequest{
		VolumeId: "v1", NodeId: host,
		VolumeCapability: &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		},
	}); err != nil {
		t.Fatal(err)
	}
	got := &flintv1.Volume{}
	if err := k.Get(context.Background(), client.ObjectKey{Name: "v1"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.NearNode != "worker-b" || len(got.Spec.PublishedHosts) != 1 {
		t.Fatalf("published to worker-b: nearNode %q, hosts %v; want worker-b and its host", got.Spec.NearNode, got.Spec.PublishedHosts)
	}
}

// A node reports its name and, when it has one, its zone: a class's
// allowedTopologies on zones then matches the topology of the node a Pod
// was scheduled to, as external-provisioner requires.
func TestNodeGetInfoReportsTheZone(t *testing.T) {
	for _, tt := range []struct {
		zone string
		want string
	}{
		{"z1", "map[topology.flint.io/node:n1 topology.kubernetes.io/zone:z1]"},
		{"", "map[topology.flint.io/node:n1]"},
	} {
		n := &Node{NodeID: "nqn.2014-08.org.nvmexpress:uuid:a", NodeName: "n1", Zone: tt.zone}
		info, err := n.NodeGetInfo(context.Background(), &csi.NodeGetInfoRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(info.GetAccessibleTopology().GetSegments()); got != tt.want {
			t.Errorf("zone %q: topology %s, want %s", tt.zone, got, tt.want)
		}
	}
}
