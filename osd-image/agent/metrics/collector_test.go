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

package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/flint-io/flint/internal/spdk/types"
	"github.com/flint-io/flint/osd-image/agent/storage"
)

// fakeSource answers with an iostat SPDK v25.09 recorded after 4 s of
// randrw I/O on an lvol (testdata/iostat-lvol.json), and with the
// histograms given, one volume target per bdev.
type fakeSource struct {
	stat       types.Iostat
	down       bool
	histograms map[string]types.Histogram // bdev -> histogram
	writeCache storage.WriteCache
}

func (f fakeSource) VolumeBdevs(context.Context) (map[string]string, error) {
	out := map[string]string{}
	for bdev := range f.histograms {
		out["volume-of-"+bdev] = bdev
	}
	return out, nil
}

func (f fakeSource) BdevGetHistogram(_ context.Context, name string) (types.Histogram, error) {
	h, ok := f.histograms[name]
	if !ok {
		return types.Histogram{}, errors.New("No such device")
	}
	return h, nil
}

func (f fakeSource) BdevGetIostat(context.Context, string) (types.Iostat, error) {
	if f.down {
		return types.Iostat{}, errors.New("connection to SPDK lost")
	}
	return f.stat, nil
}

func (f fakeSource) BdevGetBdevs(context.Context, string) ([]types.Bdev, error) {
	return []types.Bdev{{
		Name: "2a1ea133-840f-47cb-bf5d-90584abe597c", Aliases: []string{"lvs0/lv1"},
		DriverSpecific: types.BdevDriverSpecific{Lvol: &types.LvolBdevInfo{}},
	}}, nil
}

func (f fakeSource) WriteCache() storage.WriteCache { return f.writeCache }

func (f fakeSource) Lvstore(context.Context) (types.Lvstore, error) {
	return types.Lvstore{TotalDataClusters: 63, FreeClusters: 47, ClusterSize: 4 << 20}, nil
}

func recorded(t *testing.T) types.Iostat {
	data, err := os.ReadFile("testdata/iostat-lvol.json")
	if err != nil {
		t.Fatal(err)
	}
	var stat types.Iostat
	if err := json.Unmarshal(data, &stat); err != nil {
		t.Fatal(err)
	}
	return stat
}

func TestCollectorConvertsTicksAndLabelsLvols(t *testing.T) {
	c := NewCollector(fakeSource{stat: recorded(t)}, time.Second)
	// 37255008233 and 44490995914 ticks at 2.6 GHz; 14770808 ticks max write.
	want := `
# HELP flint_bdev_read_ops_total Read operations completed by the bdev.
# TYPE flint_bdev_read_ops_total counter
flint_bdev_read_ops_total{bdev="lvs0/lv1"} 131805
# HELP flint_bdev_read_latency_seconds_total Time spent in reads; divide its rate by the read ops rate for the mean latency.
# TYPE flint_bdev_read_latency_seconds_total counter
flint_bdev_read_latency_seconds_total{bdev="lvs0/lv1"} 14.328849320384615
# HELP flint_bdev_write_latency_seconds_total Time spent in writes; divide its rate by the write ops rate for the mean latency.
# TYPE flint_bdev_write_latency_seconds_total counter
flint_bdev_write_latency_seconds_total{bdev="lvs0/lv1"} 17.111921505384615
# HELP flint_bdev_write_latency_max_seconds Longest write since the bdev appeared.
# TYPE flint_bdev_write_latency_max_seconds gauge
flint_bdev_write_latency_max_seconds{bdev="lvs0/lv1"} 0.00568108
# HELP flint_lvstore_free_bytes Unallocated capacity of the OSD's lvstore.
# TYPE flint_lvstore_free_bytes gauge
flint_lvstore_free_bytes 1.97132288e+08
# HELP flint_osd_spdk_up 1 when SPDK answered the latest reading, else 0.
# TYPE flint_osd_spdk_up gauge
flint_osd_spdk_up 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"flint_bdev_read_ops_total", "flint_bdev_read_latency_seconds_total", "flint_bdev_write_latency_seconds_total",
		"flint_bdev_write_latency_max_seconds", "flint_lvstore_free_bytes", "flint_osd_spdk_up"); err != nil {
		t.Fatal(err)
	}
}

func TestCollectorReportsSPDKDown(t *testing.T) {
	c := NewCollector(fakeSource{down: true}, time.Second)
	want := `
# HELP flint_osd_spdk_up 1 when SPDK answered the latest reading, else 0.
# TYPE flint_osd_spdk_up gauge
flint_osd_spdk_up 0
# HELP flint_osd_spdk_rpc_errors_total SPDK calls of readings that failed.
# TYPE flint_osd_spdk_rpc_errors_total counter
flint_osd_spdk_rpc_errors_total 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "flint_osd_spdk_up", "flint_osd_spdk_rpc_errors_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "flint_bdev_read_ops_total"); n != 0 {
		t.Errorf("%d bdev series while SPDK is down, want none", n)
	}
}

