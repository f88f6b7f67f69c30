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

package snapshot

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/agentclient"
	"github.com/flint-io/flint/internal/keylock"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// A reconcile that reads, from a cache behind the apiserver, the Cutting
// copies of a cut that has since finished leaves the copies alone: it
// never reaches for an agent to delete one.
func TestStaleCutIsNotUndone(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = flintv1.AddToScheme(scheme)
	snapshot := func(version string, state flintv1.SnapshotCopyState) *flintv1.Snapshot {
		return &flintv1.Snapshot{
			ObjectMeta: metav1.ObjectMeta{Name: "s", UID: "uid-s", ResourceVersion: version, Finalizers: []string{flintv1.SnapshotFinalizer}},
			Spec:       flintv1.SnapshotSpec{Volume: "v"},
			Status:     flintv1.SnapshotStatus{Copies: []flintv1.SnapshotCopy{{OSD: "osd-a", State: state}}},
		}
	}
	osd := &flintv1.OSD{ObjectMeta: metav1.ObjectMeta{Name: "osd-a", UID: "uid-osd-a"}, Status: flintv1.OSDStatus{Phase: flintv1.OSDPhaseReady}}
	cached := fake.NewClientBuilder().WithScheme(scheme).WithObjects(snapshot("7", flintv1.SnapshotCopyCutting), osd).
		WithStatusSubresource(&flintv1.Snapshot{}).Build()
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(snapshot("8", flintv1.SnapshotCopyReady)).Build()
	var reached []string
	pods := interceptor.NewClient(cached, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*corev1.Pod); ok {
			reached = append(reached, key.Name)
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	r := &Reconciler{
		Client: cached, APIReader: live, Recorder: events.NewFakeRecorder(10),
		Agents: &agentclient.Agents{Reader: pods, Namespace: "flint", Leases: &agentclient.Leases{}}, Locks: &keylock.Locks{},
	}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: "s"}}); err != nil {
		t.Fatal(err)
	}
	if len(reached) > 0 {
		t.Fatalf("a stale reconcile reached for the agents of %v to undo a cut the apiserver has as finished", reached)
	}
}

// resumeFails is an agent whose ResumeTarget fails, as when its target's
// SPDK restarted during the cut.
type resumeFails struct {
	agentv1.OSDAgentClient
	err error
}

func (a resumeFails) ResumeTarget(context.Context, *agentv1.ResumeTargetRequest, ...grpc.CallOption) (*agentv1.ResumeTargetResponse, error) {
	return &agentv1.ResumeTargetResponse{}, a.err
}

// A target that does not resume after a cut has its Volume driven at
// once: a Ready Volume is not driven on a timer, and its hosts wait for
// the listener EnsureTarget adds back.
func TestAFailedResumeDrivesTheVolume(t *testing.T) {
	vol := &flintv1.Volume{ObjectMeta: metav1.ObjectMeta{Name: "v", UID: "uid-v"}}
	snap := &flintv1.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
	for _, tc := range []struct {
		name  string
		err   error
		drive bool
	}{
		{"resumed", nil, false},
		{"not resumed", status.Error(codes.Unavailable, "SPDK does not answer"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			observe := make(chan event.GenericEvent, 1)
			r := &Reconciler{Recorder: events.NewFakeRecorder(10), ObserveVolume: observe}
			r.resume(context.Background(), resumeFails{err: tc.err}, snap, vol)
			select {
			case e := <-observe:
				if !tc.drive || e.Object.GetName() != vol.Name {
					t.Fatalf("drove %s, want the Volume driven: %v", e.Object.GetName(), tc.drive)
				}
			default:
				if tc.drive {
					t.Fatal("the target did not resume and its Volume was not driven")
				}
			}
		})
	}
}

// One Volume's Snapshots go one at a time, whatever the workers: the
// deletion of one waits while its Volume is locked (by the cut of another,
// since SPDK refuses to snapshot an lvol while it deletes one of the lvol's
// snapshots), and a Snapshot of another Volume does not wait.
func TestAVolumesSnapshotsGoOneAtATime(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = flintv1.AddToScheme(scheme)
	deleted := func(name, volume string) *flintv1.Snapshot {
		return &flintv1.Snapshot{
			ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{flintv1.SnapshotFinalizer}, DeletionTimestamp: &metav1.Time{Time: time.Now()}},
			Spec:       flintv1.SnapshotSpec{Volume: volume},
			// Its OSD is gone, and the copy with it: no agent is asked.
			Status: flintv1.SnapshotStatus{Copies: []flintv1.SnapshotCopy{{OSD: "gone", State: flintv1.SnapshotCopyReady}}},
		}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(deleted("of-v", "v"), deleted("of-w", "w")).
		WithStatusSubresource(&flintv1.Snapshot{}).Build()
	locks := &keylock.Locks{}
	r := &Reconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(10), Locks: locks}
	reconcile := func(ctx context.Context, name string) (gone bool, err error) {
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: name}}); err != nil {
			return false, err
		}
		err = c.Get(context.Background(), client.ObjectKey{Name: name}, &flintv1.Snapshot{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}

	unlock, err := locks.Lock(context.Background(), "v") // a cut of v runs
	if err != nil {
		t.Fatal(err)
	}
	waiting, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if gone, err := reconcile(waiting, "of-v"); gone || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a Snapshot of v was deleted (%v, %v) while a cut of v held the Volume", gone, err)
	}
	if gone, err := reconcile(context.Background(), "of-w"); !gone || err != nil {
		t.Fatalf("a Snapshot of w waited on v's cut: gone %v, %v", gone, err)
	}
	unlock()
	if gone, err := reconcile(context.Background(), "of-v"); !gone || err != nil {
		t.Fatalf("a Snapshot of v was not deleted once the cut ended: gone %v, %v", gone, err)
	}
}
