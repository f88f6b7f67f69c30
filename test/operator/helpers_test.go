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
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/internal/pki"
)

// makeNode creates a node in group (the label Pools of a spec select) with
// allocatable resources, as a kubelet would report them.
func makeNode(name, group, zone string, allocatable map[string]string) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"flint.io/test": group, corev1.LabelHostname: name, corev1.LabelTopologyZone: zone,
	}}}
	Expect(k8sClient.Create(ctx, n)).To(Succeed())
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi")}
	for k, v := range allocatable {
		n.Status.Allocatable[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	n.Status.Capacity = n.Status.Allocatable
	Expect(k8sClient.Status().Update(ctx, n)).To(Succeed())
}

// makeZonedPool makes Pool name, of three replicas in distinct zones, over
// four nodes of group name in zones a to d, and waits until its four OSDs
// are Ready.
func makeZonedPool(name string) {
	for i, zone := range []string{"a", "b", "c", "d"} {
		makeNode(fmt.Sprintf("%s-%d", name, i), name, zone, nil)
	}
	p := mallocPool(name, name, 3)
	p.Spec.FailureDomain = corev1.LabelTopologyZone
	Expect(k8sClient.Create(ctx, p)).To(Succeed())
	Eventually(func(g Gomega) {
		osds := osdsOf(name)()
		g.Expect(osds).To(HaveLen(4))
		for _, o := range osds {
			g.Expect(o.Status.Phase).To(Equal(flintv1.OSDPhaseReady))
		}
	}).Should(Succeed())
}

func setAllocatable(name, res, value string) {
	var n corev1.Node
	Expect(k8sClient.Get(ctx, client.ObjectKey{Name: name}, &n)).To(Succeed())
	n.Status.Allocatable[corev1.ResourceName(res)] = resource.MustParse(value)
	Expect(k8sClient.Status().Update(ctx, &n)).To(Succeed())
}

func getPool(name string) func() *flintv1.Pool {
	return func() *flintv1.Pool {
		var p flintv1.Pool
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: name}, &p)).To(Succeed())
		return &p
	}
}

func condition(typ string) func(*flintv1.Pool) *metav1.Condition {
	return func(p *flintv1.Pool) *metav1.Condition { return meta.FindStatusCondition(p.Status.Conditions, typ) }
}

func osdsOf(pool string) func() []flintv1.OSD {
	return func() []flintv1.OSD {
		var l flintv1.OSDList
		Expect(k8sClient.List(ctx, &l, client.MatchingLabels{"flint.io/pool": pool})).To(Succeed())
		return l.Items
	}
}

// eventsAbout lists the Events about the object named name.
func eventsAbout(name string) []eventsv1.Event {
	GinkgoHelper()
	var l eventsv1.EventList
	Expect(k8sClient.List(ctx, &l)).To(Succeed())
	var out []eventsv1.Event
	for _, e := range l.Items {
		if e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// eventsFor lists the reasons of the Events about the object named name.
func eventsFor(name string) func() []string {
	return func() []string {
		var reasons []string
		for _, e := range eventsAbout(name) {
			reasons = append(reasons, e.Reason)
		}
		return reasons
	}
}

// eventNotes lists the notes of name's Events of reason.
func eventNotes(name, reason string) []string {
	GinkgoHelper()
	var notes []string
	for _, e := range eventsAbout(name) {
		if e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// eventTime is when the latest Event of reason about name whose note
// contains note was first emitted.
func eventTime(name, reason, note string) time.Time {
	GinkgoHelper()
	var at time.Time
	for _, e := range eventsAbout(name) {
		if e.Reason == reason && strings.Contains(e.Note, note) && e.EventTime.After(at) {
			at = e.EventTime.Time
		}
	}
	Expect(at.IsZero()).To(BeFalse(), "no %s Event of %s saying %q", reason, name, note)
	return at
}

func mallocPool(name, group string, replicas int32) *flintv1.Pool {
	return &flintv1.Pool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flintv1.PoolSpec{
			Replicas:     replicas,
			NodeSelector: map[string]string{"flint.io/test": group},
			Devices:      flintv1.PoolDevices{Driver: flintv1.DriverMalloc, Malloc: &flintv1.MallocDevice{Size: resource.MustParse("256Mi")}},
		},
	}
}

func parseCert(certPEM []byte) *x509.Certificate {
	cert, err := pki.ParseCertificate(certPEM)
	Expect(err).NotTo(HaveOccurred())
	return cert
}
