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

package images

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/flint-io/flint/internal/pki"
	"github.com/flint-io/flint/internal/pki/pkitest"
	"github.com/flint-io/flint/internal/version"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
	"github.com/flint-io/flint/osd-image/agent/server"
)

// The OSD image runs as an OSD pod's two containers do, here in one
// container: exec-spdk starts flint_tgt (its default, as the pod's; with
// --no-huge, on the one core the container gets, in interrupt mode), and
// the agent bootstraps a malloc device on it and reports Ready with
// SPDK's version.
func TestOSDImageServes(t *testing.T) {
	dir, ver := os.Getenv("FLINT_IMAGES_DIR"), os.Getenv("FLINT_IMAGES_VERSION")
	if dir == "" || ver == "" {
		t.Skip("make test-images builds the images and sets FLINT_IMAGES_DIR and FLINT_IMAGES_VERSION")
	}
	archive := filepath.Join(dir, "flint-osd.tar")
	if _, err := os.Stat(archive); errors.Is(err, fs.ErrNotExist) {
		t.Skip("make images built no OSD image: it needs SPDK_SRC and DPDK_SRC")
	}
	bundle := t.TempDir()
	unpack(t, archive, "ghcr.io/flint-io/flint-osd:"+ver, filepath.Join(bundle, "rootfs"))

	// The pod's run volume: SPDK's socket, the lease, the agent's TLS.
	run := t.TempDir()
	ca, err := pki.NewCA("test-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	writeTLS(t, filepath.Join(run, "tls"), ca)
	grpcPort, httpPort, nvmfPort := freePort(t), freePort(t), freePort(t)

	writeSpec(t, bundle, func(spec map[string]any) {
		process := spec["process"].(map[string]any)
		process["args"] = []string{"/usr/local/bin/osd-agent", "exec-spdk", "--spdk-socket=/var/run/flint/spdk.sock", "--memory-mib=768", "--interrupt-mode"}
		process["user"] = map[string]any{"uid": 0, "gid": 0}
		spec["root"] = map[string]any{"path": "rootfs", "readonly": false}
		spec["mounts"] = append(spec["mounts"].([]any), map[string]any{
			"destination": "/var/run/flint", "type": "bind", "source": run, "options": []string{"rbind", "rw"},
		})
		linux := spec["linux"].(map[string]any)
		var namespaces []any // the host's network, as a hostNetwork pod
		for _, ns := range linux["namespaces"].([]any) {
			if ns.(map[string]any)["type"] != "network" {
				namespaces = append(namespaces, ns)
			}
		}
		linux["namespaces"] = namespaces
		linux["resources"] = map[string]any{"cpu": map[string]any{"cpus": "0"}}
	})
	state := filepath.Join(bundle, "state")
	id := "flint-test-osd"
	log, err := os.Create(filepath.Join(run, "container.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = log.Close() }()
	start := exec.Command("runc", "--root", state, "run", "--detach", "--bundle", bundle, id)
	start.Stdout, start.Stderr = log, log
	if err := start.Run(); err != nil {
		t.Fatalf("runc run: %v: %s", err, readFile(t, log.Name()))
	}
	t.Cleanup(func() {
		_ = exec.Command("runc", "--root", state, "delete", "--force", id).Run()
	})
	agent := exec.Command("runc", "--root", state, "exec", "--detach", "--env", "POD_IP=127.0.0.1", id,
		"/usr/local/bin/osd-agent", "--osd-uid=5f0c3c1e-6d4b-4f7e-9b1a-2c8d9e0f1a2b", "--device-driver=malloc", "--malloc-size=64Mi",
		"--transport=tcp", fmt.Sprintf("--port=%d", nvmfPort), "--spdk-socket=/var/run/flint/spdk.sock",
		"--lease-file=/var/run/flint/lease", "--tls-dir=/var/run/flint/tls", "--network-status-file=/var/run/flint/network-status",
		fmt.Sprintf("--grpc-address=127.0.0.1:%d", grpcPort), fmt.Sprintf("--http-address=127.0.0.1:%d", httpPort), "--probe-interval=200ms")
	agent.Stdout, agent.Stderr = log, log
	if err := agent.Run(); err != nil {
		t.Fatalf("runc exec the agent: %v: %s", err, readFile(t, log.Name()))
	}

	client := agentClient(t, ca, fmt.Sprintf("127.0.0.1:%d", grpcPort))
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := client.GetStatus(ctx, &agentv1.GetStatusRequest{})
		cancel()
		if err == nil && st.Ready {
			if !strings.Contains(st.SpdkVersion, "SPDK "+version.SPDK) {
				t.Fatalf("the OSD image runs %q, want SPDK %s", st.SpdkVersion, version.SPDK)
			}
			t.Logf("flint-osd: Ready, %s, lvstore %s of %d bytes", st.SpdkVersion, st.Lvstore, st.TotalBytes)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the OSD is not Ready after 90 s: %v %v\n%s", st, err, readFile(t, log.Name()))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// writeTLS writes the agent's server certificate, issued by ca, and ca
// (which the operator's client certificate is checked against) to dir.
func writeTLS(t *testing.T, dir string, ca *pki.CA) {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue(pki.Leaf{Name: "osd-test", Server: true, DNSNames: []string{"osd-test.osd.flint.io"}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{server.CertFile: certPEM, server.KeyFile: keyPEM, server.CAFile: ca.CertPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// agentClient calls the agent at addr as the operator does.
func agentClient(t *testing.T, ca *pki.CA, addr string) agentv1.OSDAgentClient {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	cfg := &tls.Config{
		Certificates: []tls.Certificate{pkitest.Cert(t, ca, pki.Leaf{Name: agentv1.OperatorClientName})},
		RootCAs:      roots, ServerName: "osd-test.osd.flint.io", MinVersion: tls.VersionTLS13,
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return agentv1.NewOSDAgentClient(conn)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, _ := os.ReadFile(path)
	return string(data)
}
