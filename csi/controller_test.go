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
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

func TestSizeFor(t *testing.T) {
	tests := []struct {
		name                   string
		required, limit, least int64
		want                   int64
		code                   codes.Code
	}{
		{"default", 0, 0, 0, 1 << 30, codes.OK},
		{"default capped by the limit", 0, 16 << 20, 0, 16 << 20, codes.OK},
		{"rounded up to a MiB", 1, 0, 0, 1 << 20, codes.OK},
		{"whole MiB kept", 5 << 20, 0, 0, 5 << 20, codes.OK},
		{"rounding passes the limit", (5 << 20) + 1, (5 << 20) + 2, 0, 0, codes.OutOfRange},
		{"required above limit", 10 << 20, 5 << 20, 0, 0, codes.InvalidArgument},
		{"negative", -1, 0, 0, 0, codes.InvalidArgument},
		{"the largest volume", MaxVolumeBytes, 0, 0, MaxVolumeBytes, codes.OK},
		{"past the largest volume", MaxVolumeBytes + 1, 0, 0, 0, codes.OutOfRange},
		// Rounding MaxInt64 up to a MiB overflowed into a 1 MiB volume.
		{"near MaxInt64", math.MaxInt64 - 5, 0, 0, 0, codes.OutOfRange},
		{"MaxInt64 with a limit", math.MaxInt64, math.MaxInt64, 0, 0, codes.OutOfRange},
		{"a source's size by default", 0, 0, 64 << 20, 64 << 20, codes.OK},
		{"less than a source's size", 16 << 20, 0, 64 << 20, 0, codes.OutOfRange},
		{"more than a source's size", 128 << 20, 0, 64 << 20, 128 << 20, codes.OK},
		{"a source above the limit", 0, 32 << 20, 64 << 20, 0, codes.OutOfRange},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sizeFor(&csi.CapacityRange{RequiredBytes: tc.required, LimitBytes: tc.limit}, tc.least)
			if status.Code(err) != tc.code || got != tc.want {
				t.Fatalf("sizeFor(%d, %d) = %d, %v; want %d, %s", tc.required, tc.limit, got, err, tc.want, tc.code)
			}
		})
	}
}

func TestVolumeID(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, tt := range []struct{ name, in, want string }{
		{"a PV name stays", "pvc-0c7e1d2a-5b3f-4e6d-9a8c-1b2c3d4e5f60", "pvc-0c7e1d2a-5b3f-4e6d-9a8c-1b2c3d4e5f60"},
		{"upper case is digested", "PVC-1", VolumeID("PVC-1")},
		{"a name longer than a label is digested", long, VolumeID(long)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := VolumeID(tt.in)
			if got != tt.want {
				t.Fatalf("VolumeID(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if got != tt.in && (!strings.HasPrefix(got, "csi-") || len(got) != 44) {
				t.Fatalf("VolumeID(%q) = %q, want csi- and 40 hex digits", tt.in, got)
			}
		})
	}
	if VolumeID("PVC-1") == VolumeID("PVC-2") {
		t.Fatal("two names gave one volume id")
	}
}

func TestAPIErrorMapping(t *testing.T) {
	gr := schema.GroupResource{Group: "flint.io", Resource: "volumes"}
	for _, tt := range []struct {
		name string
		err  error
		code codes.Code
	}{
		{"refused by validation", apierrors.NewInvalid(schema.GroupKind{Group: "flint.io", Kind: "Volume"}, "v", nil), codes.InvalidArgument},
		{"RBAC", apierrors.NewForbidden(gr, "v", errors.New("no")), codes.PermissionDenied},
		{"apiserver away", apierrors.NewServiceUnavailable("down"), codes.Unavailable},
		{"a gRPC status passes", status.Error(codes.ResourceExhausted, "full"), codes.ResourceExhausted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := status.Code(apiError(tt.err)); got != tt.code {
				t.Fatalf("code = %s, want %s", got, tt.code)
			}
		})
	}
}

