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

package controllers

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// SecureMetrics serves the manager's /metrics on addr over HTTPS, only to
// requests whose bearer token the apiserver authenticates (TokenReview)
// and authorizes for GET /metrics (SubjectAccessReview; ClusterRole
// flint-metrics-reader grants it), as controller-runtime's filter does.
func SecureMetrics(addr string) metricsserver.Options {
	return metricsserver.Options{BindAddress: addr, SecureServing: true, FilterProvider: filters.WithAuthenticationAndAuthorization}
}

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// LeaderElectionID names the Lease the operators elect their leader by.
const LeaderElectionID = "flint-operator.flint.io"

// leaderLock is the operators' election Lease in namespace, held as
// identity. Two live processes never share one: a pod's name is unique
// while it exists, and the kubelet starts a container again only once
// the last one has stopped.
func leaderLock(cs kubernetes.Interface, namespace, identity string) (resourcelock.Interface, error) {
	return resourcelock.New(resourcelock.LeasesResourceLock, namespace, LeaderElectionID,
		cs.CoreV1(), cs.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: identity})
}

// leaderClient is the leader election's own client: its requests time
// out below the renew deadline (controller-runtime's 10 s), so that one
// hung request does not cost the lead.
func leaderClient(cfg *rest.Config) (kubernetes.Interface, error) {
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	cfg.Timeout = 5 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("the leader election's client: %w", err)
	}
	return cs, nil
}

// NewManager is the operator's manager on cfg with its controllers; mo
// brings the serving choices. It always elects a leader, whatever mo
// says: two operators acting at once would both move one Volume's target,
// and nothing else can prove an operator alone.
func NewManager(cfg *rest.Config, o Options, mo ctrl.Options) (ctrl.Manager, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = o.APIQPS, o.APIBurst
	if cfg.QPS == 0 {
		cfg.QPS = 200
	}
	if cfg.Burst == 0 {
		cfg.Burst = 400
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := flintv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	mo.Scheme = scheme
	mo.LeaderElection = true
	mo.LeaderElectionID = LeaderElectionID
	mo.LeaderElectionNamespace = o.Namespace
	if o.LeaderIdentity != "" {
		cs, err := leaderClient(cfg)
		if err != nil {
			return nil, err
		}
		lock, err := leaderLock(cs, o.Namespace, o.LeaderIdentity)
		if err != nil {
			return nil, err
		}
		mo.LeaderElectionResourceLockInterface = lock
	}
	// Pods, Secrets and NetworkPolicies are watched in the operator's
	// namespace only.
	// Managed fields are dropped from the cache: nothing reads them, and
	// every Volume read would copy them.
	mo.Cache = cache.Options{DefaultTransform: cache.TransformStripManagedFields(), ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}:                   {Namespaces: map[string]cache.Config{o.Namespace: {}}},
		&corev1.Secret{}:                {Namespaces: map[string]cache.Config{o.Namespace: {}}},
		&networkingv1.NetworkPolicy{}:   {Namespaces: map[string]cache.Config{o.Namespace: {}}},
		&policyv1.PodDisruptionBudget{}: {Namespaces: map[string]cache.Config{o.Namespace: {}}},
	}}
	mgr, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return nil, err
	}
	if err := Setup(mgr, o); err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}
