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
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers"
	"github.com/flint-io/flint/controllers/volume"
	"github.com/flint-io/flint/internal/spdk/spdktest"
	"github.com/flint-io/flint/test/localnode"
)

// The operator suite runs the operator's controllers against a real
// kube-apiserver (envtest). There is no kubelet: OSD pods of the Pools
// named in localPools are run by localnode, with real osd-agent processes
// over SPDK doubles; other pods stay as the operator rendered them.

const namespace = "flint-system"

var localPools = []string{"local", "vols", "crash", "osdgone", "snaps", "byhand", "roll"}

var (
	testEnv   *envtest.Environment
	k8sClient client.Client
	ctx       context.Context
	cancel    context.CancelFunc
	node      *localnode.Runner
	// metricsURL is the operator's /metrics, served as in a cluster.
	metricsURL, metricsAddr string
	// fabric is the SPDK double every OSD pod runs on.
	fabric *spdktest.Fabric
	// operatorCfg is how the operator reaches the apiserver: as its
	// ServiceAccount.
	operatorCfg *rest.Config
	// stopOperator stops the running operator and waits until it has.
	stopOperator func()
)

// startOperator runs the operator as config/default deploys it; interrupt,
// when set, is its Volume controller's Interrupt. It returns a function
// that stops it, as a crash would (no clean hand-over), and waits.
func startOperator(interrupt func(context.Context, *flintv1.Volume, volume.Point)) func() {
	return run(newOperator(interrupt, controllers.SecureMetrics(metricsAddr), true))
}

// run starts mgr and returns a function that stops it and waits.
func run(mgr ctrl.Manager) func() {
	mctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(mctx)).To(Succeed())
	}()
	return func() {
		stop()
		<-done
	}
}

// targetGrace is the operator's --target-grace; targetHold the hold it
// promises the agents (production's is agentv1.TargetHold, 8 s).
const (
	targetGrace = 8 * time.Second
	targetHold  = 2 * time.Second
)

// newOperator is the operator's manager as config/default deploys it,
// serving its metrics as said; leaderElection is what it is asked for.
func newOperator(interrupt func(context.Context, *flintv1.Volume, volume.Point), metrics metricsserver.Options, leaderElection bool) ctrl.Manager {
	mgr, err := controllers.NewManager(operatorCfg, controllers.Options{
		Namespace: namespace, OSDImage: "flint-osd:test", PriorityClass: "flint-osd", ServiceAccount: "flint-osd",
		AgentPort: 9440, Resync: time.Second, ReplicaGrace: 10 * time.Second, TargetGrace: targetGrace, StandbyWait: 2 * time.Second, AgentLease: 3 * time.Second, VolumeWorkers: 4, SnapshotWorkers: 4,
		HoldTargets: true, TargetHold: targetHold,
		NetworkPolicy: true, VolumeInterrupt: interrupt,
	}, ctrl.Options{
		Metrics: metrics, HealthProbeBindAddress: "0",
		// The same controllers run again in this process after a restart.
		Controller:     config.Controller{SkipNameValidation: ptr.To(true)},
		LeaderElection: leaderElection,
		// A successor takes over at once rather than after the lease.
		LeaderElectionReleaseOnCancel: true,
	})
	Expect(err).NotTo(HaveOccurred())
	return mgr
}

func TestOperator(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Operator Suite")
}

var _ = BeforeSuite(func() {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases"), filepath.Join("testdata", "crds")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred(), "start envtest; is KUBEBUILDER_ASSETS set? run 'make test-envtest'")
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(flintv1.AddToScheme(scheme)).To(Succeed())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	applyDefaultManifests(ctx, k8sClient)

	dir, err := os.MkdirTemp("", "flint-op-")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(os.RemoveAll, dir)
	startGarbageCollector(ctx, testEnv, dir)

	// The agents run as the binary that ships in the OSD image.
	agent := filepath.Join(dir, "osd-agent")
	build := exec.Command("go", "build", "-o", agent, "github.com/flint-io/flint/cmd/osd-agent")
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "build osd-agent: %s", out)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	metricsAddr = lis.Addr().String()
	Expect(lis.Close()).To(Succeed())
	metricsURL = "https://" + metricsAddr + "/metrics"
	operatorCfg = asOperator(cfg)
	stopOperator = startOperator(nil)
	fabric = spdktest.NewFabric(spdktest.WithRebuildRate(4096))
	node = &localnode.Runner{Client: k8sClient, Namespace: namespace, AgentBinary: agent, Dir: dir, StartSPDK: localnode.DoubleSPDK(fabric), Pools: localPools}
	go node.Run(ctx, 100*time.Millisecond)
})

var _ = AfterSuite(func() {
	stopOperator()
	cancel()
	if node != nil {
		node.StopAll()
	}
	Expect(testEnv.Stop()).To(Succeed())
})
