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

package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/sync/errgroup"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	spdkclient "github.com/flint-io/flint/internal/spdk/client"
	"github.com/flint-io/flint/internal/spdk/spdktest"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
	"github.com/flint-io/flint/test/localcluster"
)

// operatorMetrics is where the operator's process serves /metrics in a
// run that measures it at rest.
const operatorMetrics = "127.0.0.1:18443"

// scraper reads the metrics of the operator's process and of the
// apiserver, and the costs the process and the SPDK doubles count.
type scraper struct {
	cluster *localcluster.Cluster
	fabric  *spdktest.Fabric
	token   string
	// operator talks to the operator's /metrics, whose certificate is
	// self-signed as in a cluster; apiserver as the cluster's admin.
	operator, apiserver *http.Client
}

// newScraper gets a token the operator's /metrics accepts, as a
// Prometheus bound to flint-metrics-reader would.
func newScraper(ctx context.Context, c *localcluster.Cluster, fabric *spdktest.Fabric) (*scraper, error) {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "flint-metrics-reader"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: localcluster.Namespace, Name: "bench-scraper"}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-scraper"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: sa.Namespace, Name: sa.Name}},
	}
	for _, o := range []client.Object{role, sa, binding} {
		if err := c.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	// A scale run outlasts a token's default hour.
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(24 * 3600))}}
	if err := c.Client.SubResource("token").Create(ctx, sa, tr); err != nil {
		return nil, fmt.Errorf("a token for the operator's /metrics: %w", err)
	}
	apiserver, err := rest.HTTPClientFor(c.Env.Config)
	if err != nil {
		return nil, err
	}
	return &scraper{
		cluster: c, fabric: fabric, token: tr.Status.Token, apiserver: apiserver,
		operator: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}, //nolint:gosec // loopback, self-signed
	}, nil
}

// sample is what the control plane has spent up to one moment.
type sample struct {
	at time.Time
	// cpu is the operator process's user and system time; rss its
	// resident memory.
	cpu time.Duration
	rss int64
	// operator is the operator's counters (counters); writes the
	// apiserver's write requests by resource; rpcs the SPDK calls each
	// double answered.
	operator map[string]float64
	writes   map[string]float64
	rpcs     map[string]uint64
}

// take samples the leading operator process now.
func (s *scraper) take(ctx context.Context) (sample, error) {
	pid := s.cluster.Operators.Pid(0)
	cpu, rss, err := processCosts(pid)
	if err != nil {
		return sample{}, err
	}
	ops, err := s.scrape(ctx, s.operator, "https://"+operatorMetrics+"/metrics", s.token)
	if err != nil {
		return sample{}, fmt.Errorf("the operator's metrics: %w", err)
	}
	api, err := s.scrape(ctx, s.apiserver, strings.TrimSuffix(s.cluster.Env.Config.Host, "/")+"/metrics", "")
	if err != nil {
		return sample{}, fmt.Errorf("the apiserver's metrics: %w", err)
	}
	return sample{at: time.Now(), cpu: cpu, rss: rss, operator: counters(ops), writes: apiserverWrites(api), rpcs: s.fabric.RPCs()}, nil
}

func (s *scraper) scrape(ctx context.Context, c *http.Client, url, token string) ([]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s: %s", url, resp.Status, bytes.TrimSpace(body))
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out := make([]*dto.MetricFamily, 0, len(families))
	for _, f := range families {
		out = append(out, f)
	}
	return out, nil
}

// processCosts reads pid's CPU time (user and system) and resident
// memory from /proc.
func processCosts(pid int) (time.Duration, int64, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command may hold spaces; the fields after it do not.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	const ticks = 100 // USER_HZ on Linux
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	var rss int64
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			rss = kb * 1024
		}
	}
	return time.Duration(utime+stime) * time.Second / ticks, rss, nil
}

