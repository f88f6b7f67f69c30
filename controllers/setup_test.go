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

package controllers

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/flint-io/flint/controllers/osd"
)

// The target grace must cover the lease, its renewal's deadline and the
// dead man's switch at its slowest: a period until the fence probe runs,
// its timeout, and the kill's grace period.
func TestTargetGraceCoversTheFence(t *testing.T) {
	for _, c := range []struct {
		grace, probeTimeout time.Duration
		ok                  bool
	}{
		{30 * time.Second, 0, true},                 // the defaults: 20 + 5 + 4 = 29
		{29 * time.Second, 2 * time.Second, true},   // exactly enough
		{28 * time.Second, 2 * time.Second, false},  // the probe's 1 + 2 + 1 s do not fit
		{30 * time.Second, 10 * time.Second, false}, // a slow node's probe
		{37 * time.Second, 10 * time.Second, true},
	} {
		o := Options{AgentLease: 20 * time.Second, TargetGrace: c.grace, FenceProbeTimeout: c.probeTimeout}
		if err := o.checkTimings(); (err == nil) != c.ok {
			t.Errorf("grace %s, probe timeout %s: %v, want ok=%t", c.grace, c.probeTimeout, err, c.ok)
		}
	}
	p := osd.FenceProbe(10 * time.Second)
	if p.TimeoutSeconds != 10 || osd.FenceTime(p) != 12*time.Second {
		t.Errorf("fence probe for 10s: %+v, fence time %s; want a 10 s timeout, 12 s in all", p, osd.FenceTime(p))
	}
}

// The hang timeout outlasts two of the fence probe's runs, so that an SPDK
// slow to answer one is not restarted; zero leaves a frozen SPDK to the
// lease.
func TestSPDKHangTimeoutOutlastsTwoProbes(t *testing.T) {
	for _, c := range []struct {
		hang, probeTimeout time.Duration
		ok                 bool
	}{
		{10 * time.Second, 0, true},                 // the defaults: 2 x 2 s
		{4 * time.Second, 2 * time.Second, true},    // exactly enough
		{3 * time.Second, 2 * time.Second, false},   // one slow run and a second
		{10 * time.Second, 10 * time.Second, false}, // a slow node's probe
		{20 * time.Second, 10 * time.Second, true},  // the e2e lab
		{0, 10 * time.Second, true},                 // off
	} {
		o := Options{AgentLease: 20 * time.Second, TargetGrace: time.Minute, FenceProbeTimeout: c.probeTimeout, SPDKHangTimeout: c.hang}
		if err := o.checkTimings(); (err == nil) != c.ok {
			t.Errorf("hang timeout %s, probe timeout %s: %v, want ok=%t", c.hang, c.probeTimeout, err, c.ok)
		}
	}
}

// An agent's CPU is a fraction of a core: a whole one would be taken for
// it alone by the static CPU manager.
func TestAgentCPUIsAFraction(t *testing.T) {
	for cpu, ok := range map[string]bool{"0": true, "100m": true, "1500m": true, "1": false, "2000m": false, "-100m": false} {
		if err := osd.CheckAgentCPU(resource.MustParse(cpu)); (err == nil) != ok {
			t.Errorf("agent CPU %s: %v, want ok=%t", cpu, err, ok)
		}
	}
}
