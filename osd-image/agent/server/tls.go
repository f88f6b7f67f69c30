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
	"os"
	"path/filepath"
)

// Files of a mounted kubernetes.io/tls Secret with its CA.
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
	CAFile   = "ca.crt"
)

// MutualTLS is the server side of mutual TLS from the files in dir: the
// agent's certificate and key, and the CA that signs its clients (the
// operator). The files are read at every handshake, so a rotated Secret
// applies without a restart. A client without a certificate from that CA
// is refused.
func MutualTLS(dir string) (*tls.Config, error) {
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
			Certificates: []tls.Certificate{cert},
			ClientCAs:    pool,
			ClientAuth:   tls.RequireAndVerifyClientCert,
			MinVersion:   tls.VersionTLS13,
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
