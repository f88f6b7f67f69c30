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
	if err := l.startController(ctx, "kube-controller-manager", "system:kube-controller-manager", 10257,
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+filepath.Join(c.dir, "service-accounts.key"),
		"--root-ca-file="+c.caFile(), "--service-cluster-ip-range="+ServiceCIDR); err != nil {
		return err
	}
	return l.startController(ctx, "kube-scheduler", "system:kube-scheduler", 10259)
}

// startController runs a control-plane component as user, serving its
// health on 127.0.0.1:port with a certificate of the lab's CA, and waits
// until it is healthy.
func (l *Lab) startController(ctx context.Context, name, user string, port int, extra ...string) error {
	c := l.creds
	kubeconfig, err := c.kubeconfig(name, user, nil, apiURL())
	if err != nil {
		return err
	}
	cert, key, err := c.serving(name+"-serving", nil, net.ParseIP("127.0.0.1"))
	if err != nil {
		return err
	}
	p, err := l.start(name, l.bin(name), append([]string{
		"--kubeconfig=" + kubeconfig, "--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1", "--tls-cert-file=" + cert, "--tls-private-key-file=" + key, "--leader-elect=false",
	}, extra...)...)
	if err != nil {
		return err
	}
	healthz := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
	local := c.httpClient()
	return p.waitFor(ctx, 60*time.Second, "healthy", func() error { return httpOK(local, healthz) })
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
