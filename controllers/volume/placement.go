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
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// place chooses the Volume's replicas and its target (the least committed
// of them) and records them in its status; false when the Pool cannot
// place it now, and the Volume is Pending saying why. A partial placement
// is never made.
func (r *Reconciler) place(vol *flintv1.Volume, w *world) (bool, error) {
	r.placeMu.Lock()
	defer r.placeMu.Unlock()
	if err := r.fillCommitted(w); err != nil {
		return false, err
	}
	n, size := replicasOf(vol, w.pool), vol.Spec.Size.Value()
	if why := interruptModeRefuses(w.pool, n); why != "" {
		r.setPending(vol, flintv1.VolumeReplicasNeedPollingReason, why)
		return false, nil
	}
	p := offer(w, size, nil)
	var copies map[string]bool
	var chosen []string
	if w.origin != nil {
		copies = w.origin.copies
		chosen = p.chooseFirst(n, copies)
	} else {
		chosen = p.chooseNear(n, w, vol.Spec.NearNode)
	}
	if len(chosen) < n {
		r.setPending(vol, flintv1.VolumeNoPlacementReason, p.shortfall(w.pool.Name, n, size, nil))
		return false, nil
	}
	if w.origin != nil && !copies[chosen[0]] {
		r.setPending(vol, flintv1.VolumeSourceNotReadyReason, fmt.Sprintf("no OSD holding a copy of Snapshot %s can take a replica: %s", w.origin.snapshot.Name, p.shortfall(w.pool.Name, 1, size, nil)))
		return false, nil
	}
	now := r.now()
	var clones, rebuilt []string
	for _, name := range chosen {
		// A replica of a restored Volume where no copy is starts empty:
		// it is rebuilt from the clones.
		state := flintv1.ReplicaStateCreating
		if w.origin != nil && !copies[name] {
			state = flintv1.ReplicaStateStale
			rebuilt = append(rebuilt, name)
		} else {
			clones = append(clones, name)
		}
		vol.Status.Replicas = append(vol.Status.Replicas, newReplica(vol, w.osds[name], state, now))
	}
	target := targetOf(w, chosen, copies, vol.Spec.NearNode)
	vol.Status.Target = &flintv1.VolumeTarget{OSD: target, NQN: agentv1.VolumeNQN(string(vol.UID)), Epoch: 1}
	vol.Status.Phase = flintv1.VolumePhaseCreating
	r.committed.place(vol)
	r.Recorder.Eventf(vol, nil, corev1.EventTypeNormal, flintv1.EventPlaced, "Place", "replicas on OSDs %s; target on %s", strings.Join(chosen, ", "), target)
	if w.origin != nil {
		msg := fmt.Sprintf("from Snapshot %s: thin clones of its copies on OSDs %s", w.origin.snapshot.Name, strings.Join(clones, ", "))
		if len(rebuilt) > 0 {
			msg += fmt.Sprintf("; rebuilt from them on OSDs %s, which hold no copy", strings.Join(rebuilt, ", "))
		}
		r.Recorder.Eventf(vol, nil, corev1.EventTypeNormal, flintv1.EventRestoring, "Place", "%s", msg)
	}
	return true, nil
}

// markPlaced sets AnnotationPlaced once vol's replicas are recorded,
// before any is made: a Volume restored from a backup keeps it, but not
// its status.
func (r *Reconciler) markPlaced(ctx context.Context, vol *flintv1.Volume) error {
	if len(vol.Status.Replicas) == 0 || vol.Annotations[flintv1.AnnotationPlaced] != "" {
		return nil
	}
	base := vol.DeepCopy()
	metav1.SetMetaDataAnnotation(&vol.ObjectMeta, flintv1.AnnotationPlaced, r.now().UTC().Format(time.RFC3339))
	if err := r.Patch(ctx, vol, client.MergeFrom(base)); err != nil {
		return err
	}
	r.wrote.Store(vol.Name, vol.ResourceVersion)
	return nil
}

