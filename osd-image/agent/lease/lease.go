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

// Package lease is how an OSD fences its volume targets when the operator
// loses sight of it, so that a target the operator moves away has stopped
// acknowledging host I/O before the new one accepts any, even when the
// operator cannot reach it.
//
// The operator renews the lease on every observation that finds the OSD
// serving. A lead before it lapses the agent removes every host from its
// volume targets (which drops their connections) and refuses to serve
// them again until the operator renews the lease and confirms, from a
// live read of the Volume, that the OSD is still its target. The expiry
// is kept in a file that the SPDK container's liveness probe checks
// (Probe): a lapsed lease with a volume target that still allows a host,
// or with an SPDK that does not answer, makes the kubelet kill SPDK. That
// covers an agent that died or hangs and an SPDK that is frozen; the lead
// keeps the probe from killing an SPDK whose agent is about to fence it.
//
// When the operator promised in its renewals to cut a target off a
// replica before it moves the target unplanned, a target whose lease
// lapsed keeps its hosts while its remote members answer it: it is held
// (hold.go). It stays held, renewed or not, until a confirmed call, and
// is fenced a lead before its hold runs out; the probe spares it until
// then.
package lease

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flint-io/flint/internal/durable"
)

// File holds the lease's expiry, shared by the agent and the probe.
type File struct{ Path string }

// Write records expiry durably: a probe reads the old expiry or the new
// one, never a torn file.
func (f File) Write(expiry time.Time) error {
	return durable.WriteFile(f.Path, []byte(expiry.UTC().Format(time.RFC3339Nano)+"\n"), 0o644)
}

// Read returns the recorded expiry; the zero time when there is none (a
// lease never granted has lapsed).
func (f File) Read() (time.Time, error) {
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
	if err != nil {
		return time.Time{}, fmt.Errorf("lease file %s: %w", f.Path, err)
	}
	return t, nil
}

// fencedPath keeps the volumes fenced and not confirmed since, beside the
// expiry: an agent that restarts still holds their fence.
func (f File) fencedPath() string { return f.Path + ".fenced" }

// readFenced returns the volumes recorded fenced, with when.
func (f File) readFenced() (map[string]time.Time, error) {
	fenced := map[string]time.Time{}
	if _, err := durable.ReadJSON(f.fencedPath(), &fenced); err != nil {
		return nil, fmt.Errorf("read the fenced targets from %s: %w", f.fencedPath(), err)
	}
	return fenced, nil
}

func (f File) writeFenced(fenced map[string]time.Time) error {
	if err := durable.WriteJSON(f.fencedPath(), fenced, 0o644); err != nil {
		return fmt.Errorf("record the fenced targets: %w", err)
	}
	return nil
}

// Targets is what fencing acts on: the OSD's volume targets.
type Targets interface {
	// FenceTargets removes every host from every volume target but
	// those spare keeps, and returns the volumes it fenced.
	FenceTargets(ctx context.Context, spare func(volume string) bool) ([]string, error)
	// AskMembers asks the targets' remote members whether they still
	// admit them, and returns per volume when the Keep Alives they last
	// all answered were sent; the answers to this call's come later.
	AskMembers(ctx context.Context) (map[string]time.Time, error)
}

// ErrLapsed means the lease lapsed: the OSD serves no host until the
// operator renews it.
var ErrLapsed = errors.New("the OSD's lease lapsed")

// ErrFenced means a target was fenced when the lease lapsed: it serves
// hosts again only on a call that confirms, from the apiserver, that this
// OSD is still the volume's target.
var ErrFenced = errors.New("the target was fenced")

// Keeper keeps the lease, fences on a lapse and gates target changes.
type Keeper struct {
	file    File
	targets Targets
	now     func() time.Time
	// lead is how long before the expiry the keeper counts the lease
	// lapsed: it fences, and stops serving, before the probe may act.
	lead time.Duration

	// serving is held (read) by every call that may let hosts in, and
	// (write) by fencing, so a target change never crosses a fence.
	serving sync.RWMutex
	mu      sync.Mutex
	expiry  time.Time
	// granted is how long the last renewal held.
	granted time.Duration
	// holding is the hold's state (hold.go).
	holding
	fenced map[string]time.Time
	// fencedLapse says the current lapse has been fenced.
	fencedLapse bool
	// fencedUnsaved says fenced holds volumes its file does not.
	fencedUnsaved bool
	// refence says the agent started with its lease lapsed: its
	// predecessor may have fenced without recording which targets, so
	// every target its recorded holds do not keep is fenced again, those
	// they keep are recorded held, and none serves unconfirmed until then.
	refence bool
}

