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

package kubectl

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// Check is one verdict of diagnose: whether a storage node gives one OSD
// of a Pool what it asks for, and what to do when it does not.
type Check struct {
	Node   string `json:"node"`
	Pool   string `json:"pool"`
	What   string `json:"what"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Diagnose checks every node a Pool selects (or only node, when set):
// what its allocatable resources offer an OSD of the Pool (cores,
// hugepages, NVMe devices, RDMA functions), and the operator's failing
// preflight verdicts about those Pools (a missing network attachment, too
// few failure domains). Kernel settings the API does not show (CPU manager
// policy, IOMMU, modules) are not guessed.
func (p *Plugin) Diagnose(ctx context.Context, node string) ([]Check, error) {
	var pools flintv1.PoolList
	var nodes corev1.NodeList
	var osds flintv1.OSDList
	for _, l := range []client.ObjectList{&pools, &nodes, &osds} {
		if err := p.Client.List(ctx, l); err != nil {
			return nil, fmt.Errorf("read Pools, OSDs and Nodes: %w", err)
		}
	}
	var checks []Check
	for i := range pools.Items {
		pool := &pools.Items[i]
		selector := labels.SelectorFromSet(pool.Spec.NodeSelector)
		selected := false
		for j := range nodes.Items {
			n := &nodes.Items[j]
			if (node != "" && n.Name != node) || !selector.Matches(labels.Set(n.Labels)) || !listsDevicesOn(pool, n.Name) {
				continue
			}
			selected = true
			checks = append(checks, nodeChecks(pool, n, osdsOn(osds.Items, pool.Name, n.Name))...)
		}
		if selected || node == "" {
			checks = append(checks, preflightChecks(pool)...)
		}
	}
	if node != "" && len(checks) == 0 {
		return nil, fmt.Errorf("no Pool selects node %s: its labels match no Pool's nodeSelector", node)
	}
	return checks, nil
}

// listsDevicesOn says whether pool may have OSDs on node: any node it
// selects, unless it lists its devices per node.
func listsDevicesOn(pool *flintv1.Pool, node string) bool {
	if len(pool.Spec.Devices.Nodes) == 0 {
		return true
	}
	return slices.ContainsFunc(pool.Spec.Devices.Nodes, func(d flintv1.NodeDevices) bool { return d.Node == node })
}

func osdsOn(osds []flintv1.OSD, pool, node string) int64 {
	var n int64
	for _, o := range osds {
		if o.Spec.Pool == pool && o.Spec.NodeName == node {
			n++
		}
	}
	return n
}

// nodeChecks compares what n offers with what the Pool's OSDs on it (at
// least one) ask for.
func nodeChecks(pool *flintv1.Pool, n *corev1.Node, osds int64) []Check {
	check := func(what string, ok bool, format string, args ...any) Check {
		return Check{Node: n.Name, Pool: pool.Name, What: what, OK: ok, Detail: fmt.Sprintf(format, args...)}
	}
	count := max(osds, 1)
	have := func(name corev1.ResourceName) resource.Quantity { return n.Status.Allocatable[name] }
	var out []Check
	if cpus := int64(pool.Spec.OSD.CPUs); cpus > 0 {
		got := have(corev1.ResourceCPU)
		out = append(out, check("cores", got.Value() >= cpus*count,
			"%s allocatable, %d OSD(s) x %d whole cores (dedicated only under the kubelet's static CPU manager policy, which the API does not show)", got.String(), count, cpus))
	}
	if hp := pool.Spec.OSD.HugePages; hp != nil {
		size := string(hp.Size)
		if size == "" {
			size = string(flintv1.HugePageSize2Mi)
		}
		got := have(corev1.ResourceName("hugepages-" + size))
		need := hp.Amount.Value() * count
		if got.Value() >= need {
			out = append(out, check("hugepages", true, "%s of %s pages allocatable, %d OSD(s) need %s", got.String(), size, count, resource.NewQuantity(need, resource.BinarySI)))
		} else {
			page := resource.MustParse(size)
			missing := (need - got.Value() + page.Value() - 1) / page.Value()
			out = append(out, check("hugepages", false, "%s of %s pages allocatable, %d OSD(s) need %s: reserve %d more %s pages (kernel command line hugepagesz=%s hugepages=N, or /sys/kernel/mm/hugepages) and restart the kubelet",
				got.String(), size, count, resource.NewQuantity(need, resource.BinarySI), missing, size, strings.TrimSuffix(size, "i")))
		}
	}
	if r := pool.Spec.Devices.ResourceName; r != "" {
		got := have(corev1.ResourceName(r))
		out = append(out, check("nvme devices", got.Value() >= 1,
			"%s %s allocatable: NVMe devices bound to vfio-pci (IOMMU on), advertised by a device plugin", got.String(), r))
	}
	if r := pool.Spec.Network.ResourceName; r != "" {
		got := have(corev1.ResourceName(r))
		out = append(out, check("rdma functions", got.Value() >= count,
			"%s %s allocatable, %d OSD(s) take one each: SR-IOV VFs of an RDMA NIC, advertised by the SR-IOV device plugin", got.String(), r, count))
	}
	return out
}

// preflightChecks are the operator's failing preflight verdicts about
// pool, as its conditions say them.
func preflightChecks(pool *flintv1.Pool) []Check {
	var out []Check
	for _, typ := range flintv1.PoolPreflightConditions {
		if c := meta.FindStatusCondition(pool.Status.Conditions, typ); c != nil && c.Status == metav1.ConditionTrue {
			out = append(out, Check{Node: "-", Pool: pool.Name, What: "operator: " + typ, Detail: c.Message})
		}
	}
	return out
}

// PrintChecks prints checks, as a table or as format (json or yaml) says,
// and returns an error when one failed, so that `kubectl flint diagnose`
// exits non-zero.
func (p *Plugin) PrintChecks(checks []Check, format string) error {
	failed := 0
	for _, c := range checks {
		if !c.OK {
			failed++
		}
	}
	done, err := p.printAs(append([]Check{}, checks...), format)
	if !done {
		w := newTable(p.Out)
		w.row("NODE", "POOL", "CHECK", "RESULT", "DETAIL")
		for _, c := range checks {
			result := "ok"
			if !c.OK {
				result = "FAIL"
			}
			w.row(c.Node, c.Pool, c.What, result, c.Detail)
		}
		err = w.Flush()
	}
	if err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d checks failed", failed, len(checks))
	}
	return nil
}
