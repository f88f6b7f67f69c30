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

// Package e2e runs Flint as a cluster runs it: the chart installed into
// the e2e lab (test/e2e/lab) from the images make images builds, the
// operator, CSI controller and node plugin in pods of a real kubelet.
// hack/e2e/run.sh (make test-e2e) builds what it needs and runs these
// tests in the lab's network namespace; elsewhere they skip.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/internal/bench"
	"github.com/flint-io/flint/internal/kubectl"
	"github.com/flint-io/flint/test/e2e/lab"
)

const namespace = "flint-system"

// chartClass is the StorageClass the chart installs, of the dev Pool.
const chartClass = "flint"

// cluster is the running lab; nil when the tests do not run in one.
var cluster *lab.Lab

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	dir := os.Getenv("FLINT_E2E_DIR")
	if dir == "" {
		os.Exit(m.Run())
	}
	images, _ := filepath.Glob(filepath.Join(os.Getenv("FLINT_E2E_IMAGES"), "*.tar"))
	cluster = &lab.Lab{Dir: dir, Assets: os.Getenv("FLINT_E2E_ASSETS"), Images: images,
		Multus: os.Getenv("FLINT_E2E_MULTUS"), MultusCRDs: os.Getenv("FLINT_E2E_MULTUS_CRDS"),
		SecondStorageNode: haveImage("flint-osd")}
	if kernel := os.Getenv("FLINT_E2E_WORKER_KERNEL"); kernel != "" {
		cluster.Worker = &lab.Worker{
			Kernel: kernel, Initramfs: os.Getenv("FLINT_E2E_WORKER_INITRD"),
			Modules: os.Getenv("FLINT_E2E_WORKER_MODULES"), Base: os.Getenv("FLINT_E2E_WORKER_BASE"),
			// With the OSD image the guest is a pcie storage node too
			// (TestPCIeStorageNode): the OSD pod and the device plugin
			// run there from that image.
			PCIeStorage: haveImage("flint-osd"),
		}
		// What runs on a workload node: the node plugin and the tests' pods.
		for _, name := range []string{"pause", "flint-csi-driver", "csi-node-driver-registrar", "livenessprobe", "flint-bench", "storm-writer", "flint-osd", "e2e-busybox", "e2e-agnhost", "e2e-nginx", "e2e-glibc-dns-testing"} {
			if haveImage(name) {
				cluster.Worker.Images = append(cluster.Worker.Images, filepath.Join(os.Getenv("FLINT_E2E_IMAGES"), name+".tar"))
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	err := cluster.Up(ctx, os.Stdout)
	cancel()
	code := 1
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: the lab did not come up: %v\n", err)
	} else {
		code = m.Run()
		// Kept whatever the outcome: a restart that failed no test is
		// still worth reading.
		if clients, err := kubernetes.NewForConfig(cluster.Config); err == nil {
			dir, err := keepFlintLogs(clients, "end")
			fmt.Printf("e2e: Flint's container logs at the end: %s (%v)\n", dir, err)
		}
	}
	cluster.Close()
	fmt.Println("e2e: lab phases:")
	for _, p := range cluster.Phases {
		fmt.Printf("  %-45s %s\n", p.Name, p.Took.Round(100*time.Millisecond))
	}
	os.Exit(code)
}

// inLab skips a test outside the lab.
func inLab(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	if cluster == nil {
		t.Skip("runs in the e2e lab: make test-e2e")
	}
	clients, err := kubernetes.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		dir, err := keepFlintLogs(clients, t.Name())
		t.Logf("Flint's container logs: %s (%v)", dir, err)
	})
	return clients
}

// keepFlintLogs copies the logs of every container in Flint's namespace,
// and of its previous instance when it restarted, into the lab's
// logs/flint/<when>: the kubelet removes a pod's logs with the pod, and
// a failed test's cleanup or the lab's end removes the pods.
func keepFlintLogs(clients kubernetes.Interface, when string) (string, error) {
	ctx := context.Background()
	pods, err := clients.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cluster.Dir, "logs", "flint", strings.ReplaceAll(when, "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, p := range pods.Items {
		for _, c := range p.Status.ContainerStatuses {
			for _, previous := range []bool{false, true} {
				if previous && c.RestartCount == 0 {
					continue
				}
				data, err := clients.CoreV1().Pods(namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name, Previous: previous}).DoRaw(ctx)
				if err != nil {
					data = []byte(err.Error())
				}
				name := p.Name + "_" + c.Name
				if previous {
					name += ".previous"
				}
				if err := os.WriteFile(filepath.Join(dir, name+".log"), data, 0o644); err != nil {
					return "", err
				}
			}
		}
	}
	return dir, nil
}

// haveImage says whether the lab imported the archive of an image.
func haveImage(name string) bool {
	_, err := os.Stat(filepath.Join(os.Getenv("FLINT_E2E_IMAGES"), name+".tar"))
	return err == nil
}

