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
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/csi/nvmeof"
)

// Follower moves a connected volume to new target paths.
type Follower interface {
	// Follow connects t's paths and drops the others, keeping device (the
	// namespace head in use) as it is; on error the old paths are kept.
	Follow(ctx context.Context, t Target, device string) error
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
	if err := f.Follow(ctx, t, vol.Device); err != nil {
		return err
	}
	vol.Target = t
	return n.state().save(vol)
}

// PathFollower watches the Volumes staged on this node and, when a
// Volume's target moves (same NQN, new endpoints), follows it. Volumes are
// followed independently: each is a key of a work queue served by
// several workers, so one volume whose new target does not answer does
// not hold up the others, and a failed follow is retried with back-off.
type PathFollower struct {
	Node     *Node
	Follower Follower
	// Cache holds Volumes; the node plugin needs only get/list/watch.
	Cache cache.Cache
	// Resync is how often every staged volume is checked without an event.
	Resync time.Duration
	// Workers is how many volumes are followed at once; zero means 4.
	Workers int
	Log     logr.Logger
}

// Run follows until ctx ends.
func (p *PathFollower) Run(ctx context.Context) error {
	informer, err := p.Cache.GetInformer(ctx, &flintv1.Volume{})
	if err != nil {
		return fmt.Errorf("watch Volumes: %w", err)
	}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](500*time.Millisecond, 30*time.Second))
	defer queue.ShutDown()
	notify := func(obj any) {
		if v, ok := obj.(*flintv1.Volume); ok {
			queue.Add(v.Name)
		}
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, obj any) { notify(obj) },
	}); err != nil {
		return err
	}
	workers := p.Workers
	if workers <= 0 {
		workers = 4
	}
	for range workers {
		go p.work(ctx, queue)
	}
	tick := time.NewTicker(p.Resync)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			ids, err := p.Node.state().ids()
			if err != nil {
				p.Log.Error(err, "List staged volumes")
			}
			for _, id := range ids {
				queue.Add(id)
			}
		}
	}
}

// work follows the volumes queue hands out until it shuts down.
func (p *PathFollower) work(ctx context.Context, queue workqueue.TypedRateLimitingInterface[string]) {
	for {
		id, shutdown := queue.Get()
		if shutdown {
			return
		}
		if err := p.sync(ctx, id); err != nil {
			p.Log.Error(err, "Follow the moved target (retried)", "volume", id)
			queue.AddRateLimited(id)
		} else {
			queue.Forget(id)
		}
		queue.Done(id)
	}
}

// sync follows volume id's target if it is staged here and has moved.
func (p *PathFollower) sync(ctx context.Context, id string) error {
	staged, err := p.Node.state().load(id)
	if err != nil || staged == nil {
		return err
	}
	vol := &flintv1.Volume{}
	if err := p.Cache.Get(ctx, client.ObjectKey{Name: id}, vol); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("read Volume: %w", err)
	}
	want, ok := followedOf(vol)
	if !ok || want.NQN != staged.Target.NQN || slices.Equal(want.Paths, staged.Target.Paths) {
		return nil
	}
	p.Log.Info("Target moved: following", "volume", id, "from", staged.Target.Paths, "to", want.Paths)
	began := time.Now()
	if err := p.Node.FollowTarget(ctx, p.Follower, want); err != nil {
		return err
	}
	p.Log.Info("Followed the moved target", "volume", id, "paths", want.Paths, "took", time.Since(began).Round(time.Millisecond).String())
	return nil
}

// targetOf is where the Volume's status says it is served.
func targetOf(vol *flintv1.Volume) (Target, bool) {
	st := vol.Status.Target
	if st == nil || len(st.Endpoints) == 0 {
		return Target{}, false
	}
	return Target{VolumeID: vol.Name, NQN: st.NQN, Paths: pathsOf(st.Endpoints)}, true
}

// pathsOf are the host paths to endpoints.
func pathsOf(endpoints []flintv1.Endpoint) []nvmeof.Path {
	var paths []nvmeof.Path
	for _, e := range endpoints {
		paths = append(paths, nvmeof.Path{Transport: string(e.Transport), Address: e.Address, Port: e.Port})
	}
	return paths
}

// followedOf is targetOf and, during a planned move, its standby, which
// the hosts connect to before the move: it serves nothing until then, and
// its paths join the device once it does.
func followedOf(vol *flintv1.Volume) (Target, bool) {
	t, ok := targetOf(vol)
	if st := vol.Status.Target; ok && st.Standby != nil {
		t.Paths = append(t.Paths, pathsOf(st.Standby.Endpoints)...)
	}
	return t, ok
}
