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
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/test/e2e/lab"
)

// hostAuthParameters are the StorageClass parameters that make a Volume's
// hosts authenticate (DH-HMAC-CHAP), as the chart's
// storageClass.hostAuthentication writes them: the kubelet hands the node
// plugin the Volume's Secret at stage and at every republish.
func hostAuthParameters() map[string]string {
	secret := flintv1.HostAuthSecretName("${pv.name}")
	return map[string]string{
		"hostAuthentication":                               string(flintv1.HostAuthenticationDHHMACCHAP),
		"csi.storage.k8s.io/node-stage-secret-name":        secret,
		"csi.storage.k8s.io/node-stage-secret-namespace":   namespace,
		"csi.storage.k8s.io/node-publish-secret-name":      secret,
		"csi.storage.k8s.io/node-publish-secret-namespace": namespace,
	}
}

// onlyItsNodeReadsTheKeys checks that vol authenticates its hosts and
// that, of the lab's nodes, only the workload node, where a Pod uses the
// Volume, may read its keys, not the storage nodes that hold its
// replicas: the API server's Node authorizer allows a kubelet a Secret
// only through a PersistentVolume of a Pod bound to it.
func onlyItsNodeReadsTheKeys(t *testing.T, clients *kubernetes.Clientset, vol *flintv1.Volume) {
	t.Helper()
	if !vol.AuthenticatesHosts() {
		t.Fatalf("Volume %s has spec.hostAuthentication %q, want %s", vol.Name, vol.Spec.HostAuthentication, flintv1.HostAuthenticationDHHMACCHAP)
	}
	secret := flintv1.HostAuthSecretName(vol.Name)
	if _, err := clients.CoreV1().Secrets(namespace).Get(t.Context(), secret, metav1.GetOptions{}); err != nil {
		t.Fatalf("the Volume's Secret: %v", err)
	}
	for node, want := range map[string]bool{lab.WorkerNode: true, lab.StorageNode: false, lab.SecondStorageNodeName: false} {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   "system:node:" + node,
			Groups: []string{"system:nodes", "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: namespace, Verb: "get", Resource: "secrets", Name: secret,
			},
		}}
		got, err := clients.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), review, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allowed != want {
			t.Errorf("node %s may read Secret %s: %v (%s), want %v", node, secret, got.Status.Allowed, got.Status.Reason, want)
		}
	}
	t.Logf("Volume %s authenticates its hosts; only %s, which runs its Pod, may read %s", vol.Name, lab.WorkerNode, secret)
}
