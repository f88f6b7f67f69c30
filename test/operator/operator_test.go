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
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/agentclient"
	"github.com/flint-io/flint/controllers/certs"
	osdctl "github.com/flint-io/flint/controllers/osd"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

var _ = Describe("A Pool whose OSDs run", Ordered, func() {
	BeforeAll(func() {
		for i, zone := range []string{"a", "b", "c"} {
			makeNode(fmt.Sprintf("local-%d", i), "local", zone, nil)
		}
		Expect(k8sClient.Create(ctx, mallocPool("local", "local", 3))).To(Succeed())
	})

	It("gets one OSD per node, owned by the Pool", func() {
		Eventually(osdsOf("local")).Should(HaveLen(3))
		for _, o := range osdsOf("local")() {
			Expect(metav1.GetControllerOf(&o)).To(PointTo(MatchFields(IgnoreExtras, Fields{"Kind": Equal("Pool"), "Name": Equal("local")})))
			Expect(o.Spec.Device.Malloc.Size.String()).To(Equal("256Mi"))
		}
	})

	It("runs each OSD in a pod owned by the OSD, with its agent's certificate", func() {
		for _, o := range osdsOf("local")() {
			var pod corev1.Pod
			Eventually(func() error {
				return k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "osd-" + o.Name}, &pod)
			}).Should(Succeed())
			Expect(metav1.GetControllerOf(&pod).UID).To(Equal(o.UID))
			var s corev1.Secret
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: osdctl.TLSSecretName(o.Name)}, &s)).To(Succeed())
			Expect(metav1.GetControllerOf(&s).UID).To(Equal(o.UID))
			Expect(parseCert(s.Data["tls.crt"]).DNSNames).To(ConsistOf(agentclient.ServerName(o.Name)))
		}
		// The operator's client certificate is issued when it first dials an
		// agent.
		// Scrapers of the agents' metrics get theirs with the OSDs'.
		for name, cn := range map[string]string{certs.ClientSecret: agentv1.OperatorClientName, certs.MetricsClientSecret: agentv1.MetricsClientName} {
			var s corev1.Secret
			Eventually(func() error {
				return k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s)
			}).Should(Succeed())
			Expect(parseCert(s.Data["tls.crt"]).Subject.CommonName).To(Equal(cn))
		}
	})

	It("fills OSD status from the agents", func() {
		Eventually(func(g Gomega) {
			for _, o := range osdsOf("local")() {
				g.Expect(o.Status.Phase).To(Equal(flintv1.OSDPhaseReady), "OSD %s: %+v", o.Name, o.Status.Conditions)
				g.Expect(o.Status.SPDKVersion).To(HavePrefix("SPDK v"))
				g.Expect(o.Status.Capacity.Total.Value()).To(BeNumerically(">", 200<<20))
				g.Expect(o.Status.Endpoint.Address).To(HavePrefix("127.0.1."))
				g.Expect(o.Status.Endpoint.Port).To(Equal(int32(4420)))
				// The kernel owns a malloc device's cache, not the agent.
				g.Expect(o.Status.Device.WriteCache).To(Equal(flintv1.WriteCacheUnknown))
			}
		}).Should(Succeed())
	})

	It("names the check of the node that keeps SPDK from starting, until SPDK runs", func() {
		o := osdsOf("local")()[1]
		var pod corev1.Pod
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "osd-" + o.Name}, &pod)).To(Succeed())
		finding := agentv1.PreflightFinding{Reason: agentv1.PreflightDeviceNotBoundToVFIO, Fatal: true,
			Message: "NVMe controller 0000:00:04.0 is bound to the kernel's nvme driver, so SPDK cannot drive it"}
		setSPDKState := func(state corev1.ContainerState, last corev1.ContainerState) {
			before := pod.DeepCopy()
			for i := range pod.Status.ContainerStatuses {
				if cs := &pod.Status.ContainerStatuses[i]; cs.Name == "spdk" {
					cs.State, cs.LastTerminationState = state, last
				}
			}
			Expect(k8sClient.Status().Patch(ctx, &pod, client.MergeFrom(before))).To(Succeed())
		}
		running := pod.Status.ContainerStatuses[0].State
		setSPDKState(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: string(finding.TerminationMessage())}})
		Eventually(func(g Gomega) {
			var got flintv1.OSD
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&o), &got)).To(Succeed())
			g.Expect(got.Status.Phase).To(Equal(flintv1.OSDPhaseFailed))
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, flintv1.ReadyCondition)).To(PointTo(MatchFields(IgnoreExtras, Fields{
				"Status": Equal(metav1.ConditionFalse), "Reason": Equal(agentv1.PreflightDeviceNotBoundToVFIO),
				"Message": And(ContainSubstring("the SPDK container of pod osd-"+o.Name), ContainSubstring(finding.Message)),
			})))
		}).Should(Succeed())
		Expect(eventsFor(o.Name)()).To(ContainElement(agentv1.PreflightDeviceNotBoundToVFIO))

		// The node was fixed: the restarted container runs SPDK.
		setSPDKState(running, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: string(finding.TerminationMessage())}})
		Eventually(func() flintv1.OSDPhase {
			var got flintv1.OSD
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&o), &got)).To(Succeed())
			return got.Status.Phase
		}).Should(Equal(flintv1.OSDPhaseReady))
	})

	It("is Ready with its capacity", func() {
		Eventually(func(g Gomega) {
			p := getPool("local")()
			g.Expect(condition(flintv1.ReadyCondition)(p)).To(PointTo(MatchFields(IgnoreExtras, Fields{"Status": Equal(metav1.ConditionTrue), "Reason": Equal("Provisionable")})))
			g.Expect(condition(flintv1.DegradedCondition)(p).Status).To(Equal(metav1.ConditionFalse))
			g.Expect(p.Status.OSDs).To(Equal(flintv1.OSDCounts{Total: 3, Ready: 3}))
			g.Expect(p.Status.Capacity.Usable.Value()).To(Equal(p.Status.Capacity.Raw.Value() / 3))
		}).Should(Succeed())
	})

	It("exports pool metrics", func() {
		Eventually(func() string { return gatherMetric(`flint_pool_osds`, `pool="local"`, `phase="Ready"`) }).Should(Equal("3"))
		Expect(gatherMetric(`flint_pool_preflight_failures`, `pool="local"`, `reason="HugePagesInsufficient"`)).To(Equal("0"))
	})

	It("keeps a person's cordon on an OSD", func() {
		o := osdsOf("local")()[0]
		cordon := func(on bool) {
			before := o.DeepCopy()
			o.Spec.Cordon = on
			Expect(k8sClient.Patch(ctx, &o, client.MergeFrom(before))).To(Succeed())
		}
		cordon(true)
		DeferCleanup(cordon, false)
		// The OSD's change has its Pool reconcile; the Pool's spec has no say.
		Consistently(func() bool { return getOSD(o.Name).Spec.Cordon }, "3s").Should(BeTrue())
	})

	It("serves its metrics only to tokens allowed to read them", func() {
		scrape := func(token string) (int, string) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
			Expect(err).NotTo(HaveOccurred())
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			// The manager's certificate is self-signed, as in a cluster.
			c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // only the authorization is under test
			resp, err := c.Do(req)
			Expect(err).NotTo(HaveOccurred())
			defer func() { _ = resp.Body.Close() }()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body)
		}
		code, _ := scrape("")
		Expect(code).To(Equal(http.StatusUnauthorized), "a scrape without a token")

		token := func(name string) string {
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
			Expect(k8sClient.Create(ctx, sa)).To(Succeed())
			DeferCleanup(k8sClient.Delete, sa)
			tr := &authenticationv1.TokenRequest{}
			Expect(k8sClient.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
			return tr.Status.Token
		}
		code, _ = scrape(token("test-stranger"))
		Expect(code).To(Equal(http.StatusForbidden), "a scrape with a token not bound to flint-metrics-reader")

		scraper := token("test-scraper")
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "test-scraper"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "flint-metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: "test-scraper"}},
		}
		Expect(k8sClient.Create(ctx, binding)).To(Succeed())
		DeferCleanup(k8sClient.Delete, binding)
		// RBAC applies within moments; the filter caches only decisions taken.
		Eventually(func() int { code, _ := scrape(scraper); return code }, "45s", "1s").Should(Equal(http.StatusOK))
		_, body := scrape(scraper)
		Expect(body).To(ContainSubstring(`flint_pool_osds{phase="Ready",pool="local"} 3`))
	})

	It("follows an OSD whose SPDK dies and comes back", func() {
		o := osdsOf("local")()[0]
		target := node.Target("osd-" + o.Name)
		Expect(target).NotTo(BeNil())
		target.Kill()
		Eventually(func() string {
			var got flintv1.OSD
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&o), &got)).To(Succeed())
			return string(got.Status.Phase) + "/" + got.Status.Conditions[0].Reason
		}).Should(Equal("Starting/SPDKDown"))
		Eventually(func() string { return string(condition(flintv1.DegradedCondition)(getPool("local")()).Status) }).Should(Equal("True"))
		Expect(target.Restart()).To(Succeed())
		Eventually(func() flintv1.OSDPhase {
			var got flintv1.OSD
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&o), &got)).To(Succeed())
			return got.Status.Phase
		}).Should(Equal(flintv1.OSDPhaseReady))
		Expect(eventsFor(o.Name)()).To(ContainElement("SPDKDown"))
	})
})

