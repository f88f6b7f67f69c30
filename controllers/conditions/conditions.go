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

// Package conditions sets the status conditions of Flint's resources one
// way: each stamped with the generation it was observed at, and each
// change reported so that a caller tells it in an Event once.
package conditions

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Object is a resource with status conditions.
type Object interface {
	GetGeneration() int64
	StatusConditions() *[]metav1.Condition
}

// Set records c as observed at obj's generation. It reports whether the
// condition's status, reason or message changed: a new generation that
// changes nothing else is no news to tell.
func Set(obj Object, c metav1.Condition) bool {
	conds := obj.StatusConditions()
	old := meta.FindStatusCondition(*conds, c.Type)
	changed := old == nil || old.Status != c.Status || old.Reason != c.Reason || old.Message != c.Message
	c.ObservedGeneration = obj.GetGeneration()
	meta.SetStatusCondition(conds, c)
	return changed
}

// Remove drops the condition of type typ; it reports whether obj had it.
func Remove(obj Object, typ string) bool {
	return meta.RemoveStatusCondition(obj.StatusConditions(), typ)
}
