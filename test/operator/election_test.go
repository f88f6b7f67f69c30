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
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Two operators acting at once would both move one Volume's target: a
// second operator waits for the leader's lease even when asked not to
// elect one.
var _ = Describe("A second operator", func() {
	It("waits for the leader, even when asked not to elect", func() {
		Eventually(func(g Gomega) {
			var l coordinationv1.Lease
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "flint-operator.flint.io"}, &l)).To(Succeed())
			g.Expect(l.Spec.HolderIdentity).NotTo(BeNil())
		}).Should(Succeed(), "the suite's operator leads")
		second := newOperator(nil, metricsserver.Options{BindAddress: "0"}, false)
		DeferCleanup(run(second))
		Consistently(second.Elected(), "3s").ShouldNot(BeClosed())
	})
})
