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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// Drain sets (or clears) an OSD's spec.drain: a drained OSD takes no new
// replicas, and its replicas and targets move to other OSDs of its Pool;
// cleared, it takes replicas again.
func (p *Plugin) Drain(ctx context.Context, name string, drain bool) error {
	var o flintv1.OSD
	if err := p.Client.Get(ctx, client.ObjectKey{Name: name}, &o); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("no OSD %s: `kubectl flint status` lists them", name)
		}
		return err
	}
	if o.Spec.Drain != drain {
		patch := client.MergeFrom(o.DeepCopy())
		o.Spec.Drain = drain
		if err := p.Client.Patch(ctx, &o, patch); err != nil {
			return err
		}
	}
	if drain {
		_, err := fmt.Fprintf(p.Out, "osd/%s drained: it takes no new replicas, and its %d replicas and any targets move to other OSDs of Pool %s; `kubectl flint status` shows the progress\n", name, o.Status.Replicas, o.Spec.Pool)
		return err
	}
	_, err := fmt.Fprintf(p.Out, "osd/%s undrained: it takes replicas again\n", name)
	return err
}
