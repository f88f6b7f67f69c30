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

// Package monitoring checks config/prometheus against the metrics the
// operator and the agents really export: an alert or a dashboard panel
// that names a metric nobody exports would never fire or show anything.
package monitoring

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	operatormetrics "github.com/flint-io/flint/controllers/metrics"
	agentmetrics "github.com/flint-io/flint/osd-image/agent/metrics"
)

var dir = filepath.Join("..", "..", "config", "prometheus")

// exported are the names of every metric Flint's code defines.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	collectors := append(operatormetrics.Collectors(), agentmetrics.NewCollector(nil, 0), agentmetrics.FencedTargets(nil))
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range collectors {
			c.Describe(ch)
		}
		close(ch)
	}()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	names := map[string]bool{}
	for d := range ch {
		m := fqName.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read the name of %s", d)
		}
		names[m[1]] = true
	}
	return names
}

// metricName finds the Flint metrics a PromQL expression reads.
var metricName = regexp.MustCompile(`\bflint_[a-z0-9_]+`)

func checkExpr(t *testing.T, where, expr string, names map[string]bool) {
	t.Helper()
	used := metricName.FindAllString(expr, -1)
	if len(used) == 0 {
		t.Errorf("%s reads no Flint metric: %s", where, expr)
	}
	for _, n := range used {
		// A histogram's series carry a suffix its name does not.
		if base, ok := strings.CutSuffix(n, "_bucket"); ok && names[base] {
			continue
		}
		if !names[n] {
			t.Errorf("%s reads %s, which Flint does not export", where, n)
		}
	}
}

func read(t *testing.T, name string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func TestAlertsReadExportedMetrics(t *testing.T) {
	var rule struct {
		APIVersion, Kind string
		Metadata         map[string]any
		Spec             struct {
			Groups []struct {
				Name  string
				Rules []struct {
					Alert       string
					Expr        string
					For         string
					Labels      map[string]string
					Annotations map[string]string
				}
			}
		}
	}
	read(t, "rules.yaml", &rule)
	names := exported(t)
	alerts := 0
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			alerts++
			checkExpr(t, "alert "+r.Alert, r.Expr, names)
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s needs a severity, a summary and a description saying what to do", r.Alert)
			}
		}
	}
	if alerts == 0 {
		t.Fatal("rules.yaml holds no alert")
	}
}

func TestDashboardReadsExportedMetrics(t *testing.T) {
	var cm struct {
		APIVersion, Kind string
		Metadata         map[string]any
		Data             map[string]string
	}
	read(t, "dashboard.yaml", &cm)
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal([]byte(cm.Data["flint.json"]), &dash); err != nil {
		t.Fatalf("flint.json: %v", err)
	}
	if len(dash.Panels) == 0 {
		t.Fatal("the dashboard has no panel")
	}
	names := exported(t)
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, q := range p.Targets {
			checkExpr(t, "panel "+p.Title, q.Expr, names)
		}
	}
}
