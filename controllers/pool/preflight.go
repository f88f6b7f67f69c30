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
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

var nadGVK = schema.GroupVersionKind{Group: "k8s.cni.cncf.io", Version: "v1", Kind: "NetworkAttachmentDefinition"}

// preflight is what blocks a Pool: failed checks by reason, and the nodes
// that fail a node check and so get no new OSDs (every node when a check
// of the whole Pool fails).
type preflight struct {
	failures     map[string][]string
	blockedNodes map[string]bool
	allBlocked   bool
}

// blocked says a node gets no new OSDs.
func (p *preflight) blocked(node string) bool { return p.allBlocked || p.blockedNodes[node] }

func (p *preflight) fail(reason, format string, args ...any) {
	p.failures[reason] = append(p.failures[reason], fmt.Sprintf(format, args...))
}

// message joins a reason's findings.
func (p *preflight) message(reason string) string { return strings.Join(p.failures[reason], "; ") }

// checkNodes checks every selected node for what its OSDs need.
func checkNodes(pool *flintv1.Pool, nodes []corev1.Node, want []desiredOSD) *preflight {
	p := &preflight{failures: map[string][]string{}, blockedNodes: map[string]bool{}}
	if len(nodes) == 0 {
		p.fail(flintv1.PoolNoNodesSelectedCondition, "no node matches nodeSelector %q; label the storage nodes or fix the selector", labels.SelectorFromSet(pool.Spec.NodeSelector).String())
		return p
	}
	spec := pool.Spec
	if len(want) == 0 && len(spec.Devices.Nodes) > 0 {
		var listed []string
		for _, n := range spec.Devices.Nodes {
			listed = append(listed, n.Node)
		}
		p.fail(flintv1.PoolNoNodesSelectedCondition, "devices are listed for nodes %s, but no node matching nodeSelector %q has one of those names: fix spec.devices.nodes, the selector or the nodes' labels",
			strings.Join(listed, ", "), labels.SelectorFromSet(spec.NodeSelector).String())
		return p
	}
	perNode := map[string]int64{}
	for _, d := range want {
		perNode[d.node]++
	}
	for _, n := range nodes {
		osds := perNode[n.Name]
		if spec.Devices.ResourceName != "" && allocatable(n, spec.Devices.ResourceName) == 0 {
			p.fail(flintv1.PoolDeviceResourceMissingCondition, "node %s advertises no %s: run the device plugin there and bind its NVMe devices to vfio-pci", n.Name, spec.Devices.ResourceName)
			continue
		}
		if osds == 0 {
			continue
		}
		if hp := spec.OSD.HugePages; hp != nil {
			size, res := string(hp.PageSize()), hp.ResourceName()
			have := n.Status.Allocatable[res]
			need := hp.Amount.DeepCopy()
			need.Mul(osds)
			if have.Cmp(need) < 0 {
				page := resource.MustParse(size)
				missing := need.Value() - have.Value()
				pages := (missing + page.Value() - 1) / page.Value()
				p.fail(flintv1.PoolHugePagesInsufficientCondition, "node %s has %s of %s allocatable, its %d OSDs need %s: add %d pages of %s (vm.nr_hugepages) and restart the kubelet",
					n.Name, have.String(), res, osds, need.String(), pages, size)
				p.blockedNodes[n.Name] = true
			}
		}
		if nw := spec.Network; nw.Transport == flintv1.TransportRDMA && nw.ResourceName != "" {
			if have := allocatable(n, nw.ResourceName); have < osds {
				if nw.HostNetwork {
					p.fail(flintv1.PoolRDMAResourceMissingCondition, "node %s has %d %s allocatable, its %d OSDs on the host network need one each: run the RDMA device plugin there (the chart's rdmaDevicePlugin) and check that the node has an RDMA device (rdma link show)", n.Name, have, nw.ResourceName, osds)
				} else {
					p.fail(flintv1.PoolRDMAResourceMissingCondition, "node %s has %d %s allocatable, its %d OSDs need one RDMA VF each: configure the SR-IOV device plugin to expose more VFs", n.Name, have, nw.ResourceName, osds)
				}
				p.blockedNodes[n.Name] = true
			}
		}
	}
	return p
}

// checkAttachment checks the Multus network the Pool's OSDs attach to.
func checkAttachment(ctx context.Context, c client.Reader, pool *flintv1.Pool, namespace string, p *preflight) error {
	a := pool.Spec.Network.Attachment
	if a == "" || pool.Spec.Network.HostNetwork {
		return nil
	}
	ns, name, found := strings.Cut(a, "/")
	if !found {
		ns, name = namespace, a
	}
	nad := &unstructured.Unstructured{}
	nad.SetGroupVersionKind(nadGVK)
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, nad)
	switch {
	case meta.IsNoMatchError(err):
		p.fail(flintv1.PoolNetworkAttachmentMissingCondition, "the cluster has no NetworkAttachmentDefinition kind: install Multus, then create %s/%s", ns, name)
		p.allBlocked = true // an OSD pod without its network would hold its devices and never start
	case apierrors.IsNotFound(err):
		p.fail(flintv1.PoolNetworkAttachmentMissingCondition, "NetworkAttachmentDefinition %s/%s does not exist: create it (OSD pods attach to it by that name)", ns, name)
		p.allBlocked = true
	case err != nil:
		return fmt.Errorf("read NetworkAttachmentDefinition %s/%s: %w", ns, name, err)
	}
	return nil
}

// checkFailureDomains: replicas go to distinct failure domains, so the
// nodes that get OSDs must span at least replicas of them.
func checkFailureDomains(pool *flintv1.Pool, nodes []corev1.Node, want []desiredOSD, p *preflight) {
	if p.message(flintv1.PoolNoNodesSelectedCondition) != "" {
		return
	}
	key := pool.FailureDomainKey()
	byName := map[string]corev1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	domains := map[string]bool{}
	var unlabelled []string
	for _, d := range want {
		if p.blockedNodes[d.node] {
			continue
		}
		v, ok := byName[d.node].Labels[key]
		if !ok {
			if !slices.Contains(unlabelled, d.node) {
				unlabelled = append(unlabelled, d.node)
			}
			continue
		}
		domains[v] = true
	}
	if int32(len(domains)) >= pool.Spec.Replicas {
		return
	}
	names := make([]string, 0, len(domains))
	for d := range domains {
		names = append(names, d)
	}
	sort.Strings(names)
	span := "none"
	if len(names) > 0 {
		span = fmt.Sprintf("%d (%s)", len(names), strings.Join(names, ", "))
	}
	msg := fmt.Sprintf("replicas %d needs OSDs in %d distinct %s values; the Pool's usable OSD nodes span %s: add storage nodes in other domains or lower replicas in a new Pool",
		pool.Spec.Replicas, pool.Spec.Replicas, key, span)
	if len(unlabelled) > 0 {
		msg += fmt.Sprintf(" (nodes without the %s label: %v)", key, unlabelled)
	}
	p.fail(flintv1.PoolInsufficientFailureDomainsCondition, "%s", msg)
}
