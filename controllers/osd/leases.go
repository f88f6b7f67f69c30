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

package osd

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/agentclient"
	"github.com/flint-io/flint/controllers/metrics"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// LeaseRenewer renews, every quarter of the lease, the lease of every OSD
// whose agent answered ready at its last observation. A renewal that fails
// stops the renewals of that OSD and has the OSD controller observe it at
// once; an OSD it does not renew fences its volume targets when its lease
// lapses. It runs only in the leader.
type LeaseRenewer struct {
	Reader client.Reader
	Agents *agentclient.Agents
	Leases *agentclient.Leases
	// Lease is how long each renewal holds.
	Lease time.Duration
	// Hold is how long past its members' last answers a target keeps its
	// hosts once its lease lapsed, promised in every renewal; 0 promises
	// nothing, and every target fences at the lapse.
	Hold time.Duration
	// Observe asks the OSD controller to observe an OSD now.
	Observe chan<- event.GenericEvent
	// ObserveVolume asks the Volume controller to drive a Volume now: one
	// whose status says Ready while its target reports a member missing.
	ObserveVolume chan<- event.GenericEvent
	Log           logr.Logger
}

// Start renews until ctx ends; flint_operator_leading says it runs.
func (l *LeaseRenewer) Start(ctx context.Context) error {
	metrics.OperatorLeading.Set(1)
	defer metrics.OperatorLeading.Set(0)
	l.Leases.Begin(time.Now())
	t := time.NewTicker(l.Lease / 4)
	defer t.Stop()
	for {
		l.renewAll(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (l *LeaseRenewer) renewAll(ctx context.Context) {
	var osds flintv1.OSDList
	if err := l.Reader.List(ctx, &osds); err != nil {
		l.Log.Error(err, "List OSDs to renew their leases")
		return
	}
	var wg sync.WaitGroup
	for i := range osds.Items {
		if o := &osds.Items[i]; l.Leases.Serving(o.Name) {
			wg.Go(func() { l.renew(ctx, o) })
		}
	}
	wg.Wait()
}

// renew renews o's lease, within a quarter of the lease: the agent refuses
// a renewal that comes after its deadline, so o's lease lasts at most a
// lease and a quarter past the moment this renewal was sent.
func (l *LeaseRenewer) renew(ctx context.Context, o *flintv1.OSD) {
	ctx, cancel := context.WithTimeout(ctx, l.Lease/4)
	defer cancel()
	agent, err := l.Agents.For(ctx, o)
	if err == nil {
		sent := time.Now()
		l.Leases.Tried(o.Name, sent)
		var resp *agentv1.RenewLeaseResponse
		resp, err = agent.RenewLease(ctx, &agentv1.RenewLeaseRequest{DurationMs: uint32(l.Lease.Milliseconds()), NotAfterUnixMs: sent.Add(l.Lease).UnixMilli(), HoldMs: uint32(l.Hold.Milliseconds())})
		if err == nil {
			l.observeDegraded(ctx, resp.GetDegradedVolumeUids())
		}
	}
	if err == nil {
		return
	}
	l.Log.Info("Lease renewal failed; the OSD fences its targets when its lease lapses unless it is observed serving again", "osd", o.Name, "err", err.Error())
	l.Leases.SetServing(o.Name, false)
	select {
	case l.Observe <- event.GenericEvent{Object: o}:
	case <-ctx.Done():
	}
}

// observeDegraded has the Volume controller drive, now, each Volume whose
// target reported a member out of its raid while its status still says
// Ready: the status records the dropped member within a renewal period, so
// a later decision (a target move, a re-assembly) does not take it for
// one in sync. Volumes not Ready are driven every few seconds anyway.
func (l *LeaseRenewer) observeDegraded(ctx context.Context, uids []string) {
	for _, uid := range uids {
		if v := cachedVolume(ctx, l.Reader, uid); v != nil && v.Status.Phase == flintv1.VolumePhaseReady {
			select {
			case l.ObserveVolume <- event.GenericEvent{Object: v}:
			case <-ctx.Done():
				return
			}
		}
	}
}
