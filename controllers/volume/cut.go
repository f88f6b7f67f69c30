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
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// awaitCut holds an unplanned move's new target, on t, until the old
// target can let no host in. The old target's agent keeps its hosts past
// its lease while every member it counts on answers it, the new target's
// replica among them (docs/volumes.md, "The hold"). So the replica's
// export goes first, which SPDK answers once the old target's connections
// to it are gone; the old target then holds no longer than the hold
// after that answer, and its probe acts within the fence's margin. The
// time is recorded in the status, so a new leader waits for it too.
func (r *Reconciler) awaitCut(ctx context.Context, vol *flintv1.Volume, t *flintv1.OSD) *problem {
	cut := vol.Status.Target.Cut
	if cut == nil {
		return nil
	}
	if cut.ServesAfter == nil {
		if err := r.cutReplica(ctx, vol, t); err != nil {
			return &problem{flintv1.VolumeTargetUnavailableReason, fmt.Sprintf("the target moves to OSD %s once the old target on OSD %s is cut off its replica there: %v", t.Name, cut.From, err)}
		}
		after := metav1.NewTime(r.now().Add(r.HoldWait))
		if cut.NotBefore.After(after.Time) {
			after = cut.NotBefore
		}
		cut.ServesAfter = &after
		log.FromContext(ctx).Info("Cut the old target off the new target's replica", "from", cut.From, "to", t.Name, "servesAfter", after.Time)
	}
	if wait := r.cutWait(cut); wait > 0 {
		return &problem{flintv1.VolumeTargetUnavailableReason, fmt.Sprintf("the target moves to OSD %s and serves in %s: the old target on OSD %s, cut off its replica there, may let hosts in until then while its other members answer it",
			t.Name, wait.Round(time.Second), cut.From)}
	}
	return nil
}

// cutReplica removes the export of the Volume's replica on t, the new
// target's OSD, and records the move's epoch there. An agent from before
// CutReplica is cut by an export to t's own host at that epoch, which
// removes every other host as well.
func (r *Reconciler) cutReplica(ctx context.Context, vol *flintv1.Volume, t *flintv1.OSD) error {
	agent, err := r.Agents.For(ctx, t)
	if err != nil {
		return err
	}
	e := uint32(epoch(vol.Status.Target))
	_, err = agent.CutReplica(ctx, &agentv1.CutReplicaRequest{VolumeUid: string(vol.UID), Epoch: e})
	if status.Code(err) == codes.Unimplemented {
		_, err = agent.ExportReplica(ctx, &agentv1.ExportReplicaRequest{VolumeUid: string(vol.UID), TargetHostNqn: agentv1.HostNQN(string(t.UID)), Epoch: e})
	}
	if err != nil {
		return fmt.Errorf("cut the replica on OSD %s: %s", t.Name, status.Convert(err).Message())
	}
	return nil
}

// cutWait is how long the new target of a move that made cut waits
// still. The times recorded are the deciding leader's: a leader that took
// over since waits as long from when it began, by its own clock.
func (r *Reconciler) cutWait(cut *flintv1.VolumeTargetCut) time.Duration {
	now := r.now()
	return max(cut.ServesAfter.Sub(now), max(r.TargetGrace, r.HoldWait)-r.Leases.Leading(now))
}

// cutResult drives vol again when its new target may serve, if that is
// sooner than res would.
func (r *Reconciler) cutResult(vol *flintv1.Volume, res ctrl.Result) ctrl.Result {
	t := vol.Status.Target
	if t == nil || t.Cut == nil || t.Cut.ServesAfter == nil {
		return res
	}
	wait := max(r.cutWait(t.Cut), 10*time.Millisecond)
	if res.RequeueAfter == 0 || wait < res.RequeueAfter {
		return ctrl.Result{RequeueAfter: wait}
	}
	return res
}