// refuseReplacing keeps a Volume placed before (at placed) whose status
// names no replica Pending: it was restored without its status, its data
// is in the lvols of the uid it had (quarantined on their OSDs, Events
// OrphanFound), and replicas placed afresh would serve it empty.
func (r *Reconciler) refuseReplacing(vol *flintv1.Volume, placed string) {
	msg := fmt.Sprintf("the Volume's replicas were placed at %s (annotation %s) but its status names none: it was restored without its status, and new replicas would be empty. "+
		"Its data is in the lvols its OSDs keep for the orphan grace (Events OrphanFound); restore the Volume's status, or remove the annotation to start the Volume empty",
		placed, flintv1.AnnotationPlaced)
	if c := meta.FindStatusCondition(vol.Status.Conditions, flintv1.ReadyCondition); c == nil || c.Reason != flintv1.VolumeRestoredWithoutStatusReason {
		r.Recorder.Eventf(vol, nil, corev1.EventTypeWarning, flintv1.VolumeRestoredWithoutStatusReason, "Place", "%s", msg)
	}
	r.setPending(vol, flintv1.VolumeRestoredWithoutStatusReason, msg)
}

// targetOf picks the target among the OSDs chosen for a new Volume's
// replicas: of those that, for a restored Volume, hold a copy (copies;
// nil for any), the nearest to node that reaches all of them
// (nearestReaching); chosen[0] when none holds a copy.
func targetOf(w *world, chosen []string, copies map[string]bool, node string) string {
	holding := slices.DeleteFunc(slices.Clone(chosen), func(t string) bool { return copies != nil && !copies[t] })
	if len(holding) == 0 {
		return chosen[0]
	}
	return nearestReaching(w, holding, chosen, node)
}

// nearestReaching is, of candidates, the nearest to node among those
// that reach every OSD of members, else the nearest of all; "" for none.
func nearestReaching(w *world, candidates, members []string, node string) string {
	if reaching := slices.DeleteFunc(slices.Clone(candidates), func(c string) bool { return !reachesAll(w, c, members) }); len(reaching) > 0 {
		candidates = reaching
	}
	return nearest(w, candidates, node)
}

// nearest is the OSD of osds nearest to node, the first of equals; ""
// for none.
func nearest(w *world, osds []string, node string) string {
	best := ""
	for _, o := range osds {
		if best == "" || nearness(w, o, node) > nearness(w, best, node) {
			best = o
		}
	}
	return best
}

// The nearness of an OSD to a Volume's nearNode, nearest last.
const (
	farAway = iota
	inZone  // on a node in nearNode's zone
	onNode  // on nearNode itself
)

// nearness is how near OSD osd is to node: on it, in its zone
// (topology.kubernetes.io/zone, both nodes labelled alike), or neither;
// farAway for no node.
func nearness(w *world, osd, node string) int {
	o := w.osds[osd]
	switch {
	case node == "" || o == nil:
		return farAway
	case o.Spec.NodeName == node:
		return onNode
	}
	near, at := w.nodes[node], w.nodes[o.Spec.NodeName]
	if near != nil && at != nil && near.Labels[corev1.LabelTopologyZone] != "" && near.Labels[corev1.LabelTopologyZone] == at.Labels[corev1.LabelTopologyZone] {
		return inZone
	}
	return farAway
}

// reachesAll says a target on OSD t can attach the replicas on every OSD
// of others. A target attaches a remote replica over that OSD's
// transport: TCP always works, RDMA only from an OSD that has an RDMA
// device itself, which only an OSD serving RDMA is known to have. In a
// Pool that mixes transports (OSDs made by hand), an RDMA OSD takes the
// target.
func reachesAll(w *world, t string, others []string) bool {
	from := w.osds[t]
	if from == nil {
		return false
	}
	for _, o := range others {
		if to := w.osds[o]; to != nil && to.Spec.Network.Transport == flintv1.TransportRDMA && from.Spec.Network.Transport != flintv1.TransportRDMA {
			return false
		}
	}
	return true
}