// haveSidecars says whether the lab has the images of the sidecars the
// Go module proxy has no module of.
func haveSidecars() bool {
	return haveImage("csi-node-driver-registrar") && haveImage("livenessprobe")
}

// needSidecars skips a test without those sidecars' images.
func needSidecars(t *testing.T) {
	if !haveSidecars() {
		t.Skip("no images of node-driver-registrar and livenessprobe: give CSI_REGISTRAR_SRC and CSI_LIVENESSPROBE_SRC")
	}
}

// needStorage skips a test without the OSD image or the sidecars'.
func needStorage(t *testing.T) {
	if !haveImage("flint-osd") || !haveSidecars() {
		t.Skip("needs the OSD image (SPDK_SRC, DPDK_SRC) and the sidecars' (CSI_REGISTRAR_SRC, CSI_LIVENESSPROBE_SRC)")
	}
}

// The chart installs as README.md's quickstart installs it, from the
// images built here, and its pods run: the operator; the CSI controller and node plugin with
// their sidecars when their images could be built, the node plugin then
// registered with the kubelet.
func TestChartInstalls(t *testing.T) {
	clients := inLab(t)
	// README.md's install block, as written, with the lab's settings.
	runREADMEBlock(t, "TestChartInstalls", 5*time.Minute, []string{
		"--set", strings.Join([]string{
			"operator.replicas=1", "csi.controller.replicas=1",
			// The emulated node can take seconds to answer a probe: a 2 s
			// fence probe killed its SPDK again and again under load, its
			// lease valid all along. Its agent, within 100m of an
			// emulated core, missed its /healthz and the lease renewals
			// for a minute under a mirrored write.
			"operator.fenceProbeTimeout=10s", "operator.spdkHangTimeout=20s", "operator.targetGrace=40s", "operator.osdAgentCPU=500m",
			// The workload node is an emulated machine: only what a
			// workload node needs runs there.
			"operator.nodeSelector.kubernetes\\.io/hostname=" + lab.StorageNode,
			"csi.controller.nodeSelector.kubernetes\\.io/hostname=" + lab.StorageNode,
			"snapshots.class.create=true",
		}, ","),
		// The second storage node runs OSDs only (lab.SecondStorageNode);
		// a label's value is a string. The device plugins run on the pcie
		// storage node.
		"--set-string", "csi.node.nodeSelector." + strings.ReplaceAll(lab.CSINodeLabel, ".", "\\.") + "=true",
		"--set", "nvmeDevicePlugin.enabled=true,rdmaDevicePlugin.enabled=true",
		"--set-string", "nvmeDevicePlugin.nodeSelector." + strings.ReplaceAll(lab.PCIeStorageLabel, ".", "\\.") + "=true",
		"--set-string", "rdmaDevicePlugin.nodeSelector." + strings.ReplaceAll(lab.PCIeStorageLabel, ".", "\\.") + "=true",
	})

	t.Run("operator", func(t *testing.T) {
		waitDeploymentAvailable(t, clients, "flint-operator")
	})
	t.Run("csi-controller", func(t *testing.T) {
		needSidecars(t)
		waitDeploymentAvailable(t, clients, "flint-csi-controller")
	})
	t.Run("csi-node registers with the kubelet", func(t *testing.T) {
		needSidecars(t)
		csiNodeRegistered(t, clients, lab.StorageNode, 3*time.Minute)
	})
	// The emulated node's plugin starts beside the device plugins and the
	// OSD image they unpack. Waiting for it here, before any OSD polls,
	// leaves it the host's two cores: under TestTargetMovesUnderAWriter's
	// two polling OSDs it took 18 minutes in a CI run.
	t.Run("csi-node registers on the workload node", func(t *testing.T) {
		needSidecars(t)
		if cluster.Worker == nil {
			t.Skip("no workload node")
		}
		start := time.Now()
		csiNodeRegistered(t, clients, lab.WorkerNode, 15*time.Minute)
		t.Logf("registered on %s after %s", lab.WorkerNode, time.Since(start).Round(time.Second))
	})
}

// The Pool and StorageClass of TestTargetMovesUnderAWriter: two replicas,
// one on each storage node (a failure domain each), on OSDs that poll: in
// interrupt mode SPDK attaches no NVMe-oF controller, so a target could
// not reach its remote replica.
const (
	replicatedPool  = "replicated"
	replicatedClass = "flint-replicated"
	// writerRecords is how many records the writer writes and fsyncs.
	writerRecords = 60
)

// writerScript writes writerRecords records of 64 KiB to /data, each with
// its checksum, fsyncs after each and prints "record <n> <unix time>".
var writerScript = fmt.Sprintf(`set -e
i=0
while [ $i -lt %d ]; do
  head -c 65536 /dev/urandom > /data/record.$i
  sha256sum /data/record.$i >> /data/sums
  sync
  echo "record $i $(date +%%s)"
  i=$((i+1))
  sleep 1
done`, writerRecords)

