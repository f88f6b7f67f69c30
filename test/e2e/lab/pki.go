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

package lab

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/flint-io/flint/internal/pki"
)

// credentials are the lab's certificates: one CA signs the API server's
// serving certificate, every component's client certificate, the
// kubelets' serving certificates and the service account tokens' key.
type credentials struct {
	dir string
	ca  *pki.CA
}

func newCredentials(dir string) (*credentials, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ca, err := pki.NewCA("flint-e2e-lab", 24*time.Hour)
	if err != nil {
		return nil, err
	}
	c := &credentials{dir: dir, ca: ca}
	return c, os.WriteFile(c.caFile(), ca.CertPEM, 0o600)
}

func (c *credentials) caFile() string { return filepath.Join(c.dir, "ca.crt") }

// issue writes the certificate and key of leaf as <file>.crt and
// <file>.key and returns their paths.
func (c *credentials) issue(file string, leaf pki.Leaf) (certFile, keyFile string, err error) {
	leaf.Validity = 24 * time.Hour
	cert, key, err := c.ca.Issue(leaf)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(c.dir, file+".crt"), filepath.Join(c.dir, file+".key")
	if err := os.WriteFile(certFile, cert, 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, os.WriteFile(keyFile, key, 0o600)
}

// client issues a client certificate for user in groups.
func (c *credentials) client(file, user string, groups ...string) (string, string, error) {
	return c.issue(file, pki.Leaf{Name: user, Groups: groups})
}

// httpClient trusts the lab's CA only.
func (c *credentials) httpClient() *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(c.ca.Cert)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// serving issues a server certificate for the names and addresses.
func (c *credentials) serving(file string, dnsNames []string, ips ...net.IP) (string, string, error) {
	return c.issue(file, pki.Leaf{Name: file, Server: true, DNSNames: dnsNames, IPs: ips})
}

// kubeconfig writes a kubeconfig for the user in groups, with a client
// certificate, for the API server at server, and returns its path.
func (c *credentials) kubeconfig(file, user string, groups []string, server string) (string, error) {
	certFile, keyFile, err := c.client(file, user, groups...)
	if err != nil {
		return "", err
	}
	cert, err := os.ReadFile(certFile)
	if err != nil {
		return "", err
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		return "", err
	}
	b64 := base64.StdEncoding.EncodeToString
	config := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster: {server: %q, certificate-authority-data: %s}
users:
- name: %q
  user: {client-certificate-data: %s, client-key-data: %s}
contexts:
- name: lab
  context: {cluster: lab, user: %q}
current-context: lab
`, server, b64(c.ca.CertPEM), user, b64(cert), b64(key), user)
	path := filepath.Join(c.dir, file+".kubeconfig")
	return path, os.WriteFile(path, []byte(config), 0o600)
}
