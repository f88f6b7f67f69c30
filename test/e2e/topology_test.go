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

package e2e

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flint-io/flint/test/e2e/lab"
)

// A StorageClass whose allowedTopologies names the workload node's zone
// binds a WaitForFirstConsumer claim for a Pod there: the node plugin
// reports the node's zone beside its name, so external-provisioner finds
// the node's topology within the class's. The PV may be used in that zone
// only. The Volume is near the Pod's node: the class's terms name no
// node, so CreateVolume leaves nearNode unset, and the Pod's publish sets
// it.
func TestAZonedClassBindsForItsPod(t *testing.T) {
	clients := inLab(t)
	if cluster.Worker == nil {
		t.Skip("no workload node")
	}
	needStorage(t)
	ctx := t.Context()
	c := flintClient(t)
	devPoolReady(t, clients, c)
	worker, err := clients.CoreV1().Nodes().Get(ctx, lab.WorkerNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	zone := worker.Labels[corev1.LabelTopologyZone]
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-zoned"}, Provisioner: "csi.flint.io",
		Parameters:        map[string]string{"pool": "dev"},
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
		AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: corev1.LabelTopologyZone, Values: []string{zone}}}}},
	}
	if _, err := clients.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createClaim(t, clients, "zoned", sc.Name, corev1.PersistentVolumeFilesystem)
	runToCompletion(t, clients, "zoned-writer", "zoned", "echo written > /data/file && sync /data/file")

	vol := volumeOfClaim(t, clients, c, "zoned")
	if vol.Spec.NearNode != lab.WorkerNode {
		t.Errorf("Volume %s for a Pod on %s is near %q", vol.Name, lab.WorkerNode, vol.Spec.NearNode)
	}
	pvc, err := clients.CoreV1().PersistentVolumeClaims("default").Get(ctx, "zoned", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := clients.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !allowsOnly(pv.Spec.NodeAffinity, corev1.LabelTopologyZone, zone) {
		t.Errorf("PV %s of a class allowed in zone %s has node affinity %+v, want that zone only", pv.Name, zone, pv.Spec.NodeAffinity)
	}
}

// allowsOnly says the node affinity requires label key to be value, in
// each of its terms.
func allowsOnly(a *corev1.VolumeNodeAffinity, key, value string) bool {
	if a == nil || a.Required == nil || len(a.Required.NodeSelectorTerms) == 0 {
		return false
	}
	for _, term := range a.Required.NodeSelectorTerms {
		if !slices.ContainsFunc(term.MatchExpressions, func(e corev1.NodeSelectorRequirement) bool {
			return e.Key == key && e.Operator == corev1.NodeSelectorOpIn && slices.Equal(e.Values, []string{value})
		}) {
			return false
		}
	}
	return true
}
