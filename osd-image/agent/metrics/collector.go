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

// Package metrics exports what SPDK's user-space driver hides from iostat:
// per-bdev I/O counters and latency, the lvstore's capacity, the device's
// volatile write cache, and whether SPDK answers. SPDK is read at most once per interval, whatever the
// number of scrapes: its RPC thread also serves the agent, and a scraper
// must not be able to starve it.
package metrics

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flint-io/flint/internal/spdk/types"
	"github.com/flint-io/flint/osd-image/agent/storage"
)

const writeCacheHelp = "1 when the device's volatile write cache is on (only with powerLossProtection declared), 0 when it is off or absent; missing for aio, uring and malloc devices, whose cache the kernel owns."

// Source is what the collector reads; the SPDK client and the OSD provide
// it.
type Source interface {
	BdevGetIostat(ctx context.Context, name string) (types.Iostat, error)
	BdevGetBdevs(ctx context.Context, name string) ([]types.Bdev, error)
	Lvstore(ctx context.Context) (types.Lvstore, error)
	// WriteCache is the device's volatile write cache as the agent last
	// found or left it.
	WriteCache() storage.WriteCache
	// VolumeBdevs maps each volume with a target here to the bdev its
	// hosts' I/O reaches first.
	VolumeBdevs(ctx context.Context) (map[string]string, error)
	BdevGetHistogram(ctx context.Context, name string) (types.Histogram, error)
}

// readTimeout bounds one reading's calls to SPDK.
const readTimeout = 5 * time.Second

var (
	bdevLabels = []string{"bdev"}

	spdkUp = prometheus.NewDesc("flint_osd_spdk_up", "1 when SPDK answered the latest reading, else 0.", nil, nil)

	readOps      = prometheus.NewDesc("flint_bdev_read_ops_total", "Read operations completed by the bdev.", bdevLabels, nil)
	writeOps     = prometheus.NewDesc("flint_bdev_write_ops_total", "Write operations completed by the bdev.", bdevLabels, nil)
	readBytes    = prometheus.NewDesc("flint_bdev_read_bytes_total", "Bytes read from the bdev.", bdevLabels, nil)
	writeBytes   = prometheus.NewDesc("flint_bdev_written_bytes_total", "Bytes written to the bdev.", bdevLabels, nil)
	readLatency  = prometheus.NewDesc("flint_bdev_read_latency_seconds_total", "Time spent in reads; divide its rate by the read ops rate for the mean latency.", bdevLabels, nil)
	writeLatency = prometheus.NewDesc("flint_bdev_write_latency_seconds_total", "Time spent in writes; divide its rate by the write ops rate for the mean latency.", bdevLabels, nil)
	maxRead      = prometheus.NewDesc("flint_bdev_read_latency_max_seconds", "Longest read since the bdev appeared.", bdevLabels, nil)
	maxWrite     = prometheus.NewDesc("flint_bdev_write_latency_max_seconds", "Longest write since the bdev appeared.", bdevLabels, nil)

	volumeLatency = prometheus.NewDesc("flint_volume_io_latency_seconds",
		"Latency of the volume's I/O at its target, from arrival to completion, read from SPDK's histogram of the bdev the target exports; each OSD reports the volumes it serves the target of.",
		[]string{"volume"}, nil)

	writeCache = prometheus.NewDesc("flint_osd_volatile_write_cache_enabled", writeCacheHelp, nil, nil)

	lvsTotal = prometheus.NewDesc("flint_lvstore_total_bytes", "Data capacity of the OSD's lvstore.", nil, nil)
	lvsFree  = prometheus.NewDesc("flint_lvstore_free_bytes", "Unallocated capacity of the OSD's lvstore.", nil, nil)
)

// Collector is a prometheus.Collector over one SPDK.
type Collector struct {
	src        Source
	interval   time.Duration
	now        func() time.Time
	scrapeErrs prometheus.Counter

	// mu makes concurrent scrapes share one reading.
	mu   sync.Mutex
	last *reading
}

