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

// Package metrics holds the operator's Prometheus metrics, registered on
// controller-runtime's registry (served at the manager's /metrics next to
// controller_runtime_reconcile_errors_total per controller).
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// OperatorLeading is 1 while this operator replica leads: it
	// reconciles and renews the agents' leases. With no replica at 1, the
	// agents' leases lapse and every target fences.
	OperatorLeading = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "flint_operator_leading", Help: "1 while this operator replica leads (reconciles, and renews the OSD agents' leases), else 0.",
	})
	// PoolCapacity is a Pool's raw, usable and allocated bytes.
	PoolCapacity = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flint_pool_capacity_bytes", Help: "Pool capacity by kind: raw (Ready OSDs), usable (raw / replicas), allocated (sum of volume sizes).",
	}, []string{"pool", "kind"})
	// PoolOSDs counts a Pool's OSDs by phase.
	PoolOSDs = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flint_pool_osds", Help: "OSDs of a Pool by phase.",
	}, []string{"pool", "phase"})
	// PoolVolumes counts a Pool's Volumes by phase.
	PoolVolumes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flint_pool_volumes", Help: "Volumes of a Pool by phase.",
	}, []string{"pool", "phase"})
	// PoolRolloutOSDs counts the OSDs a Pool's rollout stops now and those
	// that wait their turn.
	PoolRolloutOSDs = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flint_pool_rollout_osds", Help: "OSDs of a Pool that its rollout stops now (state stopping) or that wait to stop (state waiting).",
	}, []string{"pool", "state"})
	// PoolRolloutBlocked is 1 while OSDs wait to stop and none can: a
	// Volume would keep too few in-sync replicas.
	PoolRolloutBlocked = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flint_pool_rollout_blocked", Help: "1 while a Pool's OSDs wait to stop and the rollout cannot stop any (condition RollingOut, reason RolloutBlocked).",
	}, []string{"pool"})
	// ReplicaRebuild is the progress of every replica being rebuilt.
	ReplicaRebuild = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flint_volume_replica_rebuild_percent", Help: "Rebuild progress of a Volume's replica, by the OSD it is on; no series when none rebuilds.",
	}, []string{"volume", "pool", "claim_namespace", "claim", "osd"})
	// VolumeInfo names every Volume beside its uid, which is how the
	// agents' per-volume series (flint_volume_io_latency_seconds) know it:
	// they serve by uid and know nothing of Kubernetes names.
	VolumeInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flint_volume_info", Help: "1 for every Volume: its uid (the label the agents' per-volume series carry as volume), name, Pool and the PersistentVolumeClaim it was provisioned for (empty for a Volume made by hand). Join on uid to name the agents' series: ... * on(volume) group_left(claim_namespace, claim) label_replace(flint_volume_info, \"volume\", \"$1\", \"uid\", \"(.*)\").",
	}, []string{"volume", "uid", "pool", "claim_namespace", "claim"})
	// PreflightFailures is 1 for every preflight reason that blocks a Pool.
	PreflightFailures = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flint_pool_preflight_failures", Help: "1 while a preflight check fails for a Pool, by reason.",
	}, []string{"pool", "reason"})
	// AgentRequests counts the operator's calls to OSD agents by method
	// and gRPC code: what each Volume costs the agents, and which fail.
	AgentRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flint_agent_requests_total", Help: "Calls from the operator to OSD agents, by gRPC method and status code.",
	}, []string{"method", "code"})
	// OSDOrphans counts the lvols an OSD holds that no Volume or Snapshot
	// claims and that wait out the orphan grace before they are deleted.
	OSDOrphans = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flint_osd_orphans", Help: "Lvols on an OSD that no Volume or Snapshot claims, kept until the orphan grace ends, by kind (replica, snapshot-copy).",
	}, []string{"osd", "kind"})
	// AgentRequestSeconds is how long the operator's calls to OSD agents
	// take, by method.
	AgentRequestSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "flint_agent_request_duration_seconds", Help: "Duration of the operator's calls to OSD agents, by gRPC method.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 8), // 1 ms to 16 s
	}, []string{"method"})
)

func init() {
	metrics.Registry.MustRegister(Collectors()...)
}

// Collectors are the operator's own metrics.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{OperatorLeading, PoolCapacity, PoolOSDs, PoolVolumes, PoolRolloutOSDs, PoolRolloutBlocked, PreflightFailures, ReplicaRebuild, VolumeInfo, OSDOrphans, AgentRequests, AgentRequestSeconds}
}

// Volume is what the metrics say of a Volume: its names.
type Volume struct {
	Name, UID, Pool string
	// ClaimNamespace and Claim name its PersistentVolumeClaim, if any.
	ClaimNamespace, Claim string
}

// ObserveVolume records v's names, and the rebuild progress of its
// replicas: one series per replica that rebuilds (OSD to percent), none
// for the others. The names never change (they are immutable), so their
// series is set in place, never dropped between two scrapes.
func ObserveVolume(v Volume, rebuilding map[string]int32) {
	VolumeInfo.WithLabelValues(v.Name, v.UID, v.Pool, v.ClaimNamespace, v.Claim).Set(1)
	ReplicaRebuild.DeletePartialMatch(prometheus.Labels{"volume": v.Name})
	for osd, percent := range rebuilding {
		ReplicaRebuild.WithLabelValues(v.Name, v.Pool, v.ClaimNamespace, v.Claim, osd).Set(float64(percent))
	}
}

// ForgetVolume drops a deleted Volume's series.
func ForgetVolume(name string) {
	for _, g := range []*prometheus.GaugeVec{VolumeInfo, ReplicaRebuild} {
		g.DeletePartialMatch(prometheus.Labels{"volume": name})
	}
}

// ForgetOSD drops a deleted OSD's series.
func ForgetOSD(osd string) {
	OSDOrphans.DeletePartialMatch(prometheus.Labels{"osd": osd})
}

// ForgetPool drops a deleted Pool's series.
func ForgetPool(pool string) {
	for _, v := range []*prometheus.GaugeVec{PoolCapacity, PoolOSDs, PoolVolumes, PoolRolloutOSDs, PoolRolloutBlocked, PreflightFailures} {
		v.DeletePartialMatch(prometheus.Labels{"pool": pool})
	}
}
