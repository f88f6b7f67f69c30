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

// Package kubectl is kubectl-flint: Flint's state as the Kubernetes API of
// the current kubeconfig context holds it, shown the way kubectl shows
// resources, and the changes a person makes to OSDs by hand.
package kubectl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// Plugin runs kubectl-flint's commands against one cluster.
type Plugin struct {
	Client client.Client
	Out    io.Writer
	// LastLogLine reads the last line a container of a Pod logged (the
	// apiserver asks the kubelet); nil, or an error, leaves out what
	// only the logs tell.
	LastLogLine func(ctx context.Context, namespace, pod, container string) (string, error)
}

// Status is what `kubectl flint status -o json|yaml` prints.
type Status struct {
	Pools   []PoolSummary   `json:"pools"`
	OSDs    []OSDSummary    `json:"osds"`
	Volumes []VolumeSummary `json:"volumes"`
}

// PoolSummary is one Pool's health and capacity.
type PoolSummary struct {
	Name      string `json:"name"`
	OSDsReady int32  `json:"osdsReady"`
	OSDs      int32  `json:"osds"`
	Volumes   int32  `json:"volumes"`
	Usable    string `json:"usable,omitempty"`
	Allocated string `json:"allocated,omitempty"`
	Ready     bool   `json:"ready"`
	// Problem is the reason and message of a Pool that is not Ready, or
	// is Degraded.
	Problem string `json:"problem,omitempty"`
	// Rollout is the reason and message of a rollout under way or
	// waiting (OSD pods to replace, cordoned nodes).
	Rollout string `json:"rollout,omitempty"`
}

// OSDSummary is one OSD's state and capacity.
type OSDSummary struct {
	Name     string `json:"name"`
	Pool     string `json:"pool"`
	Node     string `json:"node"`
	Phase    string `json:"phase"`
	Capacity string `json:"capacity,omitempty"`
	Free     string `json:"free,omitempty"`
	Replicas int32  `json:"replicas"`
	Drain    bool   `json:"drain,omitempty"`
	Cordon   bool   `json:"cordon,omitempty"`
	// Outdated: its pod runs an older spec. Stopping: the Pool's rollout
	// stops it.
	Outdated bool   `json:"outdated,omitempty"`
	Stopping bool   `json:"stopping,omitempty"`
	Problem  string `json:"problem,omitempty"`
}

// VolumeSummary is one Volume's state and its replicas'.
type VolumeSummary struct {
	Name  string `json:"name"`
	Pool  string `json:"pool"`
	Size  string `json:"size"`
	Phase string `json:"phase"`
	// Replicas counts the Online replicas of Wanted.
	Replicas int   `json:"replicas"`
	Wanted   int32 `json:"wanted"`
	// Rebuilding is the least rebuild progress (percent) of its
	// rebuilding replicas, nil when none rebuilds.
	Rebuilding *int32 `json:"rebuilding,omitempty"`
	// RebuildMiBps and RebuildETASeconds estimate that replica's rebuild
	// from its progress since it started rebuilding; absent until it
	// has made some.
	RebuildMiBps      float64 `json:"rebuildMiBps,omitempty"`
	RebuildETASeconds int64   `json:"rebuildETASeconds,omitempty"`
	Target            string  `json:"target,omitempty"`
	Problem           string  `json:"problem,omitempty"`
}

// Healthy says the Volume serves with every replica in sync.
func (v VolumeSummary) Healthy() bool {
	return v.Phase == string(flintv1.VolumePhaseReady) && v.Problem == "" && v.Replicas >= int(v.Wanted)
}

