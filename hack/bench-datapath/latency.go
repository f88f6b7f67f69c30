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
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/agentclient"
	"github.com/flint-io/flint/controllers/certs"
	"github.com/flint-io/flint/controllers/osd"
	"github.com/flint-io/flint/test/localcluster"
)

// The agreement the benchmark expects between the target's histogram and
// the initiator's figures. The target counts every I/O the initiator
// completed; its latencies leave out the fabric and the initiator, so its
// quantiles may be lower than the initiator's but not higher, beyond the
// histogram's interpolation within a bucket (bounds 1, 1.5, 2, 3, 5, 7
// per decade: up to 1.4x between two).
const (
	countTolerance    = 0.02
	quantileTolerance = 1.4
	// metricsInterval is how long the agent reuses a reading of SPDK
	// (cmd/osd-agent); two reads closer than it see the same counts.
	metricsInterval = 5 * time.Second
)

// targetLatency is what a Volume's target counted of one workload.
type targetLatency struct {
	IOs      uint64  `json:"ios"`
	ClientIO float64 `json:"clientIOs"`
	P50Us    float64 `json:"p50Us"`
	P99Us    float64 `json:"p99Us"`
	Agrees   bool    `json:"agrees"`
}

// histogram is one scrape of a Volume's flint_volume_io_latency_seconds.
type histogram struct {
	count   uint64
	buckets []bucket // by upper bound
	at      time.Time
}

type bucket struct {
	le    float64
	count uint64 // cumulative
}

// latencyReader scrapes the /metrics of a Volume's target OSD with the
// scrapers' certificate, as Prometheus would.
type latencyReader struct {
	http   *http.Client
	url    string
	volume string
}

func newLatencyReader(ctx context.Context, c *localcluster.Cluster, vol *flintv1.Volume) (*latencyReader, error) {
	var o flintv1.OSD
	if err := c.Client.Get(ctx, client.ObjectKey{Name: vol.Status.Target.OSD}, &o); err != nil {
		return nil, err
	}
	var pod corev1.Pod
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: localcluster.Namespace, Name: agentclient.PodName(&o)}, &pod); err != nil {
		return nil, err
	}
	var secret corev1.Secret
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: localcluster.Namespace, Name: certs.MetricsClientSecret}, &secret); err != nil {
		return nil, fmt.Errorf("the scrapers' certificate: %w", err)
	}
	cert, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(secret.Data[certs.CAKey]) {
		return nil, fmt.Errorf("secret %s has no CA certificate", certs.MetricsClientSecret)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots, ServerName: agentclient.ServerName(o.Name), MinVersion: tls.VersionTLS13}
	return &latencyReader{
		http:   &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 10 * time.Second},
		url:    fmt.Sprintf("https://%s:%d/metrics", pod.Status.PodIP, osd.HTTPPort),
		volume: string(vol.UID),
	}, nil
}

// read scrapes the Volume's histogram.
func (l *latencyReader) read(ctx context.Context) (histogram, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.url, nil)
	if err != nil {
		return histogram{}, err
	}
	resp, err := l.http.Do(req)
	if err != nil {
		return histogram{}, fmt.Errorf("scrape the target's agent: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return histogram{}, fmt.Errorf("scrape the target's agent: %s: %s", resp.Status, b)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return histogram{}, fmt.Errorf("parse the target's metrics: %w", err)
	}
	if f := families["flint_volume_io_latency_seconds"]; f != nil {
		for _, m := range f.Metric {
			if len(m.Label) != 1 || m.Label[0].GetValue() != l.volume {
				continue
			}
			h := histogram{count: m.Histogram.GetSampleCount(), at: time.Now()}
			for _, b := range m.Histogram.Bucket {
				h.buckets = append(h.buckets, bucket{le: b.GetUpperBound(), count: b.GetCumulativeCount()})
			}
			slices.SortFunc(h.buckets, func(a, b bucket) int { return cmp.Compare(a.le, b.le) })
			return h, nil
		}
	}
	return histogram{}, fmt.Errorf("the target's agent at %s reports no flint_volume_io_latency_seconds for volume %s", l.url, l.volume)
}

// since is what h counted after before.
func (h histogram) since(before histogram) histogram {
	out := histogram{count: h.count - before.count, at: h.at}
	for i, b := range h.buckets {
		out.buckets = append(out.buckets, bucket{le: b.le, count: b.count - before.buckets[i].count})
	}
	return out
}

// quantile is q's latency in seconds, interpolated within its bucket as
// Prometheus' histogram_quantile does; the largest bound when it lies
// above every bound.
func (h histogram) quantile(q float64) float64 {
	rank := q * float64(h.count)
	lower, below := 0.0, uint64(0)
	for _, b := range h.buckets {
		if float64(b.count) >= rank && b.count > below {
			return lower + (b.le-lower)*(rank-float64(below))/float64(b.count-below)
		}
		lower, below = b.le, b.count
	}
	return lower
}

// summary sets what the target counted of a workload beside r, the
// initiator's figures of seconds of it.
func (h histogram) summary(r result, seconds int) *targetLatency {
	t := &targetLatency{IOs: h.count, ClientIO: r.IOPS * float64(seconds), P50Us: h.quantile(0.5) * 1e6, P99Us: h.quantile(0.99) * 1e6}
	t.Agrees = math.Abs(float64(t.IOs)-t.ClientIO) <= countTolerance*t.ClientIO &&
		t.P50Us <= quantileTolerance*r.P50Us && t.P99Us <= quantileTolerance*r.P99Us
	return t
}

// printTargetLatency sets each Flint workload's target histogram beside
// the initiator's figures.
func printTargetLatency(w io.Writer, results []result) {
	_, _ = fmt.Fprintf(w, "\nflint_volume_io_latency_seconds at the target beside spdk_nvme_perf (agrees: I/O counts within %.0f%%, target quantiles at most %.1fx the initiator's):\n", 100*countTolerance, quantileTolerance)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "ROUND\tCONFIG\tWORKLOAD\tTARGET I/Os\tINITIATOR I/Os\tTARGET P50 µs\tINITIATOR P50 µs\tTARGET P99 µs\tINITIATOR P99 µs\tAGREES")
	for _, r := range results {
		if t := r.Target; t != nil {
			_, _ = fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%v\n", r.Round, r.Config, r.Workload, t.IOs, t.ClientIO, t.P50Us, r.P50Us, t.P99Us, r.P99Us, t.Agrees)
		}
	}
	_ = tw.Flush()
}
