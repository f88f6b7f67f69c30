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
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/test/e2e/lab"
)

// A VolumeSnapshot of a PVC, taken through the chart's csi-snapshotter
// and external-snapshotter's snapshot controller as a cluster runs them,
// becomes a Flint Snapshot; a PVC restored from it is a Volume started
// from that Snapshot, and a Pod on the workload node reads back, through
// the kernel NVMe-oF host, the file the first Pod wrote.
func TestVolumeSnapshotRestores(t *testing.T) {
	clients := inLab(t)
	if cluster.Worker == nil {
		t.Skip("no workload node")
	}
	needStorage(t)
	if !haveImage("snapshot-controller") {
		t.Skip("no snapshot-controller image")
	}
	ctx := t.Context()
	c := flintClient(t)
	devPoolReady(t, clients, c)
	startSnapshotController(t, clients)

	createClaim(t, clients, "snap-source", chartClass, corev1.PersistentVolumeFilesystem)
	runToCompletion(t, clients, "snap-writer", "snap-source", "head -c 4194304 /dev/urandom > /data/blob && sha256sum /data/blob > /data/blob.sha256 && sync /data/blob /data/blob.sha256 && cat /data/blob.sha256")

	vs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
		"metadata": map[string]any{"name": "snap", "namespace": "default"},
		"spec": map[string]any{
			"volumeSnapshotClassName": "flint",
			"source":                  map[string]any{"persistentVolumeClaimName": "snap-source"},
		},
	}}
	if err := c.Create(ctx, vs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(vs), vs); err != nil {
			return err
		}
		if ready, _, _ := unstructured.NestedBool(vs.Object, "status", "readyToUse"); !ready {
			return fmt.Errorf("VolumeSnapshot snap is not ready to use: %v", vs.Object["status"])
		}
		return nil
	})
	content, _, _ := unstructured.NestedString(vs.Object, "status", "boundVolumeSnapshotContentName")
	var snaps flintv1.SnapshotList
	if err := c.List(ctx, &snaps); err != nil {
		t.Fatal(err)
	}
	if len(snaps.Items) != 1 || !snaps.Items[0].Status.ReadyToUse {
		t.Fatalf("Flint Snapshots after the VolumeSnapshot: %+v, want one ready to use", snaps.Items)
	}
	t.Logf("VolumeSnapshot snap (content %s) is Snapshot %s: %d copies, the volume's I/O paused %s", content, snaps.Items[0].Name, len(snaps.Items[0].Status.Copies), snaps.Items[0].Status.PauseDuration.Duration)

	restored := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "snap-restored", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(chartClass),
			VolumeMode:       ptr.To(corev1.PersistentVolumeFilesystem),
			DataSource:       &corev1.TypedLocalObjectReference{APIGroup: ptr.To("snapshot.storage.k8s.io"), Kind: "VolumeSnapshot", Name: "snap"},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: readSize(t, clients, "snap-source")}},
		},
	}
	if _, err := clients.CoreV1().PersistentVolumeClaims("default").Create(ctx, restored, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runToCompletion(t, clients, "snap-reader", "snap-restored", "sha256sum -c /data/blob.sha256")
	vol := volumeOfClaim(t, clients, c, "snap-restored")
	if vol.Spec.Source == nil || vol.Spec.Source.Snapshot != snaps.Items[0].Name {
		t.Errorf("the restored Volume's source = %+v, want Snapshot %s", vol.Spec.Source, snaps.Items[0].Name)
	}
}

// readSize is the capacity a bound PVC got.
func readSize(t *testing.T, clients *kubernetes.Clientset, claim string) resource.Quantity {
	t.Helper()
	pvc, err := clients.CoreV1().PersistentVolumeClaims("default").Get(t.Context(), claim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pvc.Status.Capacity[corev1.ResourceStorage]
}

// startSnapshotController runs external-snapshotter's snapshot controller
// on the storage node with the rules its release gives it, as a cluster
// runs it beside any CSI driver's snapshots, unless an earlier test did.
func startSnapshotController(t *testing.T, clients *kubernetes.Clientset) {
	t.Helper()
	ctx := t.Context()
	const name, ns = "snapshot-controller", "kube-system"
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"persistentvolumes"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get", "list", "watch", "update"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"list", "watch", "create", "update", "patch"}},
		{APIGroups: []string{"snapshot.storage.k8s.io"}, Resources: []string{"volumesnapshotclasses"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"snapshot.storage.k8s.io"}, Resources: []string{"volumesnapshotcontents"}, Verbs: []string{"create", "get", "list", "watch", "update", "delete", "patch"}},
		{APIGroups: []string{"snapshot.storage.k8s.io"}, Resources: []string{"volumesnapshotcontents/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{"snapshot.storage.k8s.io"}, Resources: []string{"volumesnapshots"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		{APIGroups: []string{"snapshot.storage.k8s.io"}, Resources: []string{"volumesnapshots/status"}, Verbs: []string{"update", "patch"}},
	}
	meta := metav1.ObjectMeta{Name: name, Namespace: ns}
	if _, err := clients.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := clients.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
	}
	if _, err := clients.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	labels := map[string]string{"app": name}
	dep := &appsv1.Deployment{
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: name,
					NodeSelector:       map[string]string{corev1.LabelHostname: lab.StorageNode},
					Containers: []corev1.Container{{
						Name: name, Image: lab.SnapshotControllerImage,
						Args: []string{"--v=2", "--leader-election=false"},
					}},
				},
			},
		},
	}
	if _, err := clients.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, func() error {
		d, err := clients.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if d.Status.AvailableReplicas < 1 {
			return fmt.Errorf("the snapshot controller is not available: %s", podStates(t, clients))
		}
		return nil
	})
}
