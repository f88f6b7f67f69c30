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

package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

const bdf = "0000:00:04.0"

// node is a fake sysfs and /dev: a production node that passes every
// check until a case breaks one thing.
type node struct {
	t    *testing.T
	host Host
}

func newNode(t *testing.T) *node {
	root := t.TempDir()
	n := &node{t: t, host: Host{Sysfs: filepath.Join(root, "sys"), Dev: filepath.Join(root, "dev"), Memlock: 8 << 20, IPCLock: true, OnlineCPUs: 4}}
	n.mkdir("sys/kernel/iommu_groups/7/devices")
	n.mkdir("sys/module/vfio_iommu_type1")
	n.mkdir("sys/bus/pci/drivers/vfio-pci")
	n.mkdir("sys/bus/pci/drivers/nvme")
	n.mkdir("sys/bus/pci/devices/" + bdf)
	n.bind("vfio-pci")
	n.link("sys/kernel/iommu_groups/7", "sys/bus/pci/devices/"+bdf+"/iommu_group")
	n.write("dev/vfio/7", "")
	n.write("sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "1024\n")
	n.write("sys/devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages", "512\n")
	n.write("sys/devices/system/node/node1/hugepages/hugepages-2048kB/free_hugepages", "512\n")
	n.mkdir("sys/class/infiniband/mlx5_0")
	n.write("dev/infiniband/uverbs0", "")
	return n
}

func (n *node) path(p string) string { return filepath.Join(filepath.Dir(n.host.Sysfs), p) }

func (n *node) mkdir(p string) {
	if err := os.MkdirAll(n.path(p), 0o755); err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) write(p, content string) {
	n.mkdir(filepath.Dir(p))
	if err := os.WriteFile(n.path(p), []byte(content), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

// allocate makes a file of size bytes, allocated, as a hugetlbfs file is.
func (n *node) allocate(p string, size int64) {
	n.mkdir(filepath.Dir(p))
	f, err := os.Create(n.path(p))
	if err != nil {
		n.t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) link(target, p string) {
	_ = os.Remove(n.path(p))
	if err := os.Symlink(n.path(target), n.path(p)); err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) remove(p string) {
	if err := os.RemoveAll(n.path(p)); err != nil {
		n.t.Fatal(err)
	}
}

// bind binds the controller to driver ("" for none).
func (n *node) bind(driver string) {
	n.remove("sys/bus/pci/devices/" + bdf + "/driver")
	if driver != "" {
		n.link("sys/bus/pci/drivers/"+driver, "sys/bus/pci/devices/"+bdf+"/driver")
	}
}

// Each check fails on exactly the break it is for, with a message that
// says what to do; a node with nothing broken passes.
func TestPreflight(t *testing.T) {
	production := Options{CPUs: []int{2}, HugePagesBytes: 1 << 30, PCIAddress: bdf}
	for _, c := range []struct {
		name      string
		brk       func(n *node)
		o         Options
		cpuset    []int
		transport string
		reason    string
		fatal     bool
		says      string
	}{
		{name: "nothing broken", brk: func(*node) {}},
		{name: "bound to nvme", brk: func(n *node) { n.bind("nvme") }, reason: agentv1.PreflightDeviceNotBoundToVFIO, fatal: true,
			says: "bound to the kernel's nvme driver"},
		{name: "bound to nothing", brk: func(n *node) { n.bind("") }, reason: agentv1.PreflightDeviceNotBoundToVFIO, fatal: true,
			says: "echo vfio-pci > /sys/bus/pci/devices/0000:00:04.0/driver_override"},
		{name: "no such device", brk: func(n *node) { n.remove("sys/bus/pci/devices/" + bdf) }, reason: agentv1.PreflightDeviceNotBoundToVFIO, fatal: true,
			says: "no PCI device 0000:00:04.0"},
		{name: "IOMMU off", brk: func(n *node) { n.bind("nvme"); n.remove("sys/kernel/iommu_groups/7") }, reason: agentv1.PreflightIOMMUUnavailable, fatal: true,
			says: "intel_iommu=on iommu=pt"},
		{name: "vfio_iommu_type1 not loaded", brk: func(n *node) { n.remove("sys/module/vfio_iommu_type1") }, reason: agentv1.PreflightIOMMUUnavailable, fatal: true,
			says: "modprobe vfio_iommu_type1"},
		{name: "vfio device not in the container", brk: func(n *node) { n.remove("dev/vfio/7") }, reason: agentv1.PreflightDeviceNotBoundToVFIO, fatal: true,
			says: "no /dev/vfio/7"},
		{name: "hugepages taken", brk: func(n *node) {
			n.write("sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "100\n")
			n.write("sys/devices/system/node/node1/hugepages/hugepages-2048kB/free_hugepages", "0\n")
		}, reason: agentv1.PreflightHugePagesInsufficient, fatal: true, says: "100 free 2 MiB hugepages (per NUMA node: node0 512, node1 0), SPDK needs 512"},
		{name: "hugepages held by the previous SPDK's files", brk: func(n *node) {
			n.write("sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "100\n")
			n.allocate("dev/hugepages/spdk_pid1map_0", 28<<21)
		}, o: Options{CPUs: []int{2}, HugePagesBytes: 256 << 20, PCIAddress: bdf}},
		{name: "hugepages short by more than the previous SPDK's files", brk: func(n *node) {
			n.write("sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "100\n")
			n.allocate("dev/hugepages/spdk_pid1map_0", 27<<21)
		}, o: Options{CPUs: []int{2}, HugePagesBytes: 256 << 20, PCIAddress: bdf}, reason: agentv1.PreflightHugePagesInsufficient, fatal: true,
			says: "127 free 2 MiB hugepages"},
		{name: "no hugepages at all", brk: func(n *node) { n.remove("sys/kernel/mm/hugepages") }, reason: agentv1.PreflightHugePagesInsufficient, fatal: true,
			says: "hugepagesz=2M"},
		{name: "memlock without IPC_LOCK", brk: func(n *node) { n.host.IPCLock = false }, reason: agentv1.PreflightMemlockTooLow, fatal: true,
			says: "8192 KiB"},
		{name: "memlock unlimited", brk: func(n *node) { n.host.IPCLock, n.host.Memlock = false, unix.RLIM_INFINITY }},
		{name: "rdma without a device", brk: func(n *node) { n.remove("sys/class/infiniband/mlx5_0") }, transport: "rdma",
			reason: agentv1.PreflightNoRDMADevice, fatal: true, says: "0 under /sys/class/infiniband"},
		{name: "rdma with a device", brk: func(*node) {}, transport: "rdma"},
		{name: "tcp needs no RDMA device", brk: func(n *node) { n.remove("sys/class/infiniband/mlx5_0") }, transport: "tcp"},
		{name: "cpuset is the whole node", brk: func(*node) {}, cpuset: []int{0, 1, 2, 3}, reason: agentv1.PreflightSharedCores,
			says: "cpuManagerPolicy: static"},
		{name: "shared cores in interrupt mode", brk: func(*node) {}, cpuset: []int{0, 1, 2, 3},
			o: Options{CPUs: []int{0}, HugePagesBytes: 1 << 30, PCIAddress: bdf, InterruptMode: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := newNode(t)
			c.brk(n)
			o := production
			if c.o.CPUs != nil {
				o = c.o
			}
			cpuset := c.cpuset
			if cpuset == nil {
				cpuset = []int{2}
			}
			got := Preflight(o, cpuset, 1, c.transport, n.host)
			if c.reason == "" {
				if len(got) != 0 {
					t.Fatalf("findings %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].Reason != c.reason || got[0].Fatal != c.fatal || !strings.Contains(got[0].Message, c.says) {
				t.Fatalf("findings %+v, want one %s (fatal %t) saying %q", got, c.reason, c.fatal, c.says)
			}
			if f := Fatal(got); (f != nil) != c.fatal {
				t.Errorf("Fatal = %v", f)
			}
			if c.fatal {
				back, ok := agentv1.ParsePreflightTermination(string(got[0].TerminationMessage()))
				if !ok || back != got[0] {
					t.Errorf("termination message round trip: %+v, %t", back, ok)
				}
			}
		})
	}
}

func TestOnlineCPUs(t *testing.T) {
	for list, want := range map[string]int{"0\n": 1, "0-3\n": 4, "0-3,6,8-9\n": 7} {
		sys := t.TempDir()
		if err := os.MkdirAll(filepath.Join(sys, "devices", "system", "cpu"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sys, "devices", "system", "cpu", "online"), []byte(list), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := onlineCPUs(sys); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", list, got, err, want)
		}
	}
}

// The operator takes only a fatal finding from a termination message.
func TestTerminationMessageIsOnlyAFinding(t *testing.T) {
	for _, msg := range []string{"", "Error: exit status 1", `{"reason":"SharedCores","message":"m"}`} {
		if f, ok := agentv1.ParsePreflightTermination(msg); ok {
			t.Errorf("%q parsed as finding %+v", msg, f)
		}
	}
}