var _ = Describe("Preflight", func() {
	DescribeTable("names the reason a Pool cannot start",
		func(name string, nodes map[string]map[string]string, mutate func(*flintv1.Pool), reason, message string) {
			i := 0
			for n, alloc := range nodes {
				makeNode(n, name, fmt.Sprintf("z%d", i), alloc)
				i++
			}
			p := mallocPool(name, name, 1)
			mutate(p)
			Expect(k8sClient.Create(ctx, p)).To(Succeed())
			Eventually(func(g Gomega) {
				got := getPool(name)()
				c := condition(reason)(got)
				g.Expect(c).NotTo(BeNil(), "conditions: %+v", got.Status.Conditions)
				g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(c.Message).To(ContainSubstring(message))
				ready := condition(flintv1.ReadyCondition)(got)
				g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(ready.Reason).To(Equal(reason))
				if got.Status.OSDs.Total == 0 {
					g.Expect(condition(flintv1.DegradedCondition)(got).Reason).To(Equal("NoOSDs"))
				}
			}).Should(Succeed())
			Eventually(eventsFor(name)).Should(ContainElement(reason))
			Expect(gatherMetric(`flint_pool_preflight_failures`, `pool="`+name+`"`, `reason="`+reason+`"`)).To(Equal("1"))
		},
		Entry("no node selected", "pf-none", map[string]map[string]string{}, func(*flintv1.Pool) {},
			flintv1.PoolNoNodesSelectedCondition, "no node matches nodeSelector"),
		Entry("devices listed for nodes it does not select", "pf-list", map[string]map[string]string{"pf-list-0": {}}, func(p *flintv1.Pool) {
			p.Spec.Devices = flintv1.PoolDevices{Driver: flintv1.DriverAIO, Nodes: []flintv1.NodeDevices{{Node: "worker-a", Devices: []string{"/dev/nvme1n1"}}}}
		}, flintv1.PoolNoNodesSelectedCondition, `devices are listed for nodes worker-a, but no node matching nodeSelector "flint.io/test=pf-list" has one of those names`),
		Entry("too few hugepages", "pf-huge", map[string]map[string]string{"pf-huge-0": {"hugepages-2Mi": "512Mi"}}, func(p *flintv1.Pool) {
			p.Spec.OSD.HugePages = &flintv1.HugePages{Size: "2Mi", Amount: resource.MustParse("1Gi")}
		}, flintv1.PoolHugePagesInsufficientCondition, "node pf-huge-0 has 512Mi of hugepages-2Mi allocatable, its 1 OSDs need 1Gi: add 256 pages of 2Mi"),
		Entry("no device plugin devices", "pf-dev", map[string]map[string]string{"pf-dev-0": {"hugepages-2Mi": "4Gi"}}, func(p *flintv1.Pool) {
			p.Spec.Devices = flintv1.PoolDevices{Driver: flintv1.DriverPCIe, ResourceName: "flint.io/nvme"}
			p.Spec.OSD.HugePages = &flintv1.HugePages{Size: "2Mi", Amount: resource.MustParse("1Gi")}
		}, flintv1.PoolDeviceResourceMissingCondition, "node pf-dev-0 advertises no flint.io/nvme"),
		Entry("no RDMA VF", "pf-vf", map[string]map[string]string{"pf-vf-0": {}}, func(p *flintv1.Pool) {
			p.Spec.Network = flintv1.Network{Transport: flintv1.TransportRDMA, Attachment: "flint-system/rdma", ResourceName: "nvidia.com/rdma_vf", Port: 4420}
		}, flintv1.PoolRDMAResourceMissingCondition, "node pf-vf-0 has 0 nvidia.com/rdma_vf allocatable, its 1 OSDs need one RDMA VF each"),
		Entry("no RDMA device on the host network", "pf-rdma", map[string]map[string]string{"pf-rdma-0": {}}, func(p *flintv1.Pool) {
			p.Spec.Network = flintv1.Network{Transport: flintv1.TransportRDMA, HostNetwork: true, ResourceName: "flint.io/rdma", Port: 4420}
		}, flintv1.PoolRDMAResourceMissingCondition, "node pf-rdma-0 has 0 flint.io/rdma allocatable, its 1 OSDs on the host network need one each: run the RDMA device plugin there"),
		Entry("no NetworkAttachmentDefinition", "pf-nad", map[string]map[string]string{"pf-nad-0": {"nvidia.com/rdma_vf": "4"}}, func(p *flintv1.Pool) {
			p.Spec.Network = flintv1.Network{Transport: flintv1.TransportRDMA, Attachment: "storage-rdma", ResourceName: "nvidia.com/rdma_vf", Port: 4420}
		}, flintv1.PoolNetworkAttachmentMissingCondition, "NetworkAttachmentDefinition flint-system/storage-rdma does not exist"),
		Entry("too few failure domains", "pf-fd", map[string]map[string]string{"pf-fd-0": {}, "pf-fd-1": {}}, func(p *flintv1.Pool) {
			p.Spec.Replicas = 3
		}, flintv1.PoolInsufficientFailureDomainsCondition, "replicas 3 needs OSDs in 3 distinct kubernetes.io/hostname values; the Pool's usable OSD nodes span 2 (pf-fd-0, pf-fd-1)"),
	)

	It("creates no OSD on a node that fails, and recovers when it is fixed", func() {
		makeNode("pf-fix-0", "pf-fix", "z", map[string]string{"hugepages-2Mi": "512Mi"})
		p := mallocPool("pf-fix", "pf-fix", 1)
		p.Spec.OSD.HugePages = &flintv1.HugePages{Size: "2Mi", Amount: resource.MustParse("1Gi")}
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		Eventually(func() *metav1.Condition {
			return condition(flintv1.PoolHugePagesInsufficientCondition)(getPool("pf-fix")())
		}).ShouldNot(BeNil())
		Consistently(osdsOf("pf-fix"), "1s").Should(BeEmpty())
		setAllocatable("pf-fix-0", "hugepages-2Mi", "2Gi")
		Eventually(osdsOf("pf-fix")).Should(HaveLen(1))
		Eventually(func() *metav1.Condition {
			return condition(flintv1.PoolHugePagesInsufficientCondition)(getPool("pf-fix")())
		}).Should(BeNil())
	})

	It("names an OSD name another Pool's OSD has, and leaves that OSD alone", func() {
		makeNode("nc-x-0", "nc", "z", nil)
		makeNode("x-0", "nc-nc", "z", nil)
		Expect(k8sClient.Create(ctx, mallocPool("nc", "nc", 1))).To(Succeed())
		Eventually(osdsOf("nc")).Should(HaveLen(1))
		Expect(osdsOf("nc")()[0].Name).To(Equal("nc-nc-x-0-0"))
		// Pool nc-nc on node x-0 would name its OSD nc-nc-x-0-0 too.
		Expect(k8sClient.Create(ctx, mallocPool("nc-nc", "nc-nc", 1))).To(Succeed())
		Eventually(func(g Gomega) {
			c := condition(flintv1.PoolOSDNameConflictCondition)(getPool("nc-nc")())
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Message).To(ContainSubstring("node x-0 gets no OSD: its name nc-nc-x-0-0 is taken by the OSD of Pool nc on node nc-x-0"))
		}).Should(Succeed())
		Expect(getOSD("nc-nc-x-0-0").Spec.Pool).To(Equal("nc"))
		Expect(osdsOf("nc-nc")()).To(BeEmpty())
	})

	It("creates no OSD while its NetworkAttachmentDefinition is missing", func() {
		makeNode("pf-nadfix-0", "pf-nadfix", "z", nil)
		p := mallocPool("pf-nadfix", "pf-nadfix", 1)
		p.Spec.Network = flintv1.Network{Transport: flintv1.TransportTCP, Attachment: "storage-later", Port: 4420}
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		Eventually(func() *metav1.Condition {
			return condition(flintv1.PoolNetworkAttachmentMissingCondition)(getPool("pf-nadfix")())
		}).ShouldNot(BeNil())
		Consistently(osdsOf("pf-nadfix"), "1s").Should(BeEmpty())
		nad := &unstructured.Unstructured{}
		nad.SetAPIVersion("k8s.cni.cncf.io/v1")
		nad.SetKind("NetworkAttachmentDefinition")
		nad.SetNamespace(namespace)
		nad.SetName("storage-later")
		Expect(unstructured.SetNestedField(nad.Object, `{"cniVersion": "0.3.1", "type": "bridge"}`, "spec", "config")).To(Succeed())
		Expect(k8sClient.Create(ctx, nad)).To(Succeed())
		// Nothing watches NetworkAttachmentDefinitions: the Pool looks
		// again by itself.
		Eventually(osdsOf("pf-nadfix"), "30s").Should(HaveLen(1))
	})
})

