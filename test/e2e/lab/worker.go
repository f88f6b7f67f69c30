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

package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The workload node's names and addresses.
const (
	WorkerNode    = "flint-worker-0"
	WorkerIP      = "10.77.0.2"
	WorkerPodCIDR = "10.244.1.0/24"
	workerTap     = "flint-w0"
	// PCIeStorageLabel marks the workload node when it is also a pcie
	// storage node (Worker.PCIeStorage), for the pcie Pool's nodeSelector.
	PCIeStorageLabel = "lab.flint.io/pcie"
	// NVMeResource is what the NVMe device plugin advertises there.
	NVMeResource = "flint.io/nvme"
	// RDMAResource is what the RDMA device plugin advertises there: the
	// guest's soft-RoCE device.
	RDMAResource = "flint.io/rdma"
	// WorkerHugePages is how many 2 MiB hugepages the guest reserves at
	// boot.
	WorkerHugePages = 300
)

// Worker is the workload node: a QEMU guest (TCG) booting a Debian
// kernel (bookworm-backports' 6.12: NVMe-oF host and its in-band
// authentication, which this machine's kernel lacks), on a
// Debian root with containerd and the kubelet. hack/e2e/run.sh provides
// the parts.
type Worker struct {
	// Kernel and Initramfs boot the guest; the initramfs mounts the root
	// disk and hands over to the node's init.
	Kernel, Initramfs string
	// Modules is the kernel's lib/modules/<version> directory.
	Modules string
	// Base is a tar of the Debian root (containerd, runc, CNI plugins,
	// iptables, filesystem tools).
	Base string
	// Images are the OCI archives the node's containerd imports.
	Images []string
	// PCIeStorage makes the guest a pcie storage node too, as
	// docs/install.md has one: q35 with a 48-bit IOMMU, an emulated NVMe
	// controller bound to vfio-pci at boot, 2 MiB hugepages reserved on
	// the kernel command line, three CPUs and the kubelet's static CPU
	// manager with CPU 0 reserved, so that an OSD pod's one core is its
	// own.
	PCIeStorage bool
}

func (l *Lab) workerNode() node {
	n := node{name: WorkerNode, ip: WorkerIP, podCIDR: WorkerPodCIDR, zone: "lab-b", labels: []string{CSINodeLabel + "=true"},
		etc: "/etc/flint", state: "/var/lib/flint", podLogs: "/var/log/flint/pods",
		cniBin: "/usr/lib/cni", multus: l.Multus != "", bridge: "cni0", kubeletRoot: kubeletRoot, healthzPort: 10248}
	if l.Worker != nil && l.Worker.PCIeStorage {
		n.labels = append(n.labels, PCIeStorageLabel+"=true")
		n.reservedCPUs = "0"
	}
	return n
}

// pcieStorageInit is what the guest's init does, once its network is up
// and before containerd starts, to be a pcie storage node: the modules
// vfio needs, every NVMe controller bound to vfio-pci (docs/install.md,
// step 4), and a soft-RoCE device on eth0 with the kernel's NVMe/RDMA
// host. Soft-RoCE serves only from the initial network namespace on this
// kernel, so the OSD that uses it runs on the host network.
const pcieStorageInit = `for m in vfio-pci vfio_iommu_type1 rdma_rxe rdma_ucm ib_uverbs nvme-rdma; do modprobe $m || echo "FLINT-WORKER modprobe $m failed"; done
for d in /sys/bus/pci/devices/*; do
  [ "$(cat $d/class)" = 0x010802 ] || continue
  echo vfio-pci > $d/driver_override && echo ${d##*/} > /sys/bus/pci/drivers_probe && echo "FLINT-WORKER ${d##*/} bound to vfio-pci"
done
rdma link add rxe0 type rxe netdev eth0 && echo "FLINT-WORKER soft-RoCE rxe0 on eth0" || echo "FLINT-WORKER soft-RoCE failed"
`

