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

package pki

import (
	"crypto/x509"
	"net"
	"testing"
	"time"
)

func TestIssuedCertificatesVerifyAgainstTheirCAOnly(t *testing.T) {
	ca, err := NewCA("flint-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	reloaded, err := LoadCA(ca.CertPEM, ca.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCA("other", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCA(ca.CertPEM, other.KeyPEM); err == nil {
		t.Error("a CA certificate loaded with another CA's key")
	}
	serverPEM, _, err := reloaded.Issue(Leaf{Name: "osd-a", Server: true, DNSNames: []string{"osd-a.flint-system.svc"}, IPs: []net.IP{net.ParseIP("10.0.0.5")}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	clientPEM, _, err := ca.Issue(Leaf{Name: "flint-operator", Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		pem    []byte
		usage  x509.ExtKeyUsage
		dns    string
		signer *CA
		ok     bool
	}{
		{"server by its CA", serverPEM, x509.ExtKeyUsageServerAuth, "osd-a.flint-system.svc", ca, true},
		{"server by another CA", serverPEM, x509.ExtKeyUsageServerAuth, "osd-a.flint-system.svc", other, false},
		{"server under another name", serverPEM, x509.ExtKeyUsageServerAuth, "osd-b.flint-system.svc", ca, false},
		{"client by its CA", clientPEM, x509.ExtKeyUsageClientAuth, "", ca, true},
		{"client used as a server", clientPEM, x509.ExtKeyUsageServerAuth, "", ca, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			roots := x509.NewCertPool()
			roots.AddCert(tt.signer.Cert)
			cert := parse(t, tt.pem)
			_, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: tt.dns, KeyUsages: []x509.ExtKeyUsage{tt.usage}})
			if (err == nil) != tt.ok {
				t.Fatalf("verify: %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func parse(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	cert, err := ParseCertificate(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