// ReadStatus reads every Pool, OSD and Volume.
func (p *Plugin) ReadStatus(ctx context.Context) (*Status, error) {
	var pools flintv1.PoolList
	var osds flintv1.OSDList
	var vols flintv1.VolumeList
	for _, l := range []client.ObjectList{&pools, &osds, &vols} {
		if err := p.Client.List(ctx, l); err != nil {
			return nil, fmt.Errorf("read Flint's resources (is Flint installed, and may you list them?): %w", err)
		}
	}
	s := &Status{Pools: []PoolSummary{}, OSDs: []OSDSummary{}, Volumes: []VolumeSummary{}}
	for _, pool := range pools.Items {
		ps := PoolSummary{
			Name: pool.Name, OSDsReady: pool.Status.OSDs.Ready, OSDs: pool.Status.OSDs.Total, Volumes: pool.Status.Volumes,
			Ready: meta.IsStatusConditionTrue(pool.Status.Conditions, flintv1.ReadyCondition), Problem: problem(pool.Status.Conditions),
		}
		if c := meta.FindStatusCondition(pool.Status.Conditions, flintv1.RollingOutCondition); c != nil && c.Status == metav1.ConditionTrue {
			ps.Rollout = c.Reason + ": " + c.Message
		}
		if c := pool.Status.Capacity; c != nil {
			ps.Usable, ps.Allocated = c.Usable.String(), c.Allocated.String()
		}
		s.Pools = append(s.Pools, ps)
	}
	for _, o := range osds.Items {
		summary := OSDSummary{
			Name: o.Name, Pool: o.Spec.Pool, Node: o.Spec.NodeName, Phase: orUnknown(string(o.Status.Phase)),
			Replicas: o.Status.Replicas, Drain: o.Spec.Drain, Cordon: o.Spec.Cordon, Problem: problem(o.Status.Conditions),
			Outdated: meta.IsStatusConditionFalse(o.Status.Conditions, flintv1.UpToDateCondition), Stopping: o.Stopping(),
		}
		if c := o.Status.Capacity; c != nil {
			summary.Capacity, summary.Free = c.Total.String(), c.Free.String()
		}
		s.OSDs = append(s.OSDs, summary)
	}
	replicas := map[string]int32{}
	for _, pool := range pools.Items {
		replicas[pool.Name] = pool.Spec.Replicas
	}
	for _, v := range vols.Items {
		s.Volumes = append(s.Volumes, summarizeVolume(&v, replicas[v.Spec.Pool]))
	}
	return s, nil
}

// summarizeVolume sums v up; poolReplicas is its Pool's replica count,
// which v has unless its spec says otherwise.
func summarizeVolume(v *flintv1.Volume, poolReplicas int32) VolumeSummary {
	vs := VolumeSummary{
		Name: v.Name, Pool: v.Spec.Pool, Size: v.Spec.Size.String(), Phase: orUnknown(string(v.Status.Phase)),
		Wanted: poolReplicas, Problem: problem(v.Status.Conditions),
	}
	if v.Spec.Replicas != nil {
		vs.Wanted = *v.Spec.Replicas
	}
	for _, r := range v.Status.Replicas {
		switch {
		case r.State == flintv1.ReplicaStateOnline:
			vs.Replicas++
		case r.RebuildPercent != nil && (vs.Rebuilding == nil || *r.RebuildPercent < *vs.Rebuilding):
			vs.Rebuilding = r.RebuildPercent
			vs.RebuildMiBps, vs.RebuildETASeconds = 0, 0
			if r.LastTransitionTime != nil {
				vs.RebuildMiBps, vs.RebuildETASeconds = rebuildRate(v.Spec.Size.Value(), *r.RebuildPercent, time.Since(r.LastTransitionTime.Time))
			}
		}
	}
	if t := v.Status.Target; t != nil {
		vs.Target = t.OSD
	}
	return vs
}

// rebuildRate estimates a rebuild of a Volume of size bytes that reached
// percent in elapsed: its MiB/s and the seconds left at that rate; zero
// before it made progress.
func rebuildRate(size int64, percent int32, elapsed time.Duration) (mibps float64, etaSeconds int64) {
	if percent <= 0 || elapsed < time.Second {
		return 0, 0
	}
	rate := float64(size) * float64(percent) / 100 / elapsed.Seconds()
	left := float64(size) * float64(100-percent) / 100
	return math.Round(rate/(1<<20)*10) / 10, int64(math.Ceil(left / rate))
}

