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

package pool

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/conditions"
)

// rollout is the next step of stopping the Pool's OSDs a failure domain at
// a time: the status to record (nil when nothing stops or waits), and
// the RollingOut condition's reason and message.
type rollout struct {
	status          *flintv1.RolloutStatus
	reason, message string
	// started are the domains this pass starts to stop.
	started []string
}

// planRollout decides which OSDs stop now. An OSD wants to stop when its
// pod runs an older spec or its node is cordoned (a drain comes); only one
// that serves needs stopping, since one that does not has nothing to hand
// over. OSDs already stopping stay so until they serve again, want nothing
// more, and every replica on them is back in sync; a domain joins only
// while the stopping domains number fewer than maxUnavailableDomains and
// every Volume with a replica in them keeps enough in-sync replicas
// outside them.
func planRollout(pool *flintv1.Pool, osds map[string]*flintv1.OSD, vols []flintv1.Volume, nodes map[string]*corev1.Node) rollout {
	p := rolloutPass{pool: pool, osds: osds, vols: vols, nodes: nodes}
	var stopping []string
	if prev := pool.Status.Rollout; prev != nil {
		for _, name := range prev.OSDs {
			if o := osds[name]; o != nil && (p.wantsToStop(o) || !o.Status.Phase.Serving() || !p.replicasBack(o)) {
				stopping = append(stopping, name)
			}
		}
	}
	domains := map[string]bool{}
	for _, name := range stopping {
		domains[p.domainOf(osds[name])] = true
	}
	waiting := map[string][]string{} // by domain, OSDs that want to stop
	for _, name := range slices.Sorted(maps.Keys(osds)) {
		if o := osds[name]; p.wantsToStop(o) && o.Status.Phase.Serving() && !slices.Contains(stopping, name) {
			waiting[p.domainOf(o)] = append(waiting[p.domainOf(o)], name)
		}
	}
	out := rollout{}
	limit := int(max(pool.Spec.Rollout.MaxUnavailableDomains, 1))
	var blocked string
	for _, d := range slices.Sorted(maps.Keys(waiting)) {
		if !domains[d] && len(domains) >= limit {
			continue
		}
		joined := map[string]bool{d: true}
		for k := range domains {
			joined[k] = true
		}
		if why := p.tooFewInSync(joined); why != "" {
			if blocked == "" {
				blocked = fmt.Sprintf("OSDs in %s %s wait: %s", p.key(), d, why)
			}
			continue
		}
		if !domains[d] {
			out.started = append(out.started, d)
		}
		domains[d] = true
		stopping = append(stopping, waiting[d]...)
		delete(waiting, d)
	}
	pending := 0
	for _, names := range waiting {
		pending += len(names)
	}
	if len(stopping) == 0 && pending == 0 {
		out.reason, out.message = flintv1.PoolUpToDateReason, "every OSD runs its current spec on an uncordoned node"
		return out
	}
	slices.Sort(stopping)
	out.status = &flintv1.RolloutStatus{Domains: slices.Sorted(maps.Keys(domains)), OSDs: stopping, Pending: int32(pending)}
	if len(stopping) == 0 {
		out.reason, out.message = flintv1.PoolRolloutBlockedReason, blocked
		return out
	}
	out.reason = flintv1.PoolRollingReason
	out.message = fmt.Sprintf("stopping OSDs in %s %s: %s", p.key(), strings.Join(out.status.Domains, ", "), strings.Join(stopping, ", "))
	if pending > 0 {
		out.message += fmt.Sprintf("; %d more OSDs wait their turn", pending)
	}
	if blocked != "" {
		out.message += "; " + blocked
	}
	return out
}

// rolloutPass is what one plan reads.
type rolloutPass struct {
	pool  *flintv1.Pool
	osds  map[string]*flintv1.OSD
	vols  []flintv1.Volume
	nodes map[string]*corev1.Node
}

func (p rolloutPass) key() string { return p.pool.FailureDomainKey() }

