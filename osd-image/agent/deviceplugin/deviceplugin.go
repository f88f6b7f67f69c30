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

// Package deviceplugin advertises a node's NVMe controllers that are bound
// to vfio-pci to the kubelet as one extended resource (flint.io/nvme), so
// that an OSD pod that requests one gets exactly that controller: its vfio
// group's device node, and its PCI address in PCIDEVICE_<RESOURCE>, the
// variable osd-agent exec-spdk reads (the contract of the SR-IOV network
// device plugin). That plugin cannot hand out NVMe controllers: v3.11.0
// discovers only network (PCI class 0x02) and processing accelerator
// (0x12) devices, and NVMe is mass storage (0x01).
package deviceplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// nvmeClass is the PCI class of an NVMe controller (mass storage,
// non-volatile memory, NVM Express).
const nvmeClass = "0x010802"

// Controller is an NVMe controller the plugin hands out.
type Controller struct {
	// Address is its PCI address, the device's ID towards the kubelet.
	Address string
	// Group is its IOMMU group: the container gets /dev/vfio/<Group>.
	Group string
	// NUMANode is the node it is attached to; -1 when the platform does
	// not say.
	NUMANode int
	// Bound says it is bound to vfio-pci; a controller that was and is no
	// longer is reported unhealthy.
	Bound bool
}

// Discover lists the NVMe controllers under sysfs that are bound to
// vfio-pci. Controllers bound to another driver are the kernel's (or
// nobody's) and are left alone.
func Discover(sysfs string) ([]Controller, error) {
	devices, err := filepath.Glob(filepath.Join(sysfs, "bus", "pci", "devices", "*"))
	if err != nil {
		return nil, err
	}
	var out []Controller
	for _, d := range devices {
		if class, err := os.ReadFile(filepath.Join(d, "class")); err != nil || strings.TrimSpace(string(class)) != nvmeClass {
			continue
		}
		driver, err := os.Readlink(filepath.Join(d, "driver"))
		if err != nil || filepath.Base(driver) != "vfio-pci" {
			continue
		}
		group, err := os.Readlink(filepath.Join(d, "iommu_group"))
		if err != nil {
			continue // vfio-pci holds no device without an IOMMU group
		}
		numa := -1
		if b, err := os.ReadFile(filepath.Join(d, "numa_node")); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				numa = n
			}
		}
		out = append(out, Controller{Address: filepath.Base(d), Group: filepath.Base(group), NUMANode: numa, Bound: true})
	}
	return out, nil
}

// EnvName is the variable that names the controllers allocated of
// resource, as the SR-IOV network device plugin names it.
func EnvName(resource string) string {
	return "PCIDEVICE_" + strings.ToUpper(strings.NewReplacer("/", "_", ".", "_", "-", "_").Replace(resource))
}

// Plugin serves the kubelet's device plugin API for one resource.
type Plugin struct {
	pluginapi.UnimplementedDevicePluginServer

	// Resource is the extended resource, such as flint.io/nvme.
	Resource string
	// Sysfs and Dev are the node's /sys and /dev.
	Sysfs, Dev string
	// Dir is the kubelet's device plugin directory, where its
	// registration socket is and the plugin's own goes.
	Dir string
	// Interval is how often controllers are rescanned and the plugin's
	// socket checked (the kubelet removes it when it restarts).
	Interval time.Duration
	Log      logr.Logger

	mu    sync.Mutex
	known map[string]Controller
	// changed is closed and replaced when known changes.
	changed chan struct{}
}

// socketName is the plugin's socket in Dir.
func (p *Plugin) socketName() string {
	return strings.NewReplacer("/", "_", ".", "_").Replace(p.Resource) + ".sock"
}

// Run serves and registers the plugin, serves it again and re-registers
// whenever the kubelet restarted, and rescans the controllers, until ctx
// ends.
func (p *Plugin) Run(ctx context.Context) error {
	p.rescan()
	for {
		err := p.serveOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		p.Log.Info("serving again", "reason", err.Error())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(p.Interval):
		}
	}
}