// interruptModeRefuses says why a Volume of n replicas cannot be served
// by pool; "" when it can. SPDK in interrupt mode attaches NVMe-oF
// controllers only over PCIe ("Interrupt mode is only supported with
// PCIe transport"), so a target there cannot reach a remote replica.
func interruptModeRefuses(pool *flintv1.Pool, n int) string {
	if n <= 1 || !pool.Spec.OSD.InterruptMode {
		return ""
	}
	return fmt.Sprintf("Pool %s runs its OSDs in interrupt mode (spec.osd.interruptMode), where SPDK attaches no NVMe-oF controller, so a target cannot reach the other replicas of a %d-replica Volume: use a Pool whose OSDs poll, or 1 replica", pool.Name, n)
}

// newReplica is vol's replica on o, in state since now.
func newReplica(vol *flintv1.Volume, o *flintv1.OSD, state flintv1.ReplicaState, now time.Time) flintv1.ReplicaStatus {
	t := metav1.NewTime(now)
	return flintv1.ReplicaStatus{OSD: o.Name, Lvol: agentv1.LvstoreName(string(o.UID)) + "/" + string(vol.UID), State: state, LastTransitionTime: &t}
}

// fillCommitted sums, per OSD, the sizes of the Pool's Volumes with a
// replica there: what this process placed, else what the cache shows.
// Callers hold placeMu.
func (r *Reconciler) fillCommitted(w *world) error {
	sums, ok := r.committed.sums(w.pool.Name)
	if !ok {
		return fmt.Errorf("the Volume cache has not been read whole yet: placing now could overcommit an OSD")
	}
	w.committed = sums
	return nil
}

// replicasOf is how many copies vol wants.
func replicasOf(vol *flintv1.Volume, pool *flintv1.Pool) int {
	if vol.Spec.Replicas != nil {
		return int(*vol.Spec.Replicas)
	}
	return int(max(pool.Spec.Replicas, 1))
}

// candidate is an OSD a replica may go to.
type candidate struct {
	name   string
	domain string
	// committed is the sum of the sizes of the volumes with a replica on
	// it; limit is its capacity times the Pool's overcommit.
	committed, limit int64
}

// placement is what the Pool's OSDs offer one Volume.
type placement struct {
	key        string // the failure-domain label
	candidates []candidate
	// refused says why each other OSD cannot take a replica.
	refused []string
}

// offer sizes up every OSD of w for a replica of size bytes: serving, not
// draining or deleted, not excluded (it holds a replica already), with its
// free space above the reserve, in a labelled failure domain, and with
// room under the overcommit limit.
func offer(w *world, size int64, exclude map[string]bool) placement {
	p := placement{key: w.pool.FailureDomainKey()}
	overcommit := int64(w.pool.Spec.OvercommitPercent)
	if overcommit == 0 {
		overcommit = 100
	}
	names := make([]string, 0, len(w.osds))
	for name := range w.osds {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		o := w.osds[name]
		if exclude[name] {
			continue
		}
		refuse := func(format string, args ...any) {
			p.refused = append(p.refused, name+" ("+fmt.Sprintf(format, args...)+")")
		}
		switch {
		case !o.DeletionTimestamp.IsZero():
			refuse("being deleted")
			continue
		case o.Spec.Drain:
			refuse("draining")
			continue
		case o.Stopping():
			refuse("stopping for the Pool's rollout")
			continue
		case o.Spec.Cordon:
			refuse("cordoned")
			continue
		case !o.Status.Phase.Serving() || o.Status.Capacity == nil:
			refuse("%s", orUnknown(string(o.Status.Phase)))
			continue
		case o.Status.Capacity.Low():
			refuse("space low: %s free of %s, under the %d%% reserve", o.Status.Capacity.Free.String(), o.Status.Capacity.Total.String(), flintv1.SpaceReservePercent)
			continue
		}
		node, ok := w.nodes[o.Spec.NodeName]
		domain := ""
		if ok {
			domain = node.Labels[p.key]
		}
		if domain == "" {
			refuse("node %s has no %s label", o.Spec.NodeName, p.key)
			continue
		}
		c := candidate{name: name, domain: domain, committed: w.committed[name], limit: o.Status.Capacity.Total.Value() * overcommit / 100}
		if c.committed+size > c.limit {
			refuse("full: %s of %s committed", quantity(c.committed), quantity(c.limit))
			continue
		}
		p.candidates = append(p.candidates, c)
	}
	return p
}

