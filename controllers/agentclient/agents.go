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

package agentclient

import (
	"context"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// Agents reaches OSD agents for every controller: at their pod's IP,
// verifying that the certificate names the OSD.
type Agents struct {
	Reader    client.Reader
	Namespace string
	// Port is where agents serve gRPC; GRPCPort in pods.
	Port   int
	Dialer *Dialer
}

// For returns the client of osd's agent, or an error saying why its pod
// cannot be reached.
func (a *Agents) For(ctx context.Context, osd *flintv1.OSD) (agentv1.OSDAgentClient, error) {
	var pod corev1.Pod
	if err := a.Reader.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: PodName(osd)}, &pod); err != nil {
		return nil, fmt.Errorf("find the pod of OSD %s: %w", osd.Name, err)
	}
	return a.ForPod(ctx, osd, &pod)
}

// ForPod returns the client of osd's agent in pod.
func (a *Agents) ForPod(ctx context.Context, osd *flintv1.OSD, pod *corev1.Pod) (agentv1.OSDAgentClient, error) {
	if pod.Status.PodIP == "" || !pod.DeletionTimestamp.IsZero() {
		return nil, fmt.Errorf("pod %s of OSD %s does not run", pod.Name, osd.Name)
	}
	return a.Dialer.Agent(ctx, net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(a.Port)), ServerName(osd.Name))
}

// Forget drops the connections to osd's agent, such as when its pod is
// replaced.
func (a *Agents) Forget(osdName string) { a.Dialer.Forget(ServerName(osdName)) }

// PodName is the name of an OSD's pod.
func PodName(osd *flintv1.OSD) string { return "osd-" + osd.Name }

// ServerName is the name an agent's certificate is issued to and the
// operator verifies: it ties the certificate to one OSD, whatever its pod
// IP.
func ServerName(osdName string) string { return osdName + ".osd.flint.io" }
