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

// Package guest is the VM node lab's test, run inside the QEMU guest by
// hack/vmlab/run.sh (make test-vm): the CSI node service, as
// cmd/csi-driver builds it, served over gRPC and driven by a CSI client
// against the guest's kernel NVMe-oF target (nvmet) over TCP and over
// RDMA (soft-RoCE), with the real kernel NVMe-oF host. Outside the guest
// it does nothing.
package guest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	csispec "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	mount "k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"

	"github.com/flint-io/flint/csi"
	"github.com/flint-io/flint/csi/nvmeof"
)

var (
	address  string
	node     *csi.Node
	attacher *csi.FabricAttacher
	client   csispec.NodeClient
	hostNQN  string
)

func TestMain(m *testing.M) {
	if os.Getenv("FLINT_VM_GUEST") != "1" {
		fmt.Println("the VM lab's guest test runs inside the VM: make test-vm")
		os.Exit(0)
	}
	address = os.Getenv("FLINT_VM_ADDRESS")
	if err := start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// start serves the node service on a unix socket, wired as cmd/csi-driver
// wires it (with short reconnect settings for a quick lab).
func start() error {
	var err error
	if hostNQN, err = nvmeof.HostNQN("/etc/nvme/hostnqn"); err != nil {
		return err
	}
	hostID, err := nvmeof.HostID(hostNQN, "/etc/nvme/hostid")
	if err != nil {
		return err
	}
	attacher = &csi.FabricAttacher{
		Host:          &nvmeof.Host{Sysfs: "/sys", Dev: "/dev", HostNQN: hostNQN, HostID: hostID, Options: nvmeof.Options{CtrlLossTimeout: 2 * time.Minute, ReconnectDelay: time.Second}},
		DeviceTimeout: 20 * time.Second,
		JoinTimeout:   5 * time.Second, // the refused target of TestTargetRecreated waits this long
	}
	node = &csi.Node{
		NodeID: hostNQN, NodeName: "vm", Attacher: attacher, StateDir: "/run/flint-csi", ResizeTimeout: 20 * time.Second,
		Mounter: mount.NewSafeFormatAndMount(mount.New(""), utilexec.New()),
	}
	lis, err := csi.Listen("unix:///run/csi.sock")
	if err != nil {
		return err
	}
	go func() { _ = csi.NewServer(logr.Discard(), &csi.Identity{}, nil, node).Serve(lis) }()
	conn, err := grpc.NewClient("unix:///run/csi.sock", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	client = csispec.NewNodeClient(conn)
	return nil
}

// volume is one volume of a test: a kernel subsystem and the paths the
// node service uses for it.
type volume struct {
	id, staging, target string
	block               bool
	fsType              string
	sub                 *subsystem
	publish             map[string]string
	// context and secrets are what the kubelet passes with the volume:
	// its volume context, and its StorageClass's node secrets.
	context, secrets map[string]string
}

func newVolume(t *testing.T, name, transport string, portID, svcid int, block bool, fsType string, sizeMiB int64) *volume {
	port(t, portID, transport, address, svcid)
	v := &volume{
		id: name, block: block, fsType: fsType,
		staging: filepath.Join("/run/staging", name), target: filepath.Join("/run/pods", name, "volume"),
		sub: newSubsystem(t, "nqn.2026-01.io.flint:volume:"+name, hostNQN, sizeMiB),
	}
	v.sub.expose(portID)
	v.publish = map[string]string{csi.PublishNQN: v.sub.nqn, csi.PublishTransport: transport, csi.PublishPaths: fmt.Sprintf("%s:%d", address, svcid)}
	return v
}

func (v *volume) capability() *csispec.VolumeCapability {
	c := &csispec.VolumeCapability{AccessMode: &csispec.VolumeCapability_AccessMode{Mode: csispec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}
	if v.block {
		c.AccessType = &csispec.VolumeCapability_Block{Block: &csispec.VolumeCapability_BlockVolume{}}
	} else {
		c.AccessType = &csispec.VolumeCapability_Mount{Mount: &csispec.VolumeCapability_MountVolume{FsType: v.fsType}}
	}
	return c
}

func (v *volume) stage(ctx context.Context) error {
	_, err := client.NodeStageVolume(ctx, &csispec.NodeStageVolumeRequest{VolumeId: v.id, StagingTargetPath: v.staging, VolumeCapability: v.capability(), PublishContext: v.publish,
		VolumeContext: v.context, Secrets: v.secrets})
	return err
}

func (v *volume) publishAt(ctx context.Context) error {
	_, err := client.NodePublishVolume(ctx, &csispec.NodePublishVolumeRequest{VolumeId: v.id, StagingTargetPath: v.staging, TargetPath: v.target, VolumeCapability: v.capability(), PublishContext: v.publish,
		VolumeContext: v.context, Secrets: v.secrets})
	return err
}

func (v *volume) unpublish(ctx context.Context) error {
	_, err := client.NodeUnpublishVolume(ctx, &csispec.NodeUnpublishVolumeRequest{VolumeId: v.id, TargetPath: v.target})
	return err
}

func (v *volume) unstage(ctx context.Context) error {
	_, err := client.NodeUnstageVolume(ctx, &csispec.NodeUnstageVolumeRequest{VolumeId: v.id, StagingTargetPath: v.staging})
	return err
}

func (v *volume) health(ctx context.Context) ([]*csispec.VolumeHealth_VolumeHealthEntry, error) {
	r, err := client.NodeGetVolumeHealth(ctx, &csispec.NodeGetVolumeHealthRequest{VolumeId: v.id})
	return r.GetVolumeHealth().GetHealthStatuses(), err
}

// dataPath is where the test writes: a file on the filesystem, or the
// raw device.
func (v *volume) dataPath() string {
	if v.block {
		return v.target
	}
	return filepath.Join(v.target, "data")
}

func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// writeSynced writes data at the start of path and syncs it to the target.
func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.WriteAt(data, 0); err != nil {
		return err
	}
	return f.Sync()
}

// checkOnTarget reads what the target stored, after the host let go: the
// namespace's loop device itself (block), or the file on it (filesystem,
// mounted read-only in the guest).
func (v *volume) checkOnTarget(t *testing.T, want []byte, name string) {
	t.Helper()
	src := v.sub.loop
	if !v.block {
		mnt := filepath.Join("/run/check", v.id)
		must(t, os.MkdirAll(mnt, 0o755), "mkdir")
		run(t, "mount", "-o", "ro", "-t", v.fsType, v.sub.loop, mnt)
		defer run(t, "umount", mnt)
		src = filepath.Join(mnt, name)
	}
	f, err := os.Open(src)
	must(t, err, "open the target's copy")
	defer func() { _ = f.Close() }()
	got := make([]byte, len(want))
	_, err = io.ReadFull(f, got)
	must(t, err, "read the target's copy")
	if sha256.Sum256(got) != sha256.Sum256(want) {
		t.Fatalf("the target holds other data than was written through %s", v.dataPath())
	}
}

func noControllers(t *testing.T, nqn string) {
	t.Helper()
	ctrls, err := attacher.Host.Controllers(nqn)
	must(t, err, "list controllers")
	if len(ctrls) != 0 {
		t.Fatalf("controllers of %s left after unstage: %+v", nqn, ctrls)
	}
}

// TestLifecycle: stage, publish, write and read back, grow, stats,
// health, unpublish, unstage, for filesystem and block volumes over TCP
// and RDMA; the target's copy matches what was written.
func TestLifecycle(t *testing.T) {
	cases := []struct {
		transport string
		port, svc int
		fsType    string
	}{{"tcp", 1, 4420, "ext4"}, {"rdma", 2, 4430, "xfs"}}
	for _, c := range cases {
		for _, block := range []bool{false, true} {
			kind := c.fsType
			if block {
				kind = "block"
			}
			t.Run(c.transport+"/"+kind, func(t *testing.T) {
				started := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
				defer cancel()
				size, grown := int64(64), int64(96)
				if c.fsType == "xfs" && !block {
					size, grown = 320, 384 // mkfs.xfs wants 300MB
				}
				v := newVolume(t, fmt.Sprintf("life-%s-%s", c.transport, kind), c.transport, c.port, c.svc, block, c.fsType, size)
				for range 2 { // repeated calls are no-ops
					must(t, v.stage(ctx), "NodeStageVolume")
					must(t, v.publishAt(ctx), "NodePublishVolume")
				}
				data := randomBytes(t, 4<<20)
				must(t, writeSynced(v.dataPath(), data), "write")
				got, err := os.ReadFile(v.dataPath())
				must(t, err, "read back")
				if !bytes.Equal(got[:len(data)], data) {
					t.Fatal("read back other data than written")
				}

				if err := v.unstage(ctx); status.Code(err) != codes.FailedPrecondition {
					t.Fatalf("NodeUnstageVolume while published: want FailedPrecondition, got %v", err)
				}

				v.sub.grow(grown)
				exp, err := client.NodeExpandVolume(ctx, &csispec.NodeExpandVolumeRequest{VolumeId: v.id, VolumePath: v.target, StagingTargetPath: v.staging, CapacityRange: &csispec.CapacityRange{RequiredBytes: grown << 20}, VolumeCapability: v.capability()})
				must(t, err, "NodeExpandVolume")
				if exp.CapacityBytes < grown<<20 {
					t.Fatalf("NodeExpandVolume: capacity %d, want %d", exp.CapacityBytes, grown<<20)
				}
				stats, err := client.NodeGetVolumeStats(ctx, &csispec.NodeGetVolumeStatsRequest{VolumeId: v.id, VolumePath: v.target})
				must(t, err, "NodeGetVolumeStats")
				total := stats.Usage[0].Total
				if block && total != grown<<20 || !block && (total <= (size<<20)*9/10 || stats.Usage[0].Used < int64(len(data))) {
					t.Fatalf("NodeGetVolumeStats after growing %d→%d MiB: %v", size, grown, stats.Usage)
				}
				h, err := v.health(ctx)
				must(t, err, "NodeGetVolumeHealth")
				if len(h) != 0 {
					t.Fatalf("NodeGetVolumeHealth of a connected volume: %v", h)
				}

				for range 2 {
					must(t, v.unpublish(ctx), "NodeUnpublishVolume")
					must(t, v.unstage(ctx), "NodeUnstageVolume")
				}
				noControllers(t, v.sub.nqn)
				v.checkOnTarget(t, data, "data")
				t.Logf("%s %s: stage→publish→4 MiB write/read→grow %d→%d MiB→stats (total %d)→unstage in %s", c.transport, kind, size, grown, total, time.Since(started).Round(time.Millisecond))
			})
		}
	}
}

// TestRefusedHost: a subsystem that does not allow this node's host NQN
// refuses the connect, and NodeStage says so.
func TestRefusedHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	port(t, 1, "tcp", address, 4420)
	v := &volume{id: "refused", staging: "/run/staging/refused", fsType: "ext4",
		sub: newSubsystem(t, "nqn.2026-01.io.flint:volume:refused", "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-0000000000ff", 16)}
	v.sub.expose(1)
	v.publish = map[string]string{csi.PublishNQN: v.sub.nqn, csi.PublishTransport: "tcp", csi.PublishPaths: address + ":4420"}
	err := v.stage(ctx)
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "refused host "+hostNQN) {
		t.Fatalf("NodeStageVolume of a volume not published to this host: want Unavailable saying the target refused the host, got %v", err)
	}
	t.Logf("refused: %v", status.Convert(err).Message())
	noControllers(t, v.sub.nqn)
	must(t, v.unstage(ctx), "NodeUnstageVolume of a volume that never staged")
}

