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

package guest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/flint-io/flint/csi"
	"github.com/flint-io/flint/csi/nvmeof"
	spdkclient "github.com/flint-io/flint/internal/spdk/client"
	"github.com/flint-io/flint/internal/spdk/types"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
	"github.com/flint-io/flint/osd-image/agent/deviceplugin"
	"github.com/flint-io/flint/osd-image/agent/launch"
	"github.com/flint-io/flint/osd-image/agent/storage"
)

// The production configuration on the guest's emulated NVMe controller
// (QEMU models a volatile write cache, on by default): hack/vmlab/run.sh
// boots the guest with q35 + intel-iommu, 2 MiB hugepages reserved on the
// kernel command line and soft-RoCE on eth0, and puts SPDK's nvmf_tgt and
// osd-agent in the initramfs when it has an SPDK build (FLINT_VM_SPDK).
const (
	agentBinary = "/sbin/osd-agent"
	spdkBinary  = "/sbin/nvmf_tgt"
	nvmeClass   = "0x010802"
	// spdkHugePages is the SPDK container's hugepage limit: SPDK's -s.
	spdkHugePages = 512 << 20
	nvmeResource  = "flint.io/nvme"
	osdUID        = "4f2b8c1e-vm-osd"
)

func needSPDK(t *testing.T) {
	if os.Getenv("FLINT_VM_SPDK") != "1" {
		t.Skip("the guest has no SPDK: give make test-vm an SPDK build (FLINT_SPDK_DIR, or make spdk's)")
	}
}

// nvmeController is the PCI address of the guest's NVMe controller.
func nvmeController(t *testing.T) string {
	devices, err := filepath.Glob("/sys/bus/pci/devices/*")
	must(t, err, "list PCI devices")
	for _, d := range devices {
		if class, err := os.ReadFile(filepath.Join(d, "class")); err == nil && strings.TrimSpace(string(class)) == nvmeClass {
			return filepath.Base(d)
		}
	}
	t.Fatal("the guest has no NVMe controller")
	return ""
}

// bindTo binds the controller to driver, unbinding it from another first.
func bindTo(t *testing.T, bdf, driver string) {
	t.Helper()
	dev := filepath.Join("/sys/bus/pci/devices", bdf)
	if link, err := os.Readlink(filepath.Join(dev, "driver")); err == nil {
		if filepath.Base(link) == driver {
			return
		}
		write(t, filepath.Join(dev, "driver", "unbind"), bdf)
	}
	write(t, filepath.Join(dev, "driver_override"), driver)
	write(t, "/sys/bus/pci/drivers_probe", bdf)
	if link, err := os.Readlink(filepath.Join(dev, "driver")); err != nil || filepath.Base(link) != driver {
		t.Fatalf("%s is not bound to %s after drivers_probe (%s, %v)", bdf, driver, link, err)
	}
}

// execSPDK runs the SPDK container's entrypoint as its container runs it,
// with env, what the device plugin's allocation gave the container; the
// wrapper (taskset, unshare, a shell) stands for what the container gets.
type execSPDK struct {
	env               map[string]string
	transport, binary string
	hugePages         int64
	wrapper           []string
}

// allocated is the environment the device plugin gives a container
// allocated controller bdf.
func allocated(bdf string) map[string]string {
	return map[string]string{deviceplugin.EnvName(nvmeResource): bdf}
}

// run runs it to its end (binary /bin/true stands for SPDK) and returns
// what it left in its termination log, and its output.
func (e execSPDK) run(t *testing.T) (string, string, error) {
	t.Helper()
	dir := t.TempDir()
	cmd := e.command(dir)
	out, err := cmd.CombinedOutput()
	msg, _ := os.ReadFile(filepath.Join(dir, "termination-log"))
	return string(msg), string(out), err
}

