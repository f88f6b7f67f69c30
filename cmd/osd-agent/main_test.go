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

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/flint-io/flint/internal/pki"
	"github.com/flint-io/flint/internal/pki/pkitest"
	"github.com/flint-io/flint/internal/spdk/spdktest"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
	"github.com/flint-io/flint/osd-image/agent/launch"
	"github.com/flint-io/flint/osd-image/agent/storage"
)

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// httpsClient trusts ca and presents a certificate of it named client
// ("" for none).
func httpsClient(t *testing.T, ca *pki.CA, client string) *http.Client {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS13}
	if client != "" {
		cfg.Certificates = []tls.Certificate{pkitest.Cert(t, ca, pki.Leaf{Name: client})}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 5 * time.Second}
}

func get(c *http.Client, url string) (int, string) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The agent as it runs in the pod, on the SPDK double: it becomes ready,
// serves metrics and the API, goes NotReady when SPDK dies and Ready again
// after SPDK restarts, with its lvstore reloaded.
func TestAgent(t *testing.T) {
	dir, err := os.MkdirTemp("", "flint-agent-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	tg, err := spdktest.NewFabric().StartTarget(filepath.Join(dir, "spdk.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tg.Kill)
	dev := filepath.Join(dir, "dev")
	if err := os.WriteFile(dev, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(dev, 1<<30); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.NewCA("flint-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tlsDir := filepath.Join(dir, "tls")
	writeLeaf(t, ca, tlsDir, pki.Leaf{Name: "osd-a", Server: true, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Validity: time.Hour})
	t.Setenv("POD_IP", "127.0.0.1")
	f := agentFlags{
		uid: "osd-a", driver: storage.DriverAIO, devicePath: dev, transport: "tcp", port: 4420,
		logLevel: "warning", socket: tg.Socket(), grpcAddress: freeAddr(t), httpAddress: freeAddr(t),
		tlsDir: tlsDir, probeInterval: 20 * time.Millisecond,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- serve(ctx, f, logr.Discard()) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	base := "https://" + f.httpAddress
	probe := httpsClient(t, ca, "") // a kubelet presents no certificate
	// waitFor waits for /readyz to answer want with a body containing
	// say; a probe cut short by SPDK's death may first say something else.
	waitFor := func(want int, say string) string {
		t.Helper()
		var body string
		for range 500 { // 10 s at most
			var code int
			if code, body = get(probe, base+"/readyz"); code == want && strings.Contains(body, say) {
				return body
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("/readyz never answered %d: %s", want, body)
		return ""
	}

	waitFor(http.StatusOK, "ok")
	if code, _ := get(probe, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d", code)
	}
	for client, want := range map[string]int{"": http.StatusUnauthorized, agentv1.OperatorClientName: http.StatusForbidden} {
		if code, body := get(httpsClient(t, ca, client), base+"/metrics"); code != want {
			t.Errorf("/metrics to client certificate %q = %d %s, want %d", client, code, body, want)
		}
	}
	code, m := get(httpsClient(t, ca, agentv1.MetricsClientName), base+"/metrics")
	if code != http.StatusOK {
		t.Errorf("/metrics to the metrics client = %d %s", code, m)
	}
	for _, want := range []string{"flint_osd_spdk_up 1", "flint_lvstore_total_bytes 1.0", "go_goroutines"} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	st, err := dial(t, ca, f.grpcAddress).GetStatus(ctx, &agentv1.GetStatusRequest{})
	if err != nil || !st.GetReady() || st.GetEndpoint().GetAddress() != "127.0.0.1" || st.GetLvstore() != agentv1.LvstoreName("osd-a") {
		t.Fatalf("GetStatus = %v, %v", st, err)
	}

	tg.Kill()
	waitFor(http.StatusServiceUnavailable, "SPDK does not answer")
	if code, _ := get(probe, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz with SPDK down = %d; the agent must not be restarted for it", code)
	}
	if err := tg.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(http.StatusOK, "ok")
	again, err := dial(t, ca, f.grpcAddress).GetStatus(ctx, &agentv1.GetStatusRequest{})
	if err != nil || again.GetTotalBytes() != st.GetTotalBytes() || again.GetLvstore() != st.GetLvstore() {
		t.Fatalf("GetStatus after the restart = %v, %v; want the lvstore back", again, err)
	}
}

func writeLeaf(t *testing.T, ca *pki.CA, dir string, l pki.Leaf) {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue(l)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": ca.CertPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func dial(t *testing.T, ca *pki.CA, addr string) agentv1.OSDAgentClient {
	cert := pkitest.Cert(t, ca, pki.Leaf{Name: agentv1.OperatorClientName})
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
		RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13,
	})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return agentv1.NewOSDAgentClient(conn)
}

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(dir, "spdk.sock")
	t.Setenv("POD_IP", "10.0.0.5")
	tests := []struct {
		name    string
		f       agentFlags
		want    storage.Device
		wantErr string
		final   bool
	}{
		{"aio", agentFlags{driver: "aio", devicePath: "/dev/nvme0n1", transport: "tcp"}, storage.Device{Driver: "aio", Path: "/dev/nvme0n1"}, "", false},
		{"malloc", agentFlags{driver: "malloc", mallocSize: "512Mi", transport: "tcp"}, storage.Device{Driver: "malloc", MallocBytes: 512 << 20}, "", false},
		{"pcie named", agentFlags{driver: "pcie", pciAddress: "0000:3b:00.0", transport: "tcp"}, storage.Device{Driver: "pcie", PCIAddress: "0000:3b:00.0"}, "", false},
		{"pcie before the SPDK container recorded its device", agentFlags{driver: "pcie", transport: "tcp"}, storage.Device{}, "hand-off", false},
		{"aio without a path", agentFlags{driver: "aio", transport: "tcp"}, storage.Device{}, "--device-path is required", true},
		{"tiny malloc", agentFlags{driver: "malloc", mallocSize: "1Ki", transport: "tcp"}, storage.Device{}, "at least 1Mi", true},
		{"unknown driver", agentFlags{driver: "nvme", transport: "tcp"}, storage.Device{}, "none of pcie", true},
		{"unknown transport", agentFlags{driver: "aio", devicePath: "/d", transport: "fc"}, storage.Device{}, "neither tcp nor rdma", true},
		{"no port", agentFlags{driver: "aio", devicePath: "/d", transport: "tcp", port: -1}, storage.Device{}, "port -1 is outside 1-65535", true},
		{"rdma before Multus attached", agentFlags{driver: "aio", devicePath: "/d", transport: "rdma", attachment: "storage", networkStatusFile: filepath.Join(dir, "none")}, storage.Device{}, "network status", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.f.socket = socket
			if tt.f.port == 0 {
				tt.f.port = 4420
			}
			cfg, err := config(tt.f)
			if tt.wantErr != "" {
				var fe *flagError
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				if isFinal := errors.As(err, &fe); isFinal != tt.final {
					t.Fatalf("%v: final = %v, want %v (a final error stops the agent, others are waited out)", err, isFinal, tt.final)
				}
				return
			}
			if err != nil || cfg.Device != tt.want || cfg.Listener.Address != "10.0.0.5" {
				t.Fatalf("config = %+v, %v; want device %+v on 10.0.0.5", cfg, err, tt.want)
			}
		})
	}
	// The SPDK container records the device plugin's device.
	if err := launch.WriteHandoff(dir, launch.Handoff{PCIAddress: "0000:5e:00.0", CoreMask: "0x3"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := config(agentFlags{driver: "pcie", transport: "tcp", socket: socket, port: 4420})
	if err != nil || cfg.Device.PCIAddress != "0000:5e:00.0" {
		t.Fatalf("pcie from the hand-off: %+v, %v", cfg, err)
	}
}

// A probes' port another holds (a second host-network OSD on the node) is
// a finding that stops the container, not a server that never serves.
func TestFencePortTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	f, err := startFenceServer(fenceFlags{address: l.Addr().String()})
	if err != nil || f == nil || f.Reason != agentv1.PreflightFencePortInUse || !f.Fatal {
		t.Fatalf("finding %+v, %v; want a fatal %s", f, err, agentv1.PreflightFencePortInUse)
	}
}
