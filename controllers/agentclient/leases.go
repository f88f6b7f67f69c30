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

package agentclient

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Leases is the operator's side of the OSDs' leases: which OSDs it keeps
// serving, and when it last tried to renew each. An OSD's agent may have
// renewed its lease as late as the last attempt that could have reached
// it, so a target is moved off an OSD only once the last attempt is older
// than the target grace (see docs/volumes.md for the timing argument).
// The record lives in the leader's memory: a new leader counts from the
// moment it began, as any attempt of its predecessor may have arrived.
//
// It also keeps which pods of each OSD the process's calls reached, and
// which of those the kubelet confirmed stopped: a target whose every pod
// is confirmed stopped serves no host any more, and moves without waiting
// out the grace (StoppedForCertain).
type Leases struct {
	mu      sync.Mutex
	began   time.Time
	serving map[string]bool
	tried   map[string]time.Time
	pods    map[string]*osdPods
}

// osdPods is what the process knows of the pods of one OSD.
type osdPods struct {
	pods map[types.UID]*reachedPod
	// unnamed is when the latest call was sent that an agent answered
	// without naming the pod it was meant for.
	unnamed time.Time
}

// reachedPod is what the process knows of an OSD pod its calls reached.
type reachedPod struct {
	// last is when the latest call to its agent was sent.
	last time.Time
	// checks says its agent named the pod in an answer: it refuses the
	// calls meant for other pods.
	checks bool
	// stopped says the pod is gone and the kubelet reported every one of
	// its containers terminated.
	stopped bool
}

// Begin starts the record: the process leads from now.
func (l *Leases) Begin(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.began = now
}

// Leading is how long this process has led at now; zero before Begin.
func (l *Leases) Leading(now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.began.IsZero() {
		return 0
	}
	return now.Sub(l.began)
}

// Serving says whether osd's lease is to be renewed: its agent answered
// ready at its last observation, and no renewal failed since.
func (l *Leases) Serving(osd string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.serving[osd]
}

// SetServing records osd's last observation: serving (its agent answered
// ready) or not; a failed renewal also stops the renewals until the next
// observation finds the OSD serving.
func (l *Leases) SetServing(osd string, serving bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.serving == nil {
		l.serving = map[string]bool{}
	}
	l.serving[osd] = serving
}

// Tried records a renewal of osd's lease sent at t, answered or not.
func (l *Leases) Tried(osd string, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tried == nil {
		l.tried = map[string]time.Time{}
	}
	l.tried[osd] = later(l.tried[osd], t)
}

// SinceLastTry is how long ago osd's lease may last have been renewed, as
// far as this process knows; zero before Begin.
func (l *Leases) SinceLastTry(osd string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.began.IsZero() {
		return 0
	}
	last := l.began
	if t := l.tried[osd]; t.After(last) {
		last = t
	}
	return now.Sub(last)
}

// Reached records a call sent at t to the agent of osd in pod uid. The
// records of osd's pods confirmed stopped are dropped: they no longer
// hold anything back.
func (l *Leases) Reached(osd string, uid types.UID, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o := l.osdPods(osd)
	for other, p := range o.pods {
		if other != uid && p.stopped {
			delete(o.pods, other)
		}
	}
	p := o.pods[uid]
	if p == nil {
		p = &reachedPod{}
		o.pods[uid] = p
	}
	p.last = later(p.last, t)
}

// Answered records an answer to a call sent at t to osd's pod uid: one
// that named the pod (its agent serves only the calls meant for it) or,
// named false, a success that named none, from an agent that may serve
// the calls meant for any pod at its address.
func (l *Leases) Answered(osd string, uid types.UID, named bool, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o := l.osdPods(osd)
	switch p := o.pods[uid]; {
	case !named:
		o.unnamed = later(o.unnamed, t)
	case p != nil:
		p.checks = true
	}
}

// Stopped records that osd's pod uid is gone and that the kubelet
// reported every one of its containers terminated: no process of it
// serves a host any more.
func (l *Leases) Stopped(osd string, uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if o := l.pods[osd]; o != nil && o.pods[uid] != nil {
		o.pods[uid].stopped = true
	}
}

// StoppedForCertain says whether osd's targets stopped for certain, so
// that one moves without waiting out the grace: this process has led for
// grace (an older leader's calls have lapsed), no agent answered a call
// for osd without naming the pod within grace, and every pod of osd its
// calls reached within grace, one at least, named itself in an answer
// and is confirmed stopped. A pod reached longer ago holds no lease
// renewed since, and fenced (see docs/volumes.md); its record is dropped.
func (l *Leases) StoppedForCertain(osd string, now time.Time, grace time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	o := l.pods[osd]
	if o == nil || l.began.IsZero() || now.Sub(l.began) < grace || now.Sub(o.unnamed) < grace {
		return false
	}
	confirmed := true
	reached := false
	for uid, p := range o.pods {
		if now.Sub(p.last) >= grace {
			delete(o.pods, uid)
			continue
		}
		reached = true
		confirmed = confirmed && p.checks && p.stopped
	}
	return reached && confirmed
}

// osdPods returns osd's record, made when there is none; l.mu held.
func (l *Leases) osdPods(osd string) *osdPods {
	if l.pods == nil {
		l.pods = map[string]*osdPods{}
	}
	o := l.pods[osd]
	if o == nil {
		o = &osdPods{pods: map[types.UID]*reachedPod{}}
		l.pods[osd] = o
	}
	return o
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
