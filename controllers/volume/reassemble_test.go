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

package volume

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/agentclient"
	"github.com/flint-io/flint/internal/pki"
	"github.com/flint-io/flint/internal/pki/pkitest"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// restartingAgent answers for one OSD's replica. On the target's OSD, SPDK
// restarts during the first EnsureTarget, after the pass confirmed the
// replicas and before the raid was looked up: the call fails ABORTED and
// the replica went with the device.
type restartingAgent struct {
	agentv1.UnimplementedOSDAgentServer
	ip string

	mu       sync.Mutex
	lost     bool
	requests []*agentv1.EnsureTargetRequest
}

func (a *restartingAgent) ResizeReplica(context.Context, *agentv1.ResizeReplicaRequest) (*agentv1.Replica, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lost {
		return nil, status.Error(codes.NotFound, "no replica of the volume on this OSD")
	}
	return &agentv1.Replica{}, nil
}

func (a *restartingAgent) ExportReplica(_ context.Context, req *agentv1.ExportReplicaRequest) (*agentv1.Export, error) {
	if req.Epoch == 0 {
		return nil, status.Error(codes.InvalidArgument, "the export of the replica needs the target's epoch (from 1)")
	}
	return &agentv1.Export{Nqn: agentv1.ReplicaNQN(req.VolumeUid, "3f1e0c5a-8a4e-4d0b-9a53-0c7c2f1a9e11"), Transport: "tcp", Address: a.ip, Port: 4420}, nil
}

func (a *restartingAgent) EnsureTarget(_ context.Context, req *agentv1.EnsureTargetRequest) (*agentv1.TargetStatus, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests = append(a.requests, req)
	if len(a.requests) == 1 {
		a.lost = true
		return nil, status.Error(codes.Aborted, "the raid of the volume is gone (SPDK restarted)")
	}
	return &agentv1.TargetStatus{Export: &agentv1.Export{Nqn: agentv1.VolumeNQN(req.VolumeUid), Transport: "tcp", Address: a.ip, Port: 4420}}, nil
}

// A target whose SPDK restarts between the pass confirming the replicas
// and driving the target is re-assembled from a replica confirmed after
// the loss, not from its own, which the restart took.
func TestATargetLostMidPassIsReassembledFromAReplicaConfirmedAfterTheLoss(t *testing.T) {
	clientCfg, serverCfg := agentTLS(t)
	ips := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}
	agents := map[string]*restartingAgent{}
	var port string
	for i, ip := range ips {
		name := "osd-" + strconv.Itoa(i)
		a := &restartingAgent{ip: ip}
		agents[name] = a
		lis, err := net.Listen("tcp", net.JoinHostPort(ip, port))
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ = net.SplitHostPort(lis.Addr().String())
		s := grpc.NewServer(grpc.Creds(credentials.NewTLS(serverCfg(name))))
		agentv1.RegisterOSDAgentServer(s, a)
		go func() { _ = s.Serve(lis) }()
		t.Cleanup(s.Stop)
	}
	portNum, _ := strconv.Atoi(port)

	builder := fake.NewClientBuilder().WithScheme(testScheme()).WithStatusSubresource(&flintv1.Volume{})
	w, vol := servingOSDs(builder, ips)
	c := builder.WithObjects(vol.DeepCopy()).Build()
	ctx := context.Background()
	if err := c.Get(ctx, client.ObjectKeyFromObject(vol), vol); err != nil {
		t.Fatal(err)
	}

	r := &Reconciler{
		Client: c, Namespace: "flint", Recorder: events.NewFakeRecorder(10),
		Agents: &agentclient.Agents{Reader: c, Namespace: "flint", Port: portNum, Leases: &agentclient.Leases{}, Dialer: &agentclient.Dialer{
			TLS: func(context.Context) (*tls.Config, error) { return clientCfg, nil },
		}},
	}
	if _, p := r.drive(ctx, vol, w); p != nil {
		t.Fatalf("drive: %s: %s", p.reason, p.message)
	}

	var recorded flintv1.Volume
	if err := c.Get(ctx, client.ObjectKeyFromObject(vol), &recorded); err != nil {
		t.Fatal(err)
	}
	states := map[string]flintv1.ReplicaState{}
	for _, rep := range recorded.Status.Replicas {
		states[rep.OSD] = rep.State
	}
	if states["osd-0"] != flintv1.ReplicaStateFaulted {
		t.Errorf("the target's replica, gone with its SPDK, is recorded %s; want Faulted (%v)", states["osd-0"], states)
	}
	online := 0
	for _, name := range []string{"osd-1", "osd-2"} {
		if states[name] == flintv1.ReplicaStateOnline {
			online++
		}
	}
	if online != 1 || recorded.Status.Target.Epoch != 2 {
		t.Errorf("recorded %v at epoch %d; want one replica off the target Online (the source), the other Stale, at epoch 2", states, recorded.Status.Target.Epoch)
	}

	target := agents["osd-0"]
	target.mu.Lock()
	defer target.mu.Unlock()
	if len(target.requests) != 2 {
		t.Fatalf("the target was asked %d times; want the resume, then the re-assembly", len(target.requests))
	}
	var inSync []string
	for _, m := range target.requests[1].Members {
		if m.InSync {
			inSync = append(inSync, m.Osd)
		}
	}
	if len(inSync) != 1 || inSync[0] == "uid-osd-0" || target.requests[1].Resume {
		t.Errorf("re-assembled with in-sync members %v (resume %v); want the one source off the target, not resumed", inSync, target.requests[1].Resume)
	}
}

// agentTLS is an operator's client configuration and, per OSD, its agent's
// server configuration, under one CA.
func agentTLS(t *testing.T) (*tls.Config, func(osd string) *tls.Config) {
	t.Helper()
	ca, err := pki.NewCA("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	client := &tls.Config{Certificates: []tls.Certificate{pkitest.Cert(t, ca, pki.Leaf{Name: "flint-operator"})}, RootCAs: roots, MinVersion: tls.VersionTLS13}
	return client, func(osd string) *tls.Config {
		name := agentclient.ServerName(osd)
		return &tls.Config{Certificates: []tls.Certificate{pkitest.Cert(t, ca, pki.Leaf{Name: name, Server: true, DNSNames: []string{name}})}, MinVersion: tls.VersionTLS13}
	}
}