// workerInit is the guest's PID 1 after the initramfs: it mounts what a
// node needs (cgroup v2, a shared root for mount propagation, the host's
// log directory over 9p), brings up the network, imports the images and
// runs containerd, kube-proxy and the kubelet.
const workerInit = `#!/bin/sh
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mountpoint -q /dev || mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm && mount -t devpts devpts /dev/pts && mount -t tmpfs shm /dev/shm
mount -t tmpfs run /run
mount -t tmpfs tmp /tmp
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount --make-rshared /
hostname {{name}}
for m in virtio_net 9p 9pnet_virtio overlay br_netfilter nvme-tcp loop; do modprobe -q $m || echo "FLINT-WORKER modprobe $m failed"; done
mkdir -p /var/log/flint && mount -t 9p -o trans=virtio,version=9p2000.L flintlogs /var/log/flint
for c in cpuset cpu io memory pids hugetlb; do echo +$c > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; done
# A CPU quota for the guest's whole life, on a cgroup of its own. The
# kernel patches its CFS bandwidth code into the scheduler (a static key)
# when the first quota appears and out when the last goes, as Guaranteed
# pods come and go; QEMU's multi-threaded TCG once let a vCPU run the
# scheduler tick through the half-patched site after the patch was done
# (Oops: int3 in update_curr, a kernel panic). Patched once here, it stays.
mkdir -p /sys/fs/cgroup/flint-quota && echo "1000000 100000" >/sys/fs/cgroup/flint-quota/cpu.max || echo "FLINT-WORKER cpu quota failed"
ip link set lo up
ip link set eth0 up
ip addr add {{ip}}/24 dev eth0
ip route add default via {{gateway}}
sysctl -qw net.ipv4.ip_forward=1
{{pcieStorage}}containerd --config {{etc}}/containerd.toml >/var/log/flint/containerd.log 2>&1 &
until ctr --address {{socket}} version >/dev/null 2>&1; do sleep 1; done
for i in /var/lib/flint/images/*.tar; do
  ctr --address {{socket}} --namespace k8s.io images import --no-unpack "$i" >>/var/log/flint/import.log 2>&1 || echo "FLINT-WORKER import $i failed"
done
echo "FLINT-WORKER images imported"
kube-proxy --config {{etc}}/kube-proxy.yaml >/var/log/flint/kube-proxy.log 2>&1 &
kubelet {{kubeletArgs}} >/var/log/flint/kubelet.log 2>&1 &
echo "FLINT-WORKER kubelet started"
# A root shell on the second serial port, the host's worker/shell.sock.
setsid sh -c 'while true; do sh -i </dev/ttyS1 >/dev/ttyS1 2>&1; done' &
wait
`

