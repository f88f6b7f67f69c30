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
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// DescribeVolume prints a Volume: its replicas with where they live and
// how they are, its target and who may connect, its conditions and its
// recent Events.
func (p *Plugin) DescribeVolume(ctx context.Context, name string, now time.Time) error {
	var v flintv1.Volume
	if err := p.Client.Get(ctx, client.ObjectKey{Name: name}, &v); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("no Volume %s: `kubectl get volumes.flint.io` lists them (a PV's volumeHandle names its Volume)", name)
		}
		return err
	}
	domain := corev1.LabelTopologyZone
	var pool flintv1.Pool
	if err := p.Client.Get(ctx, client.ObjectKey{Name: v.Spec.Pool}, &pool); err == nil && pool.Spec.FailureDomain != "" {
		domain = pool.Spec.FailureDomain
	}
	w := newTable(p.Out)
	line := w.row
	line("Name:", v.Name)
	line("Pool:", v.Spec.Pool)
	line("Size:", v.Spec.Size.String())
	line("Phase:", orUnknown(string(v.Status.Phase)))
	if t := v.Status.Target; t != nil {
		var eps []string
		for _, e := range t.Endpoints {
			eps = append(eps, fmt.Sprintf("%s %s:%d", e.Transport, e.Address, e.Port))
		}
		line("Target:", fmt.Sprintf("OSD %s, epoch %d", t.OSD, t.Epoch))
		line("  NQN:", t.NQN)
		line("  Endpoints:", dash(strings.Join(eps, ", ")))
		line("  Allowed hosts:", dash(strings.Join(t.AllowedHosts, ", ")))
	} else {
		line("Target:", "-")
	}
	line("Published to:", dash(strings.Join(v.Spec.PublishedHosts, ", ")))
	line("Replicas:")
	line("  OSD", "NODE", strings.ToUpper(domainName(domain)), "STATE", "REBUILD", "SINCE")
	for _, r := range v.Status.Replicas {
		node, zone := "-", "-"
		var o flintv1.OSD
		if err := p.Client.Get(ctx, client.ObjectKey{Name: r.OSD}, &o); err == nil {
			node = o.Spec.NodeName
			var n corev1.Node
			if err := p.Client.Get(ctx, client.ObjectKey{Name: node}, &n); err == nil && n.Labels[domain] != "" {
				zone = n.Labels[domain]
			}
		}
		rebuild, since := "-", "-"
		if r.RebuildPercent != nil {
			rebuild = fmt.Sprintf("%d%%", *r.RebuildPercent)
		}
		if r.LastTransitionTime != nil {
			since = duration.HumanDuration(now.Sub(r.LastTransitionTime.Time))
		}
		line("  "+r.OSD, node, zone, string(r.State), rebuild, since)
	}
	line("Conditions:")
	line("  TYPE", "STATUS", "REASON", "MESSAGE")
	for _, c := range v.Status.Conditions {
		line("  "+c.Type, string(c.Status), c.Reason, c.Message)
	}
	events, err := p.volumeEvents(ctx, &v)
	if err != nil {
		return err
	}
	line("Events:")
	if len(events) == 0 {
		line("  <none>")
	} else {
		line("  AGE", "TYPE", "REASON", "MESSAGE")
	}
	for _, e := range events {
		line("  "+duration.HumanDuration(now.Sub(eventTime(&e))), e.Type, e.Reason, e.Note)
	}
	return w.Flush()
}

// volumeEvents are the Events about v, oldest first, the last 20.
func (p *Plugin) volumeEvents(ctx context.Context, v *flintv1.Volume) ([]eventsv1.Event, error) {
	var l eventsv1.EventList
	if err := p.Client.List(ctx, &l, client.MatchingFields{"regarding.name": v.Name, "regarding.kind": "Volume"}); err != nil {
		return nil, fmt.Errorf("read the Volume's Events: %w", err)
	}
	events := slices.DeleteFunc(l.Items, func(e eventsv1.Event) bool { return e.Regarding.UID != v.UID })
	slices.SortFunc(events, func(a, b eventsv1.Event) int { return eventTime(&a).Compare(eventTime(&b)) })
	return events[max(0, len(events)-20):], nil
}

// eventTime is when an Event last happened.
func eventTime(e *eventsv1.Event) time.Time {
	if e.Series != nil {
		return e.Series.LastObservedTime.Time
	}
	if !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	return e.DeprecatedLastTimestamp.Time
}

// domainName is the last part of a failure-domain label
// (topology.kubernetes.io/zone: zone).
func domainName(label string) string {
	return label[strings.LastIndex(label, "/")+1:]
}