// choose picks n OSDs in distinct failure domains that none of taken
// uses, least committed first (then by name, so ties are stable).
func (p placement) choose(n int, taken map[string]bool) []string {
	cands := append([]candidate(nil), p.candidates...)
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].committed != cands[j].committed {
			return cands[i].committed < cands[j].committed
		}
		return cands[i].name < cands[j].name
	})
	used := map[string]bool{}
	for d := range taken {
		used[d] = true
	}
	var out []string
	for _, c := range cands {
		if len(out) == n {
			break
		}
		if used[c.domain] {
			continue
		}
		used[c.domain] = true
		out = append(out, c.name)
	}
	return out
}

// chooseFirst picks n OSDs as choose does, those in first before any
// other: the OSDs holding a restored Snapshot's copies.
func (p placement) chooseFirst(n int, first map[string]bool) []string {
	preferred := placement{key: p.key}
	for _, c := range p.candidates {
		if first[c.name] {
			preferred.candidates = append(preferred.candidates, c)
		}
	}
	out := preferred.choose(n, nil)
	used := map[string]bool{}
	for _, c := range preferred.candidates {
		if slices.Contains(out, c.name) {
			used[c.domain] = true
		}
	}
	return append(out, p.choose(n-len(out), used)...)
}

// chooseNear picks n OSDs as chooseFirst does, first the nearest to node
// that is near at all (on it, else in its zone; then the least
// committed): the target's replica, so the Pods on node read without
// crossing the network. The others spread as choose spreads them.
func (p placement) chooseNear(n int, w *world, node string) []string {
	// better orders the near candidates: nearer, then less committed,
	// then by name.
	better := func(a, b *candidate) bool {
		if na, nb := nearness(w, a.name, node), nearness(w, b.name, node); na != nb {
			return na > nb
		}
		if a.committed != b.committed {
			return a.committed < b.committed
		}
		return a.name < b.name
	}
	var first *candidate
	for i := range p.candidates {
		c := &p.candidates[i]
		if nearness(w, c.name, node) != farAway && (first == nil || better(c, first)) {
			first = c
		}
	}
	if first == nil {
		return p.choose(n, nil)
	}
	return p.chooseFirst(n, map[string]bool{first.name: true})
}

// shortfall says why choose found fewer than n OSDs, for a person to act.
func (p placement) shortfall(pool string, n int, size int64, taken map[string]bool) string {
	domains := map[string]bool{}
	for _, c := range p.candidates {
		if !taken[c.domain] {
			domains[c.domain] = true
		}
	}
	var ds []string
	for d := range domains {
		ds = append(ds, d)
	}
	sort.Strings(ds)
	eligible := "none"
	if len(ds) > 0 {
		eligible = fmt.Sprintf("%d (%s)", len(ds), strings.Join(ds, ", "))
	}
	msg := fmt.Sprintf("needs %d OSDs of Pool %s in distinct %s values, each with %s uncommitted; eligible domains: %s",
		n, pool, p.key, quantity(size), eligible)
	if len(p.refused) > 0 {
		msg += "; not eligible: " + strings.Join(p.refused, ", ")
	}
	return msg + ": add OSDs in other domains, free space, or raise the Pool's overcommitPercent"
}

func quantity(bytes int64) string { return resource.NewQuantity(bytes, resource.BinarySI).String() }

func orUnknown(s string) string {
	if s == "" {
		return "not observed yet"
	}
	return s
}

// domainsOf lists the failure domains of the OSDs holding replicas.
func domainsOf(w *world, key string, replicas []flintv1.ReplicaStatus) map[string]bool {
	out := map[string]bool{}
	for _, r := range replicas {
		if o, ok := w.osds[r.OSD]; ok {
			if n, ok := w.nodes[o.Spec.NodeName]; ok && n.Labels[key] != "" {
				out[n.Labels[key]] = true
			}
		}
	}
	return out
}