func (e execSPDK) command(dir string) *exec.Cmd {
	args := append(append([]string{}, e.wrapper...), agentBinary, "exec-spdk",
		"--spdk-binary="+e.binary, "--spdk-socket="+filepath.Join(dir, "spdk.sock"), "--cpus=1",
		fmt.Sprintf("--hugepages-bytes=%d", e.hugePages), "--pci-resource="+nvmeResource, "--transport="+e.transport,
		"--termination-log="+filepath.Join(dir, "termination-log"))
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = os.Environ()
	for k, v := range e.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

// Every check exec-spdk makes fails on the guest when its part is broken,
// and names what to do; SPDK is not started then.
func TestPreflightOnTheNode(t *testing.T) {
	needSPDK(t)
	bdf := nvmeController(t)
	base := execSPDK{env: allocated(bdf), transport: "tcp", binary: "/bin/true", hugePages: spdkHugePages, wrapper: []string{"taskset", "-c", "1"}}
	fatal := func(t *testing.T, e execSPDK, reason string) {
		t.Helper()
		msg, out, err := e.run(t)
		f, ok := agentv1.ParsePreflightTermination(msg)
		if err == nil || !ok || f.Reason != reason {
			t.Fatalf("exec-spdk: %v, termination message %q, want %s\n%s", err, msg, reason, out)
		}
		t.Logf("%s: %s", f.Reason, f.Message)
	}

	t.Run("bound to the kernel's nvme driver", func(t *testing.T) {
		run(t, "modprobe", "nvme")
		bindTo(t, bdf, "nvme")
		fatal(t, base, agentv1.PreflightDeviceNotBoundToVFIO)
	})
	t.Run("bound to vfio-pci", func(t *testing.T) {
		bindTo(t, bdf, "vfio-pci")
		if msg, out, err := base.run(t); err != nil || msg != "" {
			t.Fatalf("exec-spdk on a ready node: %v, %q\n%s", err, msg, out)
		}
	})
	t.Run("IOMMU off", func(t *testing.T) {
		// The IOMMU cannot be turned off in a running kernel: the node
		// without one is shown with its groups hidden and the controller
		// back on nvme, as a node booted without intel_iommu=on has it.
		bindTo(t, bdf, "nvme")
		defer bindTo(t, bdf, "vfio-pci")
		e := base
		e.wrapper = []string{"unshare", "--mount", "sh", "-c", `mount -t tmpfs none /sys/kernel/iommu_groups && exec taskset -c 1 "$@"`, "sh"}
		fatal(t, e, agentv1.PreflightIOMMUUnavailable)
	})
	t.Run("vfio_iommu_type1 not loaded", func(t *testing.T) {
		// No SPDK holds a vfio container now: the module unloads.
		run(t, "modprobe", "-r", "vfio_iommu_type1")
		defer run(t, "modprobe", "vfio_iommu_type1")
		fatal(t, base, agentv1.PreflightIOMMUUnavailable)
	})
	t.Run("hugepages too few", func(t *testing.T) {
		e := base
		e.hugePages = 8 << 30
		fatal(t, e, agentv1.PreflightHugePagesInsufficient)
	})
	t.Run("memlock too low without IPC_LOCK", func(t *testing.T) {
		e := base
		e.wrapper = []string{"sh", "-c", `ulimit -l 64 && exec /sbin/setpriv --bounding-set=-ipc_lock /sbin/taskset -c 1 "$@"`, "sh"}
		fatal(t, e, agentv1.PreflightMemlockTooLow)
	})
	t.Run("rdma without an RDMA device in the pod", func(t *testing.T) {
		// A pod's network namespace sees the RDMA devices moved into it
		// once the node's RDMA subsystem is exclusive (as the SR-IOV CNI
		// sets it up); rxe0 stays in the node's.
		run(t, "rdma", "system", "set", "netns", "exclusive")
		defer run(t, "rdma", "system", "set", "netns", "shared")
		e := base
		e.transport = "rdma"
		e.wrapper = []string{"unshare", "--net", "--mount", "sh", "-c", `mount -t sysfs sys /sys && exec taskset -c 1 "$@"`, "sh"}
		fatal(t, e, agentv1.PreflightNoRDMADevice)
	})
	t.Run("rdma with the node's device", func(t *testing.T) {
		e := base
		e.transport = "rdma"
		if msg, out, err := e.run(t); err != nil || msg != "" {
			t.Fatalf("exec-spdk with rxe0: %v, %q\n%s", err, msg, out)
		}
	})
	t.Run("cores shared with the node", func(t *testing.T) {
		e := base
		e.wrapper = nil // the cpuset is every CPU, as without the static CPU manager
		dir := t.TempDir()
		out, err := e.command(dir).CombinedOutput()
		if err != nil {
			t.Fatalf("exec-spdk with shared cores: %v\n%s", err, out)
		}
		h, err := launch.ReadHandoff(dir)
		if err != nil || len(h.Warnings) != 1 || h.Warnings[0].Reason != agentv1.PreflightSharedCores {
			t.Fatalf("hand-off %+v, %v; want the SharedCores warning", h, err)
		}
		t.Logf("%s (warning): %s", h.Warnings[0].Reason, h.Warnings[0].Message)
	})
}

// registration is the kubelet's device plugin registration service.
type registration struct {
	pluginapi.UnimplementedRegistrationServer
	requests chan *pluginapi.RegisterRequest
}

func (r *registration) Register(_ context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	r.requests <- req
	return &pluginapi.Empty{}, nil
}

// allocateController runs osd-agent nvme-device-plugin on the guest as its
// DaemonSet runs it, plays the kubelet's side of the device plugin API,
// and allocates one controller to a container: what that container gets
// (its environment) is returned, checked to name a vfio group device that
// exists.
func allocateController(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	lis, err := net.Listen("unix", filepath.Join(dir, "kubelet.sock"))
	must(t, err, "listen as the kubelet")
	reg := &registration{requests: make(chan *pluginapi.RegisterRequest, 1)}
	g := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(g, reg)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	plugin := exec.Command(agentBinary, "nvme-device-plugin", "--resource-name="+nvmeResource, "--kubelet-dir="+dir, "--interval=500ms")
	plugin.Stdout, plugin.Stderr = os.Stderr, os.Stderr
	must(t, plugin.Start(), "start the device plugin")
	t.Cleanup(func() { _ = plugin.Process.Kill(); _ = plugin.Wait() })
	var req *pluginapi.RegisterRequest
	select {
	case req = <-reg.requests:
	case <-time.After(time.Minute):
		t.Fatal("the device plugin did not register within a minute")
	}
	if req.ResourceName != nvmeResource {
		t.Fatalf("the device plugin registered %q", req.ResourceName)
	}
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, req.Endpoint), grpc.WithTransportCredentials(insecure.NewCredentials()))
	must(t, err, "dial the device plugin")
	t.Cleanup(func() { _ = conn.Close() })
	dp := pluginapi.NewDevicePluginClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stream, err := dp.ListAndWatch(ctx, &pluginapi.Empty{})
	must(t, err, "ListAndWatch")
	list, err := stream.Recv()
	must(t, err, "the device list")
	if len(list.Devices) != 1 || list.Devices[0].Health != pluginapi.Healthy {
		t.Fatalf("the device plugin lists %v, want the guest's one controller healthy", list.Devices)
	}
	alloc, err := dp.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{list.Devices[0].ID}}}})
	must(t, err, "Allocate")
	c := alloc.ContainerResponses[0]
	for _, d := range c.Devices {
		if _, err := os.Stat(d.HostPath); err != nil {
			t.Fatalf("the allocation names %s: %v", d.HostPath, err)
		}
	}
	t.Logf("the device plugin allocated %s: %v, devices %v", list.Devices[0].ID, c.Envs, c.Devices)
	return c.Envs
}

