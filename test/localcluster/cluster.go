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

// Package localcluster is a Flint cluster on this machine: a real
// kube-apiserver and etcd (KUBEBUILDER_ASSETS) with Flint's CRDs, nodes
// as a kubelet would report them, the operator in this process, and the
// OSD pods of chosen Pools run by localnode (osd-agent processes over the
// SPDK double, or over real flint_tgt). `make run` and the benchmarks use
// it.
package localcluster

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers"
	"github.com/flint-io/flint/controllers/osd"
	"github.com/flint-io/flint/test/localnode"
)

// Namespace is the operator's.
const Namespace = "flint-system"

// Node is a node to create, with the zone it is in.
type Node struct{ Name, Zone string }

// Options say what runs.
type Options struct {
	// Root is the repository (config/crd/bases, cmd/osd-agent).
	Root  string
	Nodes []Node
	// Subnet is the /24 of loopback addresses the OSD pods get (default
	// 127.0.1); suites running at once need distinct ones.
	Subnet string
	// Pools are those whose OSD pods run here; StartSPDK runs their SPDK.
	Pools     []string
	StartSPDK func(localnode.Launch) (localnode.SPDK, error)
	// ProbeInterval is how often the agents probe SPDK (localnode.Runner).
	ProbeInterval time.Duration
	// Operator is the operator's configuration; Namespace, image and ports
	// are filled in.
	Operator controllers.Options
	// OperatorProcesses, when set, runs the operator as that many
	// processes of cmd/operator (Cluster.Operators) rather than in this
	// process, for tests that kill it; Operator's hooks are then unused.
	OperatorProcesses int
	// OperatorArgs are flags added to those of the operator's processes
	// (a later flag wins), such as a /metrics address to scrape.
	OperatorArgs []string
}

// Cluster is a running local cluster.
type Cluster struct {
	Env    *envtest.Environment
	Client client.Client
	// Nodes runs the OSD pods.
	Nodes *localnode.Runner
	// Operators are the operator's processes with
	// Options.OperatorProcesses; nil when it runs in this process.
	Operators *Operators
	dir       string
	// stop ends the operator and the pods; stopped closes when the
	// operator has returned.
	stop    context.CancelFunc
	stopped chan struct{}
}

// Start brings the cluster up; Stop (or ctx ending) stops it.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, fmt.Errorf("KUBEBUILDER_ASSETS is not set: the make targets build the control-plane binaries and set it")
	}
	c := &Cluster{Env: &envtest.Environment{
		CRDDirectoryPaths: []string{filepath.Join(o.Root, "config", "crd", "bases")}, ErrorIfCRDPathMissing: true,
	}, stopped: make(chan struct{})}
	ctx, c.stop = context.WithCancel(ctx)
	cfg, err := c.Env.Start()
	if err != nil {
		return nil, fmt.Errorf("start the control plane: %w", err)
	}
	// Unix socket paths must stay short.
	if c.dir, err = os.MkdirTemp("", "flint-pods-"); err != nil {
		return c, err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return c, err
	}
	if err := flintv1.AddToScheme(scheme); err != nil {
		return c, err
	}
	if c.Client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return c, err
	}
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil {
		return c, err
	}
	for _, n := range o.Nodes {
		if err := c.addNode(ctx, n); err != nil {
			return c, err
		}
	}
	agent := filepath.Join(c.dir, "osd-agent")
	build := exec.Command("go", "build", "-o", agent, "./cmd/osd-agent")
	build.Dir = o.Root
	if out, err := build.CombinedOutput(); err != nil {
		return c, fmt.Errorf("build osd-agent: %v\n%s", err, out)
	}
	op := o.Operator
	op.Namespace, op.OSDImage, op.PriorityClass, op.ServiceAccount, op.AgentPort = Namespace, "flint-osd:local", "flint-osd", "flint-osd", osd.GRPCPort
	if err := c.startOperator(ctx, cfg, o, op); err != nil {
		return c, err
	}
	c.Nodes = &localnode.Runner{Client: c.Client, Namespace: Namespace, AgentBinary: agent, Dir: c.dir, StartSPDK: o.StartSPDK, Pools: o.Pools, Subnet: o.Subnet, ProbeInterval: o.ProbeInterval}
	go c.Nodes.Run(ctx, 200*time.Millisecond)
	return c, nil
}

