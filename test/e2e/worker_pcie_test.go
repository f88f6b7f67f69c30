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

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/osd-image/agent/launch"
	"github.com/flint-io/flint/test/e2e/lab"
)

const (
	pciePool  = "fast"
	pcieClass = "flint-fast"
)

// The README's sample Pool (config/samples/pool_rdma_pcie.yaml), on the
// guest's pcie storage node, on the host network: the chart's NVMe device
// plugin advertises the guest's vfio-bound controller and its RDMA device
// plugin the guest's soft-RoCE device; the kubelet gives the OSD pod that
// controller, the RDMA device, hugepages and one exclusive core (static
// CPU manager), and SPDK drives the controller with its user-space driver
// (no --no-huge) with its volatile write cache off, and listens on RDMA.
// A Pod on the same guest writes and fsyncs through the kernel's
// NVMe/RDMA host, is re-created and reads its data back; then again with
// a second replica on the second storage node (mirrorAcrossNodes).
func TestPCIeStorageNode(t *testing.T) {
	clients := inLab(t)
	needStorage(t)
	if cluster.Worker == nil || !cluster.Worker.PCIeStorage {
		t.Skip("the guest is no pcie storage node (no OSD image)")
	}
	ctx := t.Context()
	c := flintClient(t)
	releaseDevPool(t, clients, c)

	eventually(t, 5*time.Minute, func() error {
		n, err := clients.CoreV1().Nodes().Get(ctx, lab.WorkerNode, metav1.GetOptions{})
		if err != nil {
			return err
		}
		nvme, rdma, hugepages := n.Status.Allocatable[lab.NVMeResource], n.Status.Allocatable[lab.RDMAResource], n.Status.Allocatable["hugepages-2Mi"]
		if nvme.Value() != 1 || rdma.Value() < 1 || hugepages.Value() != lab.WorkerHugePages<<21 {
			return fmt.Errorf("node %s allocates %s %s, %s %s and hugepages-2Mi %s, want 1, some and %d pages; pods: %s",
				lab.WorkerNode, lab.NVMeResource, nvme.String(), lab.RDMAResource, rdma.String(), hugepages.String(), lab.WorkerHugePages, podStates(t, clients))
		}
		return nil
	})

	pool := readConfig[flintv1.Pool](t, "samples", "pool_rdma_pcie.yaml")
	pool.Spec.Replicas = 1
	pool.Spec.FailureDomain = corev1.LabelHostname
	pool.Spec.NodeSelector = map[string]string{lab.PCIeStorageLabel: "true"}
	// What the guest has room for, and its soft-RoCE device, which
	// serves only from the host network (docs/install.md).
	pool.Spec.OSD.HugePages.Amount = resource.MustParse("512Mi")
	pool.Spec.OSD.Memory = ptr.To(resource.MustParse("768Mi"))
	pool.Spec.Network = flintv1.Network{Transport: flintv1.TransportRDMA, HostNetwork: true, ResourceName: lab.RDMAResource}
	if pool.Spec.Devices.Driver != flintv1.DriverPCIe || pool.Spec.Devices.ResourceName != lab.NVMeResource || pool.Spec.OSD.CPUs != 1 {
		t.Fatalf("the sample Pool is no longer the pcie Pool this test runs: %+v", pool.Spec)
	}
	// This file's name makes this the lab's last test: its OSD polls a
	// guest core until the lab closes, and removing the Pool and its
	// Volume on the emulated node would take the lab minutes more.
	if err := c.Create(ctx, pool); err != nil {
		t.Fatalf("create Pool %s: %v", pool.Name, err)
	}
	began := time.Now()
	eventually(t, 15*time.Minute, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
			return err
		}
		if pool.Status.OSDs.Ready < 1 {
			var osds flintv1.OSDList
			_ = c.List(ctx, &osds, client.MatchingLabels{flintv1.LabelPool: pool.Name})
			var why []string
			for _, o := range osds.Items {
				if r := meta.FindStatusCondition(o.Status.Conditions, flintv1.ReadyCondition); r != nil {
					why = append(why, fmt.Sprintf("%s %s: %s", o.Name, r.Reason, r.Message))
				}
			}
			return fmt.Errorf("Pool %s: OSDs %+v (%s); pods: %s", pool.Name, pool.Status.OSDs, strings.Join(why, "; "), podStates(t, clients))
		}
		return nil
	})
	t.Logf("Pool %s Ready on %s after %s", pool.Name, lab.WorkerNode, time.Since(began).Round(time.Second))

	var osds flintv1.OSDList
	if err := c.List(ctx, &osds, client.MatchingLabels{flintv1.LabelPool: pool.Name}); err != nil || len(osds.Items) != 1 {
		t.Fatalf("OSDs of %s: %d, %v", pool.Name, len(osds.Items), err)
	}
	osd := osds.Items[0]
	if osd.Status.Device == nil || osd.Status.Device.WriteCache != flintv1.WriteCacheDisabled {
		t.Errorf("OSD %s reports its device %+v, want the write cache Disabled", osd.Name, osd.Status.Device)
	}
	if e := osd.Status.Endpoint; e == nil || e.Transport != flintv1.TransportRDMA || e.Address != lab.WorkerIP {
		t.Errorf("OSD %s listens on %+v, want RDMA on the node's address %s", osd.Name, e, lab.WorkerIP)
	}
	if w := meta.FindStatusCondition(osd.Status.Conditions, flintv1.OSDSharedCoresCondition); w != nil {
		t.Errorf("OSD %s has a SharedCores condition under the static CPU manager: %s", osd.Name, w.Message)
	}
	pod := "osd-" + osd.Name
	defer func() {
		t.Logf("pod %s: %s; events: %s", pod, restarts(t, clients, pod), podEventsIn(t, clients, namespace, pod))
	}()
	handoff := osdHandoff(t, pod)
	args := strings.Join(handoff.Args, " ")
	if !oneCoreNotZero(handoff.CoreMask) || !strings.Contains(args, "-s 512 ") || strings.Contains(args, "--no-huge") || !strings.Contains(args, "--pci-allowed "+handoff.PCIAddress) {
		t.Errorf("SPDK runs as %+v; want one core that is not CPU 0, 512 MiB of hugepages and the allocated controller", handoff)
	}
	t.Logf("OSD %s: SPDK on core mask %s with %s; device %+v", osd.Name, handoff.CoreMask, args, osd.Status.Device)

	class := &storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: pcieClass},
		Provisioner: "csi.flint.io", Parameters: map[string]string{"pool": pool.Name},
		ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimDelete), VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
	if _, err := clients.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	createClaim(t, clients, "pcie-files", pcieClass, corev1.PersistentVolumeFilesystem)
	// The guest's only NVMe controller in the kernel is the fabrics one:
	// its transport says which host the Pod's volume came through.
	runToCompletion(t, clients, "pcie-writer", "pcie-files", "cat /sys/class/nvme/*/transport | tee /dev/stderr | grep -qx rdma && head -c 4194304 /dev/urandom > /data/blob && sha256sum /data/blob > /data/blob.sha256 && sync /data/blob /data/blob.sha256 && cat /data/blob.sha256")
	runToCompletion(t, clients, "pcie-reader", "pcie-files", "sha256sum -c /data/blob.sha256")

	mirrorAcrossNodes(t, clients, c, pool, &osd)
}

