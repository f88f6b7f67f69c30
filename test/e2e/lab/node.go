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

// kubeletRoot is where the kubelets of the nodes that run the CSI node
// plugin keep pods' volumes and plugins' sockets: the chart's DaemonSet
// mounts it by this path.
const kubeletRoot = "/var/lib/kubelet"

// PauseImage is the pod sandbox image, which hack/images -lab builds.
const PauseImage = "flint-lab.local/pause:1"

// StormWriterImage runs test/e2e/stormwriter, which hack/images -lab
// builds: the kernel host storm's writer (root, to open a raw block PVC).
const StormWriterImage = "flint-lab.local/storm-writer:1"

// SnapshotControllerImage is external-snapshotter's snapshot controller,
// which a cluster runs for VolumeSnapshots and the chart does not ship;
// hack/images -lab builds it from the module pinned in
// hack/tools/csi-sidecars/snapshot-controller/go.mod, at this tag.
const SnapshotControllerImage = "registry.k8s.io/sig-storage/snapshot-controller:v8.7.0"

// node is what a node's containerd, kubelet and kube-proxy are
// configured with; paths are where the node sees them.
type node struct {
	name, ip, podCIDR, zone string
	// labels are more node labels (key=value).
	labels []string
	// cgroupV1: the host's cgroups are v1 (the guest's are v2).
	cgroupV1 bool
	// etc holds the node's configuration and credentials; state its
	// containerd's root, state and socket; podLogs the pods' logs.
	etc, state, podLogs string
	// cniBin holds the CNI plugins; multus: Multus is the node's plugin.
	cniBin string
	multus bool
	// bridge is the pods' bridge.
	bridge string
	// kubeletRoot is the kubelet's --root-dir; cgroupRoot, when set, the
	// cgroup its pods go below, and healthzPort its health port: a second
	// kubelet on one machine needs its own of each.
	kubeletRoot, cgroupRoot string
	healthzPort             int
	// reservedCPUs, when set, turns on the kubelet's static CPU manager
	// with these CPUs kept for the system: Guaranteed pods' integer CPUs
	// get the others alone.
	reservedCPUs string
}

func (n node) containerdSocket() string { return filepath.Join(n.state, "run", "containerd.sock") }

// cniConfig puts the node's pods on its bridge, in its pod subnet, with
// the addresses handed out recorded in its state directory.
func (n node) cniConfig() string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "flint-lab",
  "plugins": [
    {"type": "bridge", "bridge": %q, "isGateway": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}], "dataDir": %q}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, n.bridge, n.podCIDR, filepath.Join(n.state, "ipam"))
}

// containerdConfig runs the CRI plugin on runc and cgroupfs, with the
// lab's pause image. restrict_oom_score_adj: the lab's processes may not
// lower their OOM score below their parent's, as a container runtime in a
// container may not.
func (n node) containerdConfig() string {
	return fmt.Sprintf(`version = 2
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
    bin_dir = %q
    conf_dir = %q
`, filepath.Join(n.state, "containerd"), filepath.Join(n.state, "run", "containerd-state"), n.containerdSocket(), PauseImage, n.cniBin, filepath.Join(n.etc, "cni"))
}

