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

// Command csi-driver is the csi.flint.io CSI driver: its controller and node services.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	mount "k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/csi"
	"github.com/flint-io/flint/csi/nvmeof"
	"github.com/flint-io/flint/internal/cli"
)

type options struct {
	endpoint         string
	controller, node bool
	nodeName         string
	hostNQNFile      string
	stateDir         string
	followPaths      bool
	fabrics          nvmeof.Options
}

func main() {
	fs := flag.NewFlagSet("csi-driver", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.endpoint, "endpoint", "unix:///csi/csi.sock", "where the CSI services are served (unix:// or tcp://)")
	fs.BoolVar(&o.controller, "controller", false, "serve the controller service (the Deployment beside csi-provisioner, -attacher and -resizer)")
	fs.BoolVar(&o.node, "node", false, "serve the node service (the DaemonSet beside node-driver-registrar)")
	fs.StringVar(&o.nodeName, "node-name", os.Getenv("NODE_NAME"), "this node's name (default: $NODE_NAME)")
	fs.StringVar(&o.hostNQNFile, "hostnqn-file", "/etc/nvme/hostnqn", "the node's NVMe host NQN; created (UUID-based) when missing")
	fs.StringVar(&o.stateDir, "state-dir", "/var/lib/kubelet/plugins/csi.flint.io/volumes", "where the node service keeps what it staged")
	fs.BoolVar(&o.followPaths, "follow-paths", true, "watch the Volumes staged here and connect a moved target's new path (needs the Kubernetes API)")
	fs.DurationVar(&o.fabrics.CtrlLossTimeout, "ctrl-loss-tmo", 10*time.Minute, "how long the kernel reconnects a lost path before it gives the path up; I/O waits meanwhile (negative: forever)")
	fs.DurationVar(&o.fabrics.ReconnectDelay, "reconnect-delay", 2*time.Second, "the wait between reconnect attempts")
	fs.DurationVar(&o.fabrics.FastIOFailTimeout, "fast-io-fail-tmo", 0, "fail I/O on a lost path after this long instead of waiting for a reconnect or a moved target (0: never)")
	logOpts := zap.Options{}
	logOpts.BindFlags(fs)
	cmd := &cli.Command{
		Name:        "csi-driver",
		Summary:     "the csi.flint.io CSI driver (controller and node services)",
		Description: "Runs as the CSI controller Deployment (--controller, beside the provisioner, attacher and resizer sidecars) and as the node DaemonSet (--node) that connects volumes with the kernel NVMe-oF host.",
		Flags:       fs,
	}
	cmd.Main(func() error {
		if o.controller == o.node {
			return errors.New("say which service to serve: --controller or --node")
		}
		ctrl.SetLogger(zap.New(zap.UseFlagOptions(&logOpts)))
		return run(ctrl.SetupSignalHandler(), o, ctrl.Log.WithName("csi"))
	})
}

func run(ctx context.Context, o options, log logr.Logger) error {
	g, ctx := errgroup.WithContext(ctx)
	var ids = &csi.Identity{}
	var cs *csi.Controller
	var ns *csi.Node
	if o.controller {
		cfg, err := ctrl.GetConfig()
		if err != nil {
			return fmt.Errorf("find the cluster (kubeconfig or in-cluster): %w", err)
		}
		scheme, err := flintScheme()
		if err != nil {
			return err
		}
		var c cache.Cache
		if cs, c, err = csi.NewClusterController(cfg, scheme, 2*time.Minute); err != nil {
			return err
		}
		g.Go(func() error { return c.Start(ctx) })
		ids.Ready = func() bool { return c.WaitForCacheSync(ctx) }
	}
	if o.node {
		if o.nodeName == "" {
			return errors.New("--node-name (or $NODE_NAME from the downward API) is required")
		}
		hostNQN, err := nvmeof.HostNQN(o.hostNQNFile)
		if err != nil {
			return err
		}
		hostID, err := nvmeof.HostID(hostNQN, filepath.Join(filepath.Dir(o.hostNQNFile), "hostid"))
		if err != nil {
			return err
		}
		attacher := &csi.FabricAttacher{Host: &nvmeof.Host{Sysfs: "/sys", Dev: "/dev", HostNQN: hostNQN, HostID: hostID, Options: o.fabrics}, DeviceTimeout: 30 * time.Second}
		ns = &csi.Node{
			NodeID: hostNQN, NodeName: o.nodeName, Attacher: attacher, StateDir: o.stateDir, ResizeTimeout: 30 * time.Second,
			Mounter: mount.NewSafeFormatAndMount(mount.New(""), utilexec.New()),
		}
		cfg, cfgErr := ctrl.GetConfig()
		if cfgErr == nil {
			if ns.Zone, err = nodeZone(ctx, cfg, o.nodeName); err != nil {
				return err
			}
		}
		log.Info("node", "name", o.nodeName, "zone", ns.Zone, "hostNQN", hostNQN)
		if o.followPaths {
			if cfgErr != nil {
				return fmt.Errorf("find the cluster to watch Volumes (or --follow-paths=false): %w", cfgErr)
			}
			scheme, err := flintScheme()
			if err != nil {
				return err
			}
			c, err := cache.New(cfg, cache.Options{Scheme: scheme})
			if err != nil {
				return err
			}
			g.Go(func() error { return c.Start(ctx) })
			ns.Volumes = c
			f := &csi.PathFollower{Node: ns, Follower: attacher, Cache: c, Resync: 30 * time.Second, Log: log.WithName("paths")}
			g.Go(func() error { return f.Run(ctx) })
		}
	}
	lis, err := csi.Listen(o.endpoint)
	if err != nil {
		return err
	}
	srv := csi.NewServer(log, ids, cs, ns)
	g.Go(func() error {
		<-ctx.Done()
		srv.GracefulStop()
		return nil
	})
	g.Go(func() error { return srv.Serve(lis) })
	log.Info("serving", "endpoint", o.endpoint, "controller", o.controller, "node", o.node)
	return g.Wait()
}

func flintScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, flintv1.AddToScheme(scheme)
}

// nodeZone is the topology.kubernetes.io/zone label of Node name; "" for
// none.
func nodeZone(ctx context.Context, cfg *rest.Config, name string) (string, error) {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return "", err
	}
	var node corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &node); err != nil {
		return "", fmt.Errorf("read Node %s for its zone label (the node plugin's ServiceAccount needs get on nodes): %w", name, err)
	}
	return node.Labels[corev1.LabelTopologyZone], nil
}