func waitHealth(t *testing.T, v *volume, want string) []*csispec.VolumeHealth_VolumeHealthEntry {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for {
		h, err := v.health(context.Background())
		must(t, err, "NodeGetVolumeHealth")
		got := "healthy"
		if len(h) > 0 {
			got = h[0].Status.String()
		}
		if got == want {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("volume health stayed %s (%v), want %s", got, h, want)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestTargetLoss: the target going away while mounted makes the volume
// INACCESSIBLE; its return makes it healthy again and I/O goes on.
func TestTargetLoss(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	v := newVolume(t, "loss", "tcp", 1, 4420, false, "ext4", 64)
	must(t, v.stage(ctx), "NodeStageVolume")
	must(t, v.publishAt(ctx), "NodePublishVolume")
	before := randomBytes(t, 1<<20)
	must(t, writeSynced(v.dataPath(), before), "write")

	v.sub.hide(1)
	h := waitHealth(t, v, "INACCESSIBLE")
	t.Logf("target gone: %s: %s", h[0].Reason, h[0].Message)
	v.sub.expose(1)
	waitHealth(t, v, "healthy")
	after := randomBytes(t, 1<<20)
	must(t, writeSynced(filepath.Join(v.target, "after"), after), "write after the target returned")

	must(t, v.unpublish(ctx), "NodeUnpublishVolume")
	must(t, v.unstage(ctx), "NodeUnstageVolume")
	v.checkOnTarget(t, before, "data")
	v.checkOnTarget(t, after, "after")
}

// writer writes data to path in chunks, syncing after each, and reports
// the chunks done on progress and its end on done.
type writer struct {
	data     []byte
	chunk    int
	progress chan int
	done     chan error
}

func startWriter(t *testing.T, path string, chunk, chunks int) *writer {
	w := &writer{data: randomBytes(t, chunk*chunks), chunk: chunk, progress: make(chan int, chunks), done: make(chan error, 1)}
	go func() {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			w.done <- err
			return
		}
		defer func() { _ = f.Close() }()
		for i := range chunks {
			if _, err := f.WriteAt(w.data[i*chunk:(i+1)*chunk], int64(i*chunk)); err != nil {
				w.done <- fmt.Errorf("chunk %d: %w", i, err)
				return
			}
			if err := f.Sync(); err != nil {
				w.done <- fmt.Errorf("sync after chunk %d: %w", i, err)
				return
			}
			w.progress <- i
		}
		w.done <- nil
	}()
	return w
}

// waitFor returns once chunk n is written.
func (w *writer) waitFor(t *testing.T, n int) {
	for {
		select {
		case i := <-w.progress:
			if i >= n {
				return
			}
		case err := <-w.done:
			t.Fatalf("the writer ended before chunk %d: %v", n, err)
		}
	}
}

// follow follows v's target to port svcid until it succeeds or ctx ends.
func follow(ctx context.Context, t *testing.T, v *volume, svcid int32) time.Duration {
	moved := time.Now()
	to := csi.Target{VolumeID: v.id, NQN: v.sub.nqn, Paths: []nvmeof.Path{{Transport: "tcp", Address: address, Port: svcid}}}
	for {
		err := node.FollowTarget(ctx, attacher, to)
		if err == nil {
			return time.Since(moved)
		}
		if ctx.Err() != nil {
			t.Fatalf("follow the moved target: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkFollowed checks that the writer saw no error, the device did not
// change and one live path is left, on svcid.
func checkFollowed(t *testing.T, v *volume, w *writer, deviceBefore string, svcid int32) {
	t.Helper()
	if err := <-w.done; err != nil {
		t.Fatalf("the writer saw an error while the target moved: %v", err)
	}
	deviceAfter, err := attacher.Host.Device(v.sub.nqn)
	must(t, err, "device")
	ctrls, err := attacher.Host.Controllers(v.sub.nqn)
	must(t, err, "controllers")
	if deviceAfter != deviceBefore || len(ctrls) != 1 || ctrls[0].Path.Port != svcid || !ctrls[0].Live() {
		t.Fatalf("after following: device %s (was %s), paths %+v; want the same device and one live path on %d", deviceAfter, deviceBefore, ctrls, svcid)
	}
}

// writingVolume stages and publishes ext4 volume name from port 4420
// (port 4421 ready for a move) and returns it with its device once a
// writer that syncs every 256 KiB has written 4 MiB of its 16.
func writingVolume(ctx context.Context, t *testing.T, name string) (*volume, *writer, string) {
	v := newVolume(t, name, "tcp", 1, 4420, false, "ext4", 64)
	port(t, 3, "tcp", address, 4421)
	must(t, v.stage(ctx), "NodeStageVolume")
	must(t, v.publishAt(ctx), "NodePublishVolume")
	device, err := attacher.Host.Device(v.sub.nqn)
	must(t, err, "device")
	w := startWriter(t, v.dataPath(), 256<<10, 64)
	w.waitFor(t, 15)
	return v, w, device
}

// TestPathFollow: the target moves to another port (as after an OSD
// loss) while a writer writes; following it connects the new path and
// drops the old one; the writer sees no error, the mounted device never
// changes and the target holds exactly what was written.
func TestPathFollow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	v, w, deviceBefore := writingVolume(ctx, t, "follow")
	v.sub.renumber(1000) // the new target's controller ids (see docs/csi.md)
	v.sub.expose(3)
	v.sub.hide(1)
	t.Logf("followed the target to port 4421 in %s", follow(ctx, t, v, 4421).Round(time.Millisecond))
	checkFollowed(t, v, w, deviceBefore, 4421)
	must(t, v.unpublish(ctx), "NodeUnpublishVolume")
	must(t, v.unstage(ctx), "NodeUnstageVolume")
	v.checkOnTarget(t, w.data, "data")
	t.Logf("%d MiB written across the move, device %s unchanged, target checksum matches", len(w.data)>>20, deviceBefore)
}

// TestTargetRecreated: the target is lost and a new one is built for the
// volume, as the operator does on another OSD: the subsystem is deleted
// and created again over the same data. Built with other namespace
// identifiers, the kernel refuses to join its namespace to the volume's
// device, and following it fails and keeps the old path (this is what
// catches a target that does not carry the volume's identity); built
// with the same identifiers and a new controller-id range, following it
// keeps the mounted device and the writer sees no error.
func TestTargetRecreated(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	v, w, deviceBefore := writingVolume(ctx, t, "recreated")
	identity := v.sub.id
	impostor := newIdentity(t)
	impostor.serial = identity.serial
	v.sub.recreate(impostor, 1000)
	v.sub.expose(3)
	to := csi.Target{VolumeID: v.id, NQN: v.sub.nqn, Paths: []nvmeof.Path{{Transport: "tcp", Address: address, Port: 4421}}}
	refused := node.FollowTarget(ctx, attacher, to)
	if refused == nil || !strings.Contains(refused.Error(), "did not join") {
		t.Fatalf("following a target with other namespace identifiers: want an error saying its namespace did not join %s, got %v", deviceBefore, refused)
	}
	if !kernelLogged(t, "IDs don't match for shared namespace") {
		t.Fatal("the kernel did not log that it refused the namespace of other identity")
	}
	ctrls, err := attacher.Host.Controllers(v.sub.nqn)
	must(t, err, "controllers")
	if len(ctrls) != 1 || ctrls[0].Path.Port != 4420 {
		t.Fatalf("after a refused follow: paths %+v, want only the old path on 4420", ctrls)
	}
	t.Logf("refused: %v", refused)

	v.sub.recreate(identity, 2000)
	v.sub.expose(3)
	t.Logf("followed the re-created target to port 4421 in %s", follow(ctx, t, v, 4421).Round(time.Millisecond))
	checkFollowed(t, v, w, deviceBefore, 4421)
	must(t, v.unpublish(ctx), "NodeUnpublishVolume")
	must(t, v.unstage(ctx), "NodeUnstageVolume")
	v.checkOnTarget(t, w.data, "data")
	t.Logf("%d MiB written across the re-creation, device %s unchanged, target checksum matches", len(w.data)>>20, deviceBefore)
}

// kernelLogged says whether the kernel's log holds msg.
func kernelLogged(t *testing.T, msg string) bool {
	f, err := os.OpenFile("/dev/kmsg", os.O_RDONLY|syscall.O_NONBLOCK, 0)
	must(t, err, "open the kernel log")
	defer func() { _ = f.Close() }()
	buf := make([]byte, 8192)
	for {
		n, err := f.Read(buf)
		if err != nil {
			return false // EAGAIN: the end of the log
		}
		if strings.Contains(string(buf[:n]), msg) {
			return true
		}
	}
}