// kubeletConfig serves with the node's certificate from etc. Eviction
// and image GC are off: the lab's disk is the machine's, and a pod
// evicted for its use would fail a test for nothing Flint did. Images are
// imported without unpacking (the guest boots faster), so a container's
// first start unpacks its image; in the TCG guest on a busy machine that
// took more than the default 2 minutes, and every timeout began the
// unpack again from nothing (the writer Pod of TestTargetMovesUnderAWriter
// stayed Pending for 10 minutes): runtime calls get 10 minutes.
func (n node) kubeletConfig() string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %q}
authorization: {mode: Webhook}
tlsCertFile: %q
tlsPrivateKeyFile: %q
containerRuntimeEndpoint: unix://%s
cgroupDriver: cgroupfs
failCgroupV1: %t
failSwapOn: false
clusterDomain: cluster.local
resolvConf: ""
podCIDR: %s
maxPods: 40
evictionHard: {memory.available: "0%%", nodefs.available: "0%%", imagefs.available: "0%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
runtimeRequestTimeout: 10m
podLogsDir: %s
`, n.ip, n.healthzPort, filepath.Join(n.etc, "ca.crt"), filepath.Join(n.etc, "kubelet-serving.crt"), filepath.Join(n.etc, "kubelet-serving.key"),
		n.containerdSocket(), !n.cgroupV1, n.podCIDR, n.podLogs) + n.cgroupRootConfig() + n.cpuManagerConfig()
}

func (n node) cpuManagerConfig() string {
	if n.reservedCPUs == "" {
		return ""
	}
	return fmt.Sprintf("cpuManagerPolicy: static\nreservedSystemCPUs: %q\n", n.reservedCPUs)
}

func (n node) cgroupRootConfig() string {
	if n.cgroupRoot == "" {
		return ""
	}
	return fmt.Sprintf("cgroupRoot: %s\n", n.cgroupRoot)
}

func (n node) kubeletArgs() []string {
	return []string{"--config=" + filepath.Join(n.etc, "kubelet.yaml"), "--kubeconfig=" + filepath.Join(n.etc, "kubelet.kubeconfig"),
		"--root-dir=" + n.kubeletRoot, "--hostname-override=" + n.name, "--node-ip=" + n.ip,
		"--node-labels=" + strings.Join(append([]string{"topology.kubernetes.io/zone=" + n.zone}, n.labels...), ",")}
}

// kubeProxyConfig: iptables mode; conntrack maxPerCore 0 leaves the
// machine's conntrack table alone.
func (n node) kubeProxyConfig() string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: %q}
hostnameOverride: %s
clusterCIDR: 10.244.0.0/16
bindAddress: %s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack: {maxPerCore: 0}
`, filepath.Join(n.etc, "kube-proxy.kubeconfig"), n.name, n.ip)
}