// spdkProcess is nvmf_tgt as the SPDK container runs it.
type spdkProcess struct {
	cmd     *exec.Cmd
	socket  string
	started time.Time
	exited  chan struct{}
}

// startSPDK starts SPDK as the SPDK container would with env, what the
// device plugin allocated it.
func startSPDK(t *testing.T, env map[string]string, dir string) *spdkProcess {
	t.Helper()
	e := execSPDK{env: env, transport: "rdma", binary: spdkBinary, hugePages: spdkHugePages, wrapper: []string{"taskset", "-c", "1"}}
	cmd := e.command(dir)
	logFile, err := os.Create(filepath.Join(dir, "spdk.log"))
	must(t, err, "create SPDK's log")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	p := &spdkProcess{cmd: cmd, socket: filepath.Join(dir, "spdk.sock"), started: time.Now(), exited: make(chan struct{})}
	must(t, cmd.Start(), "start exec-spdk")
	go func() { _ = cmd.Wait(); _ = logFile.Close(); close(p.exited) }()
	spdk := spdkclient.New(p.socket)
	defer func() { _ = spdk.Close() }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := spdk.SpdkGetVersion(ctx)
		cancel()
		if err == nil {
			startupProbed(t)
			return p
		}
		select {
		case <-p.exited:
			log, _ := os.ReadFile(filepath.Join(dir, "spdk.log"))
			t.Fatalf("SPDK exited while starting:\n%s", log)
		case <-time.After(500 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("SPDK does not answer on %s after 2 minutes: %v", p.socket, err)
		}
	}
}

