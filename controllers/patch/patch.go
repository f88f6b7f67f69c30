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

// Package patch writes the status of Flint's resources one way.
package patch

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Status writes obj's status, changed from before, only if nobody wrote
// obj since this reconcile read it or last wrote it: a merge patch
// replaces lists (conditions, replicas) whole, and one made from a stale
// cache would undo another's decisions. Nothing is written when nothing
// changed; written says whether it was. A conflict is returned as is: the
// reconcile ends and runs again on a fresh read.
func Status(ctx context.Context, c client.Client, before, obj client.Object) (written bool, err error) {
	if equality.Semantic.DeepEqual(before, obj) {
		return false, nil
	}
	base := before.DeepCopyObject().(client.Object)
	// obj's own writes since before (a finalizer, an earlier status
	// write) moved its resourceVersion: the lock holds from there.
	base.SetResourceVersion(obj.GetResourceVersion())
	if err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, err
	}
	return true, nil
}

// ConflictRetry is how soon an object whose write lost to another writer,
// or whose cache was behind, is looked at again.
const ConflictRetry = 200 * time.Millisecond

// OnConflict ends a reconcile whose write lost to another writer without
// an error: the object is decided again, shortly, from a fresh read.
func OnConflict(res ctrl.Result, err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: ConflictRetry}, nil
	}
	return res, err
}
