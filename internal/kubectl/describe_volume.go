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

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// VolumeDescription is a Volume: where its replicas live and how they
// are, its target and who may connect.
type VolumeDescription struct {
	Name  string `json:"name"`
	Claim string `json:"claim,omitempty"`
	Pool  string `json:"pool"`
	Size  string `json:"size"`
	Phase string `json:"phase"`
	// Target is nil until the Volume has one.
	Target      *TargetDescription `json:"target,omitempty"`
	PublishedTo []string           `json:"publishedTo"`
	// NearNode is the node whose Pods use the Volume (spec.nearNode).
	NearNode string `json:"nearNode,omitempty"`
	// QoS are the limits asked for (spec.qos); nil for none.
	QoS *flintv1.VolumeQoS `json:"qos,omitempty"`
	// FailureDomain is the node label each replica's Domain is the value of.
	FailureDomain string               `json:"failureDomain"`
	Replicas      []ReplicaDescription `json:"replicas"`
	Described
}

// TargetDescription is a Volume's target.
type TargetDescription struct {
	OSD string `json:"osd"`
	// Node is the OSD's node.
	Node         string   `json:"node,omitempty"`
	Epoch        int32    `json:"epoch"`
	NQN          string   `json:"nqn"`
	Endpoints    []string `json:"endpoints"`
	AllowedHosts []string `json:"allowedHosts"`
	// QoS are the limits the target enforces; nil for none.
	QoS *flintv1.VolumeQoS `json:"qos,omitempty"`
}

// ReplicaDescription is one replica of a Volume.
type ReplicaDescription struct {
	OSD    string `json:"osd"`
	Node   string `json:"node,omitempty"`
	Domain string `json:"domain,omitempty"`
	State  string `json:"state"`
	// Rebuild is its rebuild progress in percent, while it rebuilds.
	Rebuild *int32 `json:"rebuild,omitempty"`
	// Since is when it entered State.
	Since *time.Time `json:"since,omitempty"`
}

// describeVolume reads a Volume, named as itself or as its claim
// (NAMESPACE/CLAIM).
func (p *Plugin) describeVolume(ctx context.Context, name string) (*VolumeDescription, error) {
	v, err := p.findVolume(ctx, name)
	if err != nil {
		return nil, err
	}
	d := &VolumeDescription{
		Name: v.Name, Claim: v.Spec.Claim.String(), Pool: v.Spec.Pool, Size: v.Spec.Size.String(), Phase: orUnknown(string(v.Status.Phase)),
		PublishedTo: nonNil(v.Spec.PublishedHosts), NearNode: v.Spec.NearNode, QoS: v.Spec.QoS, Replicas: []ReplicaDescription{},
	}
	// A Pool that is gone is read as the API's default.
	var pool flintv1.Pool
	_ = p.Client.Get(ctx, client.ObjectKey{Name: v.Spec.Pool}, &pool)
	d.FailureDomain = pool.FailureDomainKey()
	if t := v.Status.Target; t != nil {
		d.Target = &TargetDescription{OSD: t.OSD, Epoch: t.Epoch, NQN: t.NQN, Endpoints: []string{}, AllowedHosts: nonNil(t.AllowedHosts), QoS: t.QoS}
		d.Target.Node, _ = p.whereIs(ctx, t.OSD, d.FailureDomain)
		for _, e := range t.Endpoints {
			d.Target.Endpoints = append(d.Target.Endpoints, endpoint(e))
		}
	}
	for _, r := range v.Status.Replicas {
		rd := ReplicaDescription{OSD: r.OSD, State: string(r.State), Rebuild: r.RebuildPercent}
		rd.Node, rd.Domain = p.whereIs(ctx, r.OSD, d.FailureDomain)
		if r.LastTransitionTime != nil {
			rd.Since = &r.LastTransitionTime.Time
		}
		d.Replicas = append(d.Replicas, rd)
	}
	d.Described, err = p.described(ctx, "Volume", v, v.Status.Conditions)
	return d, err
}

