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

// Package deviceplugin advertises a node's storage hardware to the kubelet
// as extended resources, so that an OSD pod that requests it gets exactly
// its device nodes:
//
//   - NVMe controllers bound to vfio-pci (flint.io/nvme), each with its
//     vfio group's device node and its PCI address in PCIDEVICE_<RESOURCE>,
//     the variable osd-agent exec-spdk reads (the contract of the SR-IOV
//     network device plugin). That plugin cannot hand out NVMe
//     controllers: v3.11.0 discovers only network (PCI class 0x02) and
//     processing accelerator (0x12) devices, and NVMe is mass storage
//     (0x01).
//   - RDMA devices shared by the pods of a node's host network
//     (flint.io/rdma), each with its uverbs device node and rdma_cm. The
//     SR-IOV plugin finds RDMA devices under their PCI function, so it
//     cannot find a soft-RoCE device, and gives a VF to one pod only.
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

// Device is one device the plugin hands out.
type Device struct {
	// ID is the device's ID towards the kubelet.
	ID string
	// Nodes are the device nodes a container allocated it gets, relative
	// to /dev.
	Nodes []string
	// Env is its entry in EnvName(resource); empty for none.
	Env string
	// NUMANode is the node it is attached to; -1 when the platform does
	// not say.
	NUMANode int
	// Healthy says it can be handed out. A device that was discovered and
	// no longer is stays known, unhealthy, so the kubelet stops handing it
	// out without forgetting a pod that holds it.
	Healthy bool
}

func (d Device) equal(o Device) bool {
	return d.ID == o.ID && slices.Equal(d.Nodes, o.Nodes) && d.Env == o.Env && d.NUMANode == o.NUMANode && d.Healthy == o.Healthy
}

// nvmeClass is the PCI class of an NVMe controller (mass storage,
// non-volatile memory, NVM Express).
const nvmeClass = "0x010802"

// DiscoverNVMe lists the NVMe controllers under sysfs that are bound to
// vfio-pci, by PCI address. Controllers bound to another driver are the
// kernel's (or nobody's) and are left alone.
func DiscoverNVMe(sysfs string) ([]Device, error) {
	devices, err := filepath.Glob(filepath.Join(sysfs, "bus", "pci", "devices", "*"))
	if err != nil {
		return nil, err
	}
	var out []Device
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
		addr := filepath.Base(d)
		out = append(out, Device{
			ID: addr, Env: addr, NUMANode: numaNode(d), Healthy: true,
			Nodes: []string{"vfio/vfio", "vfio/" + filepath.Base(group)},
		})
	}
	return out, nil
}

// DiscoverRDMA lists the node's RDMA devices (all, or those named) as
// shared devices each: a pod of the host network uses the device of the
// interface it listens on, and any number of pods can. A device's IDs are
// <name>-<i>, each with its uverbs device node and rdma_cm.
func DiscoverRDMA(sysfs string, shared int, names []string) ([]Device, error) {
	verbs, err := filepath.Glob(filepath.Join(sysfs, "class", "infiniband_verbs", "uverbs*"))
	if err != nil {
		return nil, err
	}
	var out []Device
	for _, v := range verbs {
		b, err := os.ReadFile(filepath.Join(v, "ibdev"))
		if err != nil {
			continue // the device went away while we looked
		}
		name := strings.TrimSpace(string(b))
		if len(names) > 0 && !slices.Contains(names, name) {
			continue
		}
		numa := numaNode(filepath.Join(sysfs, "class", "infiniband", name, "device"))
		for i := range shared {
			out = append(out, Device{
				ID: fmt.Sprintf("%s-%d", name, i), NUMANode: numa, Healthy: true,
				Nodes: []string{"infiniband/rdma_cm", "infiniband/" + filepath.Base(v)},
			})
		}
	}
	return out, nil
}