// startupProbed checks that the probes' server exec-spdk left beside SPDK
// answers the kubelet's startup probe, as SPDK answers. (A server that
// outlived a killed SPDK would hold the port and keep the next exec-spdk
// from starting: FencePortInUse.)
func startupProbed(t *testing.T) {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := c.Get("http://127.0.0.1:9442/startup")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the probes' server beside SPDK: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (p *spdkProcess) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// writeCacheOn reads the Volatile Write Cache feature of the controller
// SPDK attached as name.
func writeCacheOn(t *testing.T, spdk *spdkclient.Client, name string) bool {
	t.Helper()
	cpl, _, err := spdk.BdevNvmeAdminCmd(context.Background(), name, types.NvmeCommand{
		Opcode: types.NvmeOpcodeGetFeatures, CDW10: types.NvmeFeatureVolatileWriteCache,
	}, 0)
	must(t, err, "Get Features (Volatile Write Cache)")
	if !cpl.OK() {
		t.Fatalf("Get Features (Volatile Write Cache): %s", cpl)
	}
	return cpl.CDW0&1 == 1
}

// The device plugin hands the NVMe controller out; SPDK drives it with its
// user-space driver over vfio,
// on hugepages and one core; the OSD's bootstrap turns the controller's
// volatile write cache off (again after SPDK restarted); the target
// listens on RDMA (soft-RoCE), and the node service connects the
// kernel's nvme-rdma host to it, writes and fsyncs, lets go, comes back
// as a re-created pod does and reads the data back.
func TestProductionDataPath(t *testing.T) {
	needSPDK(t)
	bdf := nvmeController(t)
	bindTo(t, bdf, "vfio-pci")
	env := allocateController(t)
	if env[deviceplugin.EnvName(nvmeResource)] != bdf {
		t.Fatalf("the device plugin allocated %v, want %s", env, bdf)
	}
	dir := t.TempDir()
	started := time.Now()
	p := startSPDK(t, env, dir)
	defer p.kill()
	t.Logf("SPDK answers %s after its start (TCG)", time.Since(started).Round(100*time.Millisecond))
	args, err := os.ReadFile(filepath.Join(dir, launch.HandoffFile))
	must(t, err, "read the hand-off")
	if !bytes.Contains(args, []byte(`"-s","512"`)) || bytes.Contains(args, []byte("--no-huge")) || !bytes.Contains(args, []byte(bdf)) {
		t.Fatalf("SPDK ran as %s, want hugepages (-s 512, no --no-huge) and --pci-allowed %s", args, bdf)
	}
	spdk := spdkclient.New(p.socket)
	defer func() { _ = spdk.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// The controller as it comes: attached under the OSD's name, before
	// the agent saw it.
	if _, err = spdk.BdevNvmeAttachController(ctx, types.BdevNvmeAttachControllerRequest{Name: "flint_base", Trtype: "pcie", Traddr: bdf}); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "spdk.log"))
		t.Fatalf("attach the controller: %v; SPDK's log:\n%s", err, log)
	}
	if !writeCacheOn(t, spdk, "flint_base") {
		t.Fatal("QEMU's controller came with its volatile write cache off: the test proves nothing")
	}

	keyDir := filepath.Join(dir, "keys")
	must(t, os.Mkdir(keyDir, 0o700), "make the key directory")
	o := storage.New(storage.Config{UID: osdUID, Device: storage.Device{Driver: storage.DriverPCIe, PCIAddress: bdf},
		Listener: storage.Listener{Transport: "rdma", Address: address, Port: 4420}, KeyDir: keyDir}, spdk)
	lvs, err := o.Bootstrap(ctx)
	must(t, err, "bootstrap the OSD")
	if got := o.WriteCache(); got != storage.WriteCacheDisabled || writeCacheOn(t, spdk, "flint_base") {
		t.Fatalf("after bootstrap the OSD reports %s and the controller's cache is on=%t; want it off", got, writeCacheOn(t, spdk, "flint_base"))
	}
	t.Logf("lvstore %s of %d MiB on %s; volatile write cache %s", lvs.Name, lvs.TotalBytes()>>20, bdf, o.WriteCache())

	const key = "prod-vol"
	_, err = o.CreateReplica(ctx, key, 64<<20)
	must(t, err, "create the replica")
	target, err := o.EnsureTarget(ctx, storage.TargetSpec{Volume: key, Epoch: 1, Members: []storage.MemberSpec{{OSD: osdUID, InSync: true}}, Hosts: []string{hostNQN}})
	must(t, err, "ensure the target")
	if target.Export.Transport != "rdma" {
		t.Fatalf("the target exports over %q, want rdma", target.Export.Transport)
	}
	v := &volume{
		id: key, fsType: "ext4", staging: "/run/staging/" + key, target: "/run/pods/" + key + "/volume",
		publish: map[string]string{csi.PublishNQN: target.Export.NQN, csi.PublishTransport: "rdma",
			csi.PublishPaths: fmt.Sprintf("%s:%d", target.Export.Address, target.Export.Port)},
	}
	must(t, v.stage(ctx), "NodeStageVolume over nvme-rdma")
	must(t, v.publishAt(ctx), "NodePublishVolume")
	if transport := controllerTransport(t, target.Export.NQN); transport != "rdma" {
		t.Fatalf("the kernel host connected over %q, want rdma", transport)
	}
	data := randomBytes(t, 1<<20)
	must(t, writeSynced(v.dataPath(), data), "write and fsync")
	pauseUnderAWriter(ctx, t, o, key, target.Export.NQN, filepath.Join(v.target, "paused"))
	handoverUnderAWriter(ctx, t, spdk, target.Export.NQN, target.Export.Port, filepath.Join(v.target, "handed-over"))
	// The pod goes and a new one comes.
	must(t, v.unpublish(ctx), "NodeUnpublishVolume")
	must(t, v.unstage(ctx), "NodeUnstageVolume")
	noControllers(t, target.Export.NQN)
	must(t, v.stage(ctx), "NodeStageVolume again")
	must(t, v.publishAt(ctx), "NodePublishVolume again")
	got, err := os.ReadFile(v.dataPath())
	must(t, err, "read back")
	if !bytes.Equal(got, data) {
		t.Fatal("the re-created pod read other data than was written")
	}
	must(t, v.unpublish(ctx), "NodeUnpublishVolume")
	must(t, v.unstage(ctx), "NodeUnstageVolume")

	// The lab boots a kernel that can authenticate for this (run.sh,
	// VMLAB_AUTH): Debian's 6.1 cannot.
	if os.Getenv("FLINT_VM_AUTH") == "1" {
		hostsAuthenticate(ctx, t, spdk, bdf, keyDir)
	}

	// SPDK dies and the kubelet starts it again: the controller is reset,
	// and the agent's next bootstrap turns the cache off again.
	p.kill()
	p = startSPDK(t, env, dir)
	spdk2 := spdkclient.New(p.socket)
	defer func() { _ = spdk2.Close() }()
	_, err = spdk2.BdevNvmeAttachController(ctx, types.BdevNvmeAttachControllerRequest{Name: "flint_base", Trtype: "pcie", Traddr: bdf})
	must(t, err, "attach the controller after the restart")
	t.Logf("after SPDK restarted, the controller's cache is on=%t before the agent's bootstrap", writeCacheOn(t, spdk2, "flint_base"))
	o = storage.New(storage.Config{UID: osdUID, Device: storage.Device{Driver: storage.DriverPCIe, PCIAddress: bdf},
		Listener: storage.Listener{Transport: "rdma", Address: address, Port: 4420}, KeyDir: keyDir}, spdk2)
	back, err := o.Bootstrap(ctx)
	must(t, err, "bootstrap after the restart")
	if back.UUID != lvs.UUID || o.WriteCache() != storage.WriteCacheDisabled || writeCacheOn(t, spdk2, "flint_base") {
		t.Fatalf("after the restart: lvstore %s (was %s), write cache %s", back.UUID, lvs.UUID, o.WriteCache())
	}
	if _, err := o.DeleteTarget(ctx, key, []string{osdUID}, nil); err != nil && !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("delete the target: %v", err)
	}
	t.Logf("production path on %s: vfio + hugepages + RDMA, 1 MiB written, fsynced and read back by a re-created pod in %s", bdf, time.Since(started).Round(100*time.Millisecond))
}