var _ = Describe("An OSD made by hand", Ordered, func() {
	const handMade = "byhand-extra-0"
	BeforeAll(func() {
		makeNode("byhand-0", "byhand", "a", nil)
		makeNode("byhand-extra-0", "byhand-extra", "b", nil) // a node the Pool does not select
		Expect(k8sClient.Create(ctx, mallocPool("byhand", "byhand", 2))).To(Succeed())
		Expect(k8sClient.Create(ctx, &flintv1.OSD{
			ObjectMeta: metav1.ObjectMeta{Name: handMade},
			Spec: flintv1.OSDSpec{
				Pool: "byhand", NodeName: "byhand-extra-0",
				Device:    flintv1.OSDDevice{Driver: flintv1.DriverMalloc, Malloc: &flintv1.MallocDevice{Size: resource.MustParse("256Mi")}},
				Resources: flintv1.OSDResources{CPUs: 1},
			},
		})).To(Succeed())
	})

	It("joins its Pool, which keeps it, and takes a replica", func() {
		Eventually(func(g Gomega) {
			o := getOSD(handMade)
			g.Expect(o.Labels).To(HaveKeyWithValue(flintv1.LabelPool, "byhand"))
			g.Expect(o.Status.Phase).To(Equal(flintv1.OSDPhaseReady))
			g.Expect(getPool("byhand")().Status.OSDs.Ready).To(BeEquivalentTo(2))
		}).Should(Succeed())
		Expect(k8sClient.Create(ctx, newVolume("vol-byhand", "byhand", "16Mi"))).To(Succeed())
		Eventually(func(g Gomega) {
			v := getVolume("vol-byhand")
			g.Expect(v.Status.Phase).To(Equal(flintv1.VolumePhaseReady))
			var on []string
			for _, r := range v.Status.Replicas {
				on = append(on, r.OSD)
			}
			g.Expect(on).To(ContainElement(handMade))
		}, "30s").Should(Succeed())
		o := getOSD(handMade)
		Expect(o.DeletionTimestamp).To(BeNil())
		Expect(o.Spec.Drain).To(BeFalse(), "the Pool drains an OSD made by hand")
		deleteVolume("vol-byhand")
	})
})