// A Pod on the workload node writes and fsyncs records to a 2-replica
// Volume while the target's OSD pod is deleted and its node cordoned, so
// that the OSD stays away as on a node that is down: the target moves to
// the other replica's OSD as soon as the kubelet reports the old pod
// stopped (not after --target-grace), the node plugin follows it, and the
// writes go on without an error. Uncordoned, the OSD comes
// back with an empty device (malloc) and its replica is rebuilt; a new
// Pod reads every record back.
//
// It runs before the dev Pool exists: a polling OSD takes a core of its
// own, and the storage node has two.
func TestTargetMovesUnderAWriter(t *testing.T) {
	clients := inLab(t)
	if cluster.Worker == nil {
		t.Skip("no workload node")
	}
	needStorage(t)
	if !cluster.SecondStorageNode {
		t.Skip("no second storage node")
	}
	ctx := t.Context()
	c := flintClient(t)
	t.Cleanup(func() { removeReplicatedPool(t, clients, c, []string{"steady-writer", "record-reader"}, "moving") })
	replicatedPoolReady(t, clients, c)

	createClaim(t, clients, "moving", replicatedClass, corev1.PersistentVolumeFilesystem)
	startWorkload(t, clients, "steady-writer", "moving", writerScript)
	// TestChartInstalls waited for the emulated node's plugin.
	waitRecords(t, clients, "steady-writer", 5, 10*time.Minute)
	vol := volumeOfClaim(t, clients, c, "moving")
	from := vol.Status.Target.OSD
	var osd flintv1.OSD
	if err := c.Get(ctx, client.ObjectKey{Name: from}, &osd); err != nil {
		t.Fatal(err)
	}
	node := osd.Spec.NodeName
	t.Logf("Volume %s: %s", vol.Name, volumeState(vol))
	onlyItsNodeReadsTheKeys(t, clients, vol)

	// The OSD's pod goes, and cannot come back while its node is cordoned.
	setUnschedulable(t, clients, node, true)
	t.Cleanup(func() { setUnschedulable(t, clients, node, false) })
	if err := clients.CoreV1().Pods(namespace).Delete(ctx, "osd-"+from, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	t.Logf("deleted pod osd-%s of the target's OSD on %s (cordoned) after record %d", from, node, lastRecord(t, clients, "steady-writer"))

	var to string
	eventually(t, 5*time.Minute, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(vol), vol); err != nil {
			return err
		}
		if vol.Status.Target == nil || vol.Status.Target.OSD == from {
			return fmt.Errorf("the target has not moved from %s: %s", from, volumeState(vol))
		}
		to = vol.Status.Target.OSD
		return nil
	})
	atMove := lastRecord(t, clients, "steady-writer")
	t.Logf("target moved from %s to %s %s after the pod's deletion, the writer at record %d: %s", from, to, time.Since(deleted).Round(time.Second), atMove, volumeState(vol))
	if notes := eventsOf(t, clients, vol.Name, "TargetMoved", time.Time{}); !slices.ContainsFunc(notes, func(n string) bool {
		return strings.Contains(n, "the target's OSD "+from+" stopped: the kubelet reported every container of its pod terminated")
	}) {
		t.Errorf("the target did not move on the kubelet's word that its pod stopped: TargetMoved Events %q", notes)
	}
	waitRecords(t, clients, "steady-writer", atMove+3, 5*time.Minute)
	t.Logf("the writer goes on at the new target: record %d, %s after the pod's deletion; its longest wait between two records so far: %s", lastRecord(t, clients, "steady-writer"), time.Since(deleted).Round(time.Second), longestGap(t, clients, "steady-writer"))

	// The OSD returns with an empty device: its replica is rebuilt.
	setUnschedulable(t, clients, node, false)
	uncordoned := time.Now()
	volumeWhole(t, c, vol, 10*time.Minute)
	t.Logf("both replicas Online again %s after the uncordon: %s", time.Since(uncordoned).Round(time.Second), volumeState(vol))

	waitSucceeded(t, clients, "steady-writer", 10*time.Minute)
	t.Logf("the writer's longest wait between two records: %s", longestGap(t, clients, "steady-writer"))
	deletePod(t, clients, "steady-writer")
	runToCompletion(t, clients, "record-reader", "moving",
		fmt.Sprintf("sha256sum -c --quiet /data/sums && test $(wc -l < /data/sums) -eq %d && echo all %d records read back", writerRecords, writerRecords))
}

