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
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// Finding is a check of the node that did not pass.
type Finding = agentv1.PreflightFinding

// Host is what the checks read of the node: sysfs and /dev (roots, so
// tests can build one), the process' memlock limit and capabilities.
type Host struct {
	Sysfs, Dev string
	// Memlock is RLIMIT_MEMLOCK in bytes (RLIM_INFINITY for none).
	Memlock uint64
	// IPCLock says the process may lock memory beyond Memlock.
	IPCLock bool
	// OnlineCPUs is the node's CPU count.
	OnlineCPUs int
}

// ThisHost reads Host for the calling process.
func ThisHost() (Host, error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim); err != nil {
		return Host{}, fmt.Errorf("read RLIMIT_MEMLOCK: %w", err)
	}
	ipcLock, err := hasCapability(unix.CAP_IPC_LOCK)
	if err != nil {
		return Host{}, err
	}
	online, err := onlineCPUs("/sys")
	if err != nil {
		return Host{}, err
	}
	return Host{Sysfs: "/sys", Dev: "/dev", Memlock: lim.Cur, IPCLock: ipcLock, OnlineCPUs: online}, nil
}

// hasCapability reads the process' effective capability set.
func hasCapability(c int) (bool, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false, fmt.Errorf("read the capabilities: %w", err)
	}
	return data[c/32].Effective&(1<<(uint(c)%32)) != 0, nil
}

