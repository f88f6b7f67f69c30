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

	"k8s.io/apimachinery/pkg/api/equality"
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
		_, err = fmt.Fprintf(p.Out, "osd/%s drained: it takes no new replicas, and its %d replicas and any targets move to other OSDs of Pool %s; `kubectl flint status` shows the progress\n", name, o.Status.Replicas, o.Spec.Pool)
	} else {
		_, err = fmt.Fprintf(p.Out, "osd/%s undrained: it takes replicas again\n", name)
	}
	return err
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
