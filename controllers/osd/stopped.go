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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/agentclient"
)

// recordStoppedPods records in leases every OSD pod that leaves the
// apiserver stopped by the kubelet's own word, which lets a target on it
// move at once rather than after the target grace.
func recordStoppedPods(leases *agentclient.Leases) handler.Funcs {
	return handler.Funcs{
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			pod, ok := e.Object.(*corev1.Pod)
			if ok && !e.DeleteStateUnknown && stoppedByTheKubelet(pod) {
				leases.Stopped(pod.Labels[flintv1.LabelOSD], pod.UID)
			}
		},
	}
}

// deletionByPodGC is the reason of the DisruptionTarget condition the pod
// garbage collector writes (k8s.io/api names no constant for it).
const deletionByPodGC = "DeletionByPodGC"

// stoppedByTheKubelet says whether pod, as it was when it left the
// apiserver, was stopped by its kubelet: the kubelet removes a pod it
// ran only after writing a terminal phase and every container
// terminated. A pod deleted by force keeps the states its kubelet last
// wrote, and nothing says its processes ended. The pod garbage collector
// (a node that is gone, or tainted out-of-service) writes a terminal
// phase itself over the kubelet's last container states, which may say
// terminated just before the kubelet restarted them: its mark, a
// DisruptionTarget condition, refuses the pod.
func stoppedByTheKubelet(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodFailed && pod.Status.Phase != corev1.PodSucceeded {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Reason == deletionByPodGC {
			return false
		}
	}
	if len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for _, c := range pod.Status.ContainerStatuses {
		if c.State.Terminated == nil {
			return false
		}
	}
	return true
}
