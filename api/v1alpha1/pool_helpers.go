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

// FailureDomainKey is the node label whose values the Pool's replicas
// differ in: spec.failureDomain, or the API's default when it is unset.
func (p *Pool) FailureDomainKey() string {
	if p.Spec.FailureDomain != "" {
		return p.Spec.FailureDomain
	}
	return "kubernetes.io/hostname"
}

// MaxRebuildsPerOSD is how many rebuilds each of the Pool's OSDs takes
// part in at once: spec.rebuild.maxPerOSD, or the API's default when it is
// unset.
func (p *Pool) MaxRebuildsPerOSD() int {
	if p.Spec.Rebuild.MaxPerOSD > 0 {
		return int(p.Spec.Rebuild.MaxPerOSD)
	}
	return 4
}