// apiserverWrites counts the apiserver's write requests by resource (and
// subresource: a status write is "volumes/status").
func apiserverWrites(families []*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "apiserver_request_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := labelsOf(m)
			switch labels["verb"] {
			case "POST", "PUT", "PATCH", "DELETE", "APPLY":
				r := labels["resource"]
				if sub := labels["subresource"]; sub != "" {
					r += "/" + sub
				}
				out[r] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}

func labelsOf(m *dto.Metric) map[string]string {
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	return labels
}

// atRest samples the control plane before and after d with nothing
// changing, and prints what it cost.
func atRest(ctx context.Context, s *scraper, d, lease time.Duration, osds int) error {
	// What the last changes queued (a Snapshot's copies are counted
	// after its Volume resumed) is worked off first.
	if err := waitFor(ctx, "the operator's queues to empty", func() (bool, error) {
		families, err := s.scrape(ctx, s.operator, "https://"+operatorMetrics+"/metrics", s.token)
		return err == nil && queued(families) == 0, err
	}); err != nil {
		return err
	}
	fmt.Printf("at rest for %s:\n", d)
	before, err := s.take(ctx)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
	}
	after, err := s.take(ctx)
	if err != nil {
		return err
	}
	secs := after.at.Sub(before.at).Seconds()
	fmt.Printf("  operator: %.1f%% of a core, RSS %d MiB\n", 100*(after.cpu-before.cpu).Seconds()/secs, after.rss>>20)
	calls := after.operator["agent"] - before.operator["agent"]
	fmt.Printf("  agent calls: %.2f/s per OSD, %.1f per OSD per lease period (%s) (%s)\n",
		calls/secs/float64(osds), calls/float64(osds)/(secs/lease.Seconds()), lease, byMethod(before.operator, after.operator, "agent "))
	var rpcs []float64
	for sock, n := range after.rpcs {
		rpcs = append(rpcs, float64(n-before.rpcs[sock])/secs)
	}
	slices.Sort(rpcs)
	var sum float64
	for _, r := range rpcs {
		sum += r
	}
	fmt.Printf("  SPDK RPCs: %.2f/s per OSD on average, %.2f/s at most\n", sum/float64(len(rpcs)), rpcs[len(rpcs)-1])
	var writes float64
	for _, n := range after.writes {
		writes += n
	}
	for _, n := range before.writes {
		writes -= n
	}
	fmt.Printf("  apiserver writes: %.2f/s (%s)\n", writes/secs, byMethod(before.writes, after.writes, ""))
	return nil
}

// byMethod lists the counters of prefix that rose between before and
// after, most first.
func byMethod(before, after map[string]float64, prefix string) string {
	type rise struct {
		name string
		n    float64
	}
	var rises []rise
	for k, n := range after {
		if name, ok := strings.CutPrefix(k, prefix); ok && n > before[k] {
			rises = append(rises, rise{name, n - before[k]})
		}
	}
	if len(rises) == 0 {
		return "none"
	}
	slices.SortFunc(rises, func(a, b rise) int { return int(b.n - a.n) })
	parts := make([]string, 0, len(rises))
	for _, r := range rises {
		parts = append(parts, fmt.Sprintf("%s %.0f", r.name, r.n))
	}
	return strings.Join(parts, ", ")
}