// controllerTransport is the transport of the kernel host's controller of
// subsystem nqn.
func controllerTransport(t *testing.T, nqn string) string {
	t.Helper()
	ctrls, err := filepath.Glob("/sys/class/nvme/nvme*")
	must(t, err, "list controllers")
	for _, c := range ctrls {
		if sub, err := os.ReadFile(filepath.Join(c, "subsysnqn")); err == nil && strings.TrimSpace(string(sub)) == nqn {
			tr, err := os.ReadFile(filepath.Join(c, "transport"))
			must(t, err, "read the transport")
			return strings.TrimSpace(string(tr))
		}
	}
	t.Fatalf("no controller of %s", nqn)
	return ""
}

// syncedWriter writes and syncs 4 KiB at a time to a file of the volume,
// as a database's log does, and keeps every write's time and result.
type syncedWriter struct {
	t       *testing.T
	writes  chan syncedWrite
	stop    chan struct{}
	done    int
	longest time.Duration
}

type syncedWrite struct {
	took time.Duration
	err  error
}

func startSyncedWriter(t *testing.T, path string) *syncedWriter {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	must(t, err, "open the writer's file")
	w := &syncedWriter{t: t, writes: make(chan syncedWrite, 4096), stop: make(chan struct{})}
	page := randomBytes(t, 4096)
	go func() {
		defer close(w.writes)
		defer func() { _ = f.Close() }()
		for i := range 4000 { // bounded: about 20 synced writes a second under TCG
			select {
			case <-w.stop:
				return
			default:
			}
			start := time.Now()
			_, err := f.WriteAt(page, int64(i%256)*4096)
			if err == nil {
				err = f.Sync()
			}
			w.writes <- syncedWrite{time.Since(start), err}
		}
	}()
	return w
}

