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
	"slices"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// Agents reaches OSD agents for every controller: at their pod's IP,
// verifying that the certificate names the OSD, with every call meant for
// that pod alone and recorded in Leases.
type Agents struct {
	Reader    client.Reader
	Namespace string
	// Port is where agents serve gRPC; GRPCPort in pods.
	Port   int
	Dialer *Dialer
	Leases *Leases
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
	cc, err := a.Dialer.Conn(ctx, net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(a.Port)), ServerName(osd.Name))
	if err != nil {
		return nil, err
	}
	return agentv1.NewOSDAgentClient(podConn{ClientConnInterface: cc, osd: osd.Name, uid: pod.UID, leases: a.Leases}), nil
}

// podConn is the connection to the agent in one pod of an OSD: every call
// names the pod (agentv1.PodUIDHeader), is recorded as sent to it, and
// records whether the agent named the pod back. The agent API has no
// streams.
type podConn struct {
	grpc.ClientConnInterface
	osd    string
	uid    types.UID
	leases *Leases
}

func (c podConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	sent := time.Now()
	c.leases.Reached(c.osd, c.uid, sent)
	var header metadata.MD
	ctx = metadata.AppendToOutgoingContext(ctx, agentv1.PodUIDHeader, string(c.uid))
	err := c.ClientConnInterface.Invoke(ctx, method, args, reply, append(opts, grpc.Header(&header))...)
	if named := slices.Equal(header.Get(agentv1.PodUIDHeader), []string{string(c.uid)}); named || err == nil {
		c.leases.Answered(c.osd, c.uid, named, sent)
	}
	return err
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