// serveOnce serves on a fresh socket, registers with the kubelet and
// returns when the socket is gone (the kubelet restarted and removed it)
// or ctx ends.
func (p *Plugin) serveOnce(ctx context.Context) error {
	socket := filepath.Join(p.Dir, p.socketName())
	if err := os.Remove(socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	lis, err := net.Listen("unix", socket)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", socket, err)
	}
	g := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(g, p)
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()
	if err := p.register(ctx); err != nil {
		return err
	}
	p.Log.Info("registered with the kubelet", "resource", p.Resource, "socket", socket)
	t := time.NewTicker(p.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		p.rescan()
		if _, err := os.Stat(socket); err != nil {
			return fmt.Errorf("the kubelet removed %s (it restarted)", socket)
		}
	}
}

func (p *Plugin) register(ctx context.Context) error {
	conn, err := grpc.NewClient("unix://"+filepath.Join(p.Dir, "kubelet.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: p.socketName(), ResourceName: p.Resource,
	})
	if err != nil {
		return fmt.Errorf("register %s with the kubelet at %s: %w", p.Resource, p.Dir, err)
	}
	return nil
}

// rescan updates the known controllers: new ones are added, and one that
// left vfio-pci stays known, unhealthy, so the kubelet stops handing it
// out without forgetting a pod that holds it.
func (p *Plugin) rescan() {
	found, err := Discover(p.Sysfs)
	if err != nil {
		p.Log.Error(err, "rescan the PCI devices")
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	next := map[string]Controller{}
	for a, c := range p.known {
		c.Bound = false
		next[a] = c
	}
	for _, c := range found {
		next[c.Address] = c
	}
	if p.changed == nil {
		p.changed = make(chan struct{})
	}
	if !mapsEqual(p.known, next) {
		p.known = next
		close(p.changed)
		p.changed = make(chan struct{})
	}
}

func mapsEqual(a, b map[string]Controller) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// devices is the kubelet's view of the known controllers and a channel
// closed at their next change.
func (p *Plugin) devices() ([]*pluginapi.Device, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.changed == nil {
		p.changed = make(chan struct{})
	}
	var out []*pluginapi.Device
	for _, c := range p.known {
		d := &pluginapi.Device{ID: c.Address, Health: pluginapi.Unhealthy}
		if c.Bound {
			d.Health = pluginapi.Healthy
		}
		if c.NUMANode >= 0 {
			d.Topology = &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: int64(c.NUMANode)}}}
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b *pluginapi.Device) int { return strings.Compare(a.ID, b.ID) })
	return out, p.changed
}

// GetDevicePluginOptions asks for no pre-start hook and no preferred
// allocation.
func (p *Plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the controllers now and after every change.
func (p *Plugin) ListAndWatch(_ *pluginapi.Empty, s grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	for {
		devs, changed := p.devices()
		if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: devs}); err != nil {
			return err
		}
		select {
		case <-s.Context().Done():
			return nil
		case <-changed:
		}
	}
}

// Allocate gives each container its controllers' vfio group device nodes
// and their addresses in EnvName(Resource).
func (p *Plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := &pluginapi.AllocateResponse{}
	for _, cr := range req.GetContainerRequests() {
		resp := &pluginapi.ContainerAllocateResponse{Envs: map[string]string{}}
		resp.Devices = append(resp.Devices, &pluginapi.DeviceSpec{
			ContainerPath: "/dev/vfio/vfio", HostPath: filepath.Join(p.Dev, "vfio", "vfio"), Permissions: "rw",
		})
		var addrs []string
		for _, id := range cr.GetDevicesIds() {
			c, ok := p.known[id]
			if !ok || !c.Bound {
				return nil, fmt.Errorf("NVMe controller %s is not bound to vfio-pci on this node", id)
			}
			resp.Devices = append(resp.Devices, &pluginapi.DeviceSpec{
				ContainerPath: "/dev/vfio/" + c.Group, HostPath: filepath.Join(p.Dev, "vfio", c.Group), Permissions: "rw",
			})
			addrs = append(addrs, c.Address)
		}
		resp.Envs[EnvName(p.Resource)] = strings.Join(addrs, ",")
		out.ContainerResponses = append(out.ContainerResponses, resp)
	}
	return out, nil
}