// wait takes n more writes, none of which may fail, within 2 minutes.
func (w *syncedWriter) wait(n int, what string) {
	w.t.Helper()
	deadline := time.After(2 * time.Minute)
	for target := w.done + n; w.done < target; {
		select {
		case r, ok := <-w.writes:
			if !ok {
				w.t.Fatalf("the writer ended before %s", what)
			}
			w.take(r, what)
		case <-deadline:
			w.t.Fatalf("the writer did not go on %s within 2 minutes", what)
		}
	}
}

// end stops the writer and takes the writes still under way.
func (w *syncedWriter) end(what string) {
	w.t.Helper()
	close(w.stop)
	for r := range w.writes {
		w.take(r, what)
	}
}

func (w *syncedWriter) take(r syncedWrite, what string) {
	w.t.Helper()
	if r.err != nil {
		w.t.Fatalf("a write failed %s: %v", what, r.err)
	}
	w.longest = max(w.longest, r.took)
	w.done++
}

// pauseUnderAWriter pauses the volume's target as a snapshot does while
// the kernel host writes and syncs 4 KiB at a time to path: the host's
// controller must stay the same one, live, no write may fail, and the
// writes go on after the resume. It prints the host's longest wait.
func pauseUnderAWriter(ctx context.Context, t *testing.T, o *storage.Engine, volume, nqn, path string) {
	t.Helper()
	before := liveController(t, nqn)
	w := startSyncedWriter(t, path)
	w.wait(5, "before the pause")
	paused := time.Now()
	_, err := o.PauseTarget(ctx, volume, []string{osdUID})
	must(t, err, "pause the target")
	time.Sleep(400 * time.Millisecond)
	must(t, o.ResumeTarget(ctx, volume), "resume the target")
	held := time.Since(paused)
	w.wait(5, "after the resume")
	w.end("after the resume")
	if after := liveController(t, nqn); after != before {
		t.Fatalf("the host's controller was %s before the pause and %s after: it reconnected", before, after)
	}
	t.Logf("paused %s under the kernel host's writer: %d synced 4 KiB writes, none failed, the longest took %s; the host kept controller %s",
		held.Round(time.Millisecond), w.done, w.longest.Round(time.Millisecond), before)
}

