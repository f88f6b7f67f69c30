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
	"crypto/tls"
	"crypto/x509"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/flint-io/flint/controllers/metrics"
	"github.com/flint-io/flint/internal/pki"
	"github.com/flint-io/flint/internal/pki/pkitest"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

const serverName = "osd-a.osd.flint.io"

// material is one CA with a server certificate for the agent and a
// client certificate for the operator.
type material struct{ server, client *tls.Config }

func newMaterial(t *testing.T) material {
	t.Helper()
	ca, err := pki.NewCA("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	return material{
		server: &tls.Config{Certificates: []tls.Certificate{pkitest.Cert(t, ca, pki.Leaf{Name: "osd-a", Server: true, DNSNames: []string{serverName}})}, ClientCAs: roots, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13},
		client: &tls.Config{Certificates: []tls.Certificate{pkitest.Cert(t, ca, pki.Leaf{Name: "flint-operator"})}, RootCAs: roots, MinVersion: tls.VersionTLS13},
	}
}

// serveAgent serves an agent that implements nothing on addr ("" for any
// port of loopback) until the test stops it.
func serveAgent(t *testing.T, addr string, m material) (string, func()) {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.Creds(credentials.NewTLS(m.server)))
	agentv1.RegisterOSDAgentServer(s, agentv1.UnimplementedOSDAgentServer{})
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().String(), s.Stop
}

// reached calls the agent and reports whether mutual TLS succeeded: the
// agent answers Unimplemented, not Unavailable.
func reached(t *testing.T, d *Dialer, addr string) bool {
	t.Helper()
	cc, err := d.Conn(context.Background(), addr, serverName)
	if err != nil {
		t.Fatal(err)
	}
	_, err = agentv1.NewOSDAgentClient(cc).GetStatus(context.Background(), &agentv1.GetStatusRequest{})
	if code := status.Code(err); code != codes.Unimplemented {
		t.Logf("call to %s: %v", addr, err)
		return false
	}
	return true
}

// An agent restarted with material of a new CA (its Secret and the
// operator's re-issued) is reached again: the connection made with the
// old material is not kept redialling with it.
func TestDialerReconnectsWhenTheMaterialRotates(t *testing.T) {
	var current atomic.Pointer[material]
	old := newMaterial(t)
	current.Store(&old)
	d := &Dialer{TLS: func(context.Context) (*tls.Config, error) { return current.Load().client, nil }, CallTimeout: 2 * time.Second}

	addr, stop := serveAgent(t, "", old)
	if !reached(t, d, addr) {
		t.Fatal("the agent is not reached with the first material")
	}
	stop()
	rotated := newMaterial(t)
	current.Store(&rotated)
	serveAgent(t, addr, rotated)
	if !reached(t, d, addr) {
		t.Fatal("the agent restarted with rotated material is not reached")
	}
}

// An agent whose pod moved to another address is reached there, and the
// connection to the old address is closed.
func TestDialerFollowsTheAgentToANewAddress(t *testing.T) {
	m := newMaterial(t)
	d := &Dialer{TLS: func(context.Context) (*tls.Config, error) { return m.client, nil }, CallTimeout: 2 * time.Second}
	first, _ := serveAgent(t, "", m)
	second, _ := serveAgent(t, "", m)
	if !reached(t, d, first) {
		t.Fatal("the agent is not reached at its first address")
	}
	d.mu.Lock()
	old := d.conns[serverName].cc
	d.mu.Unlock()
	if !reached(t, d, second) {
		t.Fatal("the agent is not reached at its new address")
	}
	if got := old.GetState().String(); got != "SHUTDOWN" {
		t.Fatalf("the connection to the old address is %s, want SHUTDOWN", got)
	}
}

// Every call is counted by method and code, answered or not.
func TestDialerCountsCallsByMethodAndCode(t *testing.T) {
	m := newMaterial(t)
	d := &Dialer{TLS: func(context.Context) (*tls.Config, error) { return m.client, nil }, CallTimeout: 2 * time.Second}
	addr, _ := serveAgent(t, "", m)
	counter := metrics.AgentRequests.WithLabelValues("GetStatus", codes.Unimplemented.String())
	before := testutil.ToFloat64(counter)
	if !reached(t, d, addr) {
		t.Fatal("the agent is not reached")
	}
	if got := testutil.ToFloat64(counter) - before; got != 1 {
		t.Fatalf("flint_agent_requests_total{method=GetStatus,code=Unimplemented} rose by %v, want 1", got)
	}
}

// A connection to an agent drops data the agent does not acknowledge
// within UnackedTimeout, instead of TCP retrying for minutes.
func TestConnectionsBoundUnackedData(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	conn, err := dialBounded(context.Background(), l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	raw, err := conn.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var ms int
	var serr error
	if err := raw.Control(func(fd uintptr) { ms, serr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT) }); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	if want := int(UnackedTimeout.Milliseconds()); ms != want {
		t.Fatalf("TCP_USER_TIMEOUT = %d ms, want %d", ms, want)
	}
}
