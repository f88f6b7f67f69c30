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

package kubectl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Describe prints the object of kind (volume, osd, pool or snapshot)
// named name: as a table for people, or as format (json or yaml) says.
func (p *Plugin) Describe(ctx context.Context, kind, name, format string, now time.Time) error {
	var d description
	var err error
	switch kind {
	case "volume":
		d, err = p.describeVolume(ctx, name)
	case "osd":
		d, err = p.describeOSD(ctx, name)
	case "pool":
		d, err = p.describePool(ctx, name)
	case "snapshot":
		d, err = p.describeSnapshot(ctx, name)
	default:
		return fmt.Errorf("cannot describe a %q: describe a volume, osd, pool or snapshot", kind)
	}
	if err != nil {
		return err
	}
	if done, err := p.printAs(d, format); done || err != nil {
		return err
	}
	w := newTable(p.Out)
	d.printTable(w.row, now)
	printConditions(w.row, d.common().Conditions)
	printEvents(w.row, d.common().Events, now)
	return w.Flush()
}

// description is an object as describe shows it.
type description interface {
	// printTable prints its own fields, one row each.
	printTable(line func(...string), now time.Time)
	common() *Described
}

// Described is what every description ends with.
type Described struct {
	Conditions []Condition `json:"conditions"`
	// Events are the last 20 about the object, oldest first.
	Events []Event `json:"events"`
}

func (d *Described) common() *Described { return d }

// Condition is one of an object's conditions.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Event is an Event about an object.
type Event struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
}

// get reads the object at key into obj; a missing one is the error
// missing, which says where to look.
func (p *Plugin) get(ctx context.Context, key client.ObjectKey, obj client.Object, missing string) error {
	err := p.Client.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		return errors.New(missing)
	}
	return err
}

// described reads obj's conditions and its Events (kind is its Kind).
func (p *Plugin) described(ctx context.Context, kind string, obj client.Object, conds []metav1.Condition) (Described, error) {
	d := Described{Conditions: []Condition{}, Events: []Event{}}
	for _, c := range conds {
		d.Conditions = append(d.Conditions, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	var l eventsv1.EventList
	if err := p.Client.List(ctx, &l, client.MatchingFields{"regarding.name": obj.GetName(), "regarding.kind": kind}); err != nil {
		return d, fmt.Errorf("read the %s's Events: %w", kind, err)
	}
	events := slices.DeleteFunc(l.Items, func(e eventsv1.Event) bool { return e.Regarding.UID != obj.GetUID() })
	slices.SortFunc(events, func(a, b eventsv1.Event) int { return eventTime(&a).Compare(eventTime(&b)) })
	for _, e := range events[max(0, len(events)-20):] {
		d.Events = append(d.Events, Event{Time: eventTime(&e), Type: e.Type, Reason: e.Reason, Message: e.Note})
	}
	return d, nil
}

func printConditions(line func(...string), conds []Condition) {
	var rows [][]string
	for _, c := range conds {
		rows = append(rows, []string{c.Type, c.Status, c.Reason, c.Message})
	}
	printList(line, "Conditions:", []string{"TYPE", "STATUS", "REASON", "MESSAGE"}, rows)
}

func printEvents(line func(...string), events []Event, now time.Time) {
	var rows [][]string
	for _, e := range events {
		rows = append(rows, []string{duration.HumanDuration(now.Sub(e.Time)), e.Type, e.Reason, e.Message})
	}
	printList(line, "Events:", []string{"AGE", "TYPE", "REASON", "MESSAGE"}, rows)
}

// printList prints title and, indented under it, header and rows, or
// <none> when there are no rows.
func printList(line func(...string), title string, header []string, rows [][]string) {
	line(title)
	if len(rows) == 0 {
		line("  <none>")
		return
	}
	for _, cells := range append([][]string{header}, rows...) {
		line(append([]string{"  " + cells[0]}, cells[1:]...)...)
	}
}

// since is how long ago t was, "-" when never.
func since(t *time.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	return duration.HumanDuration(now.Sub(*t))
}

// eventTime is when an Event last happened.
func eventTime(e *eventsv1.Event) time.Time {
	if e.Series != nil {
		return e.Series.LastObservedTime.Time
	}
	if !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	return e.DeprecatedLastTimestamp.Time
}

// domainName is the last part of a failure-domain label
// (topology.kubernetes.io/zone: zone).
func domainName(label string) string {
	return label[strings.LastIndex(label, "/")+1:]
}
