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
	"reflect"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/utils/ptr"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

func TestParseParameters(t *testing.T) {
	three := int32(3)
	for _, tt := range []struct {
		name string
		in   map[string]string
		want parameters
		code codes.Code
	}{
		{"pool only", map[string]string{"pool": "fast"}, parameters{pool: "fast"}, codes.OK},
		{"all, and the provisioner's own keys", map[string]string{"pool": "fast", "replicas": "3", "fsType": "xfs", "csi.storage.k8s.io/fstype": "ext4"}, parameters{pool: "fast", replicas: &three, fsType: "xfs"}, codes.OK},
		{"the provisioner's claim", map[string]string{"pool": "fast", "csi.storage.k8s.io/pvc/name": "data", "csi.storage.k8s.io/pvc/namespace": "shop", "csi.storage.k8s.io/pv/name": "pvc-1"},
			parameters{pool: "fast", claim: &flintv1.ClaimReference{Namespace: "shop", Name: "data"}}, codes.OK},
		{"half a claim is none", map[string]string{"pool": "fast", "csi.storage.k8s.io/pvc/name": "data"}, parameters{pool: "fast"}, codes.OK},
		{"no pool", map[string]string{"replicas": "3"}, parameters{}, codes.InvalidArgument},
		{"replicas 0", map[string]string{"pool": "p", "replicas": "0"}, parameters{}, codes.InvalidArgument},
		{"replicas 6", map[string]string{"pool": "p", "replicas": "6"}, parameters{}, codes.InvalidArgument},
		{"replicas not a number", map[string]string{"pool": "p", "replicas": "three"}, parameters{}, codes.InvalidArgument},
		{"an unknown fsType", map[string]string{"pool": "p", "fsType": "btrfs"}, parameters{}, codes.InvalidArgument},
		{"a rebuild cap", map[string]string{"pool": "p", "rebuildMaxBandwidthMiBps": "200"}, parameters{pool: "p", rebuildCap: ptr.To(int32(200))}, codes.OK},
		{"no rebuild cap over the Pool's", map[string]string{"pool": "p", "rebuildMaxBandwidthMiBps": "0"}, parameters{pool: "p", rebuildCap: ptr.To(int32(0))}, codes.OK},
		{"a negative rebuild cap", map[string]string{"pool": "p", "rebuildMaxBandwidthMiBps": "-1"}, parameters{}, codes.InvalidArgument},
		{"a rebuild cap in other units", map[string]string{"pool": "p", "rebuildMaxBandwidthMiBps": "200Mi"}, parameters{}, codes.InvalidArgument},
		{"an unknown key", map[string]string{"pool": "p", "colour": "blue"}, parameters{}, codes.InvalidArgument},
		{"default limits", map[string]string{"pool": "p", "maxIOPS": "5000", "maxMiBps": "200", "maxReadMiBps": "150", "maxWriteMiBps": "100"},
			parameters{pool: "p", qos: flintv1.VolumeQoS{IOPS: 5000, ReadWriteMiBps: 200, ReadMiBps: 150, WriteMiBps: 100}}, codes.OK},
		{"IOPS off SPDK's step", map[string]string{"pool": "p", "maxIOPS": "1500"}, parameters{}, codes.InvalidArgument},
		{"hosts authenticate", map[string]string{"pool": "p", "hostAuthentication": "DHHMACCHAP"}, parameters{pool: "p", hostAuthentication: flintv1.HostAuthenticationDHHMACCHAP}, codes.OK},
		{"hosts do not authenticate", map[string]string{"pool": "p", "hostAuthentication": "None"}, parameters{pool: "p", hostAuthentication: flintv1.HostAuthenticationNone}, codes.OK},
		{"an unknown authentication", map[string]string{"pool": "p", "hostAuthentication": "dhchap"}, parameters{}, codes.InvalidArgument},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseParameters(tt.in)
			if status.Code(err) != tt.code {
				t.Fatalf("err = %v, want %s", err, tt.code)
			}
			if err == nil && !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("parameters = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestApplyMutableParameters(t *testing.T) {
	was := flintv1.VolumeQoS{IOPS: 3000, WriteMiBps: 40}
	for _, tt := range []struct {
		name string
		in   map[string]string
		want flintv1.VolumeQoS
		code codes.Code
	}{
		{"nothing named changes nothing", nil, was, codes.OK},
		{"a limit named replaces that one only", map[string]string{"maxIOPS": "1000"}, flintv1.VolumeQoS{IOPS: 1000, WriteMiBps: 40}, codes.OK},
		{"0 removes a limit", map[string]string{"maxWriteMiBps": "0", "maxReadMiBps": "10"}, flintv1.VolumeQoS{IOPS: 3000, ReadMiBps: 10}, codes.OK},
		{"IOPS off SPDK's step", map[string]string{"maxIOPS": "2500"}, was, codes.InvalidArgument},
		{"IOPS above the API's bound", map[string]string{"maxIOPS": "100001000"}, was, codes.InvalidArgument},
		{"a negative bandwidth", map[string]string{"maxMiBps": "-5"}, was, codes.InvalidArgument},
		{"a bandwidth in other units", map[string]string{"maxMiBps": "5Mi"}, was, codes.InvalidArgument},
		{"a StorageClass key", map[string]string{"pool": "p"}, was, codes.InvalidArgument},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := was
			err := applyMutableParameters(&got, tt.in)
			if status.Code(err) != tt.code {
				t.Fatalf("err = %v, want %s", err, tt.code)
			}
			if err == nil && got != tt.want {
				t.Fatalf("QoS = %+v, want %+v", got, tt.want)
			}
		})
	}
}
