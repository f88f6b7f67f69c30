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

// Package pkitest issues TLS certificates for tests.
package pkitest

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/flint-io/flint/internal/pki"
)

// Cert is a certificate ca issued for l (valid for an hour unless l says
// otherwise), ready for a tls.Config.
func Cert(t testing.TB, ca *pki.CA, l pki.Leaf) tls.Certificate {
	t.Helper()
	if l.Validity == 0 {
		l.Validity = time.Hour
	}
	certPEM, keyPEM, err := ca.Issue(l)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