// writeNodeFiles writes n's configuration and credentials into dir (the
// directory the node sees as n.etc).
func (l *Lab) writeNodeFiles(n node, dir string) error {
	c := l.creds
	if err := os.MkdirAll(filepath.Join(dir, "cni"), 0o755); err != nil {
		return err
	}
	kubelet, err := c.kubeconfig("kubelet-"+n.name, "system:node:"+n.name, []string{"system:nodes"}, apiURL())
	if err != nil {
		return err
	}
	serveCert, serveKey, err := c.serving("kubelet-serving-"+n.name, []string{n.name}, net.ParseIP(n.ip))
	if err != nil {
		return err
	}
	proxy, err := c.kubeconfig("kube-proxy", "system:kube-proxy", nil, apiURL())
	if err != nil {
		return err
	}
	files := map[string]string{
		"ca.crt": c.caFile(), "kubelet.kubeconfig": kubelet, "kubelet-serving.crt": serveCert,
		"kubelet-serving.key": serveKey, "kube-proxy.kubeconfig": proxy,
	}
	configs := map[string]string{
		"cni/10-flint-lab.conflist": n.cniConfig(), "containerd.toml": n.containerdConfig(),
		"kubelet.yaml": n.kubeletConfig(), "kube-proxy.yaml": n.kubeProxyConfig(),
	}
	if n.multus {
		if files["multus.kubeconfig"], err = c.kubeconfig("multus-"+n.name, multusUser, nil, apiURL()); err != nil {
			return err
		}
		// Named to sort first: the runtime uses the first configuration.
		if configs["cni/00-multus.conf"], err = n.multusConfig(); err != nil {
			return err
		}
	}
	for dst, src := range files {
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, dst), data, 0o600); err != nil {
			return err
		}
	}
	for name, content := range configs {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// storageNode is the host's node, in the lab's directory.
func (l *Lab) storageNode() node {
	n := node{name: StorageNode, ip: NodeIP, podCIDR: PodCIDR, zone: "lab-a", labels: []string{StorageLabel + "=true", CSINodeLabel + "=true"}, cgroupV1: true,
		etc: filepath.Join(l.Dir, "etc"), state: l.Dir, podLogs: filepath.Join(l.Dir, "logs", "pods"),
		cniBin: "/usr/lib/cni", bridge: "cni0", kubeletRoot: kubeletRoot, healthzPort: 10248}
	if l.Multus != "" {
		n.cniBin, n.multus = filepath.Join(l.Dir, "cni-bin"), true
	}
	return n
}

// startContainerd runs the storage node's containerd and imports the
// images.
func (l *Lab) startContainerd(ctx context.Context) error {
	n := l.storageNode()
	if n.multus {
		if err := l.linkCNIPlugins(n.cniBin); err != nil {
			return err
		}
	}
	return l.startNodeContainerd(ctx, n, "containerd", l.Images)
}

// startNodeContainerd writes n's files and runs its containerd, as
// process name, with images imported.
func (l *Lab) startNodeContainerd(ctx context.Context, n node, name string, images []string) error {
	if err := l.writeNodeFiles(n, n.etc); err != nil {
		return err
	}
	containerd, err := l.start(name, "containerd", "--config="+filepath.Join(n.etc, "containerd.toml"))
	if err != nil {
		return err
	}
	socket := n.containerdSocket()
	if err := containerd.waitFor(ctx, 30*time.Second, "serving", func() error { return ctr(socket, "version") }); err != nil {
		return err
	}
	for _, image := range images {
		if err := ctr(socket, "images", "import", "--no-unpack", image); err != nil {
			return fmt.Errorf("import %s: %w", image, err)
		}
	}
	return nil
}

// ctr runs Debian's ctr against the containerd at socket, in the
// namespace the CRI plugin uses.
func ctr(socket string, args ...string) error {
	out, err := exec.Command("ctr", append([]string{"--address", socket, "--namespace", "k8s.io"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// killContainers kills every container of the containerd at socket, if it
// runs.
func killContainers(socket string) {
	out, err := exec.Command("ctr", "--address", socket, "--namespace", "k8s.io", "tasks", "ls", "-q").Output()
	if err != nil {
		return
	}
	for _, id := range strings.Fields(string(out)) {
		_ = ctr(socket, "tasks", "kill", "--all", "--signal", "SIGKILL", id)
		_ = ctr(socket, "tasks", "delete", "--force", id)
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
	n := l.storageNode()
	kubelet, err := l.start("kubelet", l.bin("kubelet"), n.kubeletArgs()...)
	if err != nil {
		return err
	}
	if _, err := l.start("kube-proxy", l.bin("kube-proxy"), "--config="+filepath.Join(n.etc, "kube-proxy.yaml")); err != nil {
		return err
	}
	return kubelet.waitFor(ctx, 120*time.Second, "node Ready", func() error { return l.nodeReady(ctx, n.name) })
}

// nodeReady is nil when the node reports Ready.
func (l *Lab) nodeReady(ctx context.Context, name string) error {
	clients, err := kubernetes.NewForConfig(l.Config)
	if err != nil {
		return err
	}
	node, err := clients.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			if cond.Status == corev1.ConditionTrue {
				return nil
			}
			return fmt.Errorf("node %s not Ready (%s): %s", name, cond.Status, cond.Message)
		}
	}
	return fmt.Errorf("node %s reports no Ready condition yet", name)
}

// unmountUnder unmounts dir and every mount below it, deepest first: the
// volumes and token files the kubelet mounted for pods, and the bind
// mount it makes of its root for mount propagation.
func unmountUnder(dir string) {
	mounts, err := mountPoints(func(point, _ string) bool { return point == dir || strings.HasPrefix(point, dir+"/") })
	if err != nil {
		return
	}
	sort.Sort(sort.Reverse(sort.StringSlice(mounts)))
	for _, m := range mounts {
		_ = exec.Command("umount", "-l", m).Run()
	}
}

// mountPoints lists this process's mount points whose point and file
// system type match.
func mountPoints(match func(point, fsType string) bool) ([]string, error) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var points []string
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) > 2 && match(fields[1], fields[2]) {
			points = append(points, fields[1])
		}
	}
	return points, scanner.Err()
}
