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
	"fmt"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// DisruptionBudgetName is the name of a Pool's PodDisruptionBudget.
func DisruptionBudgetName(pool string) string { return "flint-osds-" + pool }

// ensureDisruptionBudget keeps the Pool's PodDisruptionBudget: it lets no
// eviction take an OSD pod that has not stopped cleanly. A drain cordons
// the node first; the rollout stops the node's OSDs a failure domain at a
// time, the OSD controller marks each pod that stopped (LabelStopReady),
// and only then does the eviction, which the drain retries, go through.
// A pod that is not Ready may always go: it serves nothing.
func (r *Reconciler) ensureDisruptionBudget(ctx context.Context, pool *flintv1.Pool) error {
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: DisruptionBudgetName(pool.Name), Namespace: r.Namespace}}
	_, err := controllerutil.CreateOrPatch(ctx, r.Client, pdb, func() error {
		pdb.Labels = map[string]string{flintv1.LabelPool: pool.Name}
		pdb.Spec = policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			Selector: &metav1.LabelSelector{
				MatchLabels:      map[string]string{flintv1.LabelPool: pool.Name},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: flintv1.LabelStopReady, Operator: metav1.LabelSelectorOpDoesNotExist}},
			},
			UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow),
		}
		return controllerutil.SetControllerReference(pool, pdb, r.Scheme())
	})
	if err != nil {
		return fmt.Errorf("keep the Pool's PodDisruptionBudget %s/%s: %w", r.Namespace, pdb.Name, err)
	}
	return nil
}
