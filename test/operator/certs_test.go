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

package operator

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flint-io/flint/controllers/certs"
	"github.com/flint-io/flint/internal/pki"
)

var _ = Describe("Agent API certificates", func() {
	const secret = "rotation-test-tls"
	var (
		clock time.Time
		auth  *certs.Authority
		ca    *pki.CA
	)
	BeforeEach(func() {
		clock = time.Now()
		auth = &certs.Authority{Client: k8sClient, Namespace: namespace, Now: func() time.Time { return clock }}
		var err error
		ca, err = auth.CA(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			s := &corev1.Secret{}
			s.Namespace, s.Name = namespace, secret
			Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, s))).To(Succeed())
		})
	})
	stored := func() *corev1.Secret {
		var s corev1.Secret
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: secret}, &s)).To(Succeed())
		return &s
	}
	serialOf := func() string { return parseCert(stored().Data[corev1.TLSCertKey]).SerialNumber.String() }
	leaf := pki.Leaf{Name: "rotation.osd.flint.io", Server: true, DNSNames: []string{"rotation.osd.flint.io"}}

	It("keeps a certificate until two thirds of its life, then re-issues it", func() {
		_, err := auth.EnsureLeaf(ctx, ca, secret, leaf, nil)
		Expect(err).NotTo(HaveOccurred())
		first := serialOf()
		issued := parseCert(stored().Data[corev1.TLSCertKey])
		life := issued.NotAfter.Sub(issued.NotBefore)

		clock = issued.NotAfter.Add(-life/3 - time.Hour)
		_, err = auth.EnsureLeaf(ctx, ca, secret, leaf, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(serialOf()).To(Equal(first), "re-issued with more than a third of its life left")

		clock = issued.NotAfter.Add(-life/3 + time.Hour)
		_, err = auth.EnsureLeaf(ctx, ca, secret, leaf, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(serialOf()).NotTo(Equal(first), "not re-issued two thirds through its life")
		renewed := parseCert(stored().Data[corev1.TLSCertKey])
		Expect(renewed.CheckSignatureFrom(ca.Cert)).To(Succeed())
		Expect(renewed.DNSNames).To(ConsistOf("rotation.osd.flint.io"))
		Expect(stored().Data[certs.CAKey]).To(Equal(ca.CertPEM))
	})

	It("re-issues a certificate signed by another CA", func() {
		other, err := pki.NewCA("someone-else", time.Hour)
		Expect(err).NotTo(HaveOccurred())
		_, err = auth.EnsureLeaf(ctx, other, secret, leaf, nil)
		Expect(err).NotTo(HaveOccurred())
		foreign := serialOf()
		_, err = auth.EnsureLeaf(ctx, ca, secret, leaf, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(serialOf()).NotTo(Equal(foreign))
		Expect(parseCert(stored().Data[corev1.TLSCertKey]).CheckSignatureFrom(ca.Cert)).To(Succeed())
	})
})
