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
	"maps"
	"slices"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// ledger keeps, per Pool and OSD, the bytes of the Volumes with a
// replica there, as the cache's events and this process's placements
// change them. A placement reads a Pool's sums instead of summing every
// Volume of the Pool: at 10,000 Volumes that listing was most of a
// placement's cost, and placements run one at a time.
type ledger struct {
	mu      sync.Mutex
	volumes map[string]commitment
	// committed sums, per Pool, per OSD, the sizes of volumes' entries.
	committed map[string]map[string]int64
	// synced says whether the cache's events so far include every Volume
	// that existed when they started.
	synced func() bool
}

// commitment is what one Volume holds: size bytes on each of osds.
type commitment struct {
	pool string
	size int64
	osds []string
	// placed marks osds as this process's placement, written or about to
	// be: the cache's older status does not replace them.
	placed bool
}

// handler is the ledger's view of the Volume cache's events.
func (l *ledger) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { l.observed(obj) },
		UpdateFunc: func(_, obj any) { l.observed(obj) },
		DeleteFunc: func(obj any) {
			if gone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = gone.Obj
			}
			if v, ok := obj.(*flintv1.Volume); ok {
				l.set(v.Name, nil)
			}
		},
	}
}

// observed takes a Volume as the cache has it: its size, and its replicas
// unless this process placed them.
func (l *ledger) observed(obj any) {
	v, ok := obj.(*flintv1.Volume)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c := commitment{pool: v.Spec.Pool, size: v.Spec.Size.Value()}
	if had, ok := l.volumes[v.Name]; ok && had.placed {
		c.osds, c.placed = had.osds, true
	} else {
		c.osds = replicaOSDs(v)
	}
	l.setLocked(v.Name, &c)
}

// place records vol's replicas as this process decided them, ahead of
// the cache.
func (l *ledger) place(vol *flintv1.Volume) {
	l.set(vol.Name, &commitment{pool: vol.Spec.Pool, size: vol.Spec.Size.Value(), osds: replicaOSDs(vol), placed: true})
}

// release lets the cache's status stand for the Volume's replicas again:
// this process no longer acts on it.
func (l *ledger) release(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.volumes[name]; ok {
		c.placed = false
		l.volumes[name] = c
	}
}

// sums is a copy of the bytes committed per OSD of pool; ok is false until
// the ledger has seen every Volume the cache started with.
func (l *ledger) sums(pool string) (sums map[string]int64, ok bool) {
	if l.synced == nil || !l.synced() {
		return nil, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.committed[pool]), true
}

func (l *ledger) set(name string, c *commitment) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setLocked(name, c)
}

// setLocked replaces the Volume's entry by c (none when c is nil),
// moving its bytes in the sums.
func (l *ledger) setLocked(name string, c *commitment) {
	if l.volumes == nil {
		l.volumes, l.committed = map[string]commitment{}, map[string]map[string]int64{}
	}
	if old, ok := l.volumes[name]; ok {
		l.add(old, -1)
		delete(l.volumes, name)
	}
	if c != nil {
		l.volumes[name] = *c
		l.add(*c, 1)
	}
}

func (l *ledger) add(c commitment, sign int64) {
	sums := l.committed[c.pool]
	if sums == nil {
		sums = map[string]int64{}
		l.committed[c.pool] = sums
	}
	for _, o := range c.osds {
		sums[o] += sign * c.size
		if sums[o] == 0 {
			delete(sums, o)
		}
	}
}

// replicaOSDs lists the OSDs of vol's replicas.
func replicaOSDs(vol *flintv1.Volume) []string {
	osds := make([]string, 0, len(vol.Status.Replicas))
	for _, rep := range vol.Status.Replicas {
		osds = append(osds, rep.OSD)
	}
	return slices.Clip(osds)
}