// A Pod on the workload node writes self-describing blocks to a 2-replica
// Volume through the kernel's NVMe-oF host while a seeded scheduler kills
// and freezes the SPDK of its target's and its replica's OSDs, kills
// their agents and the operator, and cuts the host off from the target:
// one fault at a time, each once the Volume is whole again (the lab's
// OSDs keep their data in memory, so two faults at once could take every
// copy). Held faults last 1–8 s, one in four a minute (past the target
// grace and the fence probe). The writer reads the region back every
// 20 s and at the end; every read is judged against its journal: no
// acknowledged write lost or corrupted, no phantom block, no write
// failed.
//
// It is here, right after TestTargetMovesUnderAWriter, because it needs
// the replicated Pool's polling OSDs before the dev Pool takes the
// storage node's cores; it is written in storm_test.go.
func TestAKernelHostWritesThroughAStorm(t *testing.T) { kernelHostStorm(t) }

// A Pod on the workload node writes through the kernel's NVMe-oF host while
// the replicated Pool's OSD pods are replaced, a storage node at a time:
// no write fails or waits long. Here for the same reason as the storm; it
// is written in rollout_test.go.
func TestARollingUpdateUnderAWriter(t *testing.T) { rollingUpdate(t) }

// replicatedPoolReady creates the 2-replica Pool (the dev Pool's sample,
// polling, over both storage nodes) and its StorageClass, whose hosts
// authenticate, and waits for an OSD on each to be Ready.
func replicatedPoolReady(t *testing.T, clients *kubernetes.Clientset, c client.Client) {
	t.Helper()
	ctx := t.Context()
	pool := readConfig[flintv1.Pool](t, "samples", "pool_dev_malloc.yaml")
	pool.Name = replicatedPool
	pool.Spec.Replicas = 2
	pool.Spec.NodeSelector = map[string]string{lab.StorageLabel: "true"}
	pool.Spec.OSD.InterruptMode = false
	pool.Spec.Devices.Malloc.Size = resource.MustParse("512Mi")
	pool.Spec.OSD.Memory = ptr.To(resource.MustParse("2Gi"))
	if err := c.Create(ctx, pool); err != nil {
		t.Fatalf("create Pool %s: %v", pool.Name, err)
	}
	// Its hosts authenticate: the kernel host on the workload node
	// proves the Volume's key through every reconnect and target move.
	params := hostAuthParameters()
	params["pool"] = replicatedPool
	params["csi.storage.k8s.io/fstype"] = "ext4"
	class := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: replicatedClass},
		Provisioner:       "csi.flint.io",
		Parameters:        params,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
	}
	if _, err := clients.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	waitOSDsReady(t, clients, c, pool, 2)
	t.Logf("Pool %s: 2 OSDs Ready after %s", pool.Name, time.Since(began).Round(time.Second))
}

// removeReplicatedPool deletes the pods and the claim a test made on the
// replicated Pool, then the Pool, in the order Flint allows (a Pool that
// holds Volumes is not deleted), and waits until the Pool's OSD pods are
// gone, so that the storage node's cores are free for the next test. It
// only logs what it could not do.
func removeReplicatedPool(t *testing.T, clients *kubernetes.Clientset, c client.Client, pods []string, claim string) {
	ctx := context.Background()
	for _, pod := range pods {
		_ = clients.CoreV1().Pods("default").Delete(ctx, pod, metav1.DeleteOptions{})
	}
	_ = clients.CoreV1().PersistentVolumeClaims("default").Delete(ctx, claim, metav1.DeleteOptions{})
	removePool(t, clients, c, replicatedPool)
	_ = clients.StorageV1().StorageClasses().Delete(ctx, replicatedClass, metav1.DeleteOptions{})
}

// removePool deletes Pool name once no Volume uses it and waits for its
// OSD pods to go. Best effort: each wait gives up after 5 minutes, saying
// so.
func removePool(t *testing.T, clients *kubernetes.Clientset, c client.Client, name string) {
	ctx := context.Background()
	if t.Failed() {
		// The OSD pods' logs go with them.
		dir, err := keepFlintLogs(clients, t.Name()+"/before-clean-up")
		t.Logf("Flint's container logs before the clean-up: %s (%v)", dir, err)
	}
	gone := func(what string, check func() (bool, error)) {
		deadline := time.Now().Add(5 * time.Minute)
		for time.Now().Before(deadline) {
			if ok, err := check(); err == nil && ok {
				return
			}
			time.Sleep(2 * time.Second)
		}
		t.Logf("clean-up: %s still there after 5m", what)
	}
	gone("the Pool's Volumes", func() (bool, error) {
		var vols flintv1.VolumeList
		if err := c.List(ctx, &vols); err != nil {
			return false, err
		}
		return !slices.ContainsFunc(vols.Items, func(v flintv1.Volume) bool { return v.Spec.Pool == name }), nil
	})
	_ = c.Delete(ctx, &flintv1.Pool{ObjectMeta: metav1.ObjectMeta{Name: name}})
	gone("the Pool's OSD pods", func() (bool, error) {
		pods, err := clients.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: flintv1.LabelPool + "=" + name})
		return err == nil && len(pods.Items) == 0, err
	})
}

