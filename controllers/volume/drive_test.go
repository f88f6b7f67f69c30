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

package volume

import (
	"context"
	"crypto/tls"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/agentclient"
	"github.com/flint-io/flint/internal/fabric"
)

// blackHole accepts connections on addr and never answers, recording
// when each was accepted.
type blackHole struct {
	mu       sync.Mutex
	accepted []time.Time
}

func listenBlackHole(t *testing.T, addr string) (*blackHole, string) {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lis.Close() })
	b := &blackHole{}
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
			b.mu.Lock()
			b.accepted = append(b.accepted, time.Now())
			b.mu.Unlock()
		}
	}()
	return b, lis.Addr().String()
}

func (b *blackHole) first() (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.accepted) == 0 {
		return time.Time{}, false
	}
	return b.accepted[0], true
}

// Replica agents that accept connections and never answer are asked at
// once, not one after the other's budget ran out: a pass costs one call
// budget, however many of them hang.
// servingOSDs is a world of Ready OSDs osd-0, osd-1… whose agents' pods
// have ips (made in builder, when given), and a Volume with an Online
// replica on each, whose target served on osd-0.
func servingOSDs(builder *fake.ClientBuilder, ips []string) (*world, *flintv1.Volume) {
	w := &world{pool: &flintv1.Pool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, osds: map[string]*flintv1.OSD{}}
	vol := &flintv1.Volume{
		ObjectMeta: metav1.ObjectMeta{Name: "v", UID: "0b5d7f63-1f0e-4c55-9d43-5d1f0e6c2a10"},
		Spec:       flintv1.VolumeSpec{Pool: "p", Size: resource.MustParse("1Gi")},
	}
	if builder != nil {
		builder.WithObjects(replicaAuth("flint", "p"))
	}
	for i, ip := range ips {
		name := "osd-" + strconv.Itoa(i)
		o := &flintv1.OSD{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
			Status: flintv1.OSDStatus{Phase: flintv1.OSDPhaseReady, Endpoint: &flintv1.OSDEndpoint{
				Endpoint: flintv1.Endpoint{Transport: flintv1.TransportTCP, Address: ip, Port: 4420}}},
		}
		w.osds[name] = o
		if builder != nil {
			builder.WithObjects(&corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "flint", Name: agentclient.PodName(o)},
				Status:     corev1.PodStatus{PodIP: ip},
			})
		}
		vol.Status.Replicas = append(vol.Status.Replicas, flintv1.ReplicaStatus{OSD: name, State: flintv1.ReplicaStateOnline})
	}
	vol.Status.Target = &flintv1.VolumeTarget{OSD: "osd-0", Epoch: 1,
		Endpoints: []flintv1.Endpoint{{Transport: flintv1.TransportTCP, Address: ips[0], Port: 4420}}}
	return w, vol
}

// replicaAuth is Pool pool's replica-link Secret, as its controller makes
// it in the operator's namespace.
func replicaAuth(namespace, pool string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: flintv1.ReplicaAuthSecretName(pool)}, Data: map[string][]byte{}}
	for _, k := range []string{flintv1.SecretKeyDHCHAP, flintv1.SecretKeyDHCHAPCtrl} {
		secret, err := fabric.NewSecret()
		if err != nil {
			panic(err)
		}
		s.Data[k] = []byte(secret)
	}
	return s
}

func testScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = flintv1.AddToScheme(scheme)
	return scheme
}

func TestHungReplicaAgentsAreAskedAtOnce(t *testing.T) {
	const budget = 2 * time.Second
	ips := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}
	holes := make([]*blackHole, len(ips))
	var port string
	for i, ip := range ips {
		var addr string
		holes[i], addr = listenBlackHole(t, net.JoinHostPort(ip, port))
		_, port, _ = net.SplitHostPort(addr)
	}
	portNum, _ := strconv.Atoi(port)

	builder := fake.NewClientBuilder().WithScheme(testScheme())
	w, vol := servingOSDs(builder, ips)

	client, _ := agentTLS(t)
	c := builder.Build()
	r := &Reconciler{
		Client: c, Namespace: "flint", Recorder: events.NewFakeRecorder(10),
		Agents: &agentclient.Agents{Reader: c, Namespace: "flint", Port: portNum, Leases: &agentclient.Leases{}, Dialer: &agentclient.Dialer{
			TLS:         func(context.Context) (*tls.Config, error) { return client, nil },
			CallTimeout: budget,
		}},
	}
	if _, p := r.drive(context.Background(), vol, w); p == nil {
		t.Fatal("a pass against agents that never answer reports no problem")
	}
	var earliest, latest time.Time
	for i, h := range holes {
		at, ok := h.first()
		if !ok {
			t.Fatalf("the agent of replica %d was never asked", i)
		}
		if earliest.IsZero() || at.Before(earliest) {
			earliest = at
		}
		if at.After(latest) {
			latest = at
		}
	}
	if spread := latest.Sub(earliest); spread > budget/2 {
		t.Fatalf("the replica agents were asked %s apart: one waited for another's budget (%s)", spread, budget)
	}
}