// domainOf is the failure domain of o's node; a node without the label
// is a domain of its own.
func (p rolloutPass) domainOf(o *flintv1.OSD) string {
	if n := p.nodes[o.Spec.NodeName]; n != nil && n.Labels[p.key()] != "" {
		return n.Labels[p.key()]
	}
	return "node " + o.Spec.NodeName
}

// wantsToStop: o's pod runs an older spec, or its node is cordoned.
func (p rolloutPass) wantsToStop(o *flintv1.OSD) bool {
	outdated := meta.IsStatusConditionFalse(o.Status.Conditions, flintv1.UpToDateCondition)
	n := p.nodes[o.Spec.NodeName]
	return outdated || n != nil && n.Spec.Unschedulable
}

// replicasBack: every replica on o is in sync again.
func (p rolloutPass) replicasBack(o *flintv1.OSD) bool {
	for _, v := range p.vols {
		for _, rep := range v.Status.Replicas {
			if rep.OSD == o.Name && rep.State != flintv1.ReplicaStateOnline {
				return false
			}
		}
	}
	return true
}

// tooFewInSync says which Volume would keep too few in-sync replicas were
// the OSDs of domains stopped: every Volume with a replica there keeps,
// outside them, its replicas minus maxUnavailableDomains (at least one).
func (p rolloutPass) tooFewInSync(domains map[string]bool) string {
	within := func(osd string) bool {
		o := p.osds[osd]
		return o != nil && domains[p.domainOf(o)]
	}
	for _, v := range p.vols {
		if !slices.ContainsFunc(v.Status.Replicas, func(r flintv1.ReplicaStatus) bool { return within(r.OSD) }) {
			continue
		}
		want := p.pool.Spec.Replicas
		if v.Spec.Replicas != nil {
			want = *v.Spec.Replicas
		}
		need := max(1, want-max(p.pool.Spec.Rollout.MaxUnavailableDomains, 1))
		var kept int32
		for _, r := range v.Status.Replicas {
			if o := p.osds[r.OSD]; r.State == flintv1.ReplicaStateOnline && !within(r.OSD) && o != nil && o.Status.Phase.Serving() {
				kept++
			}
		}
		if kept >= need {
			continue
		}
		if want == 1 {
			return fmt.Sprintf("Volume %s has a single replica, there: stopping its OSD stops the Volume. Delete that OSD's pod to restart it by hand (the Volume's I/O pauses until it serves again), or move the Volume to a Pool with more replicas", v.Name)
		}
		return fmt.Sprintf("Volume %s would keep %d in-sync replicas outside them, and needs %d: the rollout goes on once it is repaired (kubectl flint volume describe %s)", v.Name, kept, need, v.Name)
	}
	return ""
}

// setRollout records the plan in the Pool's status. It returns what tells
// a domain that starts, or a rollout that becomes blocked, in an Event:
// called once the status is written, so a write that lost to another
// tells nothing.
func setRollout(pool *flintv1.Pool, plan rollout, recorder events.EventRecorder) (announce func()) {
	pool.Status.Rollout = plan.status
	status := metav1.ConditionTrue
	if plan.status == nil {
		status = metav1.ConditionFalse
	}
	old := meta.FindStatusCondition(pool.Status.Conditions, flintv1.RollingOutCondition)
	blocked := plan.reason == flintv1.PoolRolloutBlockedReason && (old == nil || old.Reason != plan.reason)
	conditions.Set(pool, metav1.Condition{
		Type: flintv1.RollingOutCondition, Status: status, Reason: plan.reason, Message: plan.message,
	})
	return func() {
		if len(plan.started) > 0 {
			recorder.Eventf(pool, nil, corev1.EventTypeNormal, flintv1.EventRolloutStarted, "Rollout", "%s", plan.message)
		}
		if blocked {
			recorder.Eventf(pool, nil, corev1.EventTypeWarning, plan.reason, "Rollout", "%s", plan.message)
		}
	}
}
