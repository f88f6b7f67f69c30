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
	"math"
	"testing"
)

func TestQuantileInterpolatesAsPrometheusDoes(t *testing.T) {
	before := histogram{count: 10, buckets: []bucket{{le: 1e-5, count: 10}, {le: 2e-5, count: 10}, {le: 5e-5, count: 10}}}
	// 100 I/Os since: 50 up to 10 µs, 40 in (10, 20], 10 in (20, 50].
	after := histogram{count: 110, buckets: []bucket{{le: 1e-5, count: 60}, {le: 2e-5, count: 100}, {le: 5e-5, count: 110}}}
	h := after.since(before)
	if h.count != 100 {
		t.Fatalf("count since = %d, want 100", h.count)
	}
	for _, c := range []struct{ q, want float64 }{
		{0.5, 1e-5},                  // the 50th of 50 up to 10 µs
		{0.7, 1e-5 + 1e-5*20.0/40.0}, // the 20th of 40 in (10, 20]
		{0.99, 2e-5 + 3e-5*9.0/10.0}, // the 9th of 10 in (20, 50]
		{1, 5e-5},
	} {
		if got := h.quantile(c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("quantile(%g) = %g, want %g", c.q, got, c.want)
		}
	}
}

func TestSummaryAgreesOnlyWithinTheTolerances(t *testing.T) {
	h := histogram{count: 1000, buckets: []bucket{{le: 2e-5, count: 500}, {le: 3e-5, count: 990}, {le: 5e-5, count: 1000}}}
	client := result{IOPS: 100, P50Us: 25, P99Us: 40}
	if s := h.summary(client, 10); !s.Agrees {
		t.Errorf("%+v: 1000 I/Os of 1000, quantiles below the initiator's, do not agree", s)
	}
	for name, r := range map[string]result{
		"fewer I/Os at the initiator": {IOPS: 90, P50Us: 25, P99Us: 40},
		"target p50 far above":        {IOPS: 100, P50Us: 10, P99Us: 40},
		"target p99 far above":        {IOPS: 100, P50Us: 25, P99Us: 15},
	} {
		if s := h.summary(r, 10); s.Agrees {
			t.Errorf("%s: %+v agrees", name, s)
		}
	}
}
