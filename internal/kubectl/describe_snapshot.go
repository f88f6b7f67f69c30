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
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// SnapshotDescription is a Snapshot: of which Volume, when, and its
// copies, one per replica it was cut from.
type SnapshotDescription struct {
	Name       string `json:"name"`
	Volume     string `json:"volume"`
	Phase      string `json:"phase"`
	ReadyToUse bool   `json:"readyToUse"`
	Size       string `json:"size,omitempty"`
	// Created is when the cut was taken.
	Created *time.Time `json:"created,omitempty"`
	// Pause is how long the cut held the Volume's writes.
	Pause  string            `json:"pause,omitempty"`
	Copies []CopyDescription `json:"copies"`
	Described
}

// CopyDescription is one copy of a Snapshot.
type CopyDescription struct {
	OSD   string `json:"osd"`
	Lvol  string `json:"lvol,omitempty"`
	State string `json:"state"`
}

func (p *Plugin) describeSnapshot(ctx context.Context, name string) (*SnapshotDescription, error) {
	var s flintv1.Snapshot
	if err := p.get(ctx, client.ObjectKey{Name: name}, &s, fmt.Sprintf("no Snapshot %s: `kubectl get snapshots.flint.io` lists them (a VolumeSnapshotContent's snapshotHandle names its Snapshot)", name)); err != nil {
		return nil, err
	}
	d := &SnapshotDescription{Name: s.Name, Volume: s.Spec.Volume, Phase: orUnknown(string(s.Status.Phase)), ReadyToUse: s.Status.ReadyToUse, Copies: []CopyDescription{}}
	if s.Status.Size != nil {
		d.Size = s.Status.Size.String()
	}
	if s.Status.CreationTime != nil {
		d.Created = &s.Status.CreationTime.Time
	}
	if s.Status.PauseDuration != nil {
		d.Pause = s.Status.PauseDuration.Duration.String()
	}
	for _, c := range s.Status.Copies {
		d.Copies = append(d.Copies, CopyDescription{OSD: c.OSD, Lvol: c.Lvol, State: string(c.State)})
	}
	var err error
	d.Described, err = p.described(ctx, "Snapshot", &s, s.Status.Conditions)
	return d, err
}

func (d *SnapshotDescription) printTable(line func(...string), now time.Time) {
	line("Name:", d.Name)
	line("Volume:", d.Volume)
	line("Phase:", d.Phase)
	line("Ready to use:", fmt.Sprint(d.ReadyToUse))
	line("Size:", dash(d.Size))
	created := "-"
	if d.Created != nil {
		created = since(d.Created, now) + " ago"
	}
	line("Created:", created)
	line("Write pause:", dash(d.Pause))
	var rows [][]string
	for _, c := range d.Copies {
		rows = append(rows, []string{c.OSD, dash(c.Lvol), c.State})
	}
	printList(line, "Copies:", []string{"OSD", "LVOL", "STATE"}, rows)
}