// New returns a Keeper of the lease in file over targets that counts the
// lease lapsed lead before its expiry. lead must exceed the interval
// between Checks plus the time a fence takes: the SPDK container's probe
// kills SPDK when it finds a host let in after the expiry, and a kill
// that the agent's own fence would have made needless drops every
// replica and target on the OSD (and, on a device that does not keep
// its data across a restart, the data). It starts from the expiry and
// the fences in the file: a restarted agent keeps what its predecessor
// was granted and no more, and serves no fenced target again unconfirmed.
func New(file File, targets Targets, now func() time.Time, lead time.Duration) (*Keeper, error) {
	expiry, err := file.Read()
	if err != nil {
		return nil, err
	}
	fenced, err := file.readFenced()
	if err != nil {
		return nil, err
	}
	holds, err := file.readHolds()
	if err != nil {
		return nil, err
	}
	k := &Keeper{file: file, targets: targets, now: now, lead: lead, expiry: expiry, fenced: fenced, holding: holding{holdsFile: holds}}
	k.refence = !expiry.IsZero() && k.lapsed(now())
	return k, nil
}

// ErrLate means a renewal arrived after the latest instant it may grant.
var ErrLate = errors.New("the renewal came too late")

// ErrFencing means a renewal arrived after the lease lapsed and before
// the agent fenced that lapse: it is refused, and one a moment later is
// not.
var ErrFencing = errors.New("the lease is being fenced")

// Renew extends the lease to d from now, but not past notAfter: the
// latest its sender counts on, whatever held the renewal up on its way
// (zero: a sender from before it said so). The expiry is counted from now
// on the monotonic clock, which a step of the wall clock does not move.
// hold is how long past its members' last answers a target keeps its
// hosts once the lease lapses; 0 when the sender makes no cut before it
// moves a target.
func (k *Keeper) Renew(d time.Duration, notAfter time.Time, hold time.Duration) (time.Time, error) {
	if d <= 0 {
		return time.Time{}, fmt.Errorf("a lease of %s cannot be granted", d)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	if !notAfter.IsZero() {
		d = min(d, notAfter.Sub(now))
	}
	if d <= 0 {
		return time.Time{}, fmt.Errorf("%w: it may hold until %s, and it is %s", ErrLate, notAfter.Format(time.RFC3339Nano), now.Format(time.RFC3339Nano))
	}
	// A lapse no Check has fenced yet is fenced first: a renewal must not
	// let a target that may have been cut off its members (and is held)
	// go back to serving unconfirmed. The operator renews again soon. An
	// agent that started in a lapse refuses too: what it refuses
	// unconfirmed until its first fence is in memory only, and a
	// successor that found a valid lease would not know of it.
	if !k.expiry.IsZero() && k.lapsed(now) && !k.fencedLapse {
		return time.Time{}, fmt.Errorf("%w: it lapsed at %s and its targets' fence is under way", ErrFencing, k.lapsesAt().Format(time.RFC3339Nano))
	}
	if hold != k.Hold {
		next := k.holdsFile
		next.Hold = hold
		if err := k.file.writeHolds(next); err != nil {
			return time.Time{}, err
		}
		k.holdsFile = next
	}
	expiry := now.Add(d)
	if err := k.file.Write(expiry); err != nil {
		return time.Time{}, fmt.Errorf("record the lease: %w", err)
	}
	k.expiry, k.fencedLapse, k.granted = expiry, false, d
	return expiry, nil
}

// Expiry is when the lease lapses (lapsed).
func (k *Keeper) Expiry() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.expiry
}

// lapsesAt is when the keeper counts the lease lapsed; k.mu held.
func (k *Keeper) lapsesAt() time.Time { return k.expiry.Add(-k.lead) }

// lapsed says whether the lease counts as lapsed at now; k.mu held.
func (k *Keeper) lapsed(now time.Time) bool { return !now.Before(k.lapsesAt()) }

// Fenced lists the volumes fenced at a lapse and not confirmed since.
func (k *Keeper) Fenced() map[string]time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return maps.Clone(k.fenced)
}

