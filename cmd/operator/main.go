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

// Command operator reconciles Pools into OSDs and OSDs into the pods that
// run SPDK and the OSD agent, and reports their health.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/flint-io/flint/controllers"
	"github.com/flint-io/flint/internal/cli"
)

func main() {
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	o := controllers.Options{}
	namespace := os.Getenv("POD_NAMESPACE")
	if namespace == "" {
		namespace = "flint-system"
	}
	fs.StringVar(&o.Namespace, "namespace", namespace, "the namespace of OSD pods, their Secrets and the CA (default: $POD_NAMESPACE)")
	fs.StringVar(&o.LeaderIdentity, "leader-identity", os.Getenv("POD_NAME"), "who this operator is in the leader election, unique among live operators; a restart under the same identity leads again at once (default: $POD_NAME; empty: the host name and a random suffix)")
	fs.StringVar(&o.OSDImage, "osd-image", "ghcr.io/flint-io/flint-osd:latest", "the image with SPDK and osd-agent")
	fs.StringVar(&o.PriorityClass, "osd-priority-class", "flint-osd", "the PriorityClass of OSD pods; created when missing")
	fs.Func("osd-image-pull-secrets", "comma-separated Secrets of the operator's namespace that OSD pods pull --osd-image with", func(v string) error {
		o.OSDImagePullSecrets = strings.FieldsFunc(v, func(r rune) bool { return r == ',' })
		return nil
	})
	fs.StringVar(&o.ServiceAccount, "osd-service-account", "flint-osd", "the ServiceAccount of OSD pods (they need no API access)")
	fs.IntVar(&o.AgentPort, "agent-port", 9440, "where OSD agents serve gRPC")
	fs.DurationVar(&o.Resync, "resync", 30*time.Second, "how often each OSD's status and inventory are read from its agent: a replica, target or Snapshot copy the inventory lacks re-drives its Volume or Snapshot (Ready ones are not polled)")
	fs.DurationVar(&o.ReplicaGrace, "replica-grace", 5*time.Minute, "how long a lost replica may come back (and rebuild in place) before a replacement is placed on another OSD")
	fs.DurationVar(&o.TargetGrace, "target-grace", 30*time.Second, "how long a volume target's OSD may stop serving, and its lease go unrenewed, before the target moves to another replica's OSD; at least agent-lease x 1.25 + fence-probe-timeout + 2s")
	fs.DurationVar(&o.StandbyWait, "standby-wait", 15*time.Second, "how long a planned target move (a rolling update, a drain) waits for the published hosts to connect to the new target's standby before it stops the old one, so that they follow it without a new connection; 0 moves targets without a standby")
	fs.DurationVar(&o.OrphanGrace, "orphan-grace", 24*time.Hour, "how long an OSD keeps an lvol that no Volume or Snapshot claims (Event OrphanFound, metric flint_osd_orphans) before it is deleted: objects restored from a backup get new uids and leave their old data so; 0 deletes at once")
	fs.Func("osd-agent-cpu", "the CPU of each OSD pod's agent container, request and limit, a fraction of a core (a whole core would be taken exclusively under the static CPU manager): the agent answers the lease renewals, and one throttled for long lets its lease lapse and its targets fence (default 100m)", func(s string) (err error) {
		o.AgentCPU, err = resource.ParseQuantity(s)
		return err
	})
	fs.DurationVar(&o.SPDKHangTimeout, "spdk-hang-timeout", 10*time.Second, "how long an OSD's SPDK may go without answering, lease or not, before the fence probe has the kubelet restart it, so that its targets are re-assembled in place instead of waiting to move; at least twice fence-probe-timeout in whole seconds (4s at the least), 0 to leave a frozen SPDK to the lease (changing it rolls the OSD pods)")
	fs.DurationVar(&o.FenceProbeTimeout, "fence-probe-timeout", 2*time.Second, "how long one run of the SPDK container's fence probe may take (whole seconds, at least 2s) before the kubelet takes it as failed and kills SPDK; raise it on nodes too busy to answer an HTTP request that fast, and target-grace with it")
	fs.DurationVar(&o.AgentLease, "agent-lease", 20*time.Second, "how long an OSD serves its volume targets without hearing from the operator before it fences them, unless --hold-targets")
	fs.BoolVar(&o.HoldTargets, "hold-targets", true, "let a target whose OSD's lease lapsed keep its hosts while the members of its raid answer it, so that host I/O outlives an operator outage; an unplanned move cuts the old target off a member and waits out the hold either way. Turn it off, and wait one agent-lease, before rolling back to an operator from before it")
	fs.IntVar(&o.VolumeWorkers, "volume-workers", 16, "how many Volumes reconcile at once (each mostly waits on agents and the apiserver)")
	fs.IntVar(&o.SnapshotWorkers, "snapshot-workers", 4, "how many Snapshots reconcile at once; those of one Volume go one at a time (a cut pauses the Volume's I/O)")
	fs.BoolVar(&o.NetworkPolicy, "osd-network-policy", true, "keep NetworkPolicy flint-osd: only the operator reaches the agents' API, only namespaces labelled metrics=enabled their /metrics, only the nodes and OSDs their NVMe-oF port")
	qps := fs.Float64("kube-api-qps", 200, "requests per second to the apiserver (a Volume costs about four writes to create): it bounds how fast a burst of Volumes is provisioned")
	fs.IntVar(&o.APIBurst, "kube-api-burst", 400, "requests above kube-api-qps allowed in a burst")
	metricsAddr := fs.String("metrics-bind-address", ":8443", "where /metrics is served over HTTPS to authorized bearer tokens (ClusterRole flint-metrics-reader)")
	probeAddr := fs.String("health-probe-bind-address", ":8081", "where /healthz and /readyz are served")
	logOpts := zap.Options{}
	logOpts.BindFlags(fs)
	cmd := &cli.Command{
		Name:        "operator",
		Summary:     "reconciles Pools into OSDs and OSD pods, and Volumes into replicas and targets",
		Description: "Runs as a leader-elected Deployment. Watches Pools, OSDs, Nodes and Volumes cluster-wide and the OSD pods and Secrets of its namespace; talks to OSD agents over mutual TLS only.",
		Flags:       fs,
	}
	cmd.Main(func() error {
		o.APIQPS = float32(*qps)
		ctrl.SetLogger(zap.New(zap.UseFlagOptions(&logOpts)))
		cfg, err := ctrl.GetConfig()
		if err != nil {
			return fmt.Errorf("find the cluster (kubeconfig or in-cluster): %w", err)
		}
		mgr, err := controllers.NewManager(cfg, o, ctrl.Options{
			Metrics:                controllers.SecureMetrics(*metricsAddr),
			HealthProbeBindAddress: *probeAddr,
			// A successor leads at once after a clean stop: main returns
			// as soon as the manager has stopped, so nothing acts after.
			LeaderElectionReleaseOnCancel: true,
		})
		if err != nil {
			return err
		}
		return mgr.Start(ctrl.SetupSignalHandler())
	})
}