// volumeOfClaim waits for a claim to be bound and its Volume to be Ready
// with every replica Online, and returns the Volume.
func volumeOfClaim(t *testing.T, clients *kubernetes.Clientset, c client.Client, claim string) *flintv1.Volume {
	t.Helper()
	vol := &flintv1.Volume{}
	eventually(t, 3*time.Minute, func() error {
		pvc, err := clients.CoreV1().PersistentVolumeClaims("default").Get(t.Context(), claim, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pvc.Spec.VolumeName == "" {
			return fmt.Errorf("PVC %s is %s", claim, pvc.Status.Phase)
		}
		if err := c.Get(t.Context(), client.ObjectKey{Name: pvc.Spec.VolumeName}, vol); err != nil {
			return err
		}
		for _, r := range vol.Status.Replicas {
			if r.State != flintv1.ReplicaStateOnline {
				return fmt.Errorf("Volume %s: %s", vol.Name, volumeState(vol))
			}
		}
		if vol.Status.Phase != flintv1.VolumePhaseReady || vol.Status.Target == nil {
			return fmt.Errorf("Volume %s: %s", vol.Name, volumeState(vol))
		}
		return nil
	})
	return vol
}

// volumeState says where a Volume's target and replicas are.
func volumeState(vol *flintv1.Volume) string {
	s := string(vol.Status.Phase)
	if tgt := vol.Status.Target; tgt != nil {
		s += fmt.Sprintf(", target on %s (epoch %d) at %v", tgt.OSD, tgt.Epoch, tgt.Endpoints)
	}
	for _, r := range vol.Status.Replicas {
		s += fmt.Sprintf(", replica on %s %s", r.OSD, r.State)
		if r.RebuildPercent != nil {
			s += fmt.Sprintf(" %d%%", *r.RebuildPercent)
		}
	}
	for _, cond := range vol.Status.Conditions {
		if cond.Status != metav1.ConditionTrue || cond.Type != flintv1.ReadyCondition {
			s += fmt.Sprintf("; %s=%s %s: %s", cond.Type, cond.Status, cond.Reason, cond.Message)
		}
	}
	return s
}

// setUnschedulable cordons or uncordons a node.
func setUnschedulable(t *testing.T, clients *kubernetes.Clientset, node string, on bool) {
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
	if _, err := clients.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Errorf("set node %s unschedulable=%t: %v", node, on, err)
	}
}

// writerLog is the times of the records the writer printed, by number.
func writerLog(t *testing.T, clients *kubernetes.Clientset, pod string) []time.Time {
	var times []time.Time
	for _, line := range strings.Split(podLog(t, clients, pod), "\n") {
		var n int
		var unix int64
		if _, err := fmt.Sscanf(line, "record %d %d", &n, &unix); err == nil && n == len(times) {
			times = append(times, time.Unix(unix, 0))
		}
	}
	return times
}

// lastRecord is the number of the last record the writer printed; -1
// before the first.
func lastRecord(t *testing.T, clients *kubernetes.Clientset, pod string) int {
	return len(writerLog(t, clients, pod)) - 1
}

// waitRecords waits until the writer printed record n, and fails when it
// ended before.
func waitRecords(t *testing.T, clients *kubernetes.Clientset, pod string, n int, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, func() error {
		if last := lastRecord(t, clients, pod); last >= n {
			return nil
		}
		p, err := clients.CoreV1().Pods("default").Get(t.Context(), pod, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase == corev1.PodFailed {
			t.Fatalf("writer %s failed: %s", pod, podLog(t, clients, pod))
		}
		return fmt.Errorf("writer %s (%s) not at record %d yet: %s; events: %s", pod, p.Status.Phase, n, podLog(t, clients, pod), podEvents(t, clients, pod))
	})
}

// longestGap is the longest time between two records of the writer.
func longestGap(t *testing.T, clients *kubernetes.Clientset, pod string) time.Duration {
	times := writerLog(t, clients, pod)
	var longest time.Duration
	for i := 1; i < len(times); i++ {
		longest = max(longest, times[i].Sub(times[i-1]))
	}
	return longest
}

func waitDeploymentAvailable(t *testing.T, clients *kubernetes.Clientset, name string) {
	t.Helper()
	eventually(t, 3*time.Minute, func() error {
		d, err := clients.AppsV1().Deployments(namespace).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentAvailable && c.Status == "True" {
				return nil
			}
		}
		return fmt.Errorf("deployment %s not Available: %d of %d replicas ready; pods: %s", name, d.Status.ReadyReplicas, d.Status.Replicas, podStates(t, clients))
	})
}