// handoverUnderAWriter hands the kernel host's I/O from the target's
// listener to a second one and back, as a planned target move could with
// the new target's path connected before the old target stops
// (docs/proposals/planned-move-handover.md): the second path is added
// inaccessible, and the host must join its namespace to the mounted head
// while it carries no I/O; the old path then turns inaccessible and the
// new one optimized, and the old path goes. No write may fail, the mounted
// device stays, and it prints the host's longest wait for a write.
func handoverUnderAWriter(ctx context.Context, t *testing.T, spdk *spdkclient.Client, nqn string, from int, path string) {
	t.Helper()
	to := from + 1
	w := startSyncedWriter(t, path)
	w.wait(5, "before the handover")
	there := handover(ctx, t, spdk, w, nqn, from, to)
	back := handover(ctx, t, spdk, w, nqn, to, from)
	w.end("after the handovers")
	t.Logf("handed the kernel host's I/O over between two listeners and back under its writer: %d synced 4 KiB writes, none failed, the longest took %s; the switches (old path inaccessible to new path optimized) took %s and %s",
		w.done, w.longest.Round(time.Millisecond), there.Round(time.Millisecond), back.Round(time.Millisecond))
}

// handover moves the host's I/O from listener port from to port to and
// returns how long the switch took between SPDK's two ANA changes.
func handover(ctx context.Context, t *testing.T, spdk *spdkclient.Client, w *syncedWriter, nqn string, from, to int) time.Duration {
	t.Helper()
	listener := func(port int) types.ListenAddress {
		return types.ListenAddress{Trtype: "rdma", Adrfam: "ipv4", Traddr: address, Trsvcid: fmt.Sprint(port)}
	}
	setState := func(port int, state string) {
		t.Helper()
		must(t, spdk.NvmfSubsystemListenerSetAnaState(ctx, types.NvmfListenerAnaStateRequest{NQN: nqn, ListenAddress: listener(port), AnaState: state}),
			fmt.Sprintf("set port %d %s", port, state))
	}
	device, err := attacher.Host.Device(nqn)
	must(t, err, "find the mounted device")
	must(t, spdk.NvmfSubsystemAddListener(ctx, nqn, listener(to)), fmt.Sprintf("listen on port %d", to))
	// A listener comes optimized: it turns inaccessible before the host
	// connects, as a standby target's would be built.
	setState(to, types.AnaInaccessible)
	must(t, attacher.Host.Connect(ctx, nqn, nvmeof.Path{Transport: "rdma", Address: address, Port: int32(to)}, nvmeof.Secrets{}), fmt.Sprintf("connect port %d", to))
	standby := controllerOn(t, nqn, to)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		joined := attacher.Host.Carries(standby, device)
		state := pathANAState(standby)
		if joined && state == types.AnaInaccessible {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s after the connect the path of port %d has joined %s: %t, and the kernel reads its ANA state as %q; want joined and %s",
				to, device, joined, state, types.AnaInaccessible)
		}
	}
	w.wait(3, fmt.Sprintf("with port %d connected inaccessible", to))
	switched := time.Now()
	setState(from, types.AnaInaccessible)
	setState(to, types.AnaOptimized)
	took := time.Since(switched)
	w.wait(3, fmt.Sprintf("after the switch to port %d", to))
	// The old target stops: its listener goes, and the host drops the path.
	must(t, spdk.NvmfSubsystemRemoveListener(ctx, nqn, listener(from)), fmt.Sprintf("stop listening on port %d", from))
	must(t, attacher.Host.Delete(controllerOn(t, nqn, from)), fmt.Sprintf("delete the path of port %d", from))
	w.wait(3, fmt.Sprintf("with port %d alone", to))
	if after, err := attacher.Host.Device(nqn); err != nil || after != device {
		t.Fatalf("the volume's device was %s and is %s (%v) after the handover", device, after, err)
	}
	return took
}

