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

package operator

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// OSD pods as the operator renders them, for OSDs made by hand (their
// Pool's pods are not run here).
var _ = Describe("The OSD pod", func() {
	podOf := func(o *flintv1.OSD) *corev1.Pod {
		Expect(k8sClient.Create(ctx, o)).To(Succeed())
		var pod corev1.Pod
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "osd-" + o.Name}, &pod)
		}).Should(Succeed())
		return &pod
	}
	containers := func(pod *corev1.Pod) (spdk, agent corev1.Container) {
		Expect(pod.Spec.Containers).To(HaveLen(2))
		return pod.Spec.Containers[0], pod.Spec.Containers[1]
	}

	It("for rdma over an SR-IOV VF with a device plugin's NVMe device", func() {
		pod := podOf(&flintv1.OSD{
			ObjectMeta: metav1.ObjectMeta{Name: "render-rdma"},
			Spec: flintv1.OSDSpec{
				Pool: "render", NodeName: "worker-1",
				Device:    flintv1.OSDDevice{Driver: flintv1.DriverPCIe, ResourceName: "flint.io/nvme"},
				Resources: flintv1.OSDResources{CPUs: 2, HugePages: &flintv1.HugePages{Size: "2Mi", Amount: resource.MustParse("2Gi")}, Memory: ptr.To(resource.MustParse("2Gi"))},
				Network:   flintv1.Network{Transport: flintv1.TransportRDMA, Attachment: "flint-system/storage-rdma", ResourceName: "nvidia.com/rdma_vf", Port: 4420},
				NVMf:      flintv1.NVMfTuning{IOUnitSize: ptr.To[int32](131072), NumSharedBuffers: ptr.To[int32](4095)},
			},
		})
		spdk, agent := containers(pod)
		want := corev1.ResourceList{
			"cpu": resource.MustParse("2"), "memory": resource.MustParse("2Gi"), "hugepages-2Mi": resource.MustParse("2Gi"),
			"flint.io/nvme": resource.MustParse("1"), "nvidia.com/rdma_vf": resource.MustParse("1"),
		}
		Expect(spdk.Resources.Requests).To(Equal(want))
		Expect(spdk.Resources.Limits).To(Equal(want))
		Expect(agent.Resources.Requests).To(Equal(agent.Resources.Limits))
		Expect(pod.Status.QOSClass).To(Equal(corev1.PodQOSGuaranteed))
		Expect(spdk.Args).To(ContainElements("exec-spdk", "--pci-resource=flint.io/nvme", "--hugepages-bytes=$(FLINT_HUGEPAGES_LIMIT)", "--cpus=$(FLINT_CPU_LIMIT)"))
		limits := map[string]string{}
		for _, e := range spdk.Env {
			limits[e.Name] = e.ValueFrom.ResourceFieldRef.Resource
		}
		Expect(limits).To(Equal(map[string]string{"FLINT_HUGEPAGES_LIMIT": "limits.hugepages-2Mi", "FLINT_CPU_LIMIT": "limits.cpu"}))
		Expect(spdk.SecurityContext.Capabilities.Add).To(ConsistOf(corev1.Capability("IPC_LOCK")))
		Expect(spdk.SecurityContext.Privileged).To(BeNil())
		Expect(pod.Annotations).To(HaveKeyWithValue("k8s.v1.cni.cncf.io/networks", "flint-system/storage-rdma"))
		Expect(pod.Spec.HostNetwork).To(BeFalse())
		Expect(pod.Spec.PriorityClassName).To(Equal("flint-osd"))
		Expect(pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values).To(ConsistOf("worker-1"))
		Expect(agent.Args).To(ContainElements("--transport=rdma", "--network-attachment=flint-system/storage-rdma", "--io-unit-size=131072", "--num-shared-buffers=4095", "--device-driver=pcie"))
		Expect(agent.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
		Expect(agent.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
		Expect(agent.ReadinessProbe.HTTPGet.Scheme).To(Equal(corev1.URISchemeHTTPS), "the agent serves its probes over HTTPS")
		By("the SPDK container's probes served beside SPDK, not run in it")
		Expect(spdk.Ports).To(ConsistOf(corev1.ContainerPort{Name: "fence", ContainerPort: 9442, Protocol: corev1.ProtocolTCP}))
		Expect(spdk.Args).To(ContainElements("--fence-address=:9442", "--lease-file=/var/run/flint/lease", "--fence-timeout=1s"))
		for _, p := range []*corev1.Probe{spdk.StartupProbe, spdk.LivenessProbe} {
			Expect(p.Exec).To(BeNil())
			Expect(p.HTTPGet.Port.String()).To(Equal("fence"))
		}
		Expect(spdk.LivenessProbe.HTTPGet.Path).To(Equal("/fence"))
		Expect(spdk.StartupProbe.HTTPGet.Path).To(Equal("/startup"))
		var medium corev1.StorageMedium
		var networkStatus string
		for _, v := range pod.Spec.Volumes {
			if v.EmptyDir != nil && v.Name == "hugepages" {
				medium = v.EmptyDir.Medium
			}
			if v.DownwardAPI != nil {
				networkStatus = v.DownwardAPI.Items[0].FieldRef.FieldPath
			}
		}
		Expect(medium).To(Equal(corev1.StorageMedium("HugePages-2Mi")))
		Expect(networkStatus).To(Equal("metadata.annotations['k8s.v1.cni.cncf.io/network-status']"))
	})

	It("for rdma on the host network with a shared RDMA device", func() {
		pod := podOf(&flintv1.OSD{
			ObjectMeta: metav1.ObjectMeta{Name: "render-rdma-host"},
			Spec: flintv1.OSDSpec{
				Pool: "render", NodeName: "worker-1",
				Device:    flintv1.OSDDevice{Driver: flintv1.DriverPCIe, ResourceName: "flint.io/nvme"},
				Resources: flintv1.OSDResources{CPUs: 1, HugePages: &flintv1.HugePages{Size: "2Mi", Amount: resource.MustParse("1Gi")}, Memory: ptr.To(resource.MustParse("1Gi"))},
				Network:   flintv1.Network{Transport: flintv1.TransportRDMA, HostNetwork: true, ResourceName: "flint.io/rdma", Port: 4420},
			},
		})
		spdk, agent := containers(pod)
		Expect(spdk.Resources.Limits).To(HaveKeyWithValue(corev1.ResourceName("flint.io/rdma"), resource.MustParse("1")))
		Expect(pod.Spec.HostNetwork).To(BeTrue())
		Expect(pod.Annotations).NotTo(HaveKey("k8s.v1.cni.cncf.io/networks"))
		Expect(agent.Args).To(ContainElement("--transport=rdma"))
		Expect(agent.Args).NotTo(ContainElement(HavePrefix("--network-attachment")))
	})

	It("with the Pool's tolerations and PriorityClass", func() {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "storage-critical"}, Value: 1000000}
		Expect(k8sClient.Create(ctx, pc)).To(Succeed())
		DeferCleanup(k8sClient.Delete, ctx, pc)
		storageOnly := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "storage", Effect: corev1.TaintEffectNoSchedule}
		pod := podOf(&flintv1.OSD{
			ObjectMeta: metav1.ObjectMeta{Name: "render-scheduling"},
			Spec: flintv1.OSDSpec{
				Pool: "render", NodeName: "worker-2",
				Device:     flintv1.OSDDevice{Driver: flintv1.DriverAIO, Path: "/dev/nvme2n1"},
				Resources:  flintv1.OSDResources{CPUs: 1, Memory: ptr.To(resource.MustParse("2Gi"))},
				Network:    flintv1.Network{Transport: flintv1.TransportTCP, Port: 4420},
				Scheduling: flintv1.OSDScheduling{Tolerations: []corev1.Toleration{storageOnly}, PriorityClassName: "storage-critical"},
			},
		})
		Expect(pod.Spec.Tolerations).To(ContainElement(storageOnly))
		Expect(pod.Spec.PriorityClassName).To(Equal("storage-critical"), "the Pool's PriorityClass, not the operator's flint-osd")
	})

	It("for tcp on an aio block device", func() {
		pod := podOf(&flintv1.OSD{
			ObjectMeta: metav1.ObjectMeta{Name: "render-tcp"},
			Spec: flintv1.OSDSpec{
				Pool: "render", NodeName: "worker-2",
				Device:    flintv1.OSDDevice{Driver: flintv1.DriverAIO, Path: "/dev/nvme1n1"},
				Resources: flintv1.OSDResources{CPUs: 1, Memory: ptr.To(resource.MustParse("2Gi"))},
				Network:   flintv1.Network{Transport: flintv1.TransportTCP, Port: 4420},
			},
		})
		spdk, agent := containers(pod)
		Expect(spdk.Resources.Limits).To(Equal(corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("2Gi")}))
		Expect(spdk.Args).To(ContainElements("--memory-mib=1536", "--device-path=/dev/nvme1n1"), "exec-spdk claims the device for SPDK")
		Expect(spdk.Args).NotTo(ContainElement(HavePrefix("--pci")))
		Expect(*spdk.SecurityContext.Privileged).To(BeTrue(), "a host block device opens only in a privileged container")
		Expect(spdk.SecurityContext.Capabilities.Add).To(BeEmpty())
		Expect(pod.Annotations).NotTo(HaveKey("k8s.v1.cni.cncf.io/networks"))
		Expect(agent.Args).To(ContainElements("--transport=tcp", "--device-path=/dev/nvme1n1"))
		Expect(agent.Args).NotTo(ContainElement(HavePrefix("--network-attachment")))
		var hostPath *corev1.HostPathVolumeSource
		for _, v := range pod.Spec.Volumes {
			if v.HostPath != nil {
				hostPath = v.HostPath
			}
		}
		Expect(hostPath.Path).To(Equal("/dev/nvme1n1"))
		Expect(*hostPath.Type).To(Equal(corev1.HostPathBlockDev))
	})
})