// problem is the reason and message of a resource that is not Ready, or
// is Degraded; empty for a healthy one.
func problem(conds []metav1.Condition) string {
	if c := meta.FindStatusCondition(conds, flintv1.ReadyCondition); c != nil && c.Status != metav1.ConditionTrue {
		return c.Reason + ": " + c.Message
	}
	if c := meta.FindStatusCondition(conds, flintv1.DegradedCondition); c != nil && c.Status == metav1.ConditionTrue {
		return c.Reason + ": " + c.Message
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "Unknown"
	}
	return s
}

// PrintStatus prints s as tables (format ""), or as json or yaml.
func (p *Plugin) PrintStatus(s *Status, format string) error {
	if done, err := p.printAs(s, format); done || err != nil {
		return err
	}
	w := newTable(p.Out)
	tab := w.row
	tab("POOL", "OSDS", "VOLUMES", "USABLE", "ALLOCATED", "READY", "PROBLEM")
	for _, ps := range s.Pools {
		tab(ps.Name, fmt.Sprintf("%d/%d", ps.OSDsReady, ps.OSDs), fmt.Sprint(ps.Volumes), dash(ps.Usable), dash(ps.Allocated), fmt.Sprint(ps.Ready), ps.Problem)
	}
	for _, ps := range s.Pools {
		if ps.Rollout != "" {
			tab("")
			tab("ROLLOUT " + ps.Name + ": " + ps.Rollout)
		}
	}
	tab("")
	tab("OSD", "POOL", "NODE", "PHASE", "CAPACITY", "FREE", "REPLICAS", "PROBLEM")
	for _, o := range s.OSDs {
		phase := o.Phase
		if o.Drain && phase != string(flintv1.OSDPhaseDraining) {
			phase += ",Drain"
		}
		if o.Cordon {
			phase += ",Cordoned"
		}
		if o.Stopping {
			phase += ",Stopping"
		} else if o.Outdated {
			phase += ",Outdated"
		}
		tab(o.Name, o.Pool, o.Node, phase, dash(o.Capacity), dash(o.Free), fmt.Sprint(o.Replicas), o.Problem)
	}
	tab("")
	attention := slices.DeleteFunc(slices.Clone(s.Volumes), VolumeSummary.Healthy)
	tab(fmt.Sprintf("VOLUMES: %d, %d healthy", len(s.Volumes), len(s.Volumes)-len(attention)))
	if len(attention) > 0 {
		tab("VOLUME", "POOL", "SIZE", "PHASE", "REPLICAS", "REBUILD", "TARGET", "PROBLEM")
		for _, v := range attention {
			rebuild := "-"
			if v.Rebuilding != nil {
				rebuild = fmt.Sprintf("%d%%", *v.Rebuilding)
			}
			if v.RebuildMiBps > 0 {
				rebuild += fmt.Sprintf(" %.1fMiB/s ETA %s", v.RebuildMiBps, time.Duration(v.RebuildETASeconds)*time.Second)
			}
			tab(v.Name, v.Pool, v.Size, v.Phase, fmt.Sprintf("%d/%d", v.Replicas, v.Wanted), rebuild, dash(v.Target), v.Problem)
		}
	}
	return w.Flush()
}

// printAs prints v as format says, json or yaml, and says it did; for no
// format it leaves the table to the caller.
func (p *Plugin) printAs(v any, format string) (done bool, err error) {
	switch format {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return true, err
		}
		_, err = fmt.Fprintln(p.Out, string(b))
		return true, err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return true, err
		}
		_, err = p.Out.Write(b)
		return true, err
	case "":
		return false, nil
	}
	return true, fmt.Errorf("unknown output format %q: use json or yaml, or none for tables", format)
}

// table writes rows of cells aligned in columns, as kubectl prints.
type table struct{ *tabwriter.Writer }

func newTable(out io.Writer) table { return table{tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)} }

func (t table) row(cells ...string) { _, _ = fmt.Fprintln(t.Writer, strings.Join(cells, "\t")) }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
