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
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// PoolDescription is a Pool: how it places replicas, its OSDs by failure
// domain, and its space.
type PoolDescription struct {
	Name          string    `json:"name"`
	Replicas      int32     `json:"replicas"`
	FailureDomain string    `json:"failureDomain"`
	Driver        string    `json:"driver"`
	Overcommit    int32     `json:"overcommitPercent"`
	Raw           string    `json:"raw,omitempty"`
	Usable        string    `json:"usable,omitempty"`
	Allocated     string    `json:"allocated,omitempty"`
	Volumes       int32     `json:"volumes"`
	OSDs          []PoolOSD `json:"osds"`
	Described
}

// PoolOSD is one OSD of a Pool.
type PoolOSD struct {
	Name   string `json:"name"`
	Node   string `json:"node"`
	Domain string `json:"domain,omitempty"`
	Phase  string `json:"phase"`
	Free   string `json:"free,omitempty"`
}

func (p *Plugin) describePool(ctx context.Context, name string) (*PoolDescription, error) {
	var pool flintv1.Pool
	if err := p.get(ctx, client.ObjectKey{Name: name}, &pool, fmt.Sprintf("no Pool %s: `kubectl get pools` lists them", name)); err != nil {
		return nil, err
	}
	d := &PoolDescription{
		Name: pool.Name, Replicas: pool.Spec.Replicas, FailureDomain: pool.FailureDomainKey(), Driver: string(pool.Spec.Devices.Driver),
		Overcommit: pool.Spec.OvercommitPercent, Volumes: pool.Status.Volumes, OSDs: []PoolOSD{},
	}
	if c := pool.Status.Capacity; c != nil {
		d.Raw, d.Usable, d.Allocated = c.Raw.String(), c.Usable.String(), c.Allocated.String()
	}
	var osds flintv1.OSDList
	if err := p.Client.List(ctx, &osds); err != nil {
		return nil, fmt.Errorf("read the Pool's OSDs: %w", err)
	}
	for _, o := range osds.Items {
		if o.Spec.Pool != pool.Name {
			continue // an OSD counts for the Pool its spec names, labelled or not
		}
		po := PoolOSD{Name: o.Name, Node: o.Spec.NodeName, Domain: p.domainOf(ctx, o.Spec.NodeName, d.FailureDomain), Phase: orUnknown(string(o.Status.Phase))}
		if c := o.Status.Capacity; c != nil {
			po.Free = c.Free.String()
		}
		d.OSDs = append(d.OSDs, po)
	}
	var err error
	d.Described, err = p.described(ctx, "Pool", &pool, pool.Status.Conditions)
	return d, err
}

func (d *PoolDescription) printTable(line func(...string), _ time.Time) {
	line("Name:", d.Name)
	line("Replicas:", fmt.Sprint(d.Replicas))
	line("Failure domain:", d.FailureDomain)
	line("Devices:", d.Driver)
	line("Overcommit:", fmt.Sprintf("%d%%", d.Overcommit))
	line("Capacity:", fmt.Sprintf("raw %s, usable %s, allocated %s", dash(d.Raw), dash(d.Usable), dash(d.Allocated)))
	line("Volumes:", fmt.Sprint(d.Volumes))
	var rows [][]string
	for _, o := range d.OSDs {
		rows = append(rows, []string{o.Name, o.Node, dash(o.Domain), o.Phase, dash(o.Free)})
	}
	printList(line, "OSDs:", []string{"OSD", "NODE", strings.ToUpper(domainName(d.FailureDomain)), "PHASE", "FREE"}, rows)
}