// restart stops the operator's process as a rollout does (SIGTERM: it
// gives up leading at once) and times its successor until it has
// reconciled every Volume and Snapshot once: every object its informers
// listed was queued, and the queues are empty.
func restart(ctx context.Context, s *scraper, volumes, snapshots int) error {
	old := s.cluster.Operators.Pid(0)
	start := time.Now()
	if err := s.cluster.Operators.Signal(0, syscall.SIGTERM); err != nil {
		return err
	}
	err := waitFor(ctx, "the restarted operator to observe every Volume", func() (bool, error) {
		if s.cluster.Operators.Pid(0) == old {
			return false, nil
		}
		families, err := s.scrape(ctx, s.operator, "https://"+operatorMetrics+"/metrics", s.token)
		if err != nil {
			return false, nil // not serving yet
		}
		return observedAll(families, "volume", volumes) && observedAll(families, "snapshot", snapshots), nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("operator restart: every Volume and Snapshot reconciled again %s after the old process was told to stop\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// queued counts the objects waiting in the controllers' queues.
func queued(families []*dto.MetricFamily) float64 {
	var depth float64
	for _, f := range families {
		if f.GetName() == "workqueue_depth" {
			for _, m := range f.GetMetric() {
				depth += m.GetGauge().GetValue()
			}
		}
	}
	return depth
}

// observedAll says whether controller has reconciled at least n objects
// and has none queued: its informer queued every object it listed at
// start, so each has been taken by a worker.
func observedAll(families []*dto.MetricFamily, controller string, n int) bool {
	var reconciled, depth float64
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := labelsOf(m)
			switch {
			case f.GetName() == "controller_runtime_reconcile_total" && labels["controller"] == controller:
				reconciled += m.GetCounter().GetValue()
			case f.GetName() == "workqueue_depth" && labels["name"] == controller:
				depth += m.GetGauge().GetValue()
			}
		}
	}
	return reconciled >= float64(n) && depth == 0
}

// snapshotAll takes one Snapshot of each Volume and waits until every
// one is ready to use.
func snapshotAll(ctx context.Context, c *localcluster.Cluster, volumes []string) error {
	start := time.Now()
	var creators errgroup.Group
	creators.SetLimit(16)
	for _, v := range volumes {
		creators.Go(func() error {
			snap := &flintv1.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: v}, Spec: flintv1.SnapshotSpec{Volume: v}}
			if err := c.Client.Create(ctx, snap); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
			return nil
		})
	}
	if err := creators.Wait(); err != nil {
		return err
	}
	// Every few seconds: listing 10,000 Snapshots is work for the
	// apiserver and this process, whose SPDK doubles the cuts wait on.
	lastPrint := start
	err := waitEvery(ctx, "every Snapshot ready to use", 5*time.Second, func() (bool, error) {
		var l flintv1.SnapshotList
		if err := c.Client.List(ctx, &l); err != nil {
			return false, err
		}
		ready := 0
		for _, s := range l.Items {
			if s.Status.ReadyToUse {
				ready++
			}
		}
		if time.Since(lastPrint) >= time.Minute {
			lastPrint = time.Now()
			fmt.Printf("  %s: %d of %d Snapshots ready to use\n", time.Since(start).Round(time.Second), ready, len(volumes))
		}
		return ready == len(volumes), nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("snapshots: %d taken and ready to use in %s\n", len(volumes), time.Since(start).Round(time.Millisecond))
	return nil
}

// repairDrift deletes, behind the operator's back, the target of Volume
// name on its OSD's SPDK (as an SPDK restarted between two observations
// loses it) and times how long the target takes to be back.
func repairDrift(ctx context.Context, c *localcluster.Cluster, name string) error {
	var v flintv1.Volume
	if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, &v); err != nil {
		return err
	}
	spdk := spdkclient.New(c.Nodes.Socket("osd-" + v.Status.Target.OSD))
	defer func() { _ = spdk.Close() }()
	uid := string(v.UID)
	if err := spdk.NvmfDeleteSubsystem(ctx, agentv1.VolumeNQN(uid)); err != nil {
		return fmt.Errorf("delete the target's subsystem: %w", err)
	}
	raid := "raid_" + uid
	if err := spdk.BdevRaidDelete(ctx, raid); err != nil {
		return fmt.Errorf("delete the target's raid: %w", err)
	}
	start := time.Now()
	if err := waitFor(ctx, "the deleted target to be back", func() (bool, error) {
		subs, err := spdk.NvmfGetSubsystems(ctx, agentv1.VolumeNQN(uid))
		return err == nil && len(subs) == 1 && len(subs[0].Namespaces) == 1, nil
	}); err != nil {
		return err
	}
	fmt.Printf("drift: the target of Volume %s, deleted from its SPDK, served again %s later\n", name, time.Since(start).Round(100*time.Millisecond))
	return nil
}