func (d *VolumeDescription) printTable(line func(...string), now time.Time) {
	line("Name:", d.Name)
	line("Claim:", dash(d.Claim))
	line("Pool:", d.Pool)
	line("Size:", d.Size)
	line("Phase:", d.Phase)
	if t := d.Target; t != nil {
		line("Target:", fmt.Sprintf("OSD %s on node %s, epoch %d", t.OSD, dash(t.Node), t.Epoch))
		line("  NQN:", t.NQN)
		line("  Endpoints:", dash(strings.Join(t.Endpoints, ", ")))
		line("  Allowed hosts:", dash(strings.Join(t.AllowedHosts, ", ")))
		line("  Enforced limits:", limits(t.QoS))
	} else {
		line("Target:", "-")
	}
	line("Published to:", dash(strings.Join(d.PublishedTo, ", ")))
	line("Near node:", dash(d.NearNode))
	line("Limits:", limits(d.QoS))
	line("Replicas:")
	line("  OSD", "NODE", strings.ToUpper(domainName(d.FailureDomain)), "STATE", "REBUILD", "SINCE")
	for _, r := range d.Replicas {
		rebuild := "-"
		if r.Rebuild != nil {
			rebuild = fmt.Sprintf("%d%%", *r.Rebuild)
		}
		line("  "+r.OSD, dash(r.Node), dash(r.Domain), r.State, rebuild, since(r.Since, now))
	}
}

// limits says what q limits, or "-" for nothing.
func limits(q *flintv1.VolumeQoS) string {
	if q == nil {
		return "-"
	}
	var parts []string
	for _, l := range []struct {
		value int64
		unit  string
	}{{q.IOPS, "IOPS"}, {q.ReadWriteMiBps, "MiB/s"}, {q.ReadMiBps, "MiB/s read"}, {q.WriteMiBps, "MiB/s write"}} {
		if l.value != 0 {
			parts = append(parts, fmt.Sprintf("%d %s", l.value, l.unit))
		}
	}
	return dash(strings.Join(parts, ", "))
}

// whereIs is the node of OSD osd and that node's value of the label
// domain, empty where unknown.
func (p *Plugin) whereIs(ctx context.Context, osd, domain string) (node, value string) {
	var o flintv1.OSD
	if err := p.Client.Get(ctx, client.ObjectKey{Name: osd}, &o); err != nil {
		return "", ""
	}
	return o.Spec.NodeName, p.domainOf(ctx, o.Spec.NodeName, domain)
}

// domainOf is node's value of the label domain, empty where unknown.
func (p *Plugin) domainOf(ctx context.Context, node, domain string) string {
	var n corev1.Node
	if err := p.Client.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
		return ""
	}
	return n.Labels[domain]
}

func endpoint(e flintv1.Endpoint) string {
	return fmt.Sprintf("%s %s:%d", e.Transport, e.Address, e.Port)
}

// nonNil is s, or an empty list: JSON shows [] rather than null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// findVolume reads the Volume named name, or, for NAMESPACE/CLAIM, the
// one provisioned for that claim: the one that records it, else the one
// its bound PersistentVolume's handle names (a Volume from before Volumes
// recorded their claim).
func (p *Plugin) findVolume(ctx context.Context, name string) (*flintv1.Volume, error) {
	var v flintv1.Volume
	namespace, claim, isClaim := strings.Cut(name, "/")
	if !isClaim {
		if err := p.get(ctx, client.ObjectKey{Name: name}, &v, fmt.Sprintf("no Volume %s: `kubectl get volumes.flint.io` lists them; name a claim as NAMESPACE/CLAIM", name)); err != nil {
			return nil, err
		}
		return &v, nil
	}
	var vols flintv1.VolumeList
	if err := p.Client.List(ctx, &vols); err != nil {
		return nil, err
	}
	for i := range vols.Items {
		if c := vols.Items[i].Spec.Claim; c != nil && c.Namespace == namespace && c.Name == claim {
			return &vols.Items[i], nil
		}
	}
	var pvc corev1.PersistentVolumeClaim
	if err := p.get(ctx, client.ObjectKey{Namespace: namespace, Name: claim}, &pvc, fmt.Sprintf("no Volume records claim %s, and there is no such PersistentVolumeClaim", name)); err != nil {
		return nil, err
	}
	var pv corev1.PersistentVolume
	if pvc.Spec.VolumeName == "" {
		return nil, fmt.Errorf("claim %s is not bound yet (%s): it has no Volume", name, pvc.Status.Phase)
	}
	if err := p.Client.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, &pv); err != nil {
		return nil, fmt.Errorf("claim %s is bound to PersistentVolume %s: %w", name, pvc.Spec.VolumeName, err)
	}
	if pv.Spec.CSI == nil {
		return nil, fmt.Errorf("claim %s is bound to PersistentVolume %s, which no CSI driver serves: it is not Flint's", name, pv.Name)
	}
	if err := p.Client.Get(ctx, client.ObjectKey{Name: pv.Spec.CSI.VolumeHandle}, &v); err != nil {
		return nil, fmt.Errorf("claim %s: PersistentVolume %s names Volume %s: %w", name, pv.Name, pv.Spec.CSI.VolumeHandle, err)
	}
	return &v, nil
}
