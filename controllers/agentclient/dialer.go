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
	"crypto/tls"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// Dialer keeps one connection per agent address and identity.
type Dialer struct {
	// TLS returns the operator's client configuration (its certificate and
	// the CA); it is asked at every new connection so rotation applies.
	TLS func(ctx context.Context) (*tls.Config, error)

	mu    sync.Mutex
	conns map[key]*grpc.ClientConn
}

type key struct{ addr, serverName string }

// Agent returns the client of the agent at addr whose certificate names
// serverName.
func (d *Dialer) Agent(ctx context.Context, addr, serverName string) (agentv1.OSDAgentClient, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := key{addr, serverName}
	if c, ok := d.conns[k]; ok {
		return agentv1.NewOSDAgentClient(c), nil
	}
	cfg, err := d.TLS(ctx)
	if err != nil {
		return nil, err
	}
	cfg = cfg.Clone()
	cfg.ServerName = serverName
	c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)), grpc.WithUnaryInterceptor(perCallDeadline))
	if err != nil {
		return nil, err
	}
	if d.conns == nil {
		d.conns = map[key]*grpc.ClientConn{}
	}
	d.conns[k] = c
	return agentv1.NewOSDAgentClient(c), nil
}

// CallTimeout bounds every call to an agent (a caller may set a shorter
// deadline): one agent that accepts connections and never answers must
// not use up a whole reconcile.
const CallTimeout = 5 * time.Second

func perCallDeadline(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return invoker(ctx, method, req, reply, cc, opts...)
}

// Forget closes the connections to serverName's agent, such as when its
// pod is replaced.
func (d *Dialer) Forget(serverName string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, c := range d.conns {
		if k.serverName == serverName {
			_ = c.Close()
			delete(d.conns, k)
		}
	}
}
