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

package server

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
)

// Files of a mounted kubernetes.io/tls Secret with its CA.
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
	CAFile   = "ca.crt"
)

// MutualTLS is the server side of the API's mutual TLS from the files in
// dir: the agent's certificate and key, and the CA that signs its clients.
// Only a client certificate of that CA named client (the operator's) is
// served. The files are read at every handshake, so a rotated Secret
// applies without a restart.
func MutualTLS(dir, client string) (*tls.Config, error) {
	return serverTLS(dir, tls.RequireAndVerifyClientCert, func(cs tls.ConnectionState) error {
		if name := cs.PeerCertificates[0].Subject.CommonName; name != client {
			return fmt.Errorf("the client certificate names %q; only %q is served", name, client)
		}
		return nil
	})
}

// HTTPTLS is the server side of the agent's HTTP endpoints: probes are
// served to anyone (a kubelet presents no certificate), and a client
// certificate, when presented, must be of the CA in dir; RequireClient
// then guards what needs one.
func HTTPTLS(dir string) (*tls.Config, error) {
	return serverTLS(dir, tls.VerifyClientCertIfGiven, nil)
}

// RequireClient serves h only to requests with a verified client
// certificate named client, which Secret secret of the operator's
// namespace holds: 401 without one, 403 with another's.
func RequireClient(client, secret string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.TLS == nil || len(r.TLS.VerifiedChains) == 0:
			http.Error(w, "a client certificate issued by the Flint CA is required: Secret "+secret+" of the operator's namespace", http.StatusUnauthorized)
		case r.TLS.VerifiedChains[0][0].Subject.CommonName != client:
			http.Error(w, "this client certificate is not allowed here; use the one of Secret "+secret, http.StatusForbidden)
		default:
			h.ServeHTTP(w, r)
		}
	})
}

func serverTLS(dir string, auth tls.ClientAuthType, verify func(tls.ConnectionState) error) (*tls.Config, error) {
	load := func() (*tls.Config, error) {
		cert, err := tls.LoadX509KeyPair(filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile))
		if err != nil {
			return nil, fmt.Errorf("load the agent's certificate from %s: %w", dir, err)
		}
		caPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
		if err != nil {
			return nil, fmt.Errorf("read the client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("%s holds no PEM certificate", filepath.Join(dir, CAFile))
		}
		return &tls.Config{
			Certificates:     []tls.Certificate{cert},
			ClientCAs:        pool,
			ClientAuth:       auth,
			MinVersion:       tls.VersionTLS13,
			VerifyConnection: verify,
		}, nil
	}
	// Fail at start when the files are unusable, not at the first call.
	if _, err := load(); err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return load() },
	}, nil
}
