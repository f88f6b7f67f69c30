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

package v1alpha1

import corev1 "k8s.io/api/core/v1"

// PageSize is the size of the pages: size, or 2Mi where admission has not
// defaulted it (objects built in Go).
func (h *HugePages) PageSize() HugePageSize {
	if h.Size == "" {
		return HugePageSize2Mi
	}
	return h.Size
}

// ResourceName is the node and container resource of the pages, such as
// hugepages-2Mi.
func (h *HugePages) ResourceName() corev1.ResourceName {
	return corev1.ResourceName("hugepages-" + string(h.PageSize()))
}
