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

// Package lab is the e2e lab's cluster: a control plane (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler) and a storage
// node (containerd, kubelet, kube-proxy), each a real component built
// from its Go module or taken from Debian, run in the network namespace
// hack/e2e/run.sh made for the lab. The process that calls Up must run
// in that namespace: every address the cluster uses is one of the lab's.
package lab

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The lab's addresses (docs/development.md draws them).
const (
	// NodeIP is the storage node's, on the lab's bridge; the API server
	// listens there too.
	NodeIP = "10.77.0.1"
	// ServiceCIDR holds Services; its first address is the API server's.
	ServiceCIDR  = "10.96.0.0/24"
	apiServiceIP = "10.96.0.1"
	// PodCIDR is the storage node's pods' subnet, on its CNI bridge.
	PodCIDR = "10.244.0.0/24"
	// StorageNode is the storage node's name.
	StorageNode = "flint-storage-0"
	// StorageLabel marks the storage nodes, for Pools' nodeSelector;
	// CSINodeLabel the nodes where the CSI node plugin runs.
	StorageLabel = "lab.flint.io/storage"
	CSINodeLabel = "lab.flint.io/csi-node"
	apiPort      = "6443"
)

// Lab is a running lab cluster.
type Lab struct {
	// Dir holds the lab's configuration, state and logs/.
	Dir string
	// Assets holds the Kubernetes binaries (hack/envtest-assets.sh).
	Assets string
	// Images are OCI archives to import into the storage node's
	// containerd.
	Images []string
	// Worker, when set, is the workload node to boot.
	Worker *Worker
	// SecondStorageNode runs another storage node on this machine
	// (SecondStorageNodeName), in a failure domain of its own, for Pools
	// whose Volumes have two replicas.
	SecondStorageNode bool
	// Multus, when set, is the Multus thin CNI plugin: every node runs its
	// pods' networks through it, the lab's bridge as the cluster network
	// and StorageNetwork for pods that name it. MultusCRDs is Multus'
	// deployment manifest, which holds the NetworkAttachmentDefinition CRD.
	Multus, MultusCRDs string
	// AdminKubeconfig is a kubeconfig in system:masters.
	AdminKubeconfig string
	Config          *rest.Config
	// Phases are how long each step of Up took, in order.
	Phases []Phase

	creds     *credentials
	processes []*process
}

// Phase is a step of Up and its duration.
type Phase struct {
	Name string
	Took time.Duration
}

// step is a phase of Up.
type step struct {
	name string
	run  func(context.Context) error
}

// Up brings the cluster up: when it returns nil the storage node, and
// the workload node if there is one, are Ready with the images imported.
// Close ends it either way.
func (l *Lab) Up(ctx context.Context, progress io.Writer) error {
	steps := []step{
		{"certificates", l.writeCredentials},
		{"etcd and kube-apiserver", l.startAPIServer},
		{"kube-controller-manager and kube-scheduler", l.startControllers},
	}
	if l.Multus != "" {
		steps = append(steps, step{"Multus' CRD and permissions", l.installMultus})
	}
	steps = append(steps,
		step{"containerd and image import", l.startContainerd},
		step{"kubelet and kube-proxy", l.startNode})
	if l.SecondStorageNode {
		steps = append(steps, step{"second storage node", l.startSecondStorageNode})
	}
	if l.Worker != nil {
		steps = append(steps, step{"workload node (QEMU guest)", l.startWorker})
	}
	for _, s := range steps {
		began := time.Now()
		if err := s.run(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		took := time.Since(began)
		l.Phases = append(l.Phases, Phase{s.name, took})
		_, _ = fmt.Fprintf(progress, "lab: %s up in %s\n", s.name, took.Round(100*time.Millisecond))
	}
	return nil
}

// Broken says which of the lab's daemons ended, with the end of its log,
// if one did: every one of them runs until Close, so a test waiting on
// the cluster then waits in vain (a guest whose kernel panicked, a
// kubelet that crashed).
func (l *Lab) Broken() error {
	for _, p := range l.processes {
		if err := p.exited(); err != nil {
			return err
		}
	}
	return nil
}

// Close takes the cluster down as its nodes would be: the controllers
// stop making pods, the kubelet tears down the pods there are (their
// network namespaces, mounts and containers), what is left of them is
// killed, and then every process stops, the last started first.
func (l *Lab) Close() {
	for _, p := range l.processes {
		if p.name == "kube-controller-manager" || p.name == "kube-scheduler" {
			p.stop(15 * time.Second)
		}
	}
	l.deletePods(time.Minute)
	killContainers(l.storageNode().containerdSocket())
	if l.SecondStorageNode {
		killContainers(l.secondStorageNode().containerdSocket())
	}
	for _, p := range slices.Backward(l.processes) {
		p.stop(15 * time.Second)
	}
	unmountUnder(kubeletRoot)
	if l.SecondStorageNode {
		l.removeSecondStorageNode()
	}
}

func (l *Lab) writeCredentials(context.Context) error {
	creds, err := newCredentials(filepath.Join(l.Dir, "pki"))
	if err != nil {
		return err
	}
	l.creds = creds
	if l.AdminKubeconfig, err = creds.kubeconfig("admin", "flint-e2e-admin", []string{"system:masters"}, apiURL()); err != nil {
		return err
	}
	l.Config, err = clientcmd.BuildConfigFromFlags("", l.AdminKubeconfig)
	return err
}

func apiURL() string { return "https://" + net.JoinHostPort(NodeIP, apiPort) }

func (l *Lab) bin(name string) string { return filepath.Join(l.Assets, name) }
