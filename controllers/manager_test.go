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
	"context"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection"
)

// An operator killed while it leads leaves its lease held for the whole
// lease duration. Another operator waits that out; the same pod's next
// process, under the same identity, leads again at once.
func TestARestartedOperatorLeadsAgainAtOnce(t *testing.T) {
	cs := fake.NewClientset()
	// lead runs an election as identity for at most within and says
	// whether it led; the lease outlives the test, so a lead taken over
	// from a held lease can only be a reuse of the identity.
	lead := func(identity string, within time.Duration) bool {
		lock, err := leaderLock(cs, "flint-system", identity)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), within)
		defer cancel()
		led := make(chan struct{})
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: time.Hour, RenewDeadline: time.Minute, RetryPeriod: 20 * time.Millisecond,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) { close(led) },
				OnStoppedLeading: func() {},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		go le.Run(ctx)
		select {
		case <-led:
			return true // cancel() then stops it without a release, as a kill
		case <-ctx.Done():
			return false
		}
	}
	if !lead("flint-operator-5cfd6b476-q7sl6", 10*time.Second) {
		t.Fatal("the first operator never led an empty election")
	}
	if lead("flint-operator-5cfd6b476-x2v9k", time.Second) {
		t.Fatal("another operator led while the killed leader's lease held")
	}
	if !lead("flint-operator-5cfd6b476-q7sl6", 10*time.Second) {
		t.Fatal("the killed leader's pod, restarted, does not lead again while its own lease holds")
	}
}
