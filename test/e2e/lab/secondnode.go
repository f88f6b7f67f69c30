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

// The second storage node: a kubelet and containerd of their own on this
// machine, beside the first, in the lab's namespace.
const (
	SecondStorageNodeName = "flint-storage-1"
	secondStorageIP       = "10.77.0.3"
	secondStoragePodCIDR  = "10.244.2.0/24"
	// secondStorageCgroup is the cgroup its pods go below (cgroup v1: one
	// in every hierarchy), apart from the first kubelet's.
	secondStorageCgroup = "flint-storage-1"
	cgroupV1Root        = "/sys/fs/cgroup"
)

// secondStorageNode runs OSD pods only: without the CSI node plugin (its
// DaemonSet mounts /var/lib/kubelet, the first kubelet's; the chart's
// csi.node.nodeSelector names CSINodeLabel, which this node lacks) it
// keeps its kubelet's state in the lab's directory.
func (l *Lab) secondStorageNode() node {
	dir := filepath.Join(l.Dir, SecondStorageNodeName)
	first := l.storageNode()
	return node{name: SecondStorageNodeName, ip: secondStorageIP, podCIDR: secondStoragePodCIDR, zone: "lab-c",
		labels: []string{StorageLabel + "=true"}, cgroupV1: true,
		etc: filepath.Join(dir, "etc"), state: dir, podLogs: filepath.Join(l.Dir, "logs", SecondStorageNodeName, "pods"),
		cniBin: first.cniBin, multus: first.multus, bridge: "cni1",
		kubeletRoot: filepath.Join(dir, "kubelet"), cgroupRoot: "/" + secondStorageCgroup, healthzPort: 10258}
}

// startSecondStorageNode gives the node its address on the lab's bridge
// and its cgroup, runs its containerd with the images an OSD pod needs,
// and its kubelet, and waits for the node to be Ready. The first storage
// node's kube-proxy serves the namespace both share.
func (l *Lab) startSecondStorageNode(ctx context.Context) error {
	n := l.secondStorageNode()
	if out, err := exec.Command("ip", "addr", "add", n.ip+"/24", "dev", "flint-lab").CombinedOutput(); err != nil {
		return fmt.Errorf("add %s to the lab's bridge: %v: %s", n.ip, err, out)
	}
	if err := makeCgroupV1(secondStorageCgroup); err != nil {
		return err
	}
	var images []string
	for _, image := range l.Images {
		if base := filepath.Base(image); base == "pause.tar" || base == "flint-osd.tar" {
			images = append(images, image)
		}
	}
	if err := l.startNodeContainerd(ctx, n, "containerd-"+n.name, images); err != nil {
		return err
	}
	kubelet, err := l.start("kubelet-"+n.name, l.bin("kubelet"), n.kubeletArgs()...)
	if err != nil {
		return err
	}
	return kubelet.waitFor(ctx, 120*time.Second, "node Ready", func() error { return l.nodeReady(ctx, n.name) })
}

// removeSecondStorageNode unmounts what its kubelet mounted and removes
// its cgroups, once its processes have stopped.
func (l *Lab) removeSecondStorageNode() {
	unmountUnder(l.secondStorageNode().kubeletRoot)
	removeCgroupV1(secondStorageCgroup)
}

// makeCgroupV1 makes the cgroup name in every v1 hierarchy; cpuset's
// needs its parent's cores and memory nodes before a task may join.
func makeCgroupV1(name string) error {
	hierarchies, err := cgroupV1Hierarchies()
	if err != nil {
		return err
	}
	for _, h := range hierarchies {
		dir := filepath.Join(h, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if filepath.Base(h) != "cpuset" {
			continue
		}
		for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
			parent, err := os.ReadFile(filepath.Join(h, file))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, file), parent, 0o644); err != nil {
				return fmt.Errorf("cgroup %s: %w", dir, err)
			}
		}
	}
	return nil
}

// removeCgroupV1 removes the cgroup name and those below it, deepest
// first, from every v1 hierarchy; a cgroup that still holds a task stays.
func removeCgroupV1(name string) {
	hierarchies, _ := cgroupV1Hierarchies()
	for _, h := range hierarchies {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, name), func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = os.Remove(dirs[i])
		}
	}
}

// cgroupV1Hierarchies are the mounted cgroup v1 hierarchies.
func cgroupV1Hierarchies() ([]string, error) {
	return mountPoints(func(point, fsType string) bool {
		return fsType == "cgroup" && strings.HasPrefix(point, cgroupV1Root+"/")
	})
}