// ListVolumes pages in name order with tokens of its own, refuses a token
// it did not hand out, and a negative page size.
func TestListPaging(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := flintv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme)
	for _, n := range []string{"v3", "v1", "v5", "v2", "v4"} {
		b = b.WithObjects(&flintv1.Volume{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	c := &Controller{Client: b.Build()}
	ctx := context.Background()
	var seen []string
	token := ""
	for range 5 {
		page, next, err := c.listPage(ctx, 2, token)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range page {
			seen = append(seen, v.Name)
		}
		if token = next; token == "" {
			break
		}
	}
	if fmt.Sprint(seen) != "[v1 v2 v3 v4 v5]" {
		t.Fatalf("pages gave %v, want v1-v5 once each in order", seen)
	}
	if _, _, err := c.listPage(ctx, 2, "elsewhere"); status.Code(err) != codes.Aborted {
		t.Fatalf("a foreign token: err = %v, want Aborted", err)
	}
	if _, _, err := c.listPage(ctx, -1, ""); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("a negative page size: err = %v, want InvalidArgument", err)
	}
}

// Publishing waits until the target lets the node in, unpublishing until
// it no longer does: what the agent read back from SPDK, not the spec.
func TestAllows(t *testing.T) {
	const a, b = "nqn.2014-08.org.nvmexpress:uuid:a", "nqn.2014-08.org.nvmexpress:uuid:b"
	vol := func(allowed ...string) *flintv1.Volume {
		return &flintv1.Volume{Status: flintv1.VolumeStatus{Target: &flintv1.VolumeTarget{AllowedHosts: allowed}}}
	}
	for _, tt := range []struct {
		name string
		vol  *flintv1.Volume
		host string
		want bool
	}{
		{"listed", vol(a, b), a, true},
		{"not listed", vol(b), a, false},
		{"no target", &flintv1.Volume{}, a, false},
		{"any host, some allowed", vol(b), "", true},
		{"any host, none allowed", vol(), "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := allows(tt.vol, tt.host); got != tt.want {
				t.Fatalf("allows = %v, want %v", got, tt.want)
			}
		})
	}
}

// Two nodes whose node plugins report one host NQN (a cloned
// /etc/nvme/hostnqn) get no publish: the target would admit both.
func TestPublishRefusesAHostNQNTwoNodesClaim(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{flintv1.AddToScheme, storagev1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	const cloned, own = "nqn.2014-08.org.nvmexpress:uuid:1b4e28ba-2fa1-11d2-883f-0016d3cca427", "nqn.2014-08.org.nvmexpress:uuid:6b1c2d3e-4f50-4a61-8b72-9c8d7e6f5a4b"
	csiNode := func(name, id string) *storagev1.CSINode {
		return &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: DriverName, NodeID: id}}}}
	}
	vol := &flintv1.Volume{ObjectMeta: metav1.ObjectMeta{Name: "v1"}, Spec: flintv1.VolumeSpec{Pool: "p"}}
	k := fake.NewClientBuilder().WithScheme(scheme).WithObjects(vol, csiNode("worker-a", cloned), csiNode("worker-b", cloned), csiNode("worker-c", own)).Build()
	c := &Controller{Client: k, APIReader: k}
	_, err := c.ControllerPublishVolume(context.Background(), &csi.ControllerPublishVolumeRequest{
		VolumeId: "v1", NodeId: cloned,
		VolumeCapability: &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		},
	})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "node id of nodes worker-a, worker-b") {
		t.Fatalf("publish to a host NQN two nodes claim: %v, want FailedPrecondition naming both nodes", err)
	}
	got := &flintv1.Volume{}
	if err := k.Get(context.Background(), client.ObjectKey{Name: "v1"}, got); err != nil || len(got.Spec.PublishedHosts) != 0 {
		t.Fatalf("the Volume was published to %v (%v)", got.Spec.PublishedHosts, err)
	}
}