// Serve runs change, a call that may let hosts reach volume's target,
// unless the lease has lapsed, or the target was fenced and the call is
// not confirmed. A confirmed call that succeeds lifts the fence.
func (k *Keeper) Serve(volume string, confirmed bool, change func() error) error {
	k.serving.RLock()
	defer k.serving.RUnlock()
	k.mu.Lock()
	lapsed, lapsesAt, refence := k.lapsed(k.now()), k.lapsesAt(), k.refence
	fencedAt, fenced := k.fenced[volume]
	heldAt, held := k.Held[volume]
	k.mu.Unlock()
	if lapsed {
		return fmt.Errorf("%w at %s: the operator has not renewed it, so the OSD serves no host; it does again once renewed", ErrLapsed, lapsesAt.Format(time.RFC3339))
	}
	if refence && !confirmed {
		return fmt.Errorf("%w: the lease lapsed and the agent fences every target first; re-drive it once the Volume, read from the apiserver, still names this OSD its target", ErrFenced)
	}
	if fenced && !confirmed {
		return fmt.Errorf("%w at %s when the OSD's lease lapsed: re-drive it once the Volume, read from the apiserver, still names this OSD its target", ErrFenced, fencedAt.Format(time.RFC3339))
	}
	if held && !confirmed {
		return fmt.Errorf("%w: the target has kept its hosts since %s on its members' answers, the lease lapsed; re-drive it once the Volume, read from the apiserver, still names this OSD its target", ErrFenced, heldAt.Format(time.RFC3339))
	}
	if err := change(); err != nil {
		return err
	}
	if !fenced && !held {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if held {
		// Until recorded, the hold stands: a restarted agent asks again.
		if err := k.release(volume); err != nil {
			return err
		}
	}
	if !fenced {
		return nil
	}
	lifted := maps.Clone(k.fenced)
	delete(lifted, volume)
	if err := k.file.writeFenced(lifted); err != nil {
		return err
	}
	k.fenced = lifted
	return nil
}

// Check fences once the lease has lapsed: every volume target loses its
// hosts, after the calls in flight that may add hosts have ended, but
// one its members' answers hold, which is fenced once its hold runs out,
// renewed or not (hold.go). It retries on the next Check until fencing
// succeeded. Then, with holds on, it asks the targets' members.
func (k *Keeper) Check(ctx context.Context) error {
	k.mu.Lock()
	due := k.refence || k.lapsed(k.now()) && !k.fencedLapse || len(k.Held) > 0
	k.mu.Unlock()
	var err error
	if due {
		err = k.fence(ctx)
	}
	return errors.Join(err, k.askMembers(ctx))
}

// fence removes the hosts of every target due a fence.
func (k *Keeper) fence(ctx context.Context) error {
	k.serving.Lock()
	defer k.serving.Unlock()
	// What this fence covers is decided once, at its start: a lapse, or
	// the held targets alone.
	k.mu.Lock()
	refence := k.refence
	lapse := refence || k.lapsed(k.now())
	k.mu.Unlock()
	kept := map[string]bool{}
	volumes, err := k.targets.FenceTargets(ctx, func(volume string) bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		_, held := k.Held[volume]
		_, fenced := k.fenced[volume]
		// A target fenced and not confirmed since is fenced again at a
		// lapse, answers or not: it lets no host in, or one it should not.
		keep := k.holds(volume, k.now()) && (!lapse || !fenced)
		if keep && (lapse || held) {
			kept[volume] = true
		}
		return keep || !lapse && !held
	})
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	for _, v := range volumes {
		if _, ok := k.fenced[v]; !ok {
			k.fenced[v] = now
			k.fencedUnsaved = true
		}
	}
	if k.fencedUnsaved {
		// Fenced but not recorded: the next Check records it.
		if werr := k.file.writeFenced(k.fenced); werr != nil {
			err = errors.Join(err, werr)
		} else {
			k.fencedUnsaved = false
		}
	}
	if err != nil {
		// The targets kept are held all the same, with those held before:
		// the probe and the operator must know of them.
		maps.Copy(kept, heldSet(k.Held))
		return errors.Join(fmt.Errorf("fence the volume targets after the lease lapsed at %s: %w", k.lapsesAt().Format(time.RFC3339), err), k.recordHeld(kept, now))
	}
	// Recorded before the fence counts as done: a restarted agent keeps
	// fencing the held targets once their holds run out.
	if err := k.recordHeld(kept, now); err != nil {
		return err
	}
	if refence {
		k.refence = false
	}
	if lapse && k.lapsed(now) {
		k.fencedLapse = true // renewals are refused until then
	}
	return nil
}

