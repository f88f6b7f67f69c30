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
	"maps"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// A Flint volume is reachable over the fabric from every node with an
// NVMe-oF host, so topology does not decide where it can be used; it
// decides where its target runs. The node plugins report
// topology.flint.io/node, and a claim bound WaitForFirstConsumer comes
// with its Pod's node first among the preferred topologies: the Volume's
// nearNode, near which the operator puts its target. A StorageClass's
// allowedTopologies still restricts where the Volume may be used, as the
// person who wrote it meant.

// nearNode is the node that the preferred topologies of a CreateVolume
// put first; "" when none names one (a claim bound Immediately).
func nearNode(req *csi.TopologyRequirement) string {
	for _, t := range req.GetPreferred() {
		if node := t.GetSegments()[TopologyKeyNode]; node != "" {
			return node
		}
	}
	return ""
}

// accessibleTopology is where a Volume for claim may be used: the
// allowedTopologies of the claim's StorageClass, each term's values
// spread into segments; nil (everywhere) when the class names none, or
// there is no claim or class to read.
func accessibleTopology(ctx context.Context, r client.Reader, claim *flintv1.ClaimReference) ([]*csi.Topology, error) {
	if claim == nil {
		return nil, nil
	}
	var pvc corev1.PersistentVolumeClaim
	if err := r.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: claim.Name}, &pvc); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName == "" {
		return nil, nil
	}
	var sc storagev1.StorageClass
	if err := r.Get(ctx, client.ObjectKey{Name: *pvc.Spec.StorageClassName}, &sc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return segmentsOf(sc.AllowedTopologies), nil
}

// segmentsOf spreads topology selector terms into the segments they
// match: the terms are alternatives, and within a term each key takes
// any of its values.
func segmentsOf(terms []corev1.TopologySelectorTerm) []*csi.Topology {
	var out []*csi.Topology
	for _, term := range terms {
		segments := []map[string]string{{}}
		for _, e := range term.MatchLabelExpressions {
			var next []map[string]string
			for _, s := range segments {
				for _, v := range e.Values {
					m := maps.Clone(s)
					m[e.Key] = v
					next = append(next, m)
				}
			}
			segments = next
		}
		for _, s := range segments {
			if len(s) > 0 {
				out = append(out, &csi.Topology{Segments: s})
			}
		}
	}
	return out
}