// startOperator runs the operator in this process, or as processes;
// c.stopped closes once it has ended with ctx.
func (c *Cluster) startOperator(ctx context.Context, cfg *rest.Config, o Options, op controllers.Options) error {
	if o.OperatorProcesses > 0 {
		kubeconfig, err := c.Kubeconfig(c.dir)
		if err != nil {
			return err
		}
		if c.Operators, err = startOperators(o.Root, c.dir, kubeconfig, o.OperatorProcesses, append(operatorArgs(op), o.OperatorArgs...)); err != nil {
			return err
		}
		go func() {
			defer close(c.stopped)
			<-ctx.Done()
			c.Operators.stop()
		}()
		return nil
	}
	mgr, err := controllers.NewManager(cfg, op, ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		return err
	}
	go func() {
		defer close(c.stopped)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "localcluster: operator: %v\n", err)
		}
	}()
	return nil
}

func (c *Cluster) addNode(ctx context.Context, n Node) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: map[string]string{
		corev1.LabelHostname: n.Name, corev1.LabelTopologyZone: n.Zone,
	}}}
	if err := c.Client.Create(ctx, node); err != nil {
		return fmt.Errorf("create node %s: %w", n.Name, err)
	}
	node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi")}
	node.Status.Capacity = node.Status.Allocatable
	return c.Client.Status().Update(ctx, node)
}

// Kubeconfig writes an admin kubeconfig into dir and returns its path.
func (c *Cluster) Kubeconfig(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, WriteAdminKubeconfig(c.Env, "flint-dev", path)
}

// WriteAdminKubeconfig writes to path a kubeconfig of env for a new user
// in system:masters.
func WriteAdminKubeconfig(env *envtest.Environment, name, path string) error {
	user, err := env.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("create the user %s: %w", name, err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("render the kubeconfig of %s: %w", name, err)
	}
	return os.WriteFile(path, data, 0o600)
}

// Apply builds the kustomization in dir and applies every object in it
// (see ApplyObjects) but those of the kinds in skip.
func Apply(ctx context.Context, c client.Client, dir string, skip ...string) error {
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resources.Resources() {
		if slices.Contains(skip, r.GetKind()) {
			continue
		}
		m, err := r.Map()
		if err != nil {
			return err
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	if err := ApplyObjects(ctx, c, objs); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	return nil
}

// ApplyObjects applies objs server-side in the order kubectl apply takes
// them: Namespaces and CRDs first, then, once those CRDs serve, the rest.
func ApplyObjects(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	first := func(o *unstructured.Unstructured) bool {
		return o.GetKind() == "Namespace" || o.GetKind() == "CustomResourceDefinition"
	}
	for _, pass := range []bool{true, false} {
		for _, o := range objs {
			if first(o) != pass {
				continue
			}
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("flint-test"), client.ForceOwnership); err != nil {
				return fmt.Errorf("apply %s %s: %w", o.GetKind(), o.GetName(), err)
			}
		}
		if pass {
			if err := waitEstablished(ctx, c, objs); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitEstablished waits until every CRD among objs serves its kind.
func waitEstablished(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		for {
			crd := &unstructured.Unstructured{}
			crd.SetGroupVersionKind(o.GroupVersionKind())
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), crd); err != nil {
				return err
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			if slices.ContainsFunc(conds, func(c any) bool {
				m, _ := c.(map[string]any)
				return m["type"] == "Established" && m["status"] == "True"
			}) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CRD %s is not established after 30s", o.GetName())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// SaveLogs copies every log of the operator and the OSD pods (agents,
// SPDK, fence servers) into dst, keeping their paths, for a test that
// failed: Stop removes them.
func (c *Cluster) SaveLogs(dst string) error {
	return filepath.WalkDir(c.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".log") {
			return err
		}
		rel, err := filepath.Rel(c.dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o700); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o600)
	})
}

// Stop stops the operator, the OSD pods and the control plane, in that
// order: open watches would hold the apiserver's shutdown.
func (c *Cluster) Stop() error {
	c.stop()
	if c.Nodes != nil {
		<-c.stopped
		c.Nodes.StopAll()
	}
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
	return c.Env.Stop()
}