// numaNode reads the NUMA node of a device's sysfs directory: -1 when it
// has none (software devices) or the platform does not say.
func numaNode(dir string) int {
	if b, err := os.ReadFile(filepath.Join(dir, "numa_node")); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return n
		}
	}
	return -1
}

// EnvName is the variable that names the devices allocated of resource,
// as the SR-IOV network device plugin names it.
func EnvName(resource string) string {
	return "PCIDEVICE_" + strings.ToUpper(strings.NewReplacer("/", "_", ".", "_", "-", "_").Replace(resource))
}

// Plugin serves the kubelet's device plugin API for one resource.
type Plugin struct {
	pluginapi.UnimplementedDevicePluginServer

	// Resource is the extended resource, such as flint.io/nvme.
	Resource string
	// Discover lists the node's devices of the resource.
	Discover func() ([]Device, error)
	// Dev is the node's /dev as the kubelet sees it.
	Dev string
	// Dir is the kubelet's device plugin directory, where its
	// registration socket is and the plugin's own goes.
	Dir string
	// Interval is how often devices are rescanned and the plugin's socket
	// checked (the kubelet removes it when it restarts).
	Interval time.Duration
	Log      logr.Logger

	mu    sync.Mutex
	known map[string]Device
	// changed is closed and replaced when known changes.
	changed chan struct{}
}

// socketName is the plugin's socket in Dir.
func (p *Plugin) socketName() string {
	return strings.NewReplacer("/", "_", ".", "_").Replace(p.Resource) + ".sock"
}

// Run serves and registers the plugin, serves it again and re-registers
// whenever the kubelet restarted, and rescans the devices, until ctx
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

// rescan updates the known devices: new ones are added, and one no longer
// found stays known, unhealthy.
func (p *Plugin) rescan() {
	found, err := p.Discover()
	if err != nil {
		p.Log.Error(err, "rescan the devices", "resource", p.Resource)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	next := map[string]Device{}
	for id, d := range p.known {
		d.Healthy = false
		next[id] = d
	}
	for _, d := range found {
		next[d.ID] = d
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

func mapsEqual(a, b map[string]Device) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !w.equal(v) {
			return false
		}
	}
	return true
}

// devices is the kubelet's view of the known devices and a channel
// closed at their next change.
func (p *Plugin) devices() ([]*pluginapi.Device, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.changed == nil {
		p.changed = make(chan struct{})
	}
	var out []*pluginapi.Device
	for _, k := range p.known {
		d := &pluginapi.Device{ID: k.ID, Health: pluginapi.Unhealthy}
		if k.Healthy {
			d.Health = pluginapi.Healthy
		}
		if k.NUMANode >= 0 {
			d.Topology = &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: int64(k.NUMANode)}}}
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

// ListAndWatch sends the devices now and after every change.
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

// Allocate gives each container its devices' device nodes, once each, and
// their Env in EnvName(Resource).
func (p *Plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := &pluginapi.AllocateResponse{}
	for _, cr := range req.GetContainerRequests() {
		resp := &pluginapi.ContainerAllocateResponse{}
		var env []string
		for _, id := range cr.GetDevicesIds() {
			d, ok := p.known[id]
			if !ok || !d.Healthy {
				return nil, fmt.Errorf("%s device %s is no longer on this node (it left its driver or was removed)", p.Resource, id)
			}
			for _, n := range d.Nodes {
				if !slices.ContainsFunc(resp.Devices, func(s *pluginapi.DeviceSpec) bool { return s.ContainerPath == "/dev/"+n }) {
					resp.Devices = append(resp.Devices, &pluginapi.DeviceSpec{ContainerPath: "/dev/" + n, HostPath: filepath.Join(p.Dev, n), Permissions: "rw"})
				}
			}
			if d.Env != "" {
				env = append(env, d.Env)
			}
		}
		if len(env) > 0 {
			resp.Envs = map[string]string{EnvName(p.Resource): strings.Join(env, ",")}
		}
		out.ContainerResponses = append(out.ContainerResponses, resp)
	}
	return out, nil
}
