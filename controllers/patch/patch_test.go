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

package patch

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// A status is written only when it changed, and only over the version it
// was decided from: a write from a stale read is refused, not merged.
func TestStatusWritesChangesOverTheVersionRead(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := flintv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	writes := 0
	c := interceptor.NewClient(
		fake.NewClientBuilder().WithScheme(scheme).WithObjects(&flintv1.Pool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}).WithStatusSubresource(&flintv1.Pool{}).Build(),
		interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			writes++
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		}})
	var pool flintv1.Pool
	if err := c.Get(ctx, client.ObjectKey{Name: "p"}, &pool); err != nil {
		t.Fatal(err)
	}
	stale := pool.DeepCopy()

	if written, err := Status(ctx, c, pool.DeepCopy(), &pool); err != nil || written || writes != 0 {
		t.Fatalf("an unchanged status: written %v, err %v, %d writes; want none", written, err, writes)
	}
	before := pool.DeepCopy()
	pool.Status.Volumes = 2
	if written, err := Status(ctx, c, before, &pool); err != nil || !written {
		t.Fatalf("a changed status: written %v, err %v", written, err)
	}
	before = pool.DeepCopy()
	pool.Status.Volumes = 3
	if written, err := Status(ctx, c, before, &pool); err != nil || !written {
		t.Fatalf("a second write over this reconcile's own: written %v, err %v", written, err)
	}
	var got flintv1.Pool
	if err := c.Get(ctx, client.ObjectKey{Name: "p"}, &got); err != nil || got.Status.Volumes != 3 {
		t.Fatalf("read back %d volumes (%v), want 3", got.Status.Volumes, err)
	}

	staleBefore := stale.DeepCopy()
	stale.Status.Volumes = 1
	written, err := Status(ctx, c, staleBefore, stale)
	if !apierrors.IsConflict(err) || written {
		t.Fatalf("a write from a stale read: %v, want a conflict", err)
	}
	if res, err := OnConflict(ctrl.Result{}, err); err != nil || res.RequeueAfter != ConflictRetry {
		t.Errorf("a conflict ends the reconcile with %+v, %v; want a requeue after %s", res, err, ConflictRetry)
	}
	other := errors.New("apiserver down")
	if _, err := OnConflict(ctrl.Result{}, other); !errors.Is(err, other) {
		t.Errorf("another error is returned as is, got %v", err)
	}
}