// mirrorAcrossNodes writes through a 2-replica Volume with one replica on
// the guest's pcie OSD and one on an OSD made by hand on the second
// storage node: a malloc device, NVMe/TCP on its pod address, interrupt
// mode (it never runs a target: it only exports its lvol). The host has
// no RDMA device, so the replica link is NVMe/TCP, and the target goes to
// the guest's RDMA OSD, the one that reaches both replicas.
func mirrorAcrossNodes(t *testing.T, clients *kubernetes.Clientset, c client.Client, pool *flintv1.Pool, pcie *flintv1.OSD) {
	ctx := t.Context()
	if !cluster.SecondStorageNode {
		t.Skip("no second storage node")
	}
	// The storage suite keeps its pods off the second storage node.
	setUnschedulable(t, clients, lab.SecondStorageNodeName, false)
	byHand := &flintv1.OSD{
		ObjectMeta: metav1.ObjectMeta{Name: pool.Name + "-by-hand-" + lab.SecondStorageNodeName},
		Spec: flintv1.OSDSpec{
			Pool: pool.Name, NodeName: lab.SecondStorageNodeName,
			Device:    flintv1.OSDDevice{Driver: flintv1.DriverMalloc, Malloc: &flintv1.MallocDevice{Size: resource.MustParse("256Mi")}},
			Resources: flintv1.OSDResources{CPUs: 1, Memory: ptr.To(resource.MustParse("1Gi"))},
			SPDK:      flintv1.SPDKSettings{InterruptMode: true},
			Network:   flintv1.Network{Transport: flintv1.TransportTCP, Port: 4420},
		},
	}
	if err := c.Create(ctx, byHand); err != nil {
		t.Fatalf("create OSD %s: %v", byHand.Name, err)
	}
	eventually(t, 5*time.Minute, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(byHand), byHand); err != nil {
			return err
		}
		if byHand.Status.Phase != flintv1.OSDPhaseReady || byHand.Labels[flintv1.LabelPool] != pool.Name {
			return fmt.Errorf("OSD %s: %s, labels %v; pods: %s", byHand.Name, byHand.Status.Phase, byHand.Labels, podStates(t, clients))
		}
		return nil
	})

	class := &storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: pcieClass + "-mirrored"},
		Provisioner: "csi.flint.io", Parameters: map[string]string{"pool": pool.Name, "replicas": "2"},
		ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimDelete), VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
	}
	if _, err := clients.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	before := restarts(t, clients, "osd-"+pcie.Name)
	createClaim(t, clients, "pcie-mirrored", class.Name, corev1.PersistentVolumeFilesystem)
	runToCompletion(t, clients, "mirror-writer", "pcie-mirrored", "cat /sys/class/nvme/*/transport | tee /dev/stderr | grep -qx rdma && head -c 1048576 /dev/urandom > /data/blob && sha256sum /data/blob > /data/blob.sha256 && sync /data/blob /data/blob.sha256 && cat /data/blob.sha256")
	vol := volumeOfClaim(t, clients, c, "pcie-mirrored")
	t.Logf("Volume %s: %s", vol.Name, volumeState(vol))
	var on []string
	for _, r := range vol.Status.Replicas {
		on = append(on, r.OSD)
		if r.State != flintv1.ReplicaStateOnline {
			t.Errorf("replica on %s is %s after the write, want Online", r.OSD, r.State)
		}
	}
	if !slices.Contains(on, pcie.Name) || !slices.Contains(on, byHand.Name) || vol.Status.Target == nil || vol.Status.Target.OSD != pcie.Name {
		t.Errorf("Volume %s: replicas on %v, target %+v; want replicas on %s and %s and the target on %s", vol.Name, on, vol.Status.Target, pcie.Name, byHand.Name, pcie.Name)
	}
	runToCompletion(t, clients, "mirror-reader", "pcie-mirrored", "sha256sum -c /data/blob.sha256")
	t.Logf("OSD pod of %s before the mirrored Volume: %s; after: %s", pcie.Name, before, restarts(t, clients, "osd-"+pcie.Name))
}

