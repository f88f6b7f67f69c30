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
	"math"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// Drain sets (or clears) an OSD's spec.drain: a drained OSD takes no new
// replicas, and its replicas and targets move to other OSDs of its Pool;
// cleared, it takes replicas again.
func (p *Plugin) Drain(ctx context.Context, name string, drain bool) error {
	o, err := p.setOSD(ctx, name, func(o *flintv1.OSD) { o.Spec.Drain = drain })
	if err != nil {
		return err
	}
	if drain {
		_, err = fmt.Fprintf(p.Out, "osd/%s drained: it takes no new replicas, and its %d replicas and any targets move to other OSDs of Pool %s\n", name, o.Status.Replicas, o.Spec.Pool)
	} else {
		_, err = fmt.Fprintf(p.Out, "osd/%s undrained: it takes replicas again\n", name)
	}
	return err
}

// DrainProgress is what is left of an OSD's drain.
type DrainProgress struct {
	// Replicas and Targets are the Volumes' replicas and targets still on
	// the OSD.
	Replicas, Targets int
	// Rebuilding counts the replacements of its replicas rebuilding
	// elsewhere; BytesRebuilt of BytesToRebuild is how far the Volumes
	// that had a replica there are, and MiBps and ETASeconds the rate of
	// the running rebuilds and the time left at it (0 until they made
	// progress).
	Rebuilding                   int
	BytesRebuilt, BytesToRebuild int64
	MiBps                        float64
	ETASeconds                   int64
}

// Done says the OSD holds no replica or target any more, and their
// replacements are in sync.
func (d DrainProgress) Done() bool {
	return d.Replicas == 0 && d.Targets == 0 && d.BytesRebuilt == d.BytesToRebuild
}

func (d DrainProgress) String() string {
	s := fmt.Sprintf("%d replicas and %d targets to move", d.Replicas, d.Targets)
	if d.BytesToRebuild > 0 {
		s += fmt.Sprintf("; %d rebuilding, %s of %s rebuilt", d.Rebuilding, bytesOf(d.BytesRebuilt), bytesOf(d.BytesToRebuild))
	}
	if d.MiBps > 0 {
		s += fmt.Sprintf(" at %.1f MiB/s, ETA %s", d.MiBps, time.Duration(d.ETASeconds)*time.Second)
	}
	return s
}

func bytesOf(n int64) string { return resource.NewQuantity(n, resource.BinarySI).String() }

// WaitDrained follows the drain of OSD name, reading every interval and
// printing its progress when it changes, until no Volume has a replica or
// target on it and their replacements are in sync, or ctx ends.
func (p *Plugin) WaitDrained(ctx context.Context, name string, every time.Duration) error {
	moving := map[string]bool{} // the Volumes that had a replica there
	last := ""
	for {
		d, err := p.drainProgress(ctx, name, moving)
		if err != nil {
			return err
		}
		if d.Done() {
			_, err := fmt.Fprintf(p.Out, "osd/%s holds no replica or target any more and their replacements are in sync: drained\n", name)
			return err
		}
		if line := d.String(); line != last {
			if _, err := fmt.Fprintf(p.Out, "osd/%s: %s\n", name, line); err != nil {
				return err
			}
			last = line
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped waiting for osd/%s to drain (%s); it goes on: `kubectl flint status` shows it", name, last)
		case <-time.After(every):
		}
	}
}

// drainProgress reads what is left of OSD name's drain; moving collects
// the Volumes seen with a replica there, whose replacements it follows.
func (p *Plugin) drainProgress(ctx context.Context, name string, moving map[string]bool) (DrainProgress, error) {
	var vols flintv1.VolumeList
	if err := p.Client.List(ctx, &vols); err != nil {
		return DrainProgress{}, fmt.Errorf("read the Volumes: %w", err)
	}
	var d DrainProgress
	var bytesPerSecond float64
	for _, v := range vols.Items {
		size := v.Spec.Size.Value()
		if t := v.Status.Target; t != nil && t.OSD == name {
			d.Targets++
		}
		if slices.ContainsFunc(v.Status.Replicas, func(r flintv1.ReplicaStatus) bool { return r.OSD == name }) {
			d.Replicas++
			moving[v.Name] = true
		}
		if !moving[v.Name] {
			continue
		}
		// Replaced once every replica is Online elsewhere; half-way while
		// its replacement rebuilds; not started while one waits.
		d.BytesToRebuild += size
		rebuilt := size
		for _, r := range v.Status.Replicas {
			switch {
			case r.State == flintv1.ReplicaStateRebuilding && r.OSD != name:
				d.Rebuilding++
				percent := ptr.Deref(r.RebuildPercent, 0)
				rebuilt = min(rebuilt, size*int64(percent)/100)
				if r.LastTransitionTime != nil {
					mibps, _ := rebuildRate(size, percent, time.Since(r.LastTransitionTime.Time))
					bytesPerSecond += mibps * (1 << 20)
				}
			case r.OSD == name || r.State != flintv1.ReplicaStateOnline:
				rebuilt = 0
			}
		}
		d.BytesRebuilt += rebuilt
	}
	if bytesPerSecond > 0 {
		d.MiBps = math.Round(bytesPerSecond/(1<<20)*10) / 10
		d.ETASeconds = int64(math.Ceil(float64(d.BytesToRebuild-d.BytesRebuilt) / bytesPerSecond))
	}
	return d, nil
}

// Cordon sets (or clears) an OSD's spec.cordon: a cordoned OSD keeps what
// it has and takes no new replicas.
func (p *Plugin) Cordon(ctx context.Context, name string, cordon bool) error {
	o, err := p.setOSD(ctx, name, func(o *flintv1.OSD) { o.Spec.Cordon = cordon })
	if err != nil {
		return err
	}
	if cordon {
		_, err = fmt.Fprintf(p.Out, "osd/%s cordoned: it keeps its %d replicas and takes no new ones\n", name, o.Status.Replicas)
	} else {
		_, err = fmt.Fprintf(p.Out, "osd/%s uncordoned: it takes replicas again\n", name)
	}
	return err
}

// setOSD changes OSD name's spec with set, writing only a change.
func (p *Plugin) setOSD(ctx context.Context, name string, set func(*flintv1.OSD)) (*flintv1.OSD, error) {
	var o flintv1.OSD
	if err := p.get(ctx, client.ObjectKey{Name: name}, &o, fmt.Sprintf("no OSD %s: `kubectl flint status` lists them", name)); err != nil {
		return nil, err
	}
	before := o.DeepCopy()
	set(&o)
	if equality.Semantic.DeepEqual(before.Spec, o.Spec) {
		return &o, nil
	}
	return &o, p.Client.Patch(ctx, &o, client.MergeFrom(before))
}