// reading is what one visit to SPDK found.
type reading struct {
	at    time.Time
	up    bool
	stat  types.Iostat
	names map[string]string // lvol bdev name -> lvstore/lvol alias
	lvs   *types.Lvstore
	// writeCache is the device's volatile write cache.
	writeCache storage.WriteCache
	// latency is each volume target's histogram.
	latency map[string]latencyHistogram
}

// latencyHistogram is a histogram in Prometheus' terms.
type latencyHistogram struct {
	count   uint64
	sum     float64
	buckets map[float64]uint64 // upper bound in seconds -> cumulative count
}

// latencyBounds are the histogram's upper bounds: 1, 1.5, 2, 3, 5 and 7
// per decade from 1 µs to 1 s, fine enough for a p50 and a p99 of NVMe
// latencies.
var latencyBounds = func() []float64 {
	var out []float64
	for decade := 1e-6; decade < 1; decade *= 10 {
		for _, m := range []float64{1, 1.5, 2, 3, 5, 7} {
			out = append(out, m*decade)
		}
	}
	return append(out, 1)
}()

// NewCollector returns a collector reading src at most once per interval.
func NewCollector(src Source, interval time.Duration) *Collector {
	return &Collector{src: src, interval: interval, now: time.Now, scrapeErrs: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "flint_osd_spdk_rpc_errors_total", Help: "SPDK calls of readings that failed.",
	})}
}

// Describe sends every metric's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{spdkUp, readOps, writeOps, readBytes, writeBytes, readLatency, writeLatency, maxRead, maxWrite, volumeLatency, writeCache, lvsTotal, lvsFree} {
		ch <- d
	}
	c.scrapeErrs.Describe(ch)
}

// Collect sends the metrics of the latest reading, reading SPDK first if
// that one is older than the interval. Lvol bdevs are labelled with their
// lvstore/lvol alias, other bdevs with their name.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	r := c.reading()
	defer c.scrapeErrs.Collect(ch)
	if !r.up {
		ch <- prometheus.MustNewConstMetric(spdkUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(spdkUp, prometheus.GaugeValue, 1)
	seconds := func(ticks uint64) float64 { return float64(ticks) / float64(r.stat.TickRate) }
	for _, b := range r.stat.Bdevs {
		label := b.Name
		if alias, ok := r.names[b.Name]; ok {
			label = alias
		}
		for _, m := range []struct {
			desc *prometheus.Desc
			kind prometheus.ValueType
			v    float64
		}{
			{readOps, prometheus.CounterValue, float64(b.NumReadOps)},
			{writeOps, prometheus.CounterValue, float64(b.NumWriteOps)},
			{readBytes, prometheus.CounterValue, float64(b.BytesRead)},
			{writeBytes, prometheus.CounterValue, float64(b.BytesWritten)},
			{readLatency, prometheus.CounterValue, seconds(b.ReadLatencyTicks)},
			{writeLatency, prometheus.CounterValue, seconds(b.WriteLatencyTicks)},
			{maxRead, prometheus.GaugeValue, seconds(b.MaxReadLatencyTicks)},
			{maxWrite, prometheus.GaugeValue, seconds(b.MaxWriteLatencyTicks)},
		} {
			ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.v, label)
		}
	}
	for volume, h := range r.latency {
		ch <- prometheus.MustNewConstHistogram(volumeLatency, h.count, h.sum, h.buckets, volume)
	}
	switch r.writeCache {
	case storage.WriteCacheAbsent, storage.WriteCacheDisabled:
		ch <- prometheus.MustNewConstMetric(writeCache, prometheus.GaugeValue, 0)
	case storage.WriteCacheEnabled:
		ch <- prometheus.MustNewConstMetric(writeCache, prometheus.GaugeValue, 1)
	}
	if r.lvs != nil {
		ch <- prometheus.MustNewConstMetric(lvsTotal, prometheus.GaugeValue, float64(r.lvs.TotalBytes()))
		ch <- prometheus.MustNewConstMetric(lvsFree, prometheus.GaugeValue, float64(r.lvs.FreeBytes()))
	}
}

