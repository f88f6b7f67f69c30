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

package csi

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// VolumeEvents wakes calls waiting on a Volume when the informer that
// fills the controller's cache sees it change, so a wait costs no
// apiserver reads and ends as soon as the cache shows what it waits for.
type VolumeEvents struct {
	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
}

// Changed wakes the waits on Volume name. A waiter that has not looked
// yet keeps one pending wake-up, so no change between two looks is lost.
func (e *VolumeEvents) Changed(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for ch := range e.waiters[name] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// watch returns a channel that receives after Volume name changes, until
// stop is called. Watch before reading, so a change right after the read
// is not missed.
func (e *VolumeEvents) watch(name string) (changed <-chan struct{}, stop func()) {
	ch := make(chan struct{}, 1)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.waiters == nil {
		e.waiters = map[string]map[chan struct{}]struct{}{}
	}
	if e.waiters[name] == nil {
		e.waiters[name] = map[chan struct{}]struct{}{}
	}
	e.waiters[name][ch] = struct{}{}
	return ch, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		delete(e.waiters[name], ch)
		if len(e.waiters[name]) == 0 {
			delete(e.waiters, name)
		}
	}
}

// Handler feeds e from an informer of Volumes.
func (e *VolumeEvents) Handler() toolscache.ResourceEventHandler {
	changed := func(obj any) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if v, ok := obj.(*flintv1.Volume); ok {
			e.Changed(v.Name)
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: func(_, obj any) { changed(obj) },
		DeleteFunc: changed,
	}
}

// recheck is how often a wait reads the cache again with no event: a
// safety net, not the way waits end.
const recheck = 5 * time.Second

// NewClusterController returns the controller of the cluster cfg names:
// Volumes and Pools are read from an informer cache (start it, and wait
// for it to sync, before serving), names just created from the apiserver,
// and waits end on the cache's Volume events.
func NewClusterController(cfg *rest.Config, scheme *runtime.Scheme, maxWait time.Duration) (*Controller, cache.Cache, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, err
	}
	inf, err := c.GetInformer(context.Background(), &flintv1.Volume{})
	if err != nil {
		return nil, nil, fmt.Errorf("watch Volumes: %w", err)
	}
	events := &VolumeEvents{}
	if _, err := inf.AddEventHandler(events.Handler()); err != nil {
		return nil, nil, err
	}
	cached, err := client.New(cfg, client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: c}})
	if err != nil {
		return nil, nil, err
	}
	live, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, err
	}
	return &Controller{Client: cached, APIReader: live, Events: events, PollInterval: recheck, MaxWait: maxWait}, c, nil
}