// onlineCPUs counts the CPUs of /sys/devices/system/cpu/online ("0-3,6").
func onlineCPUs(sysfs string) (int, error) {
	b, err := os.ReadFile(filepath.Join(sysfs, "devices", "system", "cpu", "online"))
	if err != nil {
		return 0, fmt.Errorf("read the online CPUs: %w", err)
	}
	n := 0
	list := strings.TrimSpace(string(b))
	for _, r := range strings.Split(list, ",") {
		lo, hi, found := strings.Cut(r, "-")
		first, err1 := strconv.Atoi(lo)
		last := first
		var err2 error
		if found {
			last, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || last < first {
			return 0, fmt.Errorf("parse the online CPUs %q", list)
		}
		n += last - first + 1
	}
	return n, nil
}

// Preflight checks what SPDK needs of the node for o before it starts, so
// that a missing piece is named with what to do, not left to an EAL error
// in SPDK's log. CPULimit is the container's CPU limit in whole cores
// (0: none), transport the OSD's ("tcp" or "rdma").
func Preflight(o Options, cpuset []int, cpuLimit int, transport string, h Host) []Finding {
	var out []Finding
	if o.PCIAddress != "" {
		out = append(out, checkDevice(o.PCIAddress, h)...)
	}
	if o.HugePagesBytes > 0 {
		out = append(out, checkHugePages(o.HugePagesBytes, h)...)
	}
	if pinned := o.HugePagesBytes; pinned > 0 && (o.PCIAddress != "" || transport == "rdma") && !h.IPCLock && h.Memlock != unix.RLIM_INFINITY && h.Memlock < uint64(pinned) {
		out = append(out, Finding{Reason: agentv1.PreflightMemlockTooLow, Fatal: true, Message: fmt.Sprintf(
			"the SPDK container may lock %d KiB of memory (RLIMIT_MEMLOCK) and has no IPC_LOCK capability, but vfio maps and RDMA registers all %d MiB of SPDK's hugepages: give the container IPC_LOCK (the operator's OSD pod asks for it; check the pod security admission and the runtime's allowed capabilities) or raise the container runtime's memlock limit",
			h.Memlock>>10, pinned>>20)})
	}
	if transport == "rdma" {
		out = append(out, checkRDMA(h)...)
	}
	if !o.InterruptMode && cpuLimit > 0 && len(cpuset) > cpuLimit && len(cpuset) >= h.OnlineCPUs {
		out = append(out, Finding{Reason: agentv1.PreflightSharedCores, Message: fmt.Sprintf(
			"the SPDK container may run on all %d CPUs of the node, not on %d of its own: the kubelet's CPU manager policy is not static (or the pod is not Guaranteed), so SPDK polls cores %s that other pods share; set the kubelet's cpuManagerPolicy: static with reservedSystemCPUs, drain the node, remove cpu_manager_state and restart the kubelet",
			len(cpuset), cpuLimit, strings.Trim(strings.Join(strings.Fields(fmt.Sprint(Cores(cpuset, cpuLimit))), ","), "[]"))})
	}
	return out
}

// checkDevice: the controller must be bound to vfio-pci, in an IOMMU group
// whose vfio device the container has.
func checkDevice(bdf string, h Host) []Finding {
	dev := filepath.Join(h.Sysfs, "bus", "pci", "devices", bdf)
	if _, err := os.Stat(dev); err != nil {
		return []Finding{{Reason: agentv1.PreflightDeviceNotBoundToVFIO, Fatal: true, Message: fmt.Sprintf(
			"the node has no PCI device %s: check the OSD's device (the Pool's devices.nodes) or the device plugin's configuration", bdf)}}
	}
	groups, _ := os.ReadDir(filepath.Join(h.Sysfs, "kernel", "iommu_groups"))
	driver := ""
	if link, err := os.Readlink(filepath.Join(dev, "driver")); err == nil {
		driver = filepath.Base(link)
	}
	bind := fmt.Sprintf("echo vfio-pci > /sys/bus/pci/devices/%[1]s/driver_override; echo %[1]s > /sys/bus/pci/drivers_probe", bdf)
	switch {
	case len(groups) == 0 && driver != "vfio-pci":
		return []Finding{{Reason: agentv1.PreflightIOMMUUnavailable, Fatal: true, Message: fmt.Sprintf(
			"the node has no IOMMU groups, so vfio-pci cannot take NVMe controller %s: turn on VT-d (AMD-Vi) in the firmware and add intel_iommu=on iommu=pt (amd_iommu=on iommu=pt) to the kernel command line, reboot, then bind the controller to vfio-pci (%s)", bdf, bind)}}
	case driver == "":
		return []Finding{{Reason: agentv1.PreflightDeviceNotBoundToVFIO, Fatal: true, Message: fmt.Sprintf(
			"NVMe controller %s is bound to no driver: bind it to vfio-pci (modprobe vfio-pci; %s)", bdf, bind)}}
	case driver != "vfio-pci":
		return []Finding{{Reason: agentv1.PreflightDeviceNotBoundToVFIO, Fatal: true, Message: fmt.Sprintf(
			"NVMe controller %[1]s is bound to the kernel's %[2]s driver, so SPDK cannot drive it: make sure nothing on the node uses it (mounts, LVM, RAID), then unbind it and bind it to vfio-pci (echo %[1]s > /sys/bus/pci/drivers/%[2]s/unbind; %[3]s); the device plugin advertises only vfio-bound devices", bdf, driver, bind)}}
	}
	if _, err := os.Stat(filepath.Join(h.Sysfs, "module", "vfio_iommu_type1")); err != nil {
		return []Finding{{Reason: agentv1.PreflightIOMMUUnavailable, Fatal: true, Message: fmt.Sprintf(
			"NVMe controller %s is bound to vfio-pci but the vfio_iommu_type1 module is not loaded, so DPDK finds no IOMMU type to map memory with: modprobe vfio_iommu_type1 and list it in /etc/modules-load.d", bdf)}}
	}
	group, err := os.Readlink(filepath.Join(dev, "iommu_group"))
	if err != nil {
		return []Finding{{Reason: agentv1.PreflightIOMMUUnavailable, Fatal: true, Message: fmt.Sprintf(
			"NVMe controller %s is bound to vfio-pci but is in no IOMMU group: turn on the IOMMU (intel_iommu=on iommu=pt or amd_iommu=on on the kernel command line)", bdf)}}
	}
	if _, err := os.Stat(filepath.Join(h.Dev, "vfio", filepath.Base(group))); err != nil {
		return []Finding{{Reason: agentv1.PreflightDeviceNotBoundToVFIO, Fatal: true, Message: fmt.Sprintf(
			"the container has no /dev/vfio/%s for NVMe controller %s: the device plugin hands it to the pod with the device; check that the pod requests the Pool's devices.resourceName and the plugin's selector matches the controller", filepath.Base(group), bdf)}}
	}
	return nil
}

// checkHugePages: SPDK allocates its whole -s at start from the node's
// free hugepages of the container's page size (2 MiB).
func checkHugePages(need int64, h Host) []Finding {
	const size = "hugepages-2048kB"
	free, err := readInt(filepath.Join(h.Sysfs, "kernel", "mm", "hugepages", size, "free_hugepages"))
	if err != nil {
		return []Finding{{Reason: agentv1.PreflightHugePagesInsufficient, Fatal: true, Message: fmt.Sprintf(
			"the node has no 2 MiB hugepages (%v): reserve them (hugepagesz=2M hugepages=N on the kernel command line, or vm.nr_hugepages) and restart the kubelet", err)}}
	}
	// Pages the previous SPDK of this container left in its hugetlbfs
	// mount (the pod's own) are free for this one: DPDK reclaims them.
	free += stalePages(filepath.Join(h.Dev, "hugepages"))
	if have := free << 21; have >= need {
		return nil
	}
	var perNode []string
	nodes, _ := filepath.Glob(filepath.Join(h.Sysfs, "devices", "system", "node", "node*"))
	slices.Sort(nodes)
	for _, n := range nodes {
		if f, err := readInt(filepath.Join(n, "hugepages", size, "free_hugepages")); err == nil {
			perNode = append(perNode, fmt.Sprintf("%s %d", filepath.Base(n), f))
		}
	}
	return []Finding{{Reason: agentv1.PreflightHugePagesInsufficient, Fatal: true, Message: fmt.Sprintf(
		"the node has %d free 2 MiB hugepages (per NUMA node: %s), SPDK needs %d for its %d MiB limit: other processes took them, or fewer were reserved than the kubelet reports; reserve at least %d more (vm.nr_hugepages, per node under /sys/devices/system/node/node*/hugepages) and restart the kubelet",
		free, strings.Join(perNode, ", "), need>>21, need>>20, (need>>21)-free)}}
}

// stalePages counts the 2 MiB pages files in dir hold: a dead SPDK's.
func stalePages(dir string) int64 {
	var pages int64
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		var st unix.Stat_t
		if unix.Stat(path, &st) == nil {
			pages += st.Blocks * 512 >> 21
		}
		return nil
	})
	return pages
}

// checkRDMA: SPDK's RDMA transport needs a verbs device in the pod.
func checkRDMA(h Host) []Finding {
	devs, _ := os.ReadDir(filepath.Join(h.Sysfs, "class", "infiniband"))
	verbs, _ := filepath.Glob(filepath.Join(h.Dev, "infiniband", "uverbs*"))
	if len(devs) > 0 && len(verbs) > 0 {
		return nil
	}
	return []Finding{{Reason: agentv1.PreflightNoRDMADevice, Fatal: true, Message: fmt.Sprintf(
		"the transport is rdma but the pod has no RDMA device (%d under /sys/class/infiniband, %d /dev/infiniband/uverbs*): give the Pool network.resourceName (the SR-IOV device plugin's RDMA VFs, isRdma: true) and network.attachment, and check the node's RDMA driver and netns mode (rdma system set netns exclusive)",
		len(devs), len(verbs))}}
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// Fatal is the first fatal finding, or nil.
func Fatal(findings []Finding) *Finding {
	for i := range findings {
		if findings[i].Fatal {
			return &findings[i]
		}
	}
	return nil
}
