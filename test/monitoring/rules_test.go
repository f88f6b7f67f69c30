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

package monitoring

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// alertTests are promtool's unit tests of the alerts: sample series, and
// which alerts fire when, with their labels and rendered annotations.
const alertTests = "testdata/alerts.test.yaml"

// TestAlertRules loads the PrometheusRule's groups with promtool (pinned
// in hack/tools/promtool) and runs alertTests against them; every alert
// needs at least one case that fires.
func TestAlertRules(t *testing.T) {
	var rule struct {
		Spec struct {
			Groups []map[string]any `json:"groups"`
		} `json:"spec"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &rule); err != nil {
		t.Fatal(err)
	}
	groups, err := yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	if err := os.WriteFile(filepath.Join(tmp, "rules.yaml"), groups, 0o600); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(alertTests)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "alerts.test.yaml"), tests, 0o600); err != nil {
		t.Fatal(err)
	}
	checkEveryAlertFires(t, rule.Spec.Groups, tests)

	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	promtool := func(args ...string) {
		t.Helper()
		cmd := exec.Command("go", append([]string{"tool", "-modfile=" + filepath.Join(root, "hack", "tools", "promtool", "go.mod"), "promtool"}, args...)...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %v: %v\n%s", args, err, out)
		}
	}
	promtool("check", "rules", filepath.Join(tmp, "rules.yaml"))
	promtool("test", "rules", filepath.Join(tmp, "alerts.test.yaml"))
}

// checkEveryAlertFires fails for each alert of groups that no case of
// tests expects to fire.
func checkEveryAlertFires(t *testing.T, groups []map[string]any, tests []byte) {
	t.Helper()
	var cases struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `json:"alertname"`
				ExpAlerts []map[string]any `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(tests, &cases); err != nil {
		t.Fatalf("%s: %v", alertTests, err)
	}
	fires := map[string]bool{}
	for _, tc := range cases.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			}
		}
	}
	for _, g := range groups {
		rules, _ := g["rules"].([]any)
		for _, r := range rules {
			name, _ := r.(map[string]any)["alert"].(string)
			if name != "" && !fires[name] {
				t.Errorf("alert %s has no case in %s that fires it", name, alertTests)
			}
		}
	}
}
