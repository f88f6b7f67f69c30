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
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flint-io/flint/internal/pki"
	"github.com/flint-io/flint/internal/pki/pkitest"
	"github.com/flint-io/flint/internal/spdk/client"
	"github.com/flint-io/flint/internal/spdk/spdktest"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
	"github.com/flint-io/flint/osd-image/agent/lease"
	"github.com/flint-io/flint/osd-image/agent/lifecycle"
	"github.com/flint-io/flint/osd-image/agent/storage"
)

func newCA(t *testing.T, name string) *pki.CA {
	c, err := pki.NewCA(name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func issue(t *testing.T, c *pki.CA, l pki.Leaf) (certPEM, keyPEM []byte) {
	l.Validity = time.Hour
	certPEM, keyPEM, err := c.Issue(l)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

type fixture struct {
	addr   string
	ca     *pki.CA
	target *spdktest.Target
	keeper *lifecycle.Keeper
	spdk   *client.Client
	lease  *lease.Keeper
	file   lease.File
	clock  *clock
}

// clock is the lease's time, moved by the test.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// podUID is the uid of the pod the fixture's agent runs in.
const podUID = "0d6c1f2e-pod-a"

// start runs the API over mTLS on loopback, backed by a bootstrapped OSD
// on the SPDK double, in pod podUID.
func start(t *testing.T) *fixture {
	dir, err := os.MkdirTemp("", "flint-agent-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	tg, err := spdktest.NewFabric().StartTarget(filepath.Join(dir, "spdk.sock"))
	if err != nil {
		t.Fatal(err)
	}
	spdk := client.New(tg.Socket())
	t.Cleanup(func() { _ = spdk.Close(); tg.Kill() })
	dev := filepath.Join(dir, "dev.img")
	if err := os.WriteFile(dev, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(dev, 1<<30); err != nil {
		t.Fatal(err)
	}
	o := storage.New(storage.Config{
		UID: "osd-a", Device: storage.Device{Driver: storage.DriverAIO, Path: dev},
		Listener: storage.Listener{Transport: "tcp", Address: "127.0.0.1", Port: 4420},
	}, spdk)
	keeper := lifecycle.New(o, spdk, "warning", logr.Discard())
	if err := keeper.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}

	authority := newCA(t, "flint-ca")
	certPEM, keyPEM := issue(t, authority, pki.Leaf{Name: "osd-a", Server: true, IPs: []net.IP{net.ParseIP("127.0.0.1")}})
	tlsDir := filepath.Join(dir, "tls")
	for name, data := range map[string][]byte{CertFile: certPEM, KeyFile: keyPEM, CAFile: authority.CertPEM} {
		if err := os.MkdirAll(tlsDir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tlsDir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{now: time.Now()}
	file := lease.File{Path: filepath.Join(dir, "lease")}
	leases, err := lease.New(file, o, c.Now, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leases.Renew(time.Hour, time.Now().Add(time.Hour), 0); err != nil {
		t.Fatal(err)
	}
	g, err := Serve(lis, New(o, spdk, keeper.Ready, keeper.Warnings, leases, podUID), tlsDir, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Stop)
	return &fixture{addr: lis.Addr().String(), ca: authority, target: tg, keeper: keeper, spdk: spdk, lease: leases, file: file, clock: c}
}

// dial connects with the given client certificate (nil for none), trusting
// the agent's CA.
func (f *fixture) dial(t *testing.T, cert *tls.Certificate) agentv1.OSDAgentClient {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(f.ca.CertPEM)
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS13}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	conn, err := grpc.NewClient(f.addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return agentv1.NewOSDAgentClient(conn)
}

func clientCert(t *testing.T, signer *pki.CA) *tls.Certificate {
	return namedClientCert(t, signer, agentv1.OperatorClientName)
}

func namedClientCert(t *testing.T, signer *pki.CA, name string) *tls.Certificate {
	cert := pkitest.Cert(t, signer, pki.Leaf{Name: name})
	return &cert
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestOnlyTheOperatorsCertificateIsServed(t *testing.T) {
	f := start(t)
	tests := []struct {
		name string
		cert *tls.Certificate
		ok   bool
	}{
		{"client signed by the agent's CA", clientCert(t, f.ca), true},
		{"client without a certificate", nil, false},
		{"client of the agent's CA that is not the operator (the metrics scraper)", namedClientCert(t, f.ca, agentv1.MetricsClientName), false},
		{"client signed by another CA", clientCert(t, newCA(t, "someone-else")), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.dial(t, tt.cert).GetStatus(callCtx(t), &agentv1.GetStatusRequest{})
			if tt.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tt.ok && status.Code(err) != codes.Unavailable {
				t.Fatalf("err = %v, want the handshake refused (Unavailable)", err)
			}
		})
	}
}

func TestOnlyCallsMeantForItsPodAreServed(t *testing.T) {
	f := start(t)
	agent := f.dial(t, clientCert(t, f.ca))
	tests := []struct {
		name   string
		meant  []string // the pod uid the call names; none for a caller that names none
		reason string
	}{
		{"a call meant for the agent's pod", []string{podUID}, ""},
		{"a call that names no pod (an operator from before pods were named)", nil, ""},
		{"a call meant for the pod's successor or predecessor", []string{"7a1e90c3-pod-b"}, agentv1.ReasonWrongPod},
		{"a call that names an empty pod", []string{""}, agentv1.ReasonWrongPod},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := callCtx(t)
			if len(tt.meant) > 0 {
				ctx = metadata.AppendToOutgoingContext(ctx, agentv1.PodUIDHeader, tt.meant[0])
			}
			var header metadata.MD
			_, err := agent.GetStatus(ctx, &agentv1.GetStatusRequest{}, grpc.Header(&header))
			if got := agentv1.ReasonOf(err); got != tt.reason || (tt.reason == "" && err != nil) {
				t.Fatalf("err = %v (reason %q), want reason %q", err, got, tt.reason)
			}
			if got := header.Get(agentv1.PodUIDHeader); !slices.Equal(got, []string{podUID}) {
				t.Fatalf("the answer names pods %v, want [%s]", got, podUID)
			}
		})
	}
}

// A renewal meant for another pod renews nothing: the operator counts on
// the lease of the pod it named alone.
func TestARenewalMeantForAnotherPodRenewsNothing(t *testing.T) {
	f := start(t)
	before := f.lease.Expiry()
	ctx := metadata.AppendToOutgoingContext(callCtx(t), agentv1.PodUIDHeader, "7a1e90c3-pod-b")
	_, err := f.dial(t, clientCert(t, f.ca)).RenewLease(ctx, &agentv1.RenewLeaseRequest{DurationMs: uint32((2 * time.Hour).Milliseconds())})
	if agentv1.ReasonOf(err) != agentv1.ReasonWrongPod {
		t.Fatalf("err = %v, want reason %s", err, agentv1.ReasonWrongPod)
	}
	if got := f.lease.Expiry(); !got.Equal(before) {
		t.Fatalf("the lease's expiry moved from %s to %s", before, got)
	}
}

func TestCodes(t *testing.T) {
	f := start(t)
	c := f.dial(t, clientCert(t, f.ca))
	st, err := c.GetStatus(callCtx(t), &agentv1.GetStatusRequest{})
	if err != nil || !st.GetReady() || st.GetLvstore() != agentv1.LvstoreName("osd-a") || st.GetTotalBytes() == 0 || st.GetEndpoint().GetPort() != 4420 {
		t.Fatalf("status = %v, %v", st, err)
	}
	create := func(size uint64) error {
		_, err := c.CreateReplica(callCtx(t), &agentv1.CreateReplicaRequest{VolumeUid: "pvc-1", SizeBytes: size})
		return err
	}
	tests := []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"create", func() error { return create(64 << 20) }, codes.OK},
		{"create again", func() error { return create(64 << 20) }, codes.OK},
		{"create with another size", func() error { return create(128 << 20) }, codes.AlreadyExists},
		{"bad volume name", func() error {
			_, err := c.CreateReplica(callCtx(t), &agentv1.CreateReplicaRequest{VolumeUid: "Bad_Name", SizeBytes: 1 << 20})
			return err
		}, codes.InvalidArgument},
		{"shrink", func() error {
			_, err := c.ResizeReplica(callCtx(t), &agentv1.ResizeReplicaRequest{VolumeUid: "pvc-1", SizeBytes: 4 << 20})
			return err
		}, codes.InvalidArgument},
		{"resize a missing replica", func() error {
			_, err := c.ResizeReplica(callCtx(t), &agentv1.ResizeReplicaRequest{VolumeUid: "pvc-9", SizeBytes: 4 << 20})
			return err
		}, codes.NotFound},
		{"target over the local replica", func() error {
			_, err := c.EnsureTarget(callCtx(t), &agentv1.EnsureTargetRequest{
				VolumeUid: "pvc-1", Epoch: 1, Members: []*agentv1.Member{{Osd: "osd-a", InSync: true}}, Hosts: []string{"nqn.2014-08.org.nvmexpress:uuid:1f3c5e7a-9b2d-4f6e-8a1c-3e5d7f9b1a2c"},
			})
			return err
		}, codes.OK},
		{"snapshot", func() error {
			_, err := c.CreateSnapshot(callCtx(t), &agentv1.CreateSnapshotRequest{VolumeUid: "pvc-1", Snapshot: "snap-1"})
			return err
		}, codes.OK},
		{"snapshot a missing replica", func() error {
			_, err := c.CreateSnapshot(callCtx(t), &agentv1.CreateSnapshotRequest{VolumeUid: "pvc-9", Snapshot: "snap-9"})
			return err
		}, codes.NotFound},
		{"clone", func() error {
			_, err := c.CloneSnapshot(callCtx(t), &agentv1.CloneSnapshotRequest{Snapshot: "snap-1", VolumeUid: "pvc-2"})
			return err
		}, codes.OK},
		{"status lists replicas, snapshots and targets", func() error {
			st, err := c.GetStatus(callCtx(t), &agentv1.GetStatusRequest{})
			if err != nil {
				return err
			}
			if len(st.GetReplicas()) != 2 || st.GetReplicas()[1].GetVolumeUid() != "pvc-2" || len(st.GetSnapshots()) != 1 ||
				len(st.GetTargets()) != 1 || st.GetTargets()[0].GetOnline() != 1 || st.GetTargets()[0].GetRebuildPercent() != -1 {
				return status.Errorf(codes.Unknown, "status = %v", st)
			}
			return nil
		}, codes.OK},
		{"delete the replica under its target", func() error {
			_, err := c.DeleteReplica(callCtx(t), &agentv1.DeleteReplicaRequest{VolumeUid: "pvc-1"})
			return err
		}, codes.FailedPrecondition},
		{"delete the target", func() error {
			_, err := c.DeleteTarget(callCtx(t), &agentv1.DeleteTargetRequest{VolumeUid: "pvc-1", MemberOsds: []string{"osd-a"}})
			return err
		}, codes.OK},
		{"delete the clone", func() error {
			_, err := c.DeleteReplica(callCtx(t), &agentv1.DeleteReplicaRequest{VolumeUid: "pvc-2"})
			return err
		}, codes.OK},
		{"delete the snapshot", func() error {
			_, err := c.DeleteSnapshot(callCtx(t), &agentv1.DeleteSnapshotRequest{Snapshot: "snap-1"})
			return err
		}, codes.OK},
		{"delete the replica", func() error {
			_, err := c.DeleteReplica(callCtx(t), &agentv1.DeleteReplicaRequest{VolumeUid: "pvc-1"})
			return err
		}, codes.OK},
		{"delete it again", func() error {
			_, err := c.DeleteReplica(callCtx(t), &agentv1.DeleteReplicaRequest{VolumeUid: "pvc-1"})
			return err
		}, codes.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := status.Code(tt.call()); got != tt.want {
				t.Fatalf("code = %v, want %v", got, tt.want)
			}
		})
	}

	// With SPDK gone, calls are Unavailable before and after the agent
	// notices; then GetStatus says why.
	f.target.Kill()
	if err := create(64 << 20); status.Code(err) != codes.Unavailable {
		t.Fatalf("with SPDK down: %v, want Unavailable", err)
	}
	if err := f.keeper.Probe(context.Background()); err == nil {
		t.Fatal("the probe missed SPDK's death")
	}
	if err := create(64 << 20); status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("while not ready: %v, want Unavailable saying why", err)
	}
	st, err = c.GetStatus(callCtx(t), &agentv1.GetStatusRequest{})
	if err != nil || st.GetReady() || !strings.Contains(st.GetNotReadyReason(), "SPDK does not answer") || st.GetNotReadyCode() != agentv1.NotReadyCode_NOT_READY_CODE_SPDK_DOWN {
		t.Fatalf("status while not ready = %v, %v", st, err)
	}
}

// A lapsed lease fences every volume target: its hosts are removed, calls
// that would let hosts in are refused until the lease is renewed, and a
// fenced target serves hosts again only on a confirmed call. The SPDK
// container's probe fails while a lapsed lease finds a host let in or
// SPDK silent, and passes once the agent fenced.
func TestLeaseFencesTargets(t *testing.T) {
	f := start(t)
	c := f.dial(t, clientCert(t, f.ca))
	const host = "nqn.2014-08.org.nvmexpress:uuid:1f3c5e7a-9b2d-4f6e-8a1c-3e5d7f9b1a2c"
	if _, err := c.CreateReplica(callCtx(t), &agentv1.CreateReplicaRequest{VolumeUid: "pvc-1", SizeBytes: 16 << 20}); err != nil {
		t.Fatal(err)
	}
	ensure := func(confirmed bool) error {
		_, err := c.EnsureTarget(callCtx(t), &agentv1.EnsureTargetRequest{
			VolumeUid: "pvc-1", Epoch: 1, Confirmed: confirmed,
			Members: []*agentv1.Member{{Osd: "osd-a", InSync: true}}, Hosts: []string{host},
		})
		return err
	}
	served := func() []string {
		t.Helper()
		v, err := storage.VolumesServed(callCtx(t), f.spdk)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	probe := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return lease.Probe(ctx, f.file, f.clock.Now(), func(ctx context.Context) ([]string, error) { return storage.VolumesServed(ctx, f.spdk) })
	}
	if _, err := c.RenewLease(callCtx(t), &agentv1.RenewLeaseRequest{DurationMs: 10_000, NotAfterUnixMs: f.clock.Now().Add(10 * time.Second).UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	if err := ensure(false); err != nil {
		t.Fatal(err)
	}
	if got := served(); len(got) != 1 || probe() != nil {
		t.Fatalf("a served target under a lease: served %v, probe %v", got, probe())
	}

	f.clock.Add(11 * time.Second)
	if err := probe(); err == nil || !strings.Contains(err.Error(), "pvc-1") {
		t.Fatalf("probe with a lapsed lease and a host let in: %v, want a failure naming pvc-1", err)
	}
	if err := f.lease.Check(callCtx(t)); err != nil {
		t.Fatal(err)
	}
	if got := served(); len(got) != 0 {
		t.Fatalf("after the lease lapsed the OSD still lets hosts reach %v", got)
	}
	if err := probe(); err != nil {
		t.Fatalf("probe after the agent fenced: %v", err)
	}
	if err := ensure(true); status.Code(err) != codes.FailedPrecondition || agentv1.ReasonOf(err) != agentv1.ReasonLeaseLapsed {
		t.Fatalf("EnsureTarget while the lease is lapsed: %v, want FailedPrecondition/%s", err, agentv1.ReasonLeaseLapsed)
	}

	if _, err := c.RenewLease(callCtx(t), &agentv1.RenewLeaseRequest{DurationMs: 10_000}); err != nil {
		t.Fatalf("a renewal from an operator before not_after: %v", err)
	}
	late := &agentv1.RenewLeaseRequest{DurationMs: 10_000, NotAfterUnixMs: f.clock.Now().Add(-time.Second).UnixMilli()}
	if _, err := c.RenewLease(callCtx(t), late); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("a renewal arriving after the lease it grants ended: %v, want DeadlineExceeded", err)
	}
	if _, err := c.RenewLease(callCtx(t), &agentv1.RenewLeaseRequest{DurationMs: 10_000, NotAfterUnixMs: f.clock.Now().Add(10 * time.Second).UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	if err := ensure(false); status.Code(err) != codes.FailedPrecondition || agentv1.ReasonOf(err) != agentv1.ReasonTargetFenced {
		t.Fatalf("an unconfirmed EnsureTarget of a fenced target: %v, want FailedPrecondition/%s", err, agentv1.ReasonTargetFenced)
	}
	if st, err := c.GetStatus(callCtx(t), &agentv1.GetStatusRequest{}); err != nil || len(st.FencedVolumes) != 1 || st.FencedVolumes[0] != "pvc-1" {
		t.Fatalf("status = %v, %v; want pvc-1 fenced", st.GetFencedVolumes(), err)
	}
	if err := ensure(true); err != nil {
		t.Fatal(err)
	}
	if got := served(); len(got) != 1 {
		t.Fatalf("a confirmed re-drive: served %v, want pvc-1", got)
	}
	if err := ensure(false); err != nil {
		t.Fatalf("once confirmed the target is re-driven as usual: %v", err)
	}

	// SPDK frozen: the probe cannot tell what it serves.
	f.clock.Add(11 * time.Second)
	f.target.Kill()
	if err := probe(); err == nil || !strings.Contains(err.Error(), "does not say") {
		t.Fatalf("probe with a lapsed lease and SPDK silent: %v, want a failure", err)
	}
}
