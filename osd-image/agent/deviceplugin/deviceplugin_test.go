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

package deviceplugin

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// sysfs is a fake /sys with PCI devices.
type sysfs struct {
	t    *testing.T
	root string
}

func (s sysfs) device(addr, class, driver, group, numa string) {
	d := filepath.Join(s.root, "bus", "pci", "devices", addr)
	must(s.t, os.MkdirAll(d, 0o755))
	must(s.t, os.WriteFile(filepath.Join(d, "class"), []byte(class+"\n"), 0o644))
	must(s.t, os.WriteFile(filepath.Join(d, "numa_node"), []byte(numa+"\n"), 0o644))
	if group != "" {
		g := filepath.Join(s.root, "kernel", "iommu_groups", group)
		must(s.t, os.MkdirAll(g, 0o755))
		must(s.t, os.Symlink(g, filepath.Join(d, "iommu_group")))
	}
	s.bind(addr, driver)
}

func (s sysfs) bind(addr, driver string) {
	link := filepath.Join(s.root, "bus", "pci", "devices", addr, "driver")
	_ = os.Remove(link)
	if driver != "" {
		drv := filepath.Join(s.root, "bus", "pci", "drivers", driver)
		must(s.t, os.MkdirAll(drv, 0o755))
		must(s.t, os.Symlink(drv, link))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Only NVMe controllers bound to vfio-pci are handed out.
func TestDiscoverTakesVFIOBoundNVMeOnly(t *testing.T) {
	s := sysfs{t, t.TempDir()}
	s.device("0000:5e:00.0", "0x010802", "vfio-pci", "31", "1")
	s.device("0000:5f:00.0", "0x010802", "nvme", "32", "1")     // the kernel's
	s.device("0000:60:00.0", "0x010802", "", "33", "-1")        // nobody's
	s.device("0000:3b:00.0", "0x020000", "vfio-pci", "34", "0") // a NIC
	got, err := DiscoverNVMe(s.root)
	must(t, err)
	want := Device{ID: "0000:5e:00.0", Nodes: []string{"vfio/vfio", "vfio/31"}, Env: "0000:5e:00.0", NUMANode: 1, Healthy: true}
	if len(got) != 1 || !got[0].equal(want) {
		t.Fatalf("DiscoverNVMe = %+v, want %+v", got, want)
	}
}

// rdmaDevice makes an RDMA device with its uverbs node; numa "" for a
// software device, which has no PCI function.
func (s sysfs) rdmaDevice(name, uverbs, numa string) {
	v := filepath.Join(s.root, "class", "infiniband_verbs", uverbs)
	must(s.t, os.MkdirAll(v, 0o755))
	must(s.t, os.WriteFile(filepath.Join(v, "ibdev"), []byte(name+"\n"), 0o644))
	d := filepath.Join(s.root, "class", "infiniband", name)
	must(s.t, os.MkdirAll(d, 0o755))
	if numa != "" {
		must(s.t, os.MkdirAll(filepath.Join(d, "device"), 0o755))
		must(s.t, os.WriteFile(filepath.Join(d, "device", "numa_node"), []byte(numa+"\n"), 0o644))
	}
}

// Each RDMA device is shared: its IDs are its name and a slot, each with
// the device's own uverbs node.
func TestDiscoverSharesEachRDMADevice(t *testing.T) {
	s := sysfs{t, t.TempDir()}
	s.rdmaDevice("mlx5_0", "uverbs0", "1")
	s.rdmaDevice("rxe0", "uverbs1", "")
	got, err := DiscoverRDMA(s.root, 2, nil)
	must(t, err)
	want := []Device{
		{ID: "mlx5_0-0", Nodes: []string{"infiniband/rdma_cm", "infiniband/uverbs0"}, NUMANode: 1, Healthy: true},
		{ID: "mlx5_0-1", Nodes: []string{"infiniband/rdma_cm", "infiniband/uverbs0"}, NUMANode: 1, Healthy: true},
		{ID: "rxe0-0", Nodes: []string{"infiniband/rdma_cm", "infiniband/uverbs1"}, NUMANode: -1, Healthy: true},
		{ID: "rxe0-1", Nodes: []string{"infiniband/rdma_cm", "infiniband/uverbs1"}, NUMANode: -1, Healthy: true},
	}
	if !slices.EqualFunc(got, want, Device.equal) {
		t.Fatalf("DiscoverRDMA = %+v, want %+v", got, want)
	}
	only, err := DiscoverRDMA(s.root, 1, []string{"rxe0"})
	must(t, err)
	if len(only) != 1 || only[0].ID != "rxe0-0" {
		t.Fatalf("DiscoverRDMA of rxe0 = %+v", only)
	}
}

// kubelet is the kubelet's registration service.
type kubelet struct {
	pluginapi.UnimplementedRegistrationServer
	registered chan *pluginapi.RegisterRequest
}

func (k *kubelet) Register(_ context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	k.registered <- r
	return &pluginapi.Empty{}, nil
}

func startKubelet(t *testing.T, dir string) *kubelet {
	k := &kubelet{registered: make(chan *pluginapi.RegisterRequest, 4)}
	lis, err := net.Listen("unix", filepath.Join(dir, "kubelet.sock"))
	must(t, err)
	g := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(g, k)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	return k
}

func (k *kubelet) waitRegistered(t *testing.T) *pluginapi.RegisterRequest {
	t.Helper()
	select {
	case r := <-k.registered:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the plugin did not register")
		return nil
	}
}

// startPlugin runs p until the test ends and connects to it once it
// registered.
func startPlugin(t *testing.T, k *kubelet, p *Plugin) (context.Context, pluginapi.DevicePluginClient, *pluginapi.RegisterRequest) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = p.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	r := k.waitRegistered(t)
	conn, err := grpc.NewClient("unix://"+filepath.Join(p.Dir, r.Endpoint), grpc.WithTransportCredentials(insecure.NewCredentials()))
	must(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return ctx, pluginapi.NewDevicePluginClient(conn), r
}

// kubeletDir is a kubelet device plugin directory with a kubelet.
func kubeletDir(t *testing.T) (string, *kubelet) {
	dir, err := os.MkdirTemp("", "dp-") // short: a socket path
	must(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir, startKubelet(t, dir)
}

// The plugin registers, lists the controller, gives a container its vfio
// group and address, reports a controller that left vfio-pci unhealthy,
// and registers again when the kubelet restarted.
func TestPluginServesTheKubelet(t *testing.T) {
	s := sysfs{t, t.TempDir()}
	s.device("0000:5e:00.0", "0x010802", "vfio-pci", "31", "1")
	dir, k := kubeletDir(t)
	p := &Plugin{Resource: "flint.io/nvme", Discover: func() ([]Device, error) { return DiscoverNVMe(s.root) }, Dev: "/dev", Dir: dir, Interval: 50 * time.Millisecond, Log: logr.Discard()}
	ctx, dp, r := startPlugin(t, k, p)
	if r.ResourceName != "flint.io/nvme" || r.Endpoint != "flint_io_nvme.sock" || r.Version != pluginapi.Version {
		t.Fatalf("registered %+v", r)
	}
	stream, err := dp.ListAndWatch(ctx, &pluginapi.Empty{})
	must(t, err)
	list, err := stream.Recv()
	must(t, err)
	if len(list.Devices) != 1 || list.Devices[0].ID != "0000:5e:00.0" || list.Devices[0].Health != pluginapi.Healthy || list.Devices[0].Topology.Nodes[0].ID != 1 {
		t.Fatalf("devices %v", list.Devices)
	}

	alloc, err := dp.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"0000:5e:00.0"}}}})
	must(t, err)
	c := alloc.ContainerResponses[0]
	if c.Envs["PCIDEVICE_FLINT_IO_NVME"] != "0000:5e:00.0" || len(c.Devices) != 2 || c.Devices[1].HostPath != "/dev/vfio/31" || c.Devices[0].ContainerPath != "/dev/vfio/vfio" {
		t.Fatalf("allocation %v", c)
	}
	if _, err := dp.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"0000:99:00.0"}}}}); err == nil {
		t.Error("allocated a controller the plugin does not know")
	}

	// An admin gives the controller back to the kernel.
	s.bind("0000:5e:00.0", "nvme")
	list, err = stream.Recv()
	must(t, err)
	if len(list.Devices) != 1 || list.Devices[0].Health != pluginapi.Unhealthy {
		t.Fatalf("after unbinding: %v, want the controller unhealthy", list.Devices)
	}

	// The kubelet restarts: it removes every plugin's socket.
	must(t, os.Remove(filepath.Join(dir, r.Endpoint)))
	if again := k.waitRegistered(t); again.ResourceName != "flint.io/nvme" {
		t.Fatalf("registered again as %+v", again)
	}
}

