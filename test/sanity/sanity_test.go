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

// Package sanity runs the official Kubernetes CSI sanity suite
// (csi-test/v5) against csi.flint.io: the controller service backed by a
// real kube-apiserver, the operator and real osd-agents over the SPDK
// double; the node service as built by cmd/csi-driver with one swap, the
// loop-device attacher (loop_test.go), since this machine has no kernel
// NVMe-oF host. The real attacher is proven in the VM lab (test/vmlab).
package sanity

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	volumesnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mount "k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers"
	"github.com/flint-io/flint/csi"
	"github.com/flint-io/flint/internal/spdk/spdktest"
	"github.com/flint-io/flint/test/localcluster"
	"github.com/flint-io/flint/test/localnode"
)

const (
	pool    = "sanity"
	hostNQN = "nqn.2014-08.org.nvmexpress:uuid:5a1e0000-0000-4000-8000-000000000001"
)

func TestSanity(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the node service mounts and attaches loop devices: run as root")
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "CSI sanity")
}

var (
	config     = sanity.NewTestConfig()
	cluster    *localcluster.Cluster
	servers    []*grpc.Server
	controller *csi.Controller
	node       *csi.Node
)

var _ = BeforeSuite(func() {
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	ctx, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	root, err := filepath.Abs("../..")
	Expect(err).NotTo(HaveOccurred())
	cluster, err = localcluster.Start(ctx, localcluster.Options{
		Root:      root,
		Nodes:     []localcluster.Node{{Name: "sanity-0", Zone: "a"}, {Name: "sanity-1", Zone: "b"}, {Name: "sanity-2", Zone: "c"}},
		Pools:     []string{pool},
		Subnet:    "127.0.2", // test/operator runs at the same time on 127.0.1
		StartSPDK: localnode.DoubleSPDK(spdktest.NewFabric()),
		Operator:  controllers.Options{Resync: 2 * time.Second, ReplicaGrace: time.Minute, TargetGrace: 10 * time.Second, AgentLease: 4 * time.Second, VolumeWorkers: 4},
	})
	if cluster != nil {
		DeferCleanup(cluster.Stop)
	}
	Expect(err).NotTo(HaveOccurred())
	Expect(cluster.Client.Create(ctx, &flintv1.Pool{
		ObjectMeta: metav1.ObjectMeta{Name: pool},
		Spec: flintv1.PoolSpec{
			Replicas: 2,
			Devices:  flintv1.PoolDevices{Driver: flintv1.DriverMalloc, Malloc: &flintv1.MallocDevice{Size: resource.MustParse("2Gi")}},
		},
	})).To(Succeed())
	Eventually(func() int32 {
		var p flintv1.Pool
		Expect(cluster.Client.Get(ctx, ctrlKey(pool), &p)).To(Succeed())
		return p.Status.OSDs.Ready
	}, 2*time.Minute, 200*time.Millisecond).Should(BeEquivalentTo(3))

	dir := GinkgoT().TempDir()
	// The controller runs as the driver runs it: reads from an informer
	// cache, waits woken by its Volume events.
	var volumes cache.Cache
	controller, volumes, err = csi.NewClusterController(cluster.Env.Config, cluster.Client.Scheme(), time.Minute)
	Expect(err).NotTo(HaveOccurred())
	// Its watch ends before the control plane stops (cleanups run last
	// registered first), or the apiserver waits for it.
	watchCtx, stopWatch := context.WithCancel(ctx)
	DeferCleanup(stopWatch)
	go func() { _ = volumes.Start(watchCtx) }()
	Expect(volumes.WaitForCacheSync(watchCtx)).To(BeTrue())
	node = &csi.Node{
		NodeID: hostNQN, NodeName: "sanity-0", StateDir: filepath.Join(dir, "state"), ResizeTimeout: 10 * time.Second,
		Attacher: &loopAttacher{client: cluster.Client, nodes: cluster.Nodes, hostNQN: hostNQN, dir: dir, devices: map[string]string{}},
		Mounter:  mount.NewSafeFormatAndMount(mount.New(""), utilexec.New()),
	}
	config.ControllerAddress = serve(filepath.Join(dir, "controller.sock"), &csi.Identity{}, controller, nil)
	config.Address = serve(filepath.Join(dir, "node.sock"), &csi.Identity{}, nil, node)
	config.TargetPath = filepath.Join(dir, "mount")
	config.StagingPath = filepath.Join(dir, "staging")
	config.TestVolumeParameters = map[string]string{csi.ParamPool: pool}
	config.TestVolumeMutableParameters = map[string]string{csi.ParamMaxIOPS: "2000", csi.ParamMaxWriteMiBps: "100"}
	config.TestVolumeSize = 64 << 20
	config.TestVolumeExpandSize = 128 << 20
	config.IdempotentCount = 3
})