// startWorker builds the guest's root disk, boots it on the lab's bridge
// and waits for its kubelet to report the node Ready.
func (l *Lab) startWorker(ctx context.Context) error {
	w := l.Worker
	n := l.workerNode()
	dir := filepath.Join(l.Dir, "worker")
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	// /lib is Debian's link to usr/lib: the modules go below it once the
	// root is unpacked.
	for _, c := range [][]string{
		{"tar", "-xf", w.Base, "-C", root},
		{"mkdir", "-p", filepath.Join(root, "usr", "lib", "modules")},
		{"cp", "-a", w.Modules, filepath.Join(root, "usr", "lib", "modules") + "/"},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(c, " "), err, out)
		}
	}
	executables := map[string]string{
		"usr/local/bin/kubelet": l.bin("kubelet"), "usr/local/bin/kube-proxy": l.bin("kube-proxy"),
	}
	if n.multus {
		executables[strings.TrimPrefix(n.cniBin, "/")+"/multus"] = l.Multus
	}
	for dst, src := range executables {
		if err := installFile(src, filepath.Join(root, dst)); err != nil {
			return err
		}
	}
	if err := l.writeNodeFiles(n, filepath.Join(root, strings.TrimPrefix(n.etc, "/"))); err != nil {
		return err
	}
	images := filepath.Join(root, "var", "lib", "flint", "images")
	if err := os.MkdirAll(images, 0o755); err != nil {
		return err
	}
	for _, image := range w.Images {
		if out, err := exec.Command("cp", image, images+"/").CombinedOutput(); err != nil {
			return fmt.Errorf("copy %s: %v: %s", image, err, out)
		}
	}
	storageInit := ""
	if w.PCIeStorage {
		storageInit = pcieStorageInit
	}
	init := strings.NewReplacer("{{name}}", n.name, "{{ip}}", n.ip, "{{gateway}}", NodeIP, "{{etc}}", n.etc,
		"{{socket}}", n.containerdSocket(), "{{kubeletArgs}}", strings.Join(n.kubeletArgs(), " "), "{{pcieStorage}}", storageInit).Replace(workerInit)
	if err := os.WriteFile(filepath.Join(root, "sbin", "flint-worker-init"), []byte(init), 0o755); err != nil {
		return err
	}
	// The kubelet reads the machine's identity from it.
	if err := os.WriteFile(filepath.Join(root, "etc", "machine-id"), []byte(fmt.Sprintf("%032x\n", time.Now().UnixNano())), 0o444); err != nil {
		return err
	}
	disk := filepath.Join(dir, "root.img")
	if out, err := exec.Command("mke2fs", "-q", "-t", "ext4", "-F", "-d", root, disk, "8G").CombinedOutput(); err != nil {
		return fmt.Errorf("make the guest's root disk: %v: %s", err, out)
	}
	if err := os.RemoveAll(root); err != nil {
		return err
	}
	logs := filepath.Join(l.Dir, "logs", "worker")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}

	cpus, memory, cmdline := "2", "4096", "console=ttyS0 loglevel=4 panic=-1"
	var storage []string
	if w.PCIeStorage {
		nvme := filepath.Join(dir, "nvme.img")
		if err := os.WriteFile(nvme, nil, 0o644); err != nil {
			return err
		}
		if err := os.Truncate(nvme, 2<<30); err != nil {
			return err
		}
		// aw-bits=48: SPDK maps DMA at its virtual addresses, beyond the
		// 39 bits QEMU's IOMMU gives by default. The controller's drive
		// caches writes (QEMU's default), so it has a volatile write cache;
		// its namespace has 4096-byte blocks, as an OSD's device must.
		storage = []string{"-machine", "q35", "-device", "intel-iommu,intremap=on,aw-bits=48",
			"-drive", "file=" + nvme + ",if=none,id=nvm,format=raw", "-device", "nvme,serial=flintlab0,drive=nvm,logical_block_size=4096,physical_block_size=4096"}
		// A third CPU: the static CPU manager keeps CPU 0 for the system
		// and the OSD's SPDK takes one of the others alone, and a node
		// of two would have one CPU allocatable, less than the OSD pod's
		// 1.1.
		cpus, memory = "3", "5120"
		cmdline += fmt.Sprintf(" intel_iommu=on iommu=pt hugepagesz=2M hugepages=%d", WorkerHugePages)
	}
	args := append([]string{"-accel", "tcg,thread=multi", "-cpu", "max", "-smp", cpus, "-m", memory, "-no-reboot",
		// ttyS0 (the console) on stdout, ttyS1 (a root shell) on a socket.
		"-display", "none", "-monitor", "none", "-serial", "stdio",
		"-serial", "unix:" + filepath.Join(dir, "shell.sock") + ",server=on,wait=off",
		"-kernel", w.Kernel, "-initrd", w.Initramfs, "-append", cmdline,
		"-drive", "file=" + disk + ",if=virtio,format=raw,cache=unsafe",
		"-netdev", "tap,id=n0,ifname=" + workerTap + ",script=no,downscript=no",
		"-device", "virtio-net-pci,netdev=n0,mac=52:54:00:4d:00:02",
		"-virtfs", "local,path=" + logs + ",mount_tag=flintlogs,security_model=none,id=logs"}, storage...)
	qemu, err := l.start("worker-console", "qemu-system-x86_64", args...)
	if err != nil {
		return err
	}
	attach := func() error {
		for _, c := range [][]string{
			{"ip", "link", "set", workerTap, "master", "flint-lab", "up"},
			{"ip", "route", "replace", WorkerPodCIDR, "via", WorkerIP},
		} {
			if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
				return fmt.Errorf("%s: %v: %s", strings.Join(c, " "), err, out)
			}
		}
		return nil
	}
	if err := qemu.waitFor(ctx, 30*time.Second, "tap device on the lab's bridge", attach); err != nil {
		return err
	}
	// TCG: the guest boots in seconds, its kubelet takes minutes.
	return qemu.waitFor(ctx, 10*time.Minute, "node Ready", func() error { return l.nodeReady(ctx, n.name) })
}
