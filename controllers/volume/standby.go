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

package volume

import (
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// A planned move prepares the new target's subsystem first, without a
// namespace, and waits for the published hosts to connect to it before it
// stops the old target: the hosts' I/O then waits for the new target's
// assembly only, not for a connect after it
// (docs/proposals/planned-move-handover.md).
const (
	// standbyPoll is how soon a Volume waiting for its standby's hosts
	// is looked at again: each pass drives the Volume whole.
	standbyPoll = time.Second
)

// awaitStandby says whether a planned move to next waits for its standby.
// The first pass records one for next (the drive then prepares it); later
// passes wait until every published host has connected to it, or until
// StandbyWait from the decision, or until it is known it cannot be made.
// The pass that ends the wait records that the move switches, and waits
// once more: a pass that finds it recorded goes on with the move and
// never waits again, so an old target stopped by a pass that did not live
// to record the move is never waited for, and driven, again. With no
// published host (nothing to connect), or StandbyWait zero, a move has no
// standby.
func (r *Reconciler) awaitStandby(vol *flintv1.Volume, w *world, next string) bool {
	t := vol.Status.Target
	if r.StandbyWait <= 0 || len(vol.Spec.PublishedHosts) == 0 {
		return false
	}
	w.keepStandby = true
	sb := t.Standby
	if sb == nil || sb.OSD != next {
		t.Standby = &flintv1.VolumeStandby{OSD: next, Epoch: nextEpoch(t, next), Since: metav1.NewTime(r.now())}
		return true
	}
	if sb.Switching {
		return false
	}
	sb.Switching = sb.Problem != "" || r.now().Sub(sb.Since.Time) >= r.StandbyWait || connectedHosts(vol, sb) == len(vol.Spec.PublishedHosts)
	return true
}

// connectedHosts counts the published hosts connected to sb.
func connectedHosts(vol *flintv1.Volume, sb *flintv1.VolumeStandby) int {
	n := 0
	for _, h := range vol.Spec.PublishedHosts {
		if slices.Contains(sb.ConnectedHosts, h) {
			n++
		}
	}
	return n
}

// dropUnusedStandby forgets a standby no planned move waits for any more:
// the OSD's orphan collection deletes what was made there, and the hosts
// drop their paths to it.
func dropUnusedStandby(vol *flintv1.Volume, w *world) {
	if t := vol.Status.Target; t != nil && !w.keepStandby {
		t.Standby = nil
	}
}

// prepareStandby has the standby's OSD make the Volume's subsystem there
// (PrepareTarget) and records where the hosts reach it, which may and
// which have. A standby that cannot be made is recorded with why, and the
// move goes on without it.
func (r *Reconciler) prepareStandby(ctx context.Context, vol *flintv1.Volume, w *world) {
	t := vol.Status.Target
	if t == nil || t.Standby == nil || t.Standby.Switching {
		return
	}
	sb := t.Standby
	o := w.osds[sb.OSD]
	if !usable(o) {
		return // the move's next pass picks another OSD, and drops this
	}
	keys, err := r.linkKeys(ctx, vol, w)
	var agent agentv1.OSDAgentClient
	if err == nil {
		agent, err = r.Agents.For(ctx, o)
	}
	var p *agentv1.PreparedTarget
	if err == nil {
		p, err = agent.PrepareTarget(ctx, &agentv1.PrepareTargetRequest{
			VolumeUid: string(vol.UID), Epoch: uint32(sb.Epoch), Hosts: vol.Spec.PublishedHosts, HostKeys: keys.hosts,
		})
	}
	if err != nil {
		problem := status.Convert(err).Message()
		if sb.Problem == "" {
			r.Recorder.Eventf(vol, nil, corev1.EventTypeWarning, flintv1.EventTargetMoved, "PrepareTarget",
				"the planned move's standby on OSD %s could not be made (%s): the hosts connect to the new target after the move, as without one", o.Name, problem)
		}
		sb.Problem = problem
		return
	}
	sb.Endpoints = endpointsOf(p.GetExport())
	sb.AllowedHosts, sb.ConnectedHosts = p.GetAllowedHosts(), p.GetConnectedHosts()
}

// standbyHosts says how the hosts follow a planned move to next: through
// its standby, which those connected hold a path to already, or by a
// connect after it.
func standbyHosts(vol *flintv1.Volume, next string) string {
	sb := vol.Status.Target.Standby
	if sb == nil || sb.OSD != next {
		return "hosts connect to the same NQN there"
	}
	return fmt.Sprintf("%d of %d published hosts connected to its standby first", connectedHosts(vol, sb), len(vol.Spec.PublishedHosts))
}

// standbyResult looks at a Volume whose planned move waits for its
// standby again soon, since the hosts connecting change nothing the
// operator watches.
func standbyResult(vol *flintv1.Volume, res ctrl.Result) ctrl.Result {
	if t := vol.Status.Target; t != nil && t.Standby != nil && (res.RequeueAfter == 0 || res.RequeueAfter > standbyPoll) {
		return ctrl.Result{RequeueAfter: standbyPoll}
	}
	return res
}
