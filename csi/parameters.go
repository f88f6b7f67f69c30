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
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/utils/ptr"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// StorageClass parameters.
const (
	ParamPool     = "pool"
	ParamReplicas = "replicas"
	ParamFsType   = "fsType"
	// ParamRebuildMaxBandwidth caps the Volume's rebuilds, in MiB/s, in
	// place of its Pool's cap.
	ParamRebuildMaxBandwidth = "rebuildMaxBandwidthMiBps"
	// ParamHostAuthentication is the Volume's spec.hostAuthentication:
	// None or DHHMACCHAP. With DHHMACCHAP the class must also name the
	// node-stage secret (csi.storage.k8s.io/node-stage-secret-name:
	// flint-host-auth-${pv.name}, and -namespace: the operator's).
	ParamHostAuthentication = "hostAuthentication"
)

// QoS parameters: a VolumeAttributesClass's (mutable: ControllerModifyVolume
// changes them), or a StorageClass's, as defaults. 0 limits nothing.
const (
	// ParamMaxIOPS limits reads and writes together, in I/Os per second:
	// a multiple of 1000, the step SPDK limits in.
	ParamMaxIOPS = "maxIOPS"
	// ParamMaxMiBps limits reads and writes together, in MiB/s.
	ParamMaxMiBps      = "maxMiBps"
	ParamMaxReadMiBps  = "maxReadMiBps"
	ParamMaxWriteMiBps = "maxWriteMiBps"
)

// qosParams are the QoS parameters, in the order errors name them.
var qosParams = []string{ParamMaxIOPS, ParamMaxMiBps, ParamMaxReadMiBps, ParamMaxWriteMiBps}

// Bounds of the QoS parameters, as the Volume's API has them.
const (
	maxIOPS  = 100_000_000
	iopsStep = 1000
	maxMiBps = 1_000_000
)

// Parameters external-provisioner adds with --extra-create-metadata.
const (
	ParamClaimName      = "csi.storage.k8s.io/pvc/name"
	ParamClaimNamespace = "csi.storage.k8s.io/pvc/namespace"
)

// Volume context keys the node service reads.
const (
	ContextFsType = "fsType"
	ContextPool   = "pool"
	// ContextHostAuthentication is the Volume's spec.hostAuthentication:
	// the node stages it only with its secrets.
	ContextHostAuthentication = "hostAuthentication"
)

// parameters are a validated StorageClass's parameters.
type parameters struct {
	pool     string
	replicas *int32
	fsType   string
	// rebuildCap is the Volume's rebuild bandwidth cap, in MiB/s.
	rebuildCap *int32
	// claim is the PVC the Volume is for, when the provisioner says.
	claim *flintv1.ClaimReference
	// qos are the StorageClass's default limits.
	qos flintv1.VolumeQoS
	// hostAuthentication is what hosts prove to connect.
	hostAuthentication flintv1.HostAuthentication
}

// parseParameters validates CreateVolume's parameters; each mistake is an
// InvalidArgument that says what to fix in the StorageClass.
func parseParameters(in map[string]string) (parameters, error) {
	var p parameters
	for k, v := range in {
		switch {
		case k == ParamPool:
			p.pool = v
		case k == ParamReplicas:
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 1 || n > 5 {
				return p, status.Errorf(codes.InvalidArgument, "StorageClass parameter replicas=%q: must be a whole number from 1 to 5 (or left out to use the Pool's)", v)
			}
			r := int32(n)
			p.replicas = &r
		case k == ParamFsType:
			if !slices.Contains(FsTypes, v) {
				return p, status.Errorf(codes.InvalidArgument, "StorageClass parameter fsType=%q: use one of %v", v, FsTypes)
			}
			p.fsType = v
		case k == ParamRebuildMaxBandwidth:
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 0 || n > 100000 {
				return p, status.Errorf(codes.InvalidArgument, "StorageClass parameter %s=%q: must be a whole number of MiB/s from 0 (no cap) to 100000 (or left out to use the Pool's)", k, v)
			}
			p.rebuildCap = ptr.To(int32(n))
		case slices.Contains(qosParams, k):
			if err := setQoS(&p.qos, k, v, "StorageClass"); err != nil {
				return p, err
			}
		case k == ParamHostAuthentication:
			a := flintv1.HostAuthentication(v)
			if a != flintv1.HostAuthenticationNone && a != flintv1.HostAuthenticationDHHMACCHAP {
				return p, status.Errorf(codes.InvalidArgument, "StorageClass parameter %s=%q: use %s or %s", k, v, flintv1.HostAuthenticationNone, flintv1.HostAuthenticationDHHMACCHAP)
			}
			p.hostAuthentication = a
		case k == ParamClaimName || k == ParamClaimNamespace:
			// Taken below, as a pair.
		case strings.HasPrefix(k, "csi.storage.k8s.io/"):
			// Set by external-provisioner for itself.
		default:
			return p, status.Errorf(codes.InvalidArgument, "unknown StorageClass parameter %q: Flint takes %s", k, strings.Join(append([]string{ParamPool, ParamReplicas, ParamFsType, ParamRebuildMaxBandwidth, ParamHostAuthentication}, qosParams...), ", "))
		}
	}
	if name, ns := in[ParamClaimName], in[ParamClaimNamespace]; name != "" && ns != "" {
		p.claim = &flintv1.ClaimReference{Namespace: ns, Name: name}
	}
	if p.pool == "" {
		return p, status.Error(codes.InvalidArgument, fmt.Sprintf("StorageClass parameter %s missing: name the Pool to provision from (kubectl get pools)", ParamPool))
	}
	return p, nil
}

// applyMutableParameters sets the limits a VolumeAttributesClass names on
// q; the limits it leaves out stay as they are (the CSI spec: a key that
// is absent changes nothing).
func applyMutableParameters(q *flintv1.VolumeQoS, in map[string]string) error {
	for k, v := range in {
		if !slices.Contains(qosParams, k) {
			return status.Errorf(codes.InvalidArgument, "unknown VolumeAttributesClass parameter %q: Flint takes %s", k, strings.Join(qosParams, ", "))
		}
		if err := setQoS(q, k, v, "VolumeAttributesClass"); err != nil {
			return err
		}
	}
	return nil
}

// setQoS sets QoS parameter k of a class to v on q.
func setQoS(q *flintv1.VolumeQoS, k, v, class string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if k == ParamMaxIOPS {
		if err != nil || n < 0 || n > maxIOPS || n%iopsStep != 0 {
			return status.Errorf(codes.InvalidArgument, "%s parameter %s=%q: must be a multiple of %d (SPDK limits I/Os in steps of %d) from 0 (no limit) to %d", class, k, v, iopsStep, iopsStep, maxIOPS)
		}
		q.IOPS = n
		return nil
	}
	if err != nil || n < 0 || n > maxMiBps {
		return status.Errorf(codes.InvalidArgument, "%s parameter %s=%q: must be a whole number of MiB/s from 0 (no limit) to %d", class, k, v, maxMiBps)
	}
	switch k {
	case ParamMaxMiBps:
		q.ReadWriteMiBps = n
	case ParamMaxReadMiBps:
		q.ReadMiBps = n
	case ParamMaxWriteMiBps:
		q.WriteMiBps = n
	}
	return nil
}
