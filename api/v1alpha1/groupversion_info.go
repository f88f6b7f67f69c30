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

// Package v1alpha1 holds the flint.io/v1alpha1 API: Pool, OSD and Volume.
// All three are cluster-scoped; the Kubernetes API is Flint's only metadata
// store.
//
// +kubebuilder:object:generate=true
// +groupName=flint.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of every Flint resource.
	GroupVersion = schema.GroupVersion{Group: "flint.io", Version: "v1alpha1"}

	// SchemeBuilder registers the Flint types with a runtime.Scheme. The API
	// package depends on apimachinery only, so that anyone can import it.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the Flint types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&Pool{}, &PoolList{},
		&OSD{}, &OSDList{},
		&Volume{}, &VolumeList{},
		&Snapshot{}, &SnapshotList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