// The write cache gauge says whether an acknowledged write may sit in a
// volatile cache, and is left out where the agent does not know.
func TestCollectorReportsTheWriteCache(t *testing.T) {
	for _, c := range []struct {
		cache storage.WriteCache
		want  string
	}{
		{storage.WriteCacheDisabled, "0"},
		{storage.WriteCacheAbsent, "0"},
		{storage.WriteCacheEnabled, "1"},
		{storage.WriteCacheUnknown, ""},
	} {
		t.Run(c.cache.String(), func(t *testing.T) {
			col := NewCollector(fakeSource{stat: recorded(t), writeCache: c.cache}, time.Second)
			want := ""
			if c.want != "" {
				want = "\n# HELP flint_osd_volatile_write_cache_enabled " + writeCacheHelp +
					"\n# TYPE flint_osd_volatile_write_cache_enabled gauge\nflint_osd_volatile_write_cache_enabled " + c.want + "\n"
			}
			if err := testutil.CollectAndCompare(col, strings.NewReader(want), "flint_osd_volatile_write_cache_enabled"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// countingSource counts the visits to SPDK.
type countingSource struct {
	fakeSource
	iostats atomic.Int32
}

func (c *countingSource) BdevGetIostat(ctx context.Context, name string) (types.Iostat, error) {
	c.iostats.Add(1)
	return c.fakeSource.BdevGetIostat(ctx, name)
}

// Scrapes, however many and however concurrent, read SPDK once per
// interval.
func TestScrapesShareOneReadingPerInterval(t *testing.T) {
	src := &countingSource{fakeSource: fakeSource{stat: recorded(t)}}
	c := NewCollector(src, 10*time.Second)
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if n := testutil.CollectAndCount(c, "flint_osd_spdk_up"); n != 1 {
				t.Errorf("a scrape sent %d flint_osd_spdk_up series, want 1", n)
			}
		})
	}
	wg.Wait()
	if n := src.iostats.Load(); n != 1 {
		t.Fatalf("20 scrapes within the interval read SPDK %d times, want once", n)
	}
	now = now.Add(10 * time.Second)
	testutil.CollectAndCount(c)
	if n := src.iostats.Load(); n != 2 {
		t.Fatalf("a scrape after the interval read SPDK %d times in all, want 2", n)
	}
}

// recordedHistogram is SPDK v25.09's histogram of a malloc bdev after 4 s
// of randrw I/O at QD16 (granularity 7, ranges 5-27, 2.6 GHz).
func recordedHistogram(t *testing.T) types.Histogram {
	data, err := os.ReadFile("testdata/histogram-malloc.json")
	if err != nil {
		t.Fatal(err)
	}
	var h types.Histogram
	if err := json.Unmarshal(data, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestVolumeLatencyIsSPDKsHistogramInPrometheusBuckets(t *testing.T) {
	h := recordedHistogram(t)
	c := NewCollector(fakeSource{stat: recorded(t), histograms: map[string]types.Histogram{"raid_v1": h}}, time.Second)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got *dto.Histogram
	for _, f := range families {
		if f.GetName() == "flint_volume_io_latency_seconds" {
			if len(f.Metric) != 1 || f.Metric[0].Label[0].GetValue() != "volume-of-raid_v1" {
				t.Fatalf("want one series labelled volume-of-raid_v1, got %v", f.Metric)
			}
			got = f.Metric[0].Histogram
		}
	}
	if got == nil {
		t.Fatal("no flint_volume_io_latency_seconds")
	}
	buckets, err := h.Buckets()
	if err != nil {
		t.Fatal(err)
	}
	// Each bound counts exactly the SPDK buckets that end at or below it,
	// and the total is every I/O SPDK counted (570,518 in the recording).
	var total uint64
	for _, b := range buckets {
		total += b.Count
	}
	if got.GetSampleCount() != total || total != 570518 {
		t.Fatalf("count %d, SPDK counted %d (recorded: 570518)", got.GetSampleCount(), total)
	}
	for _, pb := range got.Bucket {
		var want uint64
		for _, b := range buckets {
			if float64(b.EndTicks)/float64(h.TscRate) <= pb.GetUpperBound() {
				want += b.Count
			}
		}
		if pb.GetCumulativeCount() != want {
			t.Errorf("le=%g: %d, want %d", pb.GetUpperBound(), pb.GetCumulativeCount(), want)
		}
	}
	if mean := got.GetSampleSum() / float64(total); mean < 1e-6 || mean > 1e-3 {
		t.Errorf("mean latency %g s, out of what a malloc bdev at QD16 gives", mean)
	}
}

func TestVolumeLatencyLeavesOutWhatCannotBeRead(t *testing.T) {
	broken := recordedHistogram(t)
	broken.Data = broken.Data[:len(broken.Data)-8]
	c := NewCollector(fakeSource{stat: recorded(t), histograms: map[string]types.Histogram{"raid_v1": recordedHistogram(t), "raid_v2": broken}}, time.Second)
	if n := testutil.CollectAndCount(c, "flint_volume_io_latency_seconds"); n != 1 {
		t.Fatalf("%d volume latency series, want the one readable", n)
	}
	if n := testutil.ToFloat64(c.scrapeErrs); n != 1 {
		t.Fatalf("%g reading errors counted, want 1", n)
	}
}

func TestFencedTargetsCountsTheLeaseKeepersFences(t *testing.T) {
	fenced := 0
	c := FencedTargets(func() int { return fenced })
	want := func(n int) string {
		return "# HELP flint_osd_fenced_targets Targets on this OSD fenced when its lease lapsed and not confirmed since: their hosts' I/O waits.\n# TYPE flint_osd_fenced_targets gauge\nflint_osd_fenced_targets " + strconv.Itoa(n) + "\n"
	}
	for _, n := range []int{0, 3} {
		fenced = n
		if err := testutil.CollectAndCompare(c, strings.NewReader(want(n))); err != nil {
			t.Fatal(err)
		}
	}
}
