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
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// kubeletRoot is where the kubelet keeps pods' volumes and plugins'
// sockets: the chart's DaemonSet mounts it by this path.
const kubeletRoot = "/var/lib/kubelet"

// PauseImage is the pod sandbox image, which hack/images -lab builds.
const PauseImage = "flint-lab.local/pause:1"

func (l *Lab) containerdSocket() string { return filepath.Join(l.Dir, "run", "containerd.sock") }

// startContainerd runs Debian's containerd with the CRI plugin on runc
// and cgroupfs, pods on a CNI bridge, and imports the images.
func (l *Lab) startContainerd(ctx context.Context) error {
	cni, err := l.writeFile("cni/10-flint-lab.conflist", fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "flint-lab",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, PodCIDR))
	if err != nil {
		return err
	}
	// restrict_oom_score_adj: the lab's processes may not lower their
	// OOM score below their parent's, as a container runtime in a
	// container may not.
	config, err := l.writeFile("containerd.toml", fmt.Sprintf(`version = 2
root = %q
state = %q
[grpc]
  address = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
`, filepath.Join(l.Dir, "containerd"), filepath.Join(l.Dir, "run", "containerd-state"), l.containerdSocket(), PauseImage, filepath.Dir(cni)))
	if err != nil {
		return err
	}
	containerd, err := l.start("containerd", "containerd", "--config="+config)
	if err != nil {
		return err
	}
	if err := containerd.waitFor(ctx, 30*time.Second, "serving", func() error { return l.ctr("version") }); err != nil {
		return err
	}
	for _, image := range l.Images {
		if err := l.ctr("images", "import", "--no-unpack", image); err != nil {
			return fmt.Errorf("import %s: %w", image, err)
		}
	}
	return nil
}

// ctr runs Debian's ctr against the lab's containerd, in the namespace
// the CRI plugin uses.
func (l *Lab) ctr(args ...string) error {
	out, err := exec.Command("ctr", append([]string{"--address", l.containerdSocket(), "--namespace", "k8s.io"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// killContainers kills every container of the node's containerd, if it
// runs.
func (l *Lab) killContainers() {
	out, err := exec.Command("ctr", "--address", l.containerdSocket(), "--namespace", "k8s.io", "tasks", "ls", "-q").Output()
	if err != nil {
		return
	}
	for _, id := range strings.Fields(string(out)) {
		_ = l.ctr("tasks", "kill", "--all", "--signal", "SIGKILL", id)
		_ = l.ctr("tasks", "delete", "--force", id)
	}
}

// deletePods deletes every pod at once and waits, at most timeout, for
// the kubelet to have torn them down.
func (l *Lab) deletePods(timeout time.Duration) {
	clients, err := kubernetes.NewForConfig(l.Config)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	pods, err := clients.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, p := range pods.Items {
		_ = clients.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)})
	}
	for ctx.Err() == nil {
		if left, err := clients.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err == nil && len(left.Items) == 0 {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// startNode runs the storage node's kubelet and kube-proxy and waits for
// the node to be Ready.
func (l *Lab) startNode(ctx context.Context) error {
	c := l.creds
	kubeconfig, err := c.kubeconfig("kubelet", "system:node:"+StorageNode, []string{"system:nodes"}, apiURL())
	if err != nil {
		return err
	}
	serveCert, serveKey, err := c.serving("kubelet-serving", []string{StorageNode}, net.ParseIP(NodeIP))
	if err != nil {
		return err
	}
	// The host's cgroups are v1 (failCgroupV1: false) and driven by
	// cgroupfs. Eviction and image GC are off: the lab's disk is the
	// machine's, and a pod evicted for its use would fail a test for
	// nothing Flint did.
	config, err := l.writeFile("kubelet.yaml", fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %q}
authorization: {mode: Webhook}
tlsCertFile: %q
tlsPrivateKeyFile: %q
containerRuntimeEndpoint: unix://%s
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
clusterDomain: cluster.local
resolvConf: ""
podCIDR: %s
maxPods: 40
evictionHard: {memory.available: "0%%", nodefs.available: "0%%", imagefs.available: "0%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
podLogsDir: %s
`, NodeIP, c.caFile(), serveCert, serveKey, l.containerdSocket(), PodCIDR, filepath.Join(l.Dir, "logs", "pods")))
	if err != nil {
		return err
	}
	kubelet, err := l.start("kubelet", l.bin("kubelet"),
		"--config="+config, "--kubeconfig="+kubeconfig, "--root-dir="+kubeletRoot,
		"--hostname-override="+StorageNode, "--node-ip="+NodeIP,
		"--node-labels=topology.kubernetes.io/zone=lab-a")
	if err != nil {
		return err
	}

	proxyConfig, err := c.kubeconfig("kube-proxy", "system:kube-proxy", nil, apiURL())
	if err != nil {
		return err
	}
	// conntrack maxPerCore 0 leaves the host's conntrack table alone.
	config, err = l.writeFile("kube-proxy.yaml", fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: %q}
hostnameOverride: %s
clusterCIDR: 10.244.0.0/16
bindAddress: %s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack: {maxPerCore: 0}
`, proxyConfig, StorageNode, NodeIP))
	if err != nil {
		return err
	}
	if _, err := l.start("kube-proxy", l.bin("kube-proxy"), "--config="+config); err != nil {
		return err
	}

	clients, err := kubernetes.NewForConfig(l.Config)
	if err != nil {
		return err
	}
	return kubelet.waitFor(ctx, 120*time.Second, "node Ready", func() error {
		node, err := clients.CoreV1().Nodes().Get(ctx, StorageNode, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				if cond.Status == corev1.ConditionTrue {
					return nil
				}
				return fmt.Errorf("node not Ready (%s): %s", cond.Status, cond.Message)
			}
		}
		return errors.New("the node reports no Ready condition yet")
	})
}

// unmountUnder unmounts dir and every mount below it, deepest first: the
// volumes and token files the kubelet mounted for pods, and the bind
// mount it makes of its root for mount propagation.
func unmountUnder(dir string) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return
	}
	defer func() { _ = f.Close() }()
	var mounts []string
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) > 1 && (fields[1] == dir || strings.HasPrefix(fields[1], dir+"/")) {
			mounts = append(mounts, fields[1])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(mounts)))
	for _, m := range mounts {
		_ = exec.Command("umount", "-l", m).Run()
	}
}
