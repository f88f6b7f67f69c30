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

// OSDDescription is an OSD: its device and listener, its space, and the
// Volumes it holds a replica or the target of.
type OSDDescription struct {
	Name  string `json:"name"`
	Pool  string `json:"pool"`
	Node  string `json:"node"`
	Phase string `json:"phase"`
	// Device is the driver and what it claims.
	Device      string `json:"device"`
	Endpoint    string `json:"endpoint,omitempty"`
	Capacity    string `json:"capacity,omitempty"`
	Free        string `json:"free,omitempty"`
	SPDKVersion string `json:"spdkVersion,omitempty"`
	Drain       bool   `json:"drain"`
	Cordon      bool   `json:"cordon"`
	// Volumes are those with a replica or the target here.
	Volumes []OSDVolume `json:"volumes"`
	Described
}

// OSDVolume is a Volume's part on an OSD.
type OSDVolume struct {
	Name  string `json:"name"`
	Claim string `json:"claim,omitempty"`
	// Replica is the state of its replica here, empty when it has none.
	Replica string `json:"replica,omitempty"`
	Target  bool   `json:"target"`
}

func (p *Plugin) describeOSD(ctx context.Context, name string) (*OSDDescription, error) {
	var o flintv1.OSD
	if err := p.get(ctx, client.ObjectKey{Name: name}, &o, fmt.Sprintf("no OSD %s: `kubectl get osds` lists them", name)); err != nil {
		return nil, err
	}
	d := &OSDDescription{
		Name: o.Name, Pool: o.Spec.Pool, Node: o.Spec.NodeName, Phase: orUnknown(string(o.Status.Phase)),
		Device: device(o.Spec.Device, o.Status.Device), SPDKVersion: o.Status.SPDKVersion, Drain: o.Spec.Drain, Cordon: o.Spec.Cordon,
		Volumes: []OSDVolume{},
	}
	if e := o.Status.Endpoint; e != nil {
		d.Endpoint = endpoint(e.Endpoint)
	}
	if c := o.Status.Capacity; c != nil {
		d.Capacity, d.Free = c.Total.String(), c.Free.String()
	}
	var vols flintv1.VolumeList
	if err := p.Client.List(ctx, &vols); err != nil {
		return nil, fmt.Errorf("read the Volumes: %w", err)
	}
	for _, v := range vols.Items {
		ov := OSDVolume{Name: v.Name, Claim: v.Spec.Claim.String(), Target: v.Status.Target != nil && v.Status.Target.OSD == o.Name}
		for _, r := range v.Status.Replicas {
			if r.OSD == o.Name {
				ov.Replica = string(r.State)
			}
		}
		if ov.Target || ov.Replica != "" {
			d.Volumes = append(d.Volumes, ov)
		}
	}
	var err error
	d.Described, err = p.described(ctx, "OSD", &o, o.Status.Conditions)
	return d, err
}

// device says what an OSD's device is: its driver, what it claims, and
// what the agent found there.
func device(spec flintv1.OSDDevice, found *flintv1.DeviceInfo) string {
	parts := []string{string(spec.Driver)}
	switch {
	case spec.PCIAddress != "":
		parts = append(parts, spec.PCIAddress)
	case spec.ResourceName != "":
		parts = append(parts, spec.ResourceName)
	case spec.Path != "":
		parts = append(parts, spec.Path)
	case spec.Malloc != nil:
		parts = append(parts, spec.Malloc.Size.String())
	}
	if found != nil && (found.Model != "" || found.Serial != "") {
		parts = append(parts, strings.TrimSpace(fmt.Sprintf("(%s %s)", found.Model, found.Serial)))
	}
	return strings.Join(parts, " ")
}

func (d *OSDDescription) printTable(line func(...string), _ time.Time) {
	line("Name:", d.Name)
	line("Pool:", d.Pool)
	line("Node:", d.Node)
	line("Phase:", d.Phase)
	line("Device:", d.Device)
	line("Endpoint:", dash(d.Endpoint))
	line("Capacity:", dash(d.Capacity))
	line("Free:", dash(d.Free))
	line("SPDK:", dash(d.SPDKVersion))
	line("Drain:", fmt.Sprint(d.Drain))
	line("Cordon:", fmt.Sprint(d.Cordon))
	var rows [][]string
	for _, v := range d.Volumes {
		rows = append(rows, []string{v.Name, dash(v.Claim), dash(v.Replica), yesNo(v.Target)})
	}
	printList(line, "Volumes:", []string{"VOLUME", "CLAIM", "REPLICA", "TARGET"}, rows)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "-"
}
