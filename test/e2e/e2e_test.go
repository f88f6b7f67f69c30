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
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/test/e2e/lab"
)

const namespace = "flint-system"

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
		Multus: os.Getenv("FLINT_E2E_MULTUS"), MultusCRDs: os.Getenv("FLINT_E2E_MULTUS_CRDS")}
	if kernel := os.Getenv("FLINT_E2E_WORKER_KERNEL"); kernel != "" {
		cluster.Worker = &lab.Worker{
			Kernel: kernel, Initramfs: os.Getenv("FLINT_E2E_WORKER_INITRD"),
			Modules: os.Getenv("FLINT_E2E_WORKER_MODULES"), Base: os.Getenv("FLINT_E2E_WORKER_BASE"),
		}
		// What runs on a workload node: the node plugin and the tests' pods.
		for _, name := range []string{"pause", "flint-csi-driver", "csi-node-driver-registrar", "livenessprobe", "flint-bench", "e2e-busybox", "e2e-agnhost", "e2e-nginx", "e2e-glibc-dns-testing"} {
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
	return clients
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

// The chart installs as a user installs it, from the images built here,
// and its pods run: the operator; the CSI controller and node plugin with
// their sidecars when their images could be built, the node plugin then
// registered with the kubelet.
func TestChartInstalls(t *testing.T) {
	clients := inLab(t)
	ctx := t.Context()
	version := os.Getenv("FLINT_E2E_VERSION")
	// As README.md says: the namespace first, labelled, then the chart.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "privileged",
	}}}
	if _, err := clients.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	helm(t, "install", "flint", os.Getenv("FLINT_E2E_CHART"), "--namespace", namespace,
		"--set", strings.Join([]string{
			"images.operator.tag=" + version, "images.osd.tag=" + version, "images.csiDriver.tag=" + version,
			"operator.replicas=1", "csi.controller.replicas=1",
			// The workload node is an emulated machine: only what a
			// workload node needs runs there.
			"operator.nodeSelector.kubernetes\\.io/hostname=" + lab.StorageNode,
			"csi.controller.nodeSelector.kubernetes\\.io/hostname=" + lab.StorageNode,
			"storageClass.create=true", "storageClass.pool=dev",
		}, ","))

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
}

// helm runs the pinned helm against the lab.
func helm(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(os.Getenv("FLINT_E2E_HELM"), append(args, "--kubeconfig", cluster.AdminKubeconfig)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
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

	createClaim(t, clients, "data", corev1.PersistentVolumeBlock)
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
	eventually(t, 3*time.Minute, func() error {
		var volume flintv1.Volume
		if err := c.Get(ctx, client.ObjectKey{Name: volumeName}, &volume); err != nil {
			return err
		}
		if volume.Status.Phase != flintv1.VolumePhaseReady {
			return fmt.Errorf("Volume %s is %s", volumeName, volume.Status.Phase)
		}
		return nil
	})
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
	pool := readSample[flintv1.Pool](t, "pool_dev_malloc.yaml")
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
	eventually(t, 5*time.Minute, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
			return err
		}
		if pool.Status.OSDs.Ready < 1 {
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
// connected to the OSD's target over NVMe/TCP each time.
func TestDataOutlivesThePod(t *testing.T) {
	clients := inLab(t)
	if cluster.Worker == nil {
		t.Skip("no workload node")
	}
	needStorage(t)
	devPoolReady(t, clients, flintClient(t))
	createClaim(t, clients, "files", corev1.PersistentVolumeFilesystem)
	runToCompletion(t, clients, "writer", "head -c 4194304 /dev/urandom > /data/blob && sha256sum /data/blob > /data/blob.sha256 && sync /data/blob /data/blob.sha256 && cat /data/blob.sha256")
	runToCompletion(t, clients, "reader", "sha256sum -c /data/blob.sha256")
}

// createClaim creates a 256Mi RWO PVC of the chart's StorageClass in
// default.
func createClaim(t *testing.T, clients *kubernetes.Clientset, name string, mode corev1.PersistentVolumeMode) {
	t.Helper()
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To("flint"),
			VolumeMode:       ptr.To(mode),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("256Mi")}},
		},
	}
	if _, err := clients.CoreV1().PersistentVolumeClaims("default").Create(t.Context(), claim, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create PVC %s: %v", name, err)
	}
}

// runToCompletion runs script in a Pod on the workload node with the
// claim files at /data, waits for it to succeed, and deletes it.
func runToCompletion(t *testing.T, clients *kubernetes.Clientset, name, script string) {
	t.Helper()
	ctx := t.Context()
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
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "files"},
			}}},
		},
	}
	if _, err := clients.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	eventually(t, 10*time.Minute, func() error {
		p, err := clients.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
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
	if err := clients.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Minute, func() error {
		if _, err := clients.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
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

// readSample reads a file of config/samples.
func readSample[T any](t *testing.T, name string) *T {
	t.Helper()
	data, err := os.ReadFile(repoPath("config", "samples", name))
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
	events, err := clients.CoreV1().Events("default").List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
	if err != nil {
		return err.Error()
	}
	var lines []string
	for _, e := range events.Items {
		lines = append(lines, e.Reason+": "+e.Message)
	}
	return strings.Join(lines, "; ")
}