// podStates lists the namespace's pods with their containers' states.
func podStates(t *testing.T, clients *kubernetes.Clientset) string {
	pods, err := clients.CoreV1().Pods(namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var states []string
	for _, p := range pods.Items {
		s := p.Name + "=" + string(p.Status.Phase)
		for _, c := range p.Status.ContainerStatuses {
			switch {
			case c.State.Waiting != nil:
				s += fmt.Sprintf(" %s:%s(%s)", c.Name, c.State.Waiting.Reason, c.State.Waiting.Message)
				if last := c.LastTerminationState.Terminated; last != nil {
					s += fmt.Sprintf(" last exit %d: %s", last.ExitCode, last.Message)
				}
			case c.State.Terminated != nil:
				s += fmt.Sprintf(" %s:exited %d(%s)", c.Name, c.State.Terminated.ExitCode, c.State.Terminated.Reason)
			}
		}
		states = append(states, s)
	}
	return strings.Join(states, "; ")
}

// eventually polls check until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", timeout, err)
		}
		if cluster != nil {
			if broken := cluster.Broken(); broken != nil {
				t.Fatalf("the lab broke while waiting (%v): %v", err, broken)
			}
		}
		time.Sleep(time.Second)
	}
}

// A Pool's OSD runs in a pod of the storage node, launched by the
// operator from the OSD image; a PVC of a Pod becomes a Volume through
// the real external-provisioner, and the real csi-attacher exports it to
// the Pod's node. Mounting it needs the kernel NVMe-oF host, which the
// lab's workload node (a QEMU guest) is to bring.
func TestVolumeOnTheStorageNode(t *testing.T) {
	clients := inLab(t)
	needStorage(t)
	ctx := t.Context()
	c := flintClient(t)
	devPoolReady(t, clients, c)

	createClaim(t, clients, "data", chartClass, corev1.PersistentVolumeBlock)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "consumer", Namespace: "default"},
		Spec: corev1.PodSpec{
			// Scheduled, not bound to a node by name: the scheduler picks
			// the node the WaitForFirstConsumer claim is provisioned for.
			NodeSelector: map[string]string{corev1.LabelHostname: lab.StorageNode},
			Containers: []corev1.Container{{
				Name: "consumer", Image: lab.PauseImage,
				VolumeDevices: []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/data"}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
			}}},
		},
	}
	if _, err := clients.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var volumeName string
	eventually(t, 3*time.Minute, func() error {
		pvc, err := clients.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pvc.Status.Phase != corev1.ClaimBound {
			return fmt.Errorf("PVC data is %s; pods: %s", pvc.Status.Phase, podStates(t, clients))
		}
		volumeName = pvc.Spec.VolumeName
		return nil
	})
	var volume flintv1.Volume
	eventually(t, 3*time.Minute, func() error {
		if err := c.Get(ctx, client.ObjectKey{Name: volumeName}, &volume); err != nil {
			return err
		}
		if volume.Status.Phase != flintv1.VolumePhaseReady {
			return fmt.Errorf("Volume %s is %s", volumeName, volume.Status.Phase)
		}
		return nil
	})
	// The claim bound for a Pod on the storage node, which has an OSD:
	// the target is there, where the Pod's reads need no network.
	var target flintv1.OSD
	if err := c.Get(ctx, client.ObjectKey{Name: volume.Status.Target.OSD}, &target); err != nil {
		t.Fatal(err)
	}
	if volume.Spec.NearNode != lab.StorageNode || target.Spec.NodeName != lab.StorageNode {
		t.Errorf("Volume %s for a Pod on %s: near %q, target on OSD %s of node %s; want both on the Pod's node", volumeName, lab.StorageNode, volume.Spec.NearNode, target.Name, target.Spec.NodeName)
	}
	eventually(t, 3*time.Minute, func() error {
		attachments, err := clients.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, a := range attachments.Items {
			if a.Spec.Source.PersistentVolumeName != nil && *a.Spec.Source.PersistentVolumeName == volumeName && a.Spec.NodeName == lab.StorageNode {
				if a.Status.Attached {
					return nil
				}
				return fmt.Errorf("VolumeAttachment %s not attached: %+v", a.Name, a.Status.AttachError)
			}
		}
		return fmt.Errorf("no VolumeAttachment of %s to %s", volumeName, lab.StorageNode)
	})
	t.Logf("Volume %s Ready and attached to %s; the mount needs the kernel NVMe-oF host: %s", volumeName, lab.StorageNode, podEvents(t, clients, "consumer"))
}

// devPoolReady creates the dev Pool (config/samples) on the storage node,
// unless it exists, and waits for its OSD to be Ready.
func devPoolReady(t *testing.T, clients *kubernetes.Clientset, c client.Client) {
	t.Helper()
	ctx := t.Context()
	pool := readConfig[flintv1.Pool](t, "samples", "pool_dev_malloc.yaml")
	pool.Spec.NodeSelector = map[string]string{corev1.LabelHostname: lab.StorageNode}
	// The storage suite's volumes are thin and hold little: several of
	// 512Mi-2Gi at a time fit the 1Gi device.
	pool.Spec.OvercommitPercent = 1000
	if cluster.Multus != "" {
		storageNetwork(t, c)
		pool.Spec.Network.Attachment = namespace + "/" + lab.StorageNetwork
	}
	if err := c.Create(ctx, pool); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create Pool %s: %v", pool.Name, err)
	}
	waitOSDsReady(t, clients, c, pool, 1)
}