var _ = Describe("Device count", Ordered, func() {
	BeforeAll(func() {
		makeNode("dc-0", "dc", "z", map[string]string{"hugepages-2Mi": "8Gi", "flint.io/nvme": "2"})
		p := mallocPool("dc", "dc", 1)
		p.Spec.Devices = flintv1.PoolDevices{Driver: flintv1.DriverPCIe, ResourceName: "flint.io/nvme"}
		p.Spec.OSD.HugePages = &flintv1.HugePages{Size: "2Mi", Amount: resource.MustParse("1Gi")}
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
	})

	names := func() []string {
		var out []string
		for _, o := range osdsOf("dc")() {
			out = append(out, o.Name)
		}
		return out
	}

	It("makes one OSD per allocatable device", func() {
		Eventually(names).Should(ConsistOf("dc-dc-0-0", "dc-dc-0-1"))
	})

	It("adds OSDs when the node gets more devices", func() {
		setAllocatable("dc-0", "flint.io/nvme", "3")
		Eventually(names).Should(ConsistOf("dc-dc-0-0", "dc-dc-0-1", "dc-dc-0-2"))
	})

	It("drains, not deletes, an OSD that holds replicas when devices go", func() {
		holdReplica("vol-dc", "dc", "dc-dc-0-2")
		setAllocatable("dc-0", "flint.io/nvme", "1")
		Eventually(names).Should(ConsistOf("dc-dc-0-0", "dc-dc-0-2"))
		var o flintv1.OSD
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: "dc-dc-0-2"}, &o)).To(Succeed())
		Expect(o.Spec.Drain).To(BeTrue())
		Eventually(func() string { return condition(flintv1.DegradedCondition)(getPool("dc")()).Message }).
			Should(ContainSubstring("drain before deletion: dc-dc-0-2 (1 replicas)"))
		Eventually(eventsFor("dc")).Should(ContainElement("OSDDraining"))
	})

	It("refuses to delete an OSD while it holds replicas", func() {
		var o flintv1.OSD
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: "dc-dc-0-2"}, &o)).To(Succeed())
		Expect(k8sClient.Delete(ctx, &o)).To(Succeed())
		Eventually(func(g Gomega) {
			var got flintv1.OSD
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Name: "dc-dc-0-2"}, &got)).To(Succeed())
			g.Expect(got.Status.Phase).To(Equal(flintv1.OSDPhaseDraining))
			c := got.Status.Conditions
			g.Expect(c).To(ContainElement(MatchFields(IgnoreExtras, Fields{"Type": Equal(flintv1.DeletionBlockedCondition), "Reason": Equal("HoldsReplicas")})))
		}).Should(Succeed())
		Consistently(func() error { return k8sClient.Get(ctx, client.ObjectKey{Name: "dc-dc-0-2"}, &flintv1.OSD{}) }, "2s").Should(Succeed())
		Expect(eventsFor("dc-dc-0-2")()).To(ContainElement("HoldsReplicas"))

		// The replica moved: the OSD goes.
		setReplicas("vol-dc", nil)
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Name: "dc-dc-0-2"}, &flintv1.OSD{}))
		}).Should(BeTrue())
	})

	It("refuses to delete the Pool while a Volume uses it", func() {
		Expect(k8sClient.Delete(ctx, getPool("dc")())).To(Succeed())
		Eventually(func() *metav1.Condition { return condition(flintv1.DeletionBlockedCondition)(getPool("dc")()) }).
			Should(PointTo(MatchFields(IgnoreExtras, Fields{
				"Reason": Equal("VolumesExist"), "Message": Equal("1 Volumes use the Pool (vol-dc); delete them (or their PersistentVolumeClaims) first"),
			})))
		Consistently(osdsOf("dc"), "2s").Should(HaveLen(1))
		Expect(eventsFor("dc")()).To(ContainElement("VolumesExist"))
	})

	It("deletes the Pool, then its OSDs, pods and certificates by garbage collection", func() {
		Expect(k8sClient.Delete(ctx, &flintv1.Volume{ObjectMeta: metav1.ObjectMeta{Name: "vol-dc"}})).To(Succeed())
		gone := func(obj client.Object, key client.ObjectKey) func() bool {
			return func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, key, obj)) }
		}
		Eventually(gone(&flintv1.Pool{}, client.ObjectKey{Name: "dc"})).Should(BeTrue())
		Eventually(gone(&flintv1.OSD{}, client.ObjectKey{Name: "dc-dc-0-0"})).Should(BeTrue())
		Eventually(gone(&corev1.Pod{}, client.ObjectKey{Namespace: namespace, Name: "osd-dc-dc-0-0"})).Should(BeTrue())
		Eventually(gone(&corev1.Secret{}, client.ObjectKey{Namespace: namespace, Name: osdctl.TLSSecretName("dc-dc-0-0")})).Should(BeTrue())
	})
})

