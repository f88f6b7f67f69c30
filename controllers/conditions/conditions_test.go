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

package conditions

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

func TestSetStampsTheGenerationAndReportsNews(t *testing.T) {
	vol := &flintv1.Volume{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	ready := metav1.Condition{Type: flintv1.ReadyCondition, Status: metav1.ConditionFalse, Reason: "TargetLost", Message: "the raid is gone"}
	steps := []struct {
		name       string
		generation int64
		c          metav1.Condition
		news       bool
	}{
		{"a new condition", 3, ready, true},
		{"the same again", 3, ready, false},
		{"a new generation alone", 4, ready, false},
		{"a new message", 4, with(ready, func(c *metav1.Condition) { c.Message = "still gone" }), true},
		{"a new reason", 4, with(ready, func(c *metav1.Condition) { c.Reason = "TargetFenced" }), true},
		{"a new status", 4, with(ready, func(c *metav1.Condition) { c.Status = metav1.ConditionTrue }), true},
	}
	for _, s := range steps {
		vol.Generation = s.generation
		if got := Set(vol, s.c); got != s.news {
			t.Errorf("%s: Set reported news %v, want %v", s.name, got, s.news)
		}
		c := meta.FindStatusCondition(vol.Status.Conditions, flintv1.ReadyCondition)
		if c == nil || c.ObservedGeneration != s.generation || c.Reason != s.c.Reason || c.Status != s.c.Status {
			t.Errorf("%s: recorded %+v, want %+v at generation %d", s.name, c, s.c, s.generation)
		}
	}
	if len(vol.Status.Conditions) != 1 {
		t.Errorf("one condition per type, got %d", len(vol.Status.Conditions))
	}
	if !Remove(vol, flintv1.ReadyCondition) || Remove(vol, flintv1.ReadyCondition) {
		t.Error("Remove reports whether the condition was there")
	}
}

func with(c metav1.Condition, change func(*metav1.Condition)) metav1.Condition {
	change(&c)
	return c
}
