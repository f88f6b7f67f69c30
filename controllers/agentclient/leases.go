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
)

// Leases is the operator's side of the OSDs' leases: which OSDs it keeps
// serving, and when it last tried to renew each. An OSD's agent may have
// renewed its lease as late as the last attempt that could have reached
// it, so a target is moved off an OSD only once the last attempt is older
// than the target grace (see docs/volumes.md for the timing argument).
// The record lives in the leader's memory: a new leader counts from the
// moment it began, as any attempt of its predecessor may have arrived.
type Leases struct {
	mu      sync.Mutex
	began   time.Time
	serving map[string]bool
	tried   map[string]time.Time
}

// Begin starts the record: the process leads from now.
func (l *Leases) Begin(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.began = now
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
	l.tried[osd] = t
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
