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

package agentclient

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"k8s.io/apimachinery/pkg/types"

	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

func TestStoppedForCertain(t *testing.T) {
	const grace = 30 * time.Second
	began := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	now := began.Add(time.Hour)
	type call struct {
		uid     types.UID
		ago     time.Duration
		checks  bool
		stopped bool
	}
	tests := []struct {
		name  string
		began time.Time
		calls []call
		want  bool
	}{
		{"its one pod stopped", began, []call{{"p1", time.Second, true, true}}, true},
		{"its pod still runs, as far as the kubelet said", began, []call{{"p1", time.Second, true, false}}, false},
		{"its pod stopped, but its agent never named the pod (an agent that serves calls meant for others)", began, []call{{"p1", time.Second, false, true}}, false},
		{"no call reached a pod of the OSD within the grace: nothing was confirmed", began, []call{{"p1", 2 * grace, true, false}}, false},
		{"a pod force-deleted long ago holds no lease renewed since", began, []call{{"p0", grace, true, false}, {"p1", time.Second, true, true}}, true},
		{"a pod force-deleted within the grace may still serve", began, []call{{"p0", 10 * time.Second, true, false}, {"p1", time.Second, true, true}}, false},
		{"this process has led for less than the grace: its predecessor's calls may hold", now.Add(-10 * time.Second), []call{{"p1", time.Second, true, true}}, false},
		{"this process never led", time.Time{}, []call{{"p1", time.Second, true, true}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l Leases
			if !tt.began.IsZero() {
				l.Begin(tt.began)
			}
			for _, c := range tt.calls {
				l.Reached("osd-a", c.uid, now.Add(-c.ago))
				if c.checks {
					l.Answered("osd-a", c.uid, true, now.Add(-c.ago))
				}
			}
			for _, c := range tt.calls {
				if c.stopped {
					l.Stopped("osd-a", c.uid)
				}
			}
			if got := l.StoppedForCertain("osd-a", now, grace); got != tt.want {
				t.Fatalf("StoppedForCertain = %v, want %v", got, tt.want)
			}
			if l.StoppedForCertain("osd-b", now, grace) {
				t.Fatal("an OSD no call reached is stopped for certain")
			}
		})
	}
}

// A call to the successor of a stopped pod puts the OSD back in doubt:
// the successor's agent may have been asked to serve.
func TestACallToTheSuccessorUndoesTheCertainty(t *testing.T) {
	var l Leases
	began := time.Now().Add(-time.Hour)
	l.Begin(began)
	l.Reached("osd-a", "p1", began.Add(time.Minute))
	l.Answered("osd-a", "p1", true, began.Add(time.Minute))
	l.Stopped("osd-a", "p1")
	l.Stopped("osd-b", "p1") // an OSD no call reached
	now, grace := began.Add(2*time.Minute), 90*time.Second
	if !l.StoppedForCertain("osd-a", now, grace) {
		t.Fatal("the stopped pod is not stopped for certain")
	}
	l.Reached("osd-a", "p2", now)
	if l.StoppedForCertain("osd-a", now, grace) {
		t.Fatal("stopped for certain after a call to the pod's successor")
	}
}

// An agent that answers without naming the pod may serve the calls meant
// for any pod at its address (an agent from before the rule, in a pod
// that outlived a forced deletion): a success of its puts the OSD under
// the grace, even after the pod called had named itself.
func TestASuccessThatNamesNoPodUndoesTheCertainty(t *testing.T) {
	var l Leases
	began := time.Now().Add(-time.Hour)
	l.Begin(began)
	now, grace := began.Add(10*time.Minute), 90*time.Second
	l.Reached("osd-a", "p1", now.Add(-time.Minute))
	l.Answered("osd-a", "p1", true, now.Add(-time.Minute))
	l.Reached("osd-a", "p1", now.Add(-30*time.Second))
	l.Answered("osd-a", "p1", false, now.Add(-30*time.Second))
	l.Stopped("osd-a", "p1")
	if l.StoppedForCertain("osd-a", now, grace) {
		t.Fatal("stopped for certain 30s after a call for the pod was served by an agent that did not name it")
	}
	// Its successor, which names itself, is reached and stopped after.
	l.Reached("osd-a", "p2", now.Add(50*time.Second))
	l.Answered("osd-a", "p2", true, now.Add(50*time.Second))
	l.Stopped("osd-a", "p2")
	if l.StoppedForCertain("osd-a", now.Add(55*time.Second), grace) {
		t.Fatal("stopped for certain 85s after the unnamed answer")
	}
	if !l.StoppedForCertain("osd-a", now.Add(61*time.Second), grace) {
		t.Fatal("not stopped for certain once the unnamed answer is older than the grace")
	}
}

// Calls answered out of order keep the latest send time.
func TestTheLatestCallCounts(t *testing.T) {
	var l Leases
	began := time.Now().Add(-time.Hour)
	l.Begin(began)
	now, grace := began.Add(10*time.Minute), 90*time.Second
	l.Reached("osd-a", "p0", now.Add(-10*time.Second)) // p0 force-deleted, still running
	l.Reached("osd-a", "p0", now.Add(-5*time.Minute))  // an older call, recorded late
	l.Reached("osd-a", "p1", now.Add(-time.Second))
	l.Answered("osd-a", "p1", true, now.Add(-time.Second))
	l.Stopped("osd-a", "p1")
	if l.StoppedForCertain("osd-a", now, grace) {
		t.Fatal("stopped for certain while p0 was reached 10s ago")
	}
}

// fakeConn answers every call naming the pods in its header.
type fakeConn struct {
	grpc.ClientConnInterface
	named []string
	sent  metadata.MD
}

func (f *fakeConn) Invoke(ctx context.Context, _ string, _, _ any, opts ...grpc.CallOption) error {
	f.sent, _ = metadata.FromOutgoingContext(ctx)
	for _, o := range opts {
		if h, ok := o.(grpc.HeaderCallOption); ok {
			*h.HeaderAddr = metadata.Pairs()
			for _, n := range f.named {
				h.HeaderAddr.Append(agentv1.PodUIDHeader, n)
			}
		}
	}
	return nil
}

func TestAPodConnNamesItsPodAndRecordsTheAnswer(t *testing.T) {
	tests := []struct {
		name   string
		named  []string
		checks bool
	}{
		{"the agent names the pod called", []string{"p1"}, true},
		{"the agent names another pod", []string{"p2"}, false},
		{"the agent names no pod (an agent from before)", nil, false},
		{"the agent names the pod twice", []string{"p1", "p1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l Leases
			l.Begin(time.Now().Add(-time.Hour))
			fake := &fakeConn{named: tt.named}
			agent := agentv1.NewOSDAgentClient(podConn{ClientConnInterface: fake, osd: "osd-a", uid: "p1", leases: &l})
			if _, err := agent.GetStatus(context.Background(), &agentv1.GetStatusRequest{}); err != nil {
				t.Fatal(err)
			}
			if got := fake.sent.Get(agentv1.PodUIDHeader); len(got) != 1 || got[0] != "p1" {
				t.Fatalf("the call named pods %v, want [p1]", got)
			}
			l.Stopped("osd-a", "p1")
			if got := l.StoppedForCertain("osd-a", time.Now(), time.Minute); got != tt.checks {
				t.Fatalf("after the call and the pod's stop, StoppedForCertain = %v, want %v", got, tt.checks)
			}
		})
	}
}
