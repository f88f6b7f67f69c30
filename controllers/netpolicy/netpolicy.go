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

// Package netpolicy keeps the NetworkPolicy of OSD pods: only the
// operator reaches the agents' API, only namespaces labelled for metrics
// scraping reach their /metrics, and only the cluster's nodes (where the
// kernel NVMe-oF hosts run) and other OSDs reach their NVMe-oF listeners.
// The node addresses change with the cluster, so the operator renders it.
package netpolicy

import (
	"context"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flint-io/flint/controllers/osd"
)

// Name is the NetworkPolicy of OSD pods, in the operator's namespace.
const Name = "flint-osd"

// Labels the policy selects by: the operator's pods (config/manager) and
// the namespaces whose pods may scrape metrics (kubebuilder's convention).
var (
	operatorPods      = map[string]string{"app.kubernetes.io/name": "flint-operator"}
	scraperNamespaces = map[string]string{"metrics": "enabled"}
)

// Reconciler keeps the policy.
type Reconciler struct {
	client.Client
	Namespace string
}

// +kubebuilder:rbac:groups=networking.k8s.io,namespace=flint-system,resources=networkpolicies,verbs=get;list;watch;create;update;patch

// Reconcile renders the policy from the nodes' addresses.
func (r *Reconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes); err != nil {
		return ctrl.Result{}, err
	}
	p := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: Name}}
	_, err := controllerutil.CreateOrPatch(ctx, r.Client, p, func() error {
		p.Labels = map[string]string{"app.kubernetes.io/managed-by": "flint-operator"}
		p.Spec = Render(nodes.Items)
		return nil
	})
	return ctrl.Result{}, err
}

// Render is the policy's spec for a cluster of nodes.
func Render(nodes []corev1.Node) networkingv1.NetworkPolicySpec {
	tcp := corev1.ProtocolTCP
	port := func(name string) []networkingv1.NetworkPolicyPort {
		p := intstr.FromString(name)
		return []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &p}}
	}
	nvmeofPeers := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: osd.PodLabels}}}
	for _, cidr := range nodeCIDRs(nodes) {
		nvmeofPeers = append(nvmeofPeers, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr}})
	}
	return networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: osd.PodLabels},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{
			{Ports: port(osd.GRPCPortName), From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: operatorPods}}}},
			{Ports: port(osd.MetricsPortName), From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: scraperNamespaces}}}},
			{Ports: port(osd.NVMeoFPortName), From: nvmeofPeers},
		},
	}
}

// nodeCIDRs are the nodes' internal addresses as single-address blocks,
// sorted so that an unchanged cluster renders an unchanged policy.
func nodeCIDRs(nodes []corev1.Node) []string {
	var out []string
	for _, n := range nodes {
		for _, a := range n.Status.Addresses {
			ip, err := netip.ParseAddr(a.Address)
			if a.Type != corev1.NodeInternalIP || err != nil {
				continue
			}
			out = append(out, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()).String())
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// SetupWithManager has any node change, and any edit of the policy,
// render it again.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	key := types.NamespacedName{Namespace: r.Namespace, Name: Name}
	renderAgain := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: key}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("osd-network-policy").
		Watches(&corev1.Node{}, renderAgain).
		Watches(&networkingv1.NetworkPolicy{}, renderAgain).
		Complete(r)
}
