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
	"slices"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/csi/nvmeof"
)

// Follower moves a connected volume to new target paths.
type Follower interface {
	Follow(ctx context.Context, t Target) error
}

// FollowTarget connects the volume staged here to t's paths and drops its
// other paths. It is what the PathFollower does when a Volume's target
// moves.
func (n *Node) FollowTarget(ctx context.Context, f Follower, t Target) error {
	unlock, err := n.locks.lock(t.VolumeID)
	if err != nil {
		return err
	}
	defer unlock()
	vol, err := n.state().load(t.VolumeID)
	if err != nil || vol == nil {
		return err
	}
	if err := f.Follow(ctx, t); err != nil {
		return err
	}
	vol.Target = t
	return n.state().save(vol)
}

// PathFollower watches the Volumes staged on this node and, when a
// Volume's target moves (same NQN, new endpoints), follows it.
type PathFollower struct {
	Node     *Node
	Follower Follower
	// Cache holds Volumes; the node plugin needs only get/list/watch.
	Cache cache.Cache
	// Resync is how often every staged volume is checked without an event
	// (a path that failed to connect is retried).
	Resync time.Duration
	Log    logr.Logger
}

// Run follows until ctx ends.
func (p *PathFollower) Run(ctx context.Context) error {
	informer, err := p.Cache.GetInformer(ctx, &flintv1.Volume{})
	if err != nil {
		return fmt.Errorf("watch Volumes: %w", err)
	}
	changed := make(chan string, 64)
	notify := func(obj any) {
		if v, ok := obj.(*flintv1.Volume); ok {
			select {
			case changed <- v.Name:
			default: // the resync catches up
			}
		}
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, obj any) { notify(obj) },
	}); err != nil {
		return err
	}
	tick := time.NewTicker(p.Resync)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case id := <-changed:
			p.sync(ctx, id)
		case <-tick.C:
			ids, err := p.Node.state().ids()
			if err != nil {
				p.Log.Error(err, "list staged volumes")
			}
			for _, id := range ids {
				p.sync(ctx, id)
			}
		}
	}
}

// sync follows volume id's target if it is staged here and has moved.
func (p *PathFollower) sync(ctx context.Context, id string) {
	staged, err := p.Node.state().load(id)
	if err != nil || staged == nil {
		return
	}
	vol := &flintv1.Volume{}
	if err := p.Cache.Get(ctx, client.ObjectKey{Name: id}, vol); err != nil {
		if !apierrors.IsNotFound(err) {
			p.Log.Error(err, "read Volume", "volume", id)
		}
		return
	}
	want, ok := targetOf(vol)
	if !ok || want.NQN != staged.Target.NQN || slices.Equal(want.Paths, staged.Target.Paths) {
		return
	}
	p.Log.Info("target moved: following", "volume", id, "from", staged.Target.Paths, "to", want.Paths)
	if err := p.Node.FollowTarget(ctx, p.Follower, want); err != nil {
		p.Log.Error(err, "follow the moved target (retried)", "volume", id)
	}
}

// targetOf is where the Volume's status says it is served.
func targetOf(vol *flintv1.Volume) (Target, bool) {
	st := vol.Status.Target
	if st == nil || len(st.Endpoints) == 0 {
		return Target{}, false
	}
	t := Target{VolumeID: vol.Name, NQN: st.NQN}
	for _, e := range st.Endpoints {
		t.Paths = append(t.Paths, nvmeof.Path{Transport: string(e.Transport), Address: e.Address, Port: e.Port})
	}
	return t, true
}