// reading returns the latest reading, taking a new one when it is older
// than the interval; scrapes arriving meanwhile wait for it.
func (c *Collector) reading() *reading {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.last != nil && now.Sub(c.last.at) < c.interval {
		return c.last
	}
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	r := &reading{at: now}
	c.last = r
	stat, err := c.src.BdevGetIostat(ctx, "")
	if err != nil {
		c.scrapeErrs.Inc()
		return r
	}
	r.up, r.stat, r.writeCache = true, stat, c.src.WriteCache()
	r.names = c.labels(ctx)
	if lvs, err := c.src.Lvstore(ctx); err == nil {
		r.lvs = &lvs
	} else {
		c.scrapeErrs.Inc()
	}
	r.latency = c.latency(ctx)
	return r
}

// latency reads the histogram of every volume target. One that cannot be
// read is left out of this reading: a target being set up or moved has
// none for a moment.
func (c *Collector) latency(ctx context.Context) map[string]latencyHistogram {
	volumes, err := c.src.VolumeBdevs(ctx)
	if err != nil {
		c.scrapeErrs.Inc()
		return nil
	}
	out := map[string]latencyHistogram{}
	for volume, bdev := range volumes {
		h, err := c.src.BdevGetHistogram(ctx, bdev)
		if err != nil {
			c.scrapeErrs.Inc()
			continue
		}
		ph, err := toPrometheus(h)
		if err != nil {
			c.scrapeErrs.Inc()
			continue
		}
		out[volume] = ph
	}
	return out
}

// toPrometheus folds SPDK's buckets into latencyBounds. An SPDK bucket
// that straddles a bound counts above it, so no bound ever undercounts
// the latency it names by more than one SPDK bucket (3%); the sum takes
// each bucket's middle.
func toPrometheus(h types.Histogram) (latencyHistogram, error) {
	buckets, err := h.Buckets()
	if err != nil {
		return latencyHistogram{}, err
	}
	if h.TscRate == 0 {
		return latencyHistogram{}, errors.New("histogram without a tick rate")
	}
	out := latencyHistogram{buckets: make(map[float64]uint64, len(latencyBounds))}
	perSecond := float64(h.TscRate)
	next := 0
	for i, b := range buckets {
		end := float64(b.EndTicks) / perSecond
		for next < len(latencyBounds) && latencyBounds[next] < end {
			out.buckets[latencyBounds[next]] = out.count
			next++
		}
		out.count += b.Count
		mid := (float64(b.StartTicks) + float64(b.EndTicks)) / 2
		if i == len(buckets)-1 {
			mid = float64(b.StartTicks) // open above: everything beyond the last range
		}
		out.sum += float64(b.Count) * mid / perSecond
	}
	for ; next < len(latencyBounds); next++ {
		out.buckets[latencyBounds[next]] = out.count
	}
	return out, nil
}

// labels maps bdev names to their first alias where the bdev is an lvol.
func (c *Collector) labels(ctx context.Context) map[string]string {
	bdevs, err := c.src.BdevGetBdevs(ctx, "")
	if err != nil {
		c.scrapeErrs.Inc()
		return nil
	}
	names := map[string]string{}
	for _, b := range bdevs {
		if b.DriverSpecific.Lvol != nil && len(b.Aliases) > 0 {
			names[b.Name] = b.Aliases[0]
		}
	}
	return names
}

// FencedTargets reports how many of the OSD's targets are fenced: their
// lease lapsed and no confirmed EnsureTarget lifted the fence since, so
// their hosts' I/O waits. fenced counts them.
func FencedTargets(fenced func() int) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "flint_osd_fenced_targets",
		Help: "Targets on this OSD fenced when its lease lapsed and not confirmed since: their hosts' I/O waits.",
	}, func() float64 { return float64(fenced()) })
}
