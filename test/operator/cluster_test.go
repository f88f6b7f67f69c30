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
	"context"
	"os"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/flint-io/flint/test/localcluster"
)

// The suite installs what config/default installs, so a Role or binding
// the operator lacks fails here, and runs the operator as its
// ServiceAccount.

const operatorUser = "system:serviceaccount:" + namespace + ":flint-operator"

// applyDefaultManifests applies config/default but the CRDs, which
// envtest has installed and waited for.
func applyDefaultManifests(ctx context.Context, c client.Client) {
	Expect(localcluster.Apply(ctx, c, filepath.Join("..", "..", "config", "default"), "CustomResourceDefinition")).To(Succeed())
}

// asOperator is cfg acting as the operator's ServiceAccount.
func asOperator(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: operatorUser, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}}
	return c
}

// startGarbageCollector runs kube-controller-manager's garbage collector
// alone against env, so owner references are followed as in a cluster.
func startGarbageCollector(ctx context.Context, env *envtest.Environment, dir string) {
	bin := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kube-controller-manager")
	Expect(bin).To(BeAnExistingFile(), "kube-controller-manager is built by hack/envtest-assets.sh; run 'make test-envtest'")
	path := filepath.Join(dir, "kcm.kubeconfig")
	Expect(localcluster.WriteAdminKubeconfig(env, "kube-controller-manager", path)).To(Succeed())
	kcm := exec.CommandContext(ctx, bin, "--kubeconfig="+path, "--controllers=garbagecollector",
		"--leader-elect=false", "--secure-port=0", "--v=1")
	kcm.Stdout, kcm.Stderr = GinkgoWriter, GinkgoWriter
	Expect(kcm.Start()).To(Succeed())
	DeferCleanup(func() { _ = kcm.Wait() })
}