// Run checks every interval until ctx ends, reporting a failure to report
// when it differs from the last one (SPDK down fails every check).
func (k *Keeper) Run(ctx context.Context, interval time.Duration, report func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	last := ""
	for {
		cctx, cancel := context.WithTimeout(ctx, interval*4)
		err := k.Check(cctx)
		cancel()
		switch {
		case err != nil && err.Error() != last:
			report(err)
			last = err.Error()
		case err == nil:
			last = ""
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Probe is the SPDK container's liveness check: nil while the lease holds
// and no target held since a lapse outlived its recorded hold, or while
// SPDK answers within ctx and serves no volume target to any host but
// those whose recorded hold has not run out; otherwise why SPDK must be
// stopped. Before the pod's first lease (no lease file) a silent SPDK
// passes: the agent records a lease before it lets any host in, so there
// is nothing to fence, and a starting SPDK on a busy node can take
// seconds to answer.
func Probe(ctx context.Context, file File, now time.Time, hostsAllowed func(context.Context) ([]string, error)) error {
	expiry, err := file.Read()
	if err != nil {
		return err
	}
	holds, err := file.readHolds()
	if err != nil {
		return err
	}
	// Before the expiry only a held target can be due a fence.
	due := func(v string) bool { _, held := holds.Held[v]; return held && !now.Before(holds.Until[v]) }
	if !now.Before(expiry) {
		due = func(v string) bool { return !now.Before(holds.Until[v]) }
	} else if !slices.ContainsFunc(slices.Collect(maps.Keys(holds.Held)), due) {
		return nil
	}
	volumes, err := hostsAllowed(ctx)
	if err != nil && expiry.IsZero() {
		return nil
	}
	if err != nil {
		return fmt.Errorf("the OSD's lease lapsed at %s, or a target's hold ran out, and SPDK does not say which targets it serves (%v): stop it", expiry.Format(time.RFC3339), err)
	}
	volumes = slices.DeleteFunc(volumes, func(v string) bool { return !due(v) })
	if len(volumes) > 0 {
		return fmt.Errorf("the OSD's lease lapsed at %s and SPDK still lets hosts reach volumes %s, whose members' answers hold them no longer: stop it", expiry.Format(time.RFC3339), strings.Join(volumes, ", "))
	}
	return nil
}

// Probes serves the SPDK container's probes over HTTP. The kubelet then
// starts no process in the container to ask, as an exec probe every
// second would, on the core SPDK polls.
type Probes struct {
	File File
	// Timeout bounds SPDK's answer to one probe.
	Timeout time.Duration
	// Started answers once SPDK answers at all.
	Started func(context.Context) error
	// HostsAllowed lists the volumes whose targets let a host in.
	HostsAllowed func(context.Context) ([]string, error)
	// HangAfter, when set, fails /fence once SPDK, having answered, has
	// not answered for that long, lease or not. A frozen SPDK serves its
	// hosts nothing, and while its lease holds only its restart lets the
	// operator re-assemble its targets in place instead of waiting to
	// move them (docs/osd-agent.md).
	HangAfter time.Duration
	// Now is the probes' clock; time.Now when nil.
	Now func() time.Time
	// Failed hears why a probe failed: the kubelet shows only the status.
	Failed func(probe string, err error)
}

// Handler serves /startup, which passes once SPDK answers (until then it
// serves nothing: only the agent configures targets), and /fence, Probe
// and, when Probe did not ask SPDK, the hang check.
func (p Probes) Handler() http.Handler {
	if p.Now == nil {
		p.Now = time.Now
	}
	var spdk lastAnswer
	mux := http.NewServeMux()
	mux.HandleFunc("GET /startup", p.serve("startup", func(ctx context.Context) error {
		err := p.Started(ctx)
		if err == nil {
			spdk.heard(p.Now())
		}
		return err
	}))
	mux.HandleFunc("GET /fence", p.serve("fence", func(ctx context.Context) error {
		asked := false
		hostsAllowed := func(ctx context.Context) ([]string, error) {
			asked = true
			v, err := p.HostsAllowed(ctx)
			if err == nil {
				spdk.heard(p.Now())
			}
			return v, err
		}
		// Probe's own question to SPDK decides: a second one could make a
		// slow SPDK's probe outlast the kubelet's timeout.
		if err := Probe(ctx, p.File, p.Now(), hostsAllowed); err != nil || asked {
			return err
		}
		return p.answers(ctx, &spdk)
	}))
	return mux
}

// lastAnswer is when SPDK last answered a probe, by the monotonic clock
// when the probes' clock has one; overlapping probes keep the latest.
type lastAnswer struct {
	mu sync.Mutex
	at time.Time
}

func (l *lastAnswer) heard(at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if at.After(l.at) {
		l.at = at
	}
}

func (l *lastAnswer) last() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.at
}

// answers fails once SPDK has not answered for HangAfter since it last
// did. It gives SPDK half the probe's time, so that a silent SPDK still
// leaves the probe its answer well within the kubelet's timeout; before
// SPDK's first answer it is starting, which /startup watches.
func (p Probes) answers(ctx context.Context, spdk *lastAnswer) error {
	if p.HangAfter <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.Timeout/2)
	defer cancel()
	err := p.Started(ctx)
	now := p.Now()
	if err == nil {
		spdk.heard(now)
		return nil
	}
	last := spdk.last()
	if last.IsZero() {
		return nil
	}
	if silent := now.Sub(last); silent >= p.HangAfter {
		return fmt.Errorf("SPDK has not answered for %s (the last probe: %v), over the hang timeout of %s: stop it, so that its targets are re-assembled", silent.Round(time.Second), err, p.HangAfter)
	}
	return nil
}

func (p Probes) serve(name string, check func(context.Context) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), p.Timeout)
		defer cancel()
		if err := check(ctx); err != nil {
			p.Failed(name, err)
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = fmt.Fprintln(w, "ok")
	}
}