var _ = AfterSuite(func() {
	for _, s := range servers {
		s.Stop()
	}
})

func serve(socket string, ids *csi.Identity, cs *csi.Controller, ns *csi.Node) string {
	lis, err := csi.Listen("unix://" + socket)
	Expect(err).NotTo(HaveOccurred())
	srv := csi.NewServer(logr.Discard(), ids, cs, ns)
	servers = append(servers, srv)
	go func() { _ = srv.Serve(lis) }()
	return "unix://" + socket
}

var _ = Describe("csi.flint.io", func() {
	sanity.GinkgoTest(&config)
})

func ctrlKey(name string) client.ObjectKey { return client.ObjectKey{Name: name} }

// The deployment manifests are valid objects for the apiserver (RBAC,
// CSIDriver, Deployment, DaemonSet) and the StorageClass sample names the
// driver.
var _ = Describe("config/csi", func() {
	It("applies to the apiserver", func(ctx SpecContext) {
		Expect(localcluster.Apply(ctx, cluster.Client, filepath.Join("..", "..", "config", "default"), "CustomResourceDefinition")).To(Succeed())
		Expect(localcluster.Apply(ctx, cluster.Client, filepath.Join("..", "..", "config", "csi"))).To(Succeed())
		var driver storagev1.CSIDriver
		Expect(cluster.Client.Get(ctx, ctrlKey(csi.DriverName), &driver)).To(Succeed())
		Expect(*driver.Spec.AttachRequired).To(BeTrue())
		Expect(driver.Spec.PreventPodSchedulingIfMissing).To(HaveValue(BeTrue()), "the apiserver keeps it (VolumeLimitScaling)")
		var sc storagev1.StorageClass
		// The samples include a VolumeSnapshotClass: its CRDs first.
		Expect(localcluster.Apply(ctx, cluster.Client, filepath.Join("..", "..", "config", "snapshot-crds"))).To(Succeed())
		Expect(localcluster.Apply(ctx, cluster.Client, filepath.Join("..", "..", "config", "csi", "samples"))).To(Succeed())
		Expect(cluster.Client.Get(ctx, ctrlKey("flint-fast"), &sc)).To(Succeed())
		Expect(sc.Provisioner).To(Equal(csi.DriverName))
		Expect(*sc.AllowVolumeExpansion).To(BeTrue())
		Expect(volumesnapshotv1.AddToScheme(cluster.Client.Scheme())).To(Succeed())
		var vsc volumesnapshotv1.VolumeSnapshotClass
		Expect(cluster.Client.Get(ctx, ctrlKey("flint"), &vsc)).To(Succeed())
		Expect(vsc.Driver).To(Equal(csi.DriverName))
		var vac storagev1.VolumeAttributesClass
		Expect(cluster.Client.Get(ctx, ctrlKey("flint-limited"), &vac)).To(Succeed())
		Expect(vac.DriverName).To(Equal(csi.DriverName))
	})
})
