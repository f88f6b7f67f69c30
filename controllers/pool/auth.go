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

package pool

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/dhchap"
)

// ensureReplicaAuth makes the Secret whose keys every replica link of the
// Pool authenticates with, both ways: a target proves one to a replica's
// export, the export the other back. Only the operator and the Pool's
// OSDs know them, so a process that knows a target's host NQN cannot
// reach a replica and write around its raid1. A Secret deleted is made
// again with new keys; the Volumes give them to both ends of each link
// on their next pass.
func (r *Reconciler) ensureReplicaAuth(ctx context.Context, pool *flintv1.Pool) error {
	key := client.ObjectKey{Namespace: r.Namespace, Name: flintv1.ReplicaAuthSecretName(pool.Name)}
	_, err := dhchap.Ensure(ctx, r.Client, r.Scheme(), key, pool, map[string]string{flintv1.LabelPool: pool.Name})
	return err
}