// A container allocated two slots of one RDMA device gets its device nodes
// once, and no PCI address variable.
func TestPluginAllocatesSharedRDMA(t *testing.T) {
	s := sysfs{t, t.TempDir()}
	s.rdmaDevice("rxe0", "uverbs0", "")
	dir, k := kubeletDir(t)
	p := &Plugin{Resource: "flint.io/rdma", Discover: func() ([]Device, error) { return DiscoverRDMA(s.root, 4, nil) }, Dev: "/node/dev", Dir: dir, Interval: 50 * time.Millisecond, Log: logr.Discard()}
	ctx, dp, _ := startPlugin(t, k, p)
	stream, err := dp.ListAndWatch(ctx, &pluginapi.Empty{})
	must(t, err)
	list, err := stream.Recv()
	must(t, err)
	if len(list.Devices) != 4 || list.Devices[0].ID != "rxe0-0" || list.Devices[0].Topology != nil {
		t.Fatalf("devices %v", list.Devices)
	}
	alloc, err := dp.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"rxe0-0", "rxe0-3"}}}})
	must(t, err)
	c := alloc.ContainerResponses[0]
	var paths []string
	for _, d := range c.Devices {
		paths = append(paths, d.HostPath+"="+d.ContainerPath)
	}
	if want := []string{"/node/dev/infiniband/rdma_cm=/dev/infiniband/rdma_cm", "/node/dev/infiniband/uverbs0=/dev/infiniband/uverbs0"}; !slices.Equal(paths, want) || len(c.Envs) != 0 {
		t.Fatalf("allocation: devices %v, envs %v; want devices %v and no envs", paths, c.Envs, want)
	}

	// The soft-RoCE link is deleted.
	must(t, os.RemoveAll(filepath.Join(s.root, "class", "infiniband_verbs", "uverbs0")))
	list, err = stream.Recv()
	must(t, err)
	if len(list.Devices) != 4 || list.Devices[0].Health != pluginapi.Unhealthy {
		t.Fatalf("after the device went: %v, want its slots unhealthy", list.Devices)
	}
	if _, err := dp.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"rxe0-1"}}}}); err == nil {
		t.Error("allocated a slot of a device that is gone")
	}
}
