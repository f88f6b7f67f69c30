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
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/netpolicy"
)

var _ = Describe("The OSD pods' NetworkPolicy", Ordered, func() {
	policy := func() *networkingv1.NetworkPolicy {
		var p networkingv1.NetworkPolicy
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: netpolicy.Name}, &p)).To(Succeed())
		return &p
	}
	// nvmeofFrom lists the address blocks allowed to the NVMe-oF port; none
	// before the policy exists.
	nvmeofFrom := func() []string {
		var p networkingv1.NetworkPolicy
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: netpolicy.Name}, &p); err != nil {
			return nil
		}
		var out []string
		for _, rule := range p.Spec.Ingress {
			if len(rule.Ports) == 1 && rule.Ports[0].Port.StrVal == "nvmf" {
				for _, peer := range rule.From {
					if peer.IPBlock != nil {
						out = append(out, peer.IPBlock.CIDR)
					}
				}
			}
		}
		return out
	}
	nodeAt := func(name, ip string) {
		makeNode(name, "netpolicy", "z", nil)
		var n corev1.Node
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: name}, &n)).To(Succeed())
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name}}
		Expect(k8sClient.Status().Update(ctx, &n)).To(Succeed())
	}

	It("lets every node's kernel NVMe-oF host reach the OSDs", func() {
		nodeAt("np-0", "10.1.2.3")
		nodeAt("np-1", "fd00::5")
		Eventually(nvmeofFrom).Should(ContainElements("10.1.2.3/32", "fd00::5/128"))
	})

	It("selects the OSD pods, by the ports their agent names", func() {
		o := &flintv1.OSD{
			ObjectMeta: metav1.ObjectMeta{Name: "np-osd"},
			Spec:       flintv1.OSDSpec{Pool: "np", NodeName: "np-0", Device: flintv1.OSDDevice{Driver: flintv1.DriverMalloc, Malloc: &flintv1.MallocDevice{Size: resource.MustParse("1Gi")}}},
		}
		Expect(k8sClient.Create(ctx, o)).To(Succeed())
		DeferCleanup(k8sClient.Delete, o)
		var pod corev1.Pod
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "osd-np-osd"}, &pod)
		}).Should(Succeed())
		p := policy()
		Expect(labels.SelectorFromSet(p.Spec.PodSelector.MatchLabels).Matches(labels.Set(pod.Labels))).To(BeTrue(), "the policy selects %v", pod.Labels)
		named := map[string]bool{}
		for _, c := range pod.Spec.Containers {
			for _, port := range c.Ports {
				named[port.Name] = true
			}
		}
		for _, rule := range p.Spec.Ingress {
			for _, port := range rule.Ports {
				Expect(named).To(HaveKey(port.Port.StrVal), "the pod names every port the policy opens")
			}
		}
		// The operator's pods, as config/default deploys them, reach the API.
		var d appsv1.Deployment
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "flint-operator"}, &d)).To(Succeed())
		operator := p.Spec.Ingress[0].From[0].PodSelector.MatchLabels
		Expect(p.Spec.Ingress[0].Ports[0].Port.StrVal).To(Equal("grpc"))
		Expect(labels.SelectorFromSet(operator).Matches(labels.Set(d.Spec.Template.Labels))).To(BeTrue(), "the API is open to %v", operator)
	})

	It("is rendered again when edited by hand", func() {
		p := policy()
		p.Spec.Ingress = nil
		Expect(k8sClient.Update(ctx, p)).To(Succeed())
		Eventually(nvmeofFrom).Should(ContainElement("10.1.2.3/32"))
	})

	It("forgets a node that leaves", func() {
		Expect(k8sClient.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "np-1"}})).To(Succeed())
		Eventually(nvmeofFrom).ShouldNot(ContainElement("fd00::5/128"))
		Expect(nvmeofFrom()).To(ContainElement("10.1.2.3/32"))
	})
})