// waitOSDsReady waits until n of pool's OSDs are Ready.
func waitOSDsReady(t *testing.T, clients *kubernetes.Clientset, c client.Client, pool *flintv1.Pool, n int32) {
	t.Helper()
	eventually(t, 5*time.Minute, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(pool), pool); err != nil {
			return err
		}
		if pool.Status.OSDs.Ready < n {
			return fmt.Errorf("Pool %s: OSDs %+v; pods: %s", pool.Name, pool.Status.OSDs, podStates(t, clients))
		}
		return nil
	})
}

// storageNetwork creates the lab's storage network as a user would: a
// NetworkAttachmentDefinition in Flint's namespace, unless it exists.
func storageNetwork(t *testing.T, c client.Client) {
	t.Helper()
	nad := &unstructured.Unstructured{}
	nad.SetGroupVersionKind(schema.GroupVersionKind{Group: "k8s.cni.cncf.io", Version: "v1", Kind: "NetworkAttachmentDefinition"})
	nad.SetNamespace(namespace)
	nad.SetName(lab.StorageNetwork)
	if err := unstructured.SetNestedField(nad.Object, lab.StorageNetworkConfig(), "spec", "config"); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), nad); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create NetworkAttachmentDefinition %s: %v", lab.StorageNetwork, err)
	}
}

// With Multus in the lab, the dev Pool names the storage network, and its
// OSD serves NVMe-oF there, on its pod's second interface, rather than on
// the pod network: Multus gave the pod net1 and its network status, and
// the agent listens on net1's address.
func TestOSDServesOnTheStorageNetwork(t *testing.T) {
	clients := inLab(t)
	needStorage(t)
	if cluster.Multus == "" {
		t.Skip("no Multus in the lab")
	}
	ctx := t.Context()
	c := flintClient(t)
	devPoolReady(t, clients, c)
	_, subnet, err := net.ParseCIDR(lab.StorageSubnet)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, func() error {
		var osds flintv1.OSDList
		if err := c.List(ctx, &osds, client.MatchingLabels{flintv1.LabelPool: "dev"}); err != nil {
			return err
		}
		if len(osds.Items) == 0 {
			return fmt.Errorf("Pool dev has no OSD")
		}
		for _, osd := range osds.Items {
			ep := osd.Status.Endpoint
			if ep == nil || !subnet.Contains(net.ParseIP(ep.Address)) {
				return fmt.Errorf("OSD %s serves at %+v, not on the storage network %s", osd.Name, ep, lab.StorageSubnet)
			}
			t.Logf("OSD %s serves NVMe-oF at %s:%d on the storage network", osd.Name, ep.Address, ep.Port)
		}
		return nil
	})
}

// A Pod on the workload node writes a file to its volume, fsyncs it and
// ends; a second Pod, once the first is deleted, mounts the volume again
// and reads the same bytes back: the kernel NVMe-oF host of the node
// connected to the OSD's target over NVMe/TCP each time. The claim binds
// when the first Pod is scheduled, so its Volume is near that Pod's node
// (which has no OSD in the lab to put the target on).
func TestDataOutlivesThePod(t *testing.T) {
	clients := inLab(t)
	if cluster.Worker == nil {
		t.Skip("no workload node")
	}
	needStorage(t)
	c := flintClient(t)
	devPoolReady(t, clients, c)
	createClaim(t, clients, "files", chartClass, corev1.PersistentVolumeFilesystem)
	runToCompletion(t, clients, "writer", "files", "head -c 4194304 /dev/urandom > /data/blob && sha256sum /data/blob > /data/blob.sha256 && sync /data/blob /data/blob.sha256 && cat /data/blob.sha256")
	if near := volumeOfClaim(t, clients, c, "files").Spec.NearNode; near != lab.WorkerNode {
		t.Errorf("the Volume of a claim bound for a Pod on %s is near %q, want that node", lab.WorkerNode, near)
	}
	runToCompletion(t, clients, "reader", "files", "sha256sum -c /data/blob.sha256")
}

