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

package osd

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/agentclient"
	"github.com/flint-io/flint/controllers/metrics"
)

// A target that reports a member out of its raid has its Volume driven at
// once when the status still says Ready; a Volume already known to lag,
// and a uid no Volume has, are left to their own resync.
func TestDegradedTargetsHaveReadyVolumesDriven(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := flintv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	volume := func(name, uid string, phase flintv1.VolumePhase) *flintv1.Volume {
		return &flintv1.Volume{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid)}, Status: flintv1.VolumeStatus{Phase: phase}}
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(volume("ready", "uid-ready", flintv1.VolumePhaseReady), volume("lagging", "uid-lagging", flintv1.VolumePhaseRebuilding)).
		WithIndex(&flintv1.Volume{}, indexUID, func(o client.Object) []string { return []string{string(o.GetUID())} }).
		Build()
	observed := make(chan event.GenericEvent, 3)
	l := &LeaseRenewer{Reader: reader, ObserveVolume: observed}

	l.observeDegraded(context.Background(), []string{"uid-ready", "uid-lagging", "uid-gone"})
	close(observed)
	var names []string
	for e := range observed {
		names = append(names, e.Object.GetName())
	}
	if len(names) != 1 || names[0] != "ready" {
		t.Fatalf("driven = %v, want [ready]", names)
	}
}

// flint_operator_leading is 1 exactly while the renewer, which runs only
// in the leader, runs.
func TestTheRenewerSaysItLeads(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := flintv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	l := &LeaseRenewer{Reader: fake.NewClientBuilder().WithScheme(scheme).Build(), Leases: &agentclient.Leases{}, Lease: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.Start(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for testutil.ToFloat64(metrics.OperatorLeading) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("flint_operator_leading stayed 0 while the renewer ran")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if v := testutil.ToFloat64(metrics.OperatorLeading); v != 0 {
		t.Fatalf("flint_operator_leading = %v once the renewer stopped, want 0", v)
	}
}
