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
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// An lvstore whose free space falls under the reserve turns SpaceLow True
// with one Warning Event that says what to do; space freed turns it False.
func TestSpaceLowFollowsTheReserve(t *testing.T) {
	recorder := events.NewFakeRecorder(10)
	r := &Reconciler{Recorder: recorder}
	osd := &flintv1.OSD{ObjectMeta: metav1.ObjectMeta{Name: "osd-s"}}
	observe := func(freeGi int64) *metav1.Condition {
		t.Helper()
		osd.Status.Capacity = &flintv1.OSDCapacity{Total: resource.MustParse("100Gi"), Free: *resource.NewQuantity(freeGi<<30, resource.BinarySI)}
		r.setSpaceLow(osd)
		return meta.FindStatusCondition(osd.Status.Conditions, flintv1.SpaceLowCondition)
	}
	if c := observe(20); c.Status != metav1.ConditionFalse || c.Reason != flintv1.OSDSpaceAvailableReason {
		t.Fatalf("20%% free: %+v, want False/%s", c, flintv1.OSDSpaceAvailableReason)
	}
	for range 2 {
		if c := observe(19); c.Status != metav1.ConditionTrue || c.Reason != flintv1.OSDSpaceLowReason || !strings.Contains(c.Message, "only 19Gi free of 100Gi") {
			t.Fatalf("19%% free: %+v, want True/%s saying how much is free", c, flintv1.OSDSpaceLowReason)
		}
	}
	if len(recorder.Events) != 1 {
		t.Fatalf("%d Events for one fall under the reserve, want 1", len(recorder.Events))
	}
	if e := <-recorder.Events; !strings.Contains(e, "Warning ThinSpaceLow") || !strings.Contains(e, "add OSDs") {
		t.Errorf("Event %q, want a Warning ThinSpaceLow that says what to do", e)
	}
	if c := observe(50); c.Status != metav1.ConditionFalse {
		t.Errorf("50%% free: %+v, want False", c)
	}
}
