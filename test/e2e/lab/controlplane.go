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
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
)

func (l *Lab) startAPIServer(ctx context.Context) error {
	etcd, err := l.start("etcd", l.bin("etcd"),
		"--data-dir="+filepath.Join(l.Dir, "etcd"),
		"--listen-client-urls=http://127.0.0.1:2379", "--advertise-client-urls=http://127.0.0.1:2379",
		"--listen-peer-urls=http://127.0.0.1:2380", "--unsafe-no-fsync")
	if err != nil {
		return err
	}
	healthy := func() error { return httpOK(http.DefaultClient, "http://127.0.0.1:2379/health") }
	if err := etcd.waitFor(ctx, 30*time.Second, "healthy", healthy); err != nil {
		return err
	}

	c := l.creds
	serveCert, serveKey, err := c.serving("kube-apiserver",
		[]string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"},
		net.ParseIP(NodeIP), net.ParseIP(apiServiceIP), net.ParseIP("127.0.0.1"))
	if err != nil {
		return err
	}
	kubeletClientCert, kubeletClientKey, err := c.client("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters")
	if err != nil {
		return err
	}
	// The service account tokens' key pair: an issued key and its
	// certificate, which the API server reads as the public key.
	saCert, saKey, err := c.client("service-accounts", "service-accounts")
	if err != nil {
		return err
	}
	apiserver, err := l.start("kube-apiserver", l.bin("kube-apiserver"),
		"--etcd-servers=http://127.0.0.1:2379",
		"--bind-address="+NodeIP, "--advertise-address="+NodeIP, "--secure-port="+apiPort,
		"--tls-cert-file="+serveCert, "--tls-private-key-file="+serveKey,
		"--client-ca-file="+c.caFile(),
		"--kubelet-client-certificate="+kubeletClientCert, "--kubelet-client-key="+kubeletClientKey,
		"--kubelet-certificate-authority="+c.caFile(), "--kubelet-preferred-address-types=InternalIP",
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file="+saCert,
		"--service-account-signing-key-file="+saKey,
		"--service-cluster-ip-range="+ServiceCIDR,
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=true", "--profiling=false")
	if err != nil {
		return err
	}
	admin, err := rest.HTTPClientFor(l.Config)
	if err != nil {
		return err
	}
	ready := func() error { return httpOK(admin, apiURL()+"/readyz") }
	return apiserver.waitFor(ctx, 90*time.Second, "ready", ready)
}

func (l *Lab) startControllers(ctx context.Context) error {
	c := l.creds
	kcmConfig, err := c.kubeconfig("kube-controller-manager", "system:kube-controller-manager", nil, apiURL())
	if err != nil {
		return err
	}
	kcmCert, kcmKey, err := c.serving("kube-controller-manager-serving", nil, net.ParseIP("127.0.0.1"))
	if err != nil {
		return err
	}
	kcm, err := l.start("kube-controller-manager", l.bin("kube-controller-manager"),
		"--kubeconfig="+kcmConfig, "--authentication-kubeconfig="+kcmConfig, "--authorization-kubeconfig="+kcmConfig,
		"--bind-address=127.0.0.1", "--tls-cert-file="+kcmCert, "--tls-private-key-file="+kcmKey, "--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+filepath.Join(c.dir, "service-accounts.key"),
		"--root-ca-file="+c.caFile(), "--service-cluster-ip-range="+ServiceCIDR)
	if err != nil {
		return err
	}
	schedConfig, err := c.kubeconfig("kube-scheduler", "system:kube-scheduler", nil, apiURL())
	if err != nil {
		return err
	}
	schedCert, schedKey, err := c.serving("kube-scheduler-serving", nil, net.ParseIP("127.0.0.1"))
	if err != nil {
		return err
	}
	sched, err := l.start("kube-scheduler", l.bin("kube-scheduler"),
		"--kubeconfig="+schedConfig, "--authentication-kubeconfig="+schedConfig, "--authorization-kubeconfig="+schedConfig,
		"--bind-address=127.0.0.1", "--tls-cert-file="+schedCert, "--tls-private-key-file="+schedKey, "--leader-elect=false")
	if err != nil {
		return err
	}
	local := c.httpClient()
	if err := kcm.waitFor(ctx, 60*time.Second, "healthy", func() error { return httpOK(local, "https://127.0.0.1:10257/healthz") }); err != nil {
		return err
	}
	return sched.waitFor(ctx, 60*time.Second, "healthy", func() error { return httpOK(local, "https://127.0.0.1:10259/healthz") })
}

// httpOK is nil when GET url answers 200.
func httpOK(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