// kubectl flint bench, the plugin's own code on the lab's cluster, runs
// flint-bench on a raw block Volume of the chart's StorageClass from a Pod
// on the workload node, through its kernel NVMe-oF host: it says which
// job runs while it runs, prints a row of figures per job and leaves no
// Pod behind. The figures are the emulated guest's.
func TestKubectlFlintBench(t *testing.T) {
	clients := inLab(t)
	if cluster.Worker == nil {
		t.Skip("no workload node")
	}
	needStorage(t)
	devPoolReady(t, clients, flintClient(t))
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	p := &kubectl.Plugin{Client: c, Out: &out, LastLogLine: kubectl.LastLogLineVia(clients)}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	err = p.Bench(ctx, kubectl.BenchOptions{
		Namespace: "default", StorageClass: chartClass, Node: lab.WorkerNode,
		Size: resource.MustParse("32Mi"), Runtime: 2 * time.Second,
		Image: "ghcr.io/flint-io/flint-bench:" + os.Getenv("FLINT_E2E_VERSION"),
	})
	t.Logf("kubectl flint bench:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range bench.Jobs {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(j.Name) + `\s+(\d+)\s`).FindStringSubmatch(out.String())
		if m == nil || m[1] == "0" {
			t.Errorf("no figures for %s", j.Name)
		}
	}
	if !strings.Contains(out.String(), "running fio: job ") {
		t.Error("no line said which job ran")
	}
	pods, err := clients.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=flint-bench"})
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp == nil {
			t.Errorf("the benchmark left Pod %s behind", pod.Name)
		}
	}
}

// createClaim creates a 256Mi RWO PVC of a StorageClass in default.
func createClaim(t *testing.T, clients *kubernetes.Clientset, name, class string, mode corev1.PersistentVolumeMode) {
	t.Helper()
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(class),
			VolumeMode:       ptr.To(mode),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("256Mi")}},
		},
	}
	if _, err := clients.CoreV1().PersistentVolumeClaims("default").Create(t.Context(), claim, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create PVC %s: %v", name, err)
	}
}

// runToCompletion runs script in a Pod on the workload node with claim
// at /data, waits for it to succeed, and deletes it.
func runToCompletion(t *testing.T, clients *kubernetes.Clientset, name, claim, script string) {
	t.Helper()
	startWorkload(t, clients, name, claim, script)
	waitSucceeded(t, clients, name, 10*time.Minute)
	deletePod(t, clients, name)
}

// startWorkload creates a Pod on the workload node that runs script with
// claim at /data.
func startWorkload(t *testing.T, clients *kubernetes.Clientset, name, claim, script string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			NodeSelector:  map[string]string{corev1.LabelHostname: lab.WorkerNode},
			Containers: []corev1.Container{{
				Name: name, Image: "ghcr.io/flint-io/flint-bench:" + os.Getenv("FLINT_E2E_VERSION"),
				Command:      []string{"sh", "-c", script},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
			}}},
		},
	}
	if _, err := clients.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitSucceeded waits for a Pod in default to succeed, and fails the test
// with its log when it fails.
func waitSucceeded(t *testing.T, clients *kubernetes.Clientset, name string, timeout time.Duration) {
	t.Helper()
	began := time.Now()
	eventually(t, timeout, func() error {
		p, err := clients.CoreV1().Pods("default").Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		switch p.Status.Phase {
		case corev1.PodSucceeded:
			return nil
		case corev1.PodFailed:
			t.Fatalf("pod %s failed: %s", name, podLog(t, clients, name))
		}
		return fmt.Errorf("pod %s is %s; events: %s", name, p.Status.Phase, podEvents(t, clients, name))
	})
	t.Logf("pod %s succeeded after %s: %s", name, time.Since(began).Round(time.Second), podLog(t, clients, name))
}

// deletePod deletes a Pod in default and waits until it is gone.
func deletePod(t *testing.T, clients *kubernetes.Clientset, name string) {
	t.Helper()
	if err := clients.CoreV1().Pods("default").Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Minute, func() error {
		if _, err := clients.CoreV1().Pods("default").Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("pod %s not gone yet (%v)", name, err)
		}
		return nil
	})
}

// podLog is the log of a pod in default.
func podLog(t *testing.T, clients *kubernetes.Clientset, pod string) string {
	data, err := clients.CoreV1().Pods("default").GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(t.Context())
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(string(data))
}

// flintClient is a client of the lab's API server with Flint's types.
func flintClient(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := flintv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// readConfig reads a file of the repository's config folder.
func readConfig[T any](t *testing.T, elem ...string) *T {
	t.Helper()
	name := filepath.Join(elem...)
	data, err := os.ReadFile(repoPath(append([]string{"config"}, elem...)...))
	if err != nil {
		t.Fatal(err)
	}
	obj := new(T)
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return obj
}

// repoPath is a path in the repository the lab's chart is from.
func repoPath(elem ...string) string {
	return filepath.Join(append([]string{os.Getenv("FLINT_E2E_CHART"), "..", ".."}, elem...)...)
}

// podEvents are the events of a pod in default, oldest first.
func podEvents(t *testing.T, clients *kubernetes.Clientset, pod string) string {
	return podEventsIn(t, clients, "default", pod)
}

// podEventsIn are the events of a pod in namespace ns, oldest first.
func podEventsIn(t *testing.T, clients *kubernetes.Clientset, ns, pod string) string {
	events, err := clients.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
	if err != nil {
		return err.Error()
	}
	var lines []string
	for _, e := range events.Items {
		lines = append(lines, e.Reason+": "+e.Message)
	}
	return strings.Join(lines, "; ")
}
