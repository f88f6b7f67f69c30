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

// Package certs keeps the mutual TLS material of the agent API in Secrets
// of the operator's namespace: the CA (flint-ca), one server certificate
// per OSD agent, the operator's client certificate and the metrics
// scrapers'. Each is issued when
// missing and re-issued once two thirds of its lifetime have passed; agents
// re-read their files at every handshake, so rotation needs no restart.
package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flint-io/flint/internal/pki"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// Secret names and keys.
const (
	CASecret     = "flint-ca"
	ClientSecret = agentv1.OperatorClientSecret
	// MetricsClientSecret is the certificate scrapers of the agents'
	// /metrics present.
	MetricsClientSecret = agentv1.MetricsClientSecret
	CAKey               = "ca.crt"
)

// Lifetimes: a CA outlives many rotations of the leaves it signs.
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
)

// Authority issues and rotates the agent API's certificates.
type Authority struct {
	Client    client.Client
	Namespace string
	// Now is the clock; tests move it to force rotation.
	Now func() time.Time

	mu sync.Mutex
	// client is the operator's client configuration last built.
	client *builtTLS
}

// builtTLS is a client configuration and what it was built from.
type builtTLS struct {
	caVersion, leafVersion string
	renewAt                time.Time
	cfg                    *tls.Config
}

func (a *Authority) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// CA loads the CA from its Secret, creating it when missing.
func (a *Authority) CA(ctx context.Context) (*pki.CA, error) {
	var s corev1.Secret
	err := a.get(ctx, CASecret, &s)
	if err == nil {
		ca, err := pki.LoadCA(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
		if err != nil {
			return nil, fmt.Errorf("secret %s/%s holds no usable CA (%w); delete it to have a new CA issued, then the agents' certificates are re-issued", a.Namespace, CASecret, err)
		}
		return ca, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	ca, err := pki.NewCA("flint-agent-ca", caValidity)
	if err != nil {
		return nil, err
	}
	s = corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: CASecret},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: ca.CertPEM, corev1.TLSPrivateKeyKey: ca.KeyPEM},
	}
	if err := a.Client.Create(ctx, &s); err != nil {
		if apierrors.IsAlreadyExists(err) { // another replica won the race
			return a.CA(ctx)
		}
		return nil, err
	}
	return ca, nil
}

// EnsureLeaf makes Secret name hold a certificate of ca for leaf, with the
// CA's certificate as ca.crt, issuing it when missing, signed by another
// CA, or two thirds through its life. owner, when set, owns the Secret.
func (a *Authority) EnsureLeaf(ctx context.Context, ca *pki.CA, name string, leaf pki.Leaf, owner *metav1.OwnerReference) (*corev1.Secret, error) {
	var s corev1.Secret
	err := a.get(ctx, name, &s)
	switch {
	case err == nil && a.fresh(ca, &s):
		return &s, nil
	case err != nil && !apierrors.IsNotFound(err):
		return nil, err
	}
	leaf.Validity = leafValidity
	certPEM, keyPEM, ierr := ca.Issue(leaf)
	if ierr != nil {
		return nil, ierr
	}
	data := map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, CAKey: ca.CertPEM}
	if apierrors.IsNotFound(err) {
		s = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: name}, Type: corev1.SecretTypeTLS, Data: data}
		if owner != nil {
			s.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		return &s, a.Client.Create(ctx, &s)
	}
	s.Data = data
	return &s, a.Client.Update(ctx, &s)
}

// fresh reports whether s holds a certificate signed by ca with more than
// a third of its life left.
func (a *Authority) fresh(ca *pki.CA, s *corev1.Secret) bool {
	cert, err := pki.ParseCertificate(s.Data[corev1.TLSCertKey])
	if err != nil || cert.CheckSignatureFrom(ca.Cert) != nil {
		return false
	}
	return a.now().Before(renewAt(cert))
}

// renewAt is when cert is re-issued: two thirds through its life.
func renewAt(cert *x509.Certificate) time.Time {
	life := cert.NotAfter.Sub(cert.NotBefore)
	return cert.NotAfter.Add(-life / 3)
}

// ClientTLS is the operator's side of mutual TLS: its client certificate
// (from its Secret, rotated like the agents') and the CA agents must
// present certificates of. Every agent call asks for it: reading the two
// Secrets (from the cache) is cheap, parsing and checking them is not, so
// a configuration built from the same versions of both is reused until
// its certificate is due for renewal.
func (a *Authority) ClientTLS(ctx context.Context) (*tls.Config, error) {
	var caSecret, leafSecret corev1.Secret
	if a.get(ctx, CASecret, &caSecret) == nil && a.get(ctx, ClientSecret, &leafSecret) == nil {
		if cfg := a.reuse(caSecret.ResourceVersion, leafSecret.ResourceVersion); cfg != nil {
			return cfg, nil
		}
	}
	ca, err := a.CA(ctx)
	if err != nil {
		return nil, err
	}
	s, err := a.EnsureLeaf(ctx, ca, ClientSecret, pki.Leaf{Name: agentv1.OperatorClientName}, nil)
	if err != nil {
		return nil, fmt.Errorf("issue the operator's client certificate: %w", err)
	}
	cert, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, errors.Join(errors.New("the operator's client certificate is unusable"), err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots, MinVersion: tls.VersionTLS13}
	// Remember the CA's version only if it is the CA built from: it may
	// have been created, or replaced, since the first read.
	if a.get(ctx, CASecret, &caSecret) != nil || !bytes.Equal(caSecret.Data[corev1.TLSCertKey], ca.CertPEM) {
		caSecret.ResourceVersion = ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.client = &builtTLS{caVersion: caSecret.ResourceVersion, leafVersion: s.ResourceVersion, renewAt: renewAt(cert.Leaf), cfg: cfg}
	return cfg, nil
}

func (a *Authority) get(ctx context.Context, name string, s *corev1.Secret) error {
	return a.Client.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: name}, s)
}

// reuse is the client configuration last built, if it was built from
// these versions of the CA's and the client's Secrets and is not due for
// renewal.
func (a *Authority) reuse(caVersion, leafVersion string) *tls.Config {
	a.mu.Lock()
	defer a.mu.Unlock()
	if b := a.client; b != nil && caVersion != "" && b.caVersion == caVersion && b.leafVersion == leafVersion && a.now().Before(b.renewAt) {
		return b.cfg
	}
	return nil
}
