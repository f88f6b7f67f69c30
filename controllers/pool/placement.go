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

package pool

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// desiredOSD is one device of a selected node that should be an OSD.
type desiredOSD struct {
	name   string
	node   string
	device flintv1.OSDDevice
}

// selectedNodes are the nodes the Pool's nodeSelector matches, by name.
func selectedNodes(pool *flintv1.Pool, nodes []corev1.Node) []corev1.Node {
	sel := labels.SelectorFromSet(pool.Spec.NodeSelector)
	var out []corev1.Node
	for _, n := range nodes {
		if sel.Matches(labels.Set(n.Labels)) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// desiredOSDs lists the OSDs the Pool wants on nodes: every allocatable
// device of a device plugin (up to maxPerNode), every listed device, or
// maxPerNode RAM-backed devices.
func desiredOSDs(pool *flintv1.Pool, nodes []corev1.Node) []desiredOSD {
	d := pool.Spec.Devices
	var out []desiredOSD
	for _, n := range nodes {
		switch {
		case d.ResourceName != "":
			count := allocatable(n, d.ResourceName)
			if d.MaxPerNode != nil {
				count = min(count, int64(*d.MaxPerNode))
			}
			for i := range count {
				out = append(out, desiredOSD{name: osdName(pool.Name, n.Name, fmt.Sprint(i)), node: n.Name,
					device: flintv1.OSDDevice{Driver: d.Driver, ResourceName: d.ResourceName}})
			}
		case d.Driver == flintv1.DriverMalloc:
			count := int32(1)
			if d.MaxPerNode != nil {
				count = *d.MaxPerNode
			}
			for i := range count {
				out = append(out, desiredOSD{name: osdName(pool.Name, n.Name, fmt.Sprint(i)), node: n.Name,
					device: flintv1.OSDDevice{Driver: d.Driver, Malloc: d.Malloc.DeepCopy()}})
			}
		default:
			for _, nd := range d.Nodes {
				if nd.Node != n.Name {
					continue
				}
				for _, dev := range nd.Devices {
					od := flintv1.OSDDevice{Driver: d.Driver}
					if d.Driver == flintv1.DriverPCIe {
						od.PCIAddress = dev
					} else {
						od.Path = dev
					}
					out = append(out, desiredOSD{name: osdName(pool.Name, n.Name, shortHash(dev)), node: n.Name, device: od})
				}
			}
		}
	}
	return out
}

func allocatable(n corev1.Node, resource string) int64 {
	q, ok := n.Status.Allocatable[corev1.ResourceName(resource)]
	if !ok {
		return 0
	}
	return q.Value()
}

// osdName is <pool>-<node>-<suffix>, a DNS label; names too long keep
// their start and gain a hash so they stay unique.
func osdName(pool, node, suffix string) string {
	name := strings.ToLower(pool + "-" + strings.ReplaceAll(node, ".", "-") + "-" + suffix)
	if len(name) <= 53 { // room for the pod's "osd-" prefix and Secret's "-tls"
		return name
	}
	return strings.TrimRight(name[:44], "-") + "-" + shortHash(name)
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:8]
}

// osdSpec is the spec the Pool gives an OSD on node with device.
func osdSpec(pool *flintv1.Pool, d desiredOSD) flintv1.OSDSpec {
	return flintv1.OSDSpec{
		Pool: pool.Name, NodeName: d.node, Device: d.device,
		Resources:  *pool.Spec.OSD.OSDResources.DeepCopy(),
		SPDK:       pool.Spec.OSD.SPDKSettings,
		Network:    pool.Spec.Network,
		NVMf:       *pool.Spec.NVMf.DeepCopy(),
		Scheduling: *pool.Spec.OSD.OSDScheduling.DeepCopy(),

		PowerLossProtection: pool.Spec.Devices.PowerLossProtection,
	}
}
