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

package osd

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/agentclient"
)

// A deleted OSD that no Volume uses but that holds a Snapshot's last copy
// stays, saying which Snapshot holds it; a Lost copy, or one with another
// copy elsewhere, holds nothing.
func TestDeletionWaitsForSnapshotCopies(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = flintv1.AddToScheme(scheme)
	now := metav1.Now()
	osd := &flintv1.OSD{ObjectMeta: metav1.ObjectMeta{Name: "osd-a", Finalizers: []string{Finalizer}, DeletionTimestamp: &now}}
	snap := func(name string, here, elsewhere flintv1.SnapshotCopyState) *flintv1.Snapshot {
		return &flintv1.Snapshot{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Status:     flintv1.SnapshotStatus{Copies: []flintv1.SnapshotCopy{{OSD: "osd-a", State: here}, {OSD: "osd-b", State: elsewhere}}},
		}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&flintv1.OSD{}).WithObjects(osd,
		snap("kept", flintv1.SnapshotCopyReady, flintv1.SnapshotCopyLost),
		snap("gone", flintv1.SnapshotCopyLost, flintv1.SnapshotCopyLost),
		snap("elsewhere", flintv1.SnapshotCopyReady, flintv1.SnapshotCopyReady)).Build()
	r := &Reconciler{Client: c, Recorder: events.NewFakeRecorder(10), Pods: PodConfig{Namespace: "flint"}, Agents: &agentclient.Agents{Dialer: &agentclient.Dialer{}, Leases: &agentclient.Leases{}}}
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: "osd-a"}}); err != nil {
		t.Fatal(err)
	}
	var got flintv1.OSD
	if err := c.Get(context.Background(), client.ObjectKey{Name: "osd-a"}, &got); err != nil {
		t.Fatalf("the OSD holding a copy of Snapshot kept went: %v", err)
	}
	if !controllerutil.ContainsFinalizer(&got, Finalizer) {
		t.Fatal("the finalizer of an OSD holding a Snapshot copy was removed")
	}
	cond := meta.FindStatusCondition(got.Status.Conditions, flintv1.DeletionBlockedCondition)
	if cond == nil || cond.Reason != flintv1.OSDHoldsSnapshotCopiesReason || !strings.Contains(cond.Message, "kept") || strings.Contains(cond.Message, "gone") || strings.Contains(cond.Message, "elsewhere") {
		t.Fatalf("DeletionBlocked = %+v, want %s naming Snapshot kept only (its last copy is here)", cond, flintv1.OSDHoldsSnapshotCopiesReason)
	}
}