// holdReplica makes a Volume of pool report a replica on osd.
func holdReplica(name, poolName, osd string) {
	v := &flintv1.Volume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       flintv1.VolumeSpec{Pool: poolName, Size: resource.MustParse("1Gi"), Replicas: ptr.To[int32](1)},
	}
	Expect(k8sClient.Create(ctx, v)).To(Succeed())
	setReplicas(name, []flintv1.ReplicaStatus{{OSD: osd, Lvol: "flint-x/" + name, State: flintv1.ReplicaStateOnline}})
}

// setReplicas writes a Volume's replicas as if they had been placed (the
// OSDs of these specs run no agent), racing the Volume controller's own
// status writes.
func setReplicas(name string, replicas []flintv1.ReplicaStatus) {
	Eventually(func() error {
		var v flintv1.Volume
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: name}, &v); err != nil {
			return err
		}
		v.Status.Replicas = replicas
		return k8sClient.Status().Update(ctx, &v)
	}).Should(Succeed())
}

// gatherMetric reads one series of the operator's registry.
func gatherMetric(name string, labels ...string) string {
	families, err := crmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			var have []string
			for _, l := range m.GetLabel() {
				have = append(have, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			for _, want := range labels {
				if !strings.Contains(strings.Join(have, ","), want) {
					continue next
				}
			}
			return fmt.Sprint(m.GetGauge().GetValue())
		}
	}
	return ""
}
