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

// Package agentclient is how the operator reaches OSD agents: gRPC over
// mutual TLS, verifying that the agent's certificate was issued to the OSD
// it means to talk to, whatever address the agent's pod has today.
package agentclient

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"net"
	"path"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/flint-io/flint/controllers/metrics"
)

// Dialer keeps one connection per agent: to the address its pod has now,
// made with the operator's TLS material as it is now. A pod that moved to
// another address, or a rotated client certificate or CA, gets a new
// connection at the next call; the old one is closed.
type Dialer struct {
	// TLS returns the operator's client configuration (its certificate and
	// the CA); it is asked at every call, so rotation applies at once.
	TLS func(ctx context.Context) (*tls.Config, error)
	// CallTimeout bounds every call to an agent; CallTimeout (the
	// constant) when zero.
	CallTimeout time.Duration

	mu    sync.Mutex
	conns map[string]*agentConn // by server name
}

type agentConn struct {
	addr string
	// material identifies the client certificate the connection presents;
	// a new CA re-issues it too (certs.Authority), so it covers both.
	material [sha256.Size]byte
	cc       *grpc.ClientConn
}

// Conn returns the connection to the agent at addr whose certificate
// names serverName.
func (d *Dialer) Conn(ctx context.Context, addr, serverName string) (grpc.ClientConnInterface, error) {
	cfg, err := d.TLS(ctx)
	if err != nil {
		return nil, err
	}
	if len(cfg.Certificates) == 0 || len(cfg.Certificates[0].Certificate) == 0 {
		return nil, errors.New("the operator has no client certificate for the agents")
	}
	material := sha256.Sum256(cfg.Certificates[0].Certificate[0])
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.conns[serverName]; ok {
		if c.addr == addr && c.material == material {
			return c.cc, nil
		}
		_ = c.cc.Close()
		delete(d.conns, serverName)
	}
	cfg = cfg.Clone()
	cfg.ServerName = serverName
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)), grpc.WithUnaryInterceptor(d.intercept),
		grpc.WithContextDialer(dialBounded))
	if err != nil {
		return nil, err
	}
	if d.conns == nil {
		d.conns = map[string]*agentConn{}
	}
	d.conns[serverName] = &agentConn{addr: addr, material: material, cc: cc}
	return cc, nil
}

// UnackedTimeout is how long a connection to an agent may hold data the
// agent has not acknowledged (TCP_USER_TIMEOUT) before it is dropped: a
// call stuck in retransmission fails, and the next one dials afresh,
// instead of TCP retrying for a quarter of an hour.
const UnackedTimeout = 10 * time.Second

func dialBounded(ctx context.Context, addr string) (net.Conn, error) {
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) {
			err = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(UnackedTimeout.Milliseconds()))
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	return d.DialContext(ctx, "tcp", addr)
}

// CallTimeout bounds every call to an agent by default (a caller may set
// a shorter deadline): one agent that accepts connections and never
// answers must not hold a reconcile for longer.
const CallTimeout = 5 * time.Second

// intercept bounds each call (CallTimeout), counts it by method and code
// and times it (metrics.AgentRequests, AgentRequestSeconds).
func (d *Dialer) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	timeout := d.CallTimeout
	if timeout == 0 {
		timeout = CallTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	name := path.Base(method)
	metrics.AgentRequestSeconds.WithLabelValues(name).Observe(time.Since(start).Seconds())
	metrics.AgentRequests.WithLabelValues(name, status.Code(err).String()).Inc()
	return err
}

// Forget closes the connection to serverName's agent, such as when its
// pod is replaced.
func (d *Dialer) Forget(serverName string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.conns[serverName]; ok {
		_ = c.cc.Close()
		delete(d.conns, serverName)
	}
}