// osdHandoff reads what the SPDK container of an OSD pod recorded about
// the SPDK it started (its cores, arguments and device).
// The exec is retried: on the emulated node a container of the pod may be
// restarting when it comes.
func osdHandoff(t *testing.T, pod string) launch.Handoff {
	t.Helper()
	var h launch.Handoff
	eventually(t, 3*time.Minute, func() error {
		out, err := exec.Command(filepath.Join(os.Getenv("FLINT_E2E_ASSETS"), "kubectl"), "--kubeconfig", cluster.AdminKubeconfig,
			"exec", "-n", namespace, pod, "-c", "agent", "--", "cat", "/var/run/flint/"+launch.HandoffFile).CombinedOutput()
		if err != nil {
			return fmt.Errorf("read the SPDK container's hand-off in %s: %v: %s", pod, err, out)
		}
		return json.Unmarshal(out, &h)
	})
	return h
}

// restarts says how often each container of a pod in Flint's namespace
// restarted, and why it last ended.
func restarts(t *testing.T, clients *kubernetes.Clientset, pod string) string {
	p, err := clients.CoreV1().Pods(namespace).Get(t.Context(), pod, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, c := range p.Status.ContainerStatuses {
		s := fmt.Sprintf("%s restarted %d times", c.Name, c.RestartCount)
		if last := c.LastTerminationState.Terminated; last != nil {
			s += fmt.Sprintf(" (last: exit %d %s %s)", last.ExitCode, last.Reason, last.Message)
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// oneCoreNotZero says the core mask names one core, not CPU 0 (the one
// the kubelet keeps for the system).
func oneCoreNotZero(mask string) bool {
	m, err := strconv.ParseUint(strings.TrimPrefix(mask, "0x"), 16, 64)
	return err == nil && bits.OnesCount64(m) == 1 && m != 1
}

// The Pool-level preflight against the pcie node's real kubelet: each
// Pool asks the guest for what it does not have, and its Ready condition
// names the reason with the node's own figures, before any OSD is made.
// (What the SPDK container checks on the node itself is broken one by one
// on the VM lab's guest: test/vmlab/guest.)
func TestPCIeNodePreflight(t *testing.T) {
	inLab(t)
	needStorage(t)
	if cluster.Worker == nil || !cluster.Worker.PCIeStorage {
		t.Skip("the guest is no pcie storage node (no OSD image)")
	}
	ctx := t.Context()
	c := flintClient(t)
	for _, tc := range []struct {
		name            string
		mutate          func(*flintv1.Pool)
		reason, message string
	}{
		{"pf-hugepages", func(p *flintv1.Pool) { p.Spec.OSD.HugePages.Amount = resource.MustParse("2Gi") }, flintv1.PoolHugePagesInsufficientCondition,
			fmt.Sprintf("node %s has 600Mi of hugepages-2Mi allocatable, its 1 OSDs need 2Gi: add 724 pages of 2Mi", lab.WorkerNode)},
		{"pf-nvme", func(p *flintv1.Pool) { p.Spec.Devices.ResourceName = "flint.io/absent" }, flintv1.PoolDeviceResourceMissingCondition,
			fmt.Sprintf("node %s advertises no flint.io/absent", lab.WorkerNode)},
		{"pf-rdma", func(p *flintv1.Pool) {
			p.Spec.Network = flintv1.Network{Transport: flintv1.TransportRDMA, HostNetwork: true, ResourceName: "flint.io/absent-rdma"}
		}, flintv1.PoolRDMAResourceMissingCondition, fmt.Sprintf("node %s has 0 flint.io/absent-rdma allocatable, its 1 OSDs on the host network need one each", lab.WorkerNode)},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			pool := readConfig[flintv1.Pool](t, "samples", "pool_rdma_pcie.yaml")
			pool.Name = tc.name
			pool.Spec.Replicas = 1
			pool.Spec.NodeSelector = map[string]string{lab.PCIeStorageLabel: "true"}
			pool.Spec.OSD.HugePages.Amount = resource.MustParse("512Mi")
			pool.Spec.Network = flintv1.Network{Transport: flintv1.TransportRDMA, HostNetwork: true, ResourceName: lab.RDMAResource}
			tc.mutate(pool)
			if err := c.Create(ctx, pool); err != nil {
				t.Fatalf("create Pool %s: %v", pool.Name, err)
			}
			t.Cleanup(func() { _ = c.Delete(context.Background(), pool) })
			eventually(t, 2*time.Minute, func() error {
				if err := c.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
					return err
				}
				ready := meta.FindStatusCondition(pool.Status.Conditions, flintv1.ReadyCondition)
				if ready == nil || ready.Reason != tc.reason || !strings.Contains(ready.Message, tc.message) {
					return fmt.Errorf("Pool %s Ready condition %+v, want reason %s saying %q", pool.Name, ready, tc.reason, tc.message)
				}
				t.Logf("Pool %s: %s: %s", pool.Name, ready.Reason, ready.Message)
				return nil
			})
			var osds flintv1.OSDList
			if err := c.List(ctx, &osds, client.MatchingLabels{flintv1.LabelPool: pool.Name}); err != nil || len(osds.Items) != 0 {
				t.Errorf("Pool %s failing preflight made %d OSDs (%v)", pool.Name, len(osds.Items), err)
			}
		})
	}
}

// releaseDevPool deletes the dev Pool, with the Pods, VolumeSnapshots and
// claims of its Volumes, before the pcie Pool starts. Its OSD's SPDK
// busy-polls a host core although it runs in interrupt mode: SPDK v25.09
// runs a poller without an interrupt (the malloc bdev's and the accel
// framework's completion pollers) as always busy. With the guest's
// polling OSD and mirrorAcrossNodes' OSD (malloc too) that made three
// spinning threads on the lab's two cores; in a CI run of 2026-11-28 the
// API server then missed lease renewals for minutes, the operator lost
// its election again and again, and the guest's target fenced itself.
func releaseDevPool(t *testing.T, clients *kubernetes.Clientset, c client.Client) {
	t.Helper()
	ctx := t.Context()
	const dev = "dev"
	var vols flintv1.VolumeList
	if err := c.List(ctx, &vols); err != nil {
		t.Fatal(err)
	}
	claims := map[string][]string{} // namespace -> claims on the dev Pool
	for _, v := range vols.Items {
		if v.Spec.Pool == dev && v.Spec.Claim != nil {
			claims[v.Spec.Claim.Namespace] = append(claims[v.Spec.Claim.Namespace], v.Spec.Claim.Name)
		}
	}
	for ns, names := range claims {
		pods, err := clients.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool {
				return v.PersistentVolumeClaim != nil && slices.Contains(names, v.PersistentVolumeClaim.ClaimName)
			}) {
				_ = clients.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			}
		}
		snaps := &unstructured.UnstructuredList{}
		snaps.SetAPIVersion("snapshot.storage.k8s.io/v1")
		snaps.SetKind("VolumeSnapshotList")
		if err := c.List(ctx, snaps, client.InNamespace(ns)); err == nil {
			for i := range snaps.Items {
				source, _, _ := unstructured.NestedString(snaps.Items[i].Object, "spec", "source", "persistentVolumeClaimName")
				if slices.Contains(names, source) {
					_ = c.Delete(ctx, &snaps.Items[i])
				}
			}
		}
		for _, name := range names {
			_ = clients.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, name, metav1.DeleteOptions{})
		}
	}
	// Best effort: the tests below also run with the Pool there, as they
	// did before this, on a busier host.
	began := time.Now()
	removePool(t, clients, c, dev)
	t.Logf("dev Pool removal, with the claims %v, took %s: it frees the host core its OSD polled", claims, time.Since(began).Round(time.Second))
}
