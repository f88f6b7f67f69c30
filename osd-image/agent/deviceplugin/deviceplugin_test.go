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
	got, err := Discover(s.root)
	must(t, err)
	want := []Controller{{Address: "0000:5e:00.0", Group: "31", NUMANode: 1, Bound: true}}
	if len(got) != 1 || got[0] != want[0] {
		t.Fatalf("Discover = %+v, want %+v", got, want)
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

// The plugin registers, lists the controller, gives a container its vfio
// group and address, reports a controller that left vfio-pci unhealthy,
// and registers again when the kubelet restarted.
func TestPluginServesTheKubelet(t *testing.T) {
	s := sysfs{t, t.TempDir()}
	s.device("0000:5e:00.0", "0x010802", "vfio-pci", "31", "1")
	dir, err := os.MkdirTemp("", "dp-") // short: a socket path
	must(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	k := startKubelet(t, dir)
	p := &Plugin{Resource: "flint.io/nvme", Sysfs: s.root, Dev: "/dev", Dir: dir, Interval: 50 * time.Millisecond, Log: logr.Discard()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = p.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	r := k.waitRegistered(t)
	if r.ResourceName != "flint.io/nvme" || r.Endpoint != "flint_io_nvme.sock" || r.Version != pluginapi.Version {
		t.Fatalf("registered %+v", r)
	}
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, r.Endpoint), grpc.WithTransportCredentials(insecure.NewCredentials()))
	must(t, err)
	defer func() { _ = conn.Close() }()
	dp := pluginapi.NewDevicePluginClient(conn)
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