// controllerOn is the host's controller of nqn on listener port port.
func controllerOn(t *testing.T, nqn string, port int) nvmeof.Controller {
	t.Helper()
	ctrls, err := attacher.Host.Controllers(nqn)
	must(t, err, "list controllers")
	for _, c := range ctrls {
		if c.Path.Port == int32(port) {
			return c
		}
	}
	t.Fatalf("the host has no controller of %s on port %d: %+v", nqn, port, ctrls)
	return nvmeof.Controller{}
}

// pathANAState is the ANA state the kernel reads for controller c's path
// to its namespace; "" before the path exists.
func pathANAState(c nvmeof.Controller) string {
	paths, _ := filepath.Glob(filepath.Join("/sys/class/nvme", c.Name, "nvme*c*n*", "ana_state"))
	if len(paths) == 0 {
		return ""
	}
	b, _ := os.ReadFile(paths[0])
	return strings.TrimSpace(string(b))
}

// liveController is the kernel's name and controller id of the host's one
// controller of nqn, which must be live.
func liveController(t *testing.T, nqn string) string {
	t.Helper()
	ctrls, err := attacher.Host.Controllers(nqn)
	must(t, err, "list controllers")
	if len(ctrls) != 1 || !ctrls[0].Live() {
		t.Fatalf("the host's controllers of %s are %+v, want one, live", nqn, ctrls)
	}
	id, err := os.ReadFile(filepath.Join("/sys/class/nvme", ctrls[0].Name, "cntlid"))
	must(t, err, "read the controller id")
	return fmt.Sprintf("%s (cntlid %s)", ctrls[0].Name, strings.TrimSpace(string(id)))
}
