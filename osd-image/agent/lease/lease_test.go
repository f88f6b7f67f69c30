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

package lease

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestProbe(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	serving := func(volumes ...string) func(context.Context) ([]string, error) {
		return func(context.Context) ([]string, error) { return volumes, nil }
	}
	silent := func(context.Context) ([]string, error) { return nil, context.DeadlineExceeded }
	tests := []struct {
		name   string
		expiry time.Time // zero: no lease file
		spdk   func(context.Context) ([]string, error)
		fails  bool
	}{
		{"never granted, nothing served (a fresh SPDK)", time.Time{}, serving(), false},
		{"never granted, a volume served", time.Time{}, serving("pvc-1"), true},
		{"never granted, SPDK silent (starting on a busy node)", time.Time{}, silent, false},
		{"held", now.Add(time.Second), silent, false},
		{"lapsed, fenced", now.Add(-time.Second), serving(), false},
		{"lapsed, a volume served (the agent did not fence)", now.Add(-time.Second), serving("pvc-1"), true},
		{"lapsed, SPDK silent (frozen)", now.Add(-time.Second), silent, true},
		{"lapses at this instant", now, serving("pvc-1"), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := File{Path: filepath.Join(t.TempDir(), "lease")}
			if !tc.expiry.IsZero() {
				if err := f.Write(tc.expiry); err != nil {
					t.Fatal(err)
				}
			}
			err := Probe(context.Background(), f, now, tc.spdk)
			if (err != nil) != tc.fails {
				t.Fatalf("Probe = %v, want failure %v", err, tc.fails)
			}
		})
	}
}

func TestFileRoundTrip(t *testing.T) {
	f := File{Path: filepath.Join(t.TempDir(), "lease")}
	want := time.Date(2026, 11, 23, 12, 0, 0, 123456789, time.UTC)
	if err := f.Write(want); err != nil {
		t.Fatal(err)
	}
	if got, err := f.Read(); err != nil || !got.Equal(want) {
		t.Fatalf("Read = %v, %v; want %v", got, err, want)
	}
	if err := os.WriteFile(f.Path, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Read(); err == nil {
		t.Fatal("a lease file that does not parse must not read as a lease")
	}
}

type fakeTargets struct {
	volumes []string
	err     error
	calls   int
	// answered is what AskMembers returns; asks counts its calls.
	answered map[string]time.Time
	asks     int
	// onFence runs as a fence begins.
	onFence func()
}

func (f *fakeTargets) FenceTargets(_ context.Context, spare func(string) bool) ([]string, error) {
	f.calls++
	if f.onFence != nil {
		f.onFence()
	}
	var fenced []string
	for _, v := range f.volumes {
		if !spare(v) {
			fenced = append(fenced, v)
		}
	}
	return fenced, f.err
}

func (f *fakeTargets) AskMembers(context.Context) (map[string]time.Time, error) {
	f.asks++
	return f.answered, nil
}

// A restarted agent keeps its predecessor's expiry, fences once per
// lapse, and retries a fence that failed.
func TestKeeperFencesOncePerLapse(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	f := File{Path: filepath.Join(t.TempDir(), "lease")}
	if err := f.Write(now.Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	targets := &fakeTargets{volumes: []string{"pvc-1"}, err: errors.New("SPDK busy")}
	k, err := New(f, targets, clock, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Check(context.Background()); err != nil || targets.calls != 0 {
		t.Fatalf("within the inherited lease: %v, %d fences", err, targets.calls)
	}
	now = now.Add(5 * time.Second)
	if err := k.Check(context.Background()); err == nil {
		t.Fatal("a failed fence must be reported")
	}
	targets.err = nil
	for range 3 {
		if err := k.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if targets.calls != 2 {
		t.Fatalf("fences = %d, want 2 (one failed, one done, none after)", targets.calls)
	}
	if _, ok := k.Fenced()["pvc-1"]; !ok {
		t.Fatal("pvc-1 is not recorded as fenced")
	}
	if _, err := k.Renew(10*time.Second, now.Add(10*time.Second), 0); err != nil {
		t.Fatal(err)
	}
	if err := k.Serve("pvc-1", false, func() error { return nil }); !errors.Is(err, ErrFenced) {
		t.Fatalf("an unconfirmed change of a fenced target: %v, want ErrFenced", err)
	}
	if err := k.Serve("pvc-1", true, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if len(k.Fenced()) != 0 {
		t.Fatalf("a confirmed change lifts the fence: fenced %v", k.Fenced())
	}
}

// The agent fences a lead before the expiry, so the SPDK container's
// probe, which acts at the expiry, never finds a host it was about to
// remove: that probe would kill SPDK (on the 2026-11-27 kernel host's
// storm it ran first and took the target's replica with it).
func TestKeeperFencesALeadBeforeTheProbeActs(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	f := File{Path: filepath.Join(t.TempDir(), "lease")}
	targets := &fakeTargets{volumes: []string{"pvc-1"}}
	k, err := New(f, targets, clock, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	expiry, err := k.Renew(10*time.Second, now.Add(10*time.Second), 0)
	if err != nil {
		t.Fatal(err)
	}
	now = expiry.Add(-3 * time.Second)
	if err := k.Check(context.Background()); err != nil || targets.calls != 0 {
		t.Fatalf("3 s before the expiry, with a 2 s lead: %v, %d fences; want none", err, targets.calls)
	}
	if err := k.Serve("pvc-1", false, func() error { return nil }); err != nil {
		t.Fatalf("3 s before the expiry the target is refused: %v", err)
	}
	now = expiry.Add(-time.Second)
	if err := k.Check(context.Background()); err != nil || targets.calls != 1 {
		t.Fatalf("1 s before the expiry, with a 2 s lead: %v, %d fences; want one", err, targets.calls)
	}
	if err := k.Serve("pvc-1", true, func() error { return nil }); !errors.Is(err, ErrLapsed) {
		t.Fatalf("a change within the lead: %v, want ErrLapsed", err)
	}
	noHosts := func(context.Context) ([]string, error) { return nil, nil }
	if err := Probe(context.Background(), f, expiry, noHosts); err != nil {
		t.Fatalf("the probe at the expiry, the agent having fenced: %v", err)
	}
}

// The probes over HTTP: each check's verdict is the status, and a failure
// is told to Failed, since the kubelet shows no body.
func TestProbesHandler(t *testing.T) {
	f := File{Path: filepath.Join(t.TempDir(), "lease")}
	if err := f.Write(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	var served []string
	var spdkErr error
	var failed []string
	p := Probes{
		File: f, Timeout: time.Second,
		Started:      func(context.Context) error { return spdkErr },
		HostsAllowed: func(context.Context) ([]string, error) { return served, spdkErr },
		Failed:       func(probe string, err error) { failed = append(failed, probe+": "+err.Error()) },
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	get := func(path string) int {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}

	if code := get("/startup"); code != http.StatusOK {
		t.Errorf("/startup with SPDK answering = %d, want 200", code)
	}
	if code := get("/fence"); code != http.StatusOK {
		t.Errorf("/fence, lapsed and fenced = %d, want 200", code)
	}
	served = []string{"pvc-1"}
	if code := get("/fence"); code != http.StatusServiceUnavailable {
		t.Errorf("/fence, lapsed and serving pvc-1 = %d, want 503", code)
	}
	if len(failed) != 1 || !strings.Contains(failed[0], "fence: ") || !strings.Contains(failed[0], "pvc-1") {
		t.Errorf("failures told: %q, want the fence probe's naming pvc-1", failed)
	}
	if err := f.Write(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if code := get("/fence"); code != http.StatusOK {
		t.Errorf("/fence, held and serving pvc-1 = %d, want 200", code)
	}
	spdkErr = errors.New("connection refused")
	if code := get("/startup"); code != http.StatusServiceUnavailable {
		t.Errorf("/startup with SPDK silent = %d, want 503", code)
	}
}

// A frozen SPDK fails /fence once it has been silent for the hang timeout
// under a valid lease, counted from its last answer to any probe; one
// answer starts the count again. Once the lease lapsed Probe's own
// question decides: a slow SPDK that still says which targets it serves
// keeps its held targets.
func TestTheFenceProbeStopsAHungSPDK(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	f := File{Path: filepath.Join(t.TempDir(), "lease")}
	if err := f.Write(now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	silent := errors.New("context deadline exceeded")
	var versionErr, hostsErr error
	var failed []string
	versionAsked := 0
	p := Probes{
		File: f, Timeout: time.Second, HangAfter: 10 * time.Second, Now: func() time.Time { return now },
		Started:      func(context.Context) error { versionAsked++; return versionErr },
		HostsAllowed: func(context.Context) ([]string, error) { return nil, hostsErr },
		Failed:       func(probe string, err error) { failed = append(failed, probe+": "+err.Error()) },
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	probe := func(path, when string, want int) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s %s = %d, want %d", path, when, resp.StatusCode, want)
		}
	}

	probe("/startup", "with SPDK answering", http.StatusOK)
	versionErr = silent
	now = now.Add(9 * time.Second)
	probe("/fence", "9s after SPDK's answer to /startup", http.StatusOK)
	now = now.Add(time.Second)
	probe("/fence", "10s after SPDK's answer to /startup, the lease holding", http.StatusServiceUnavailable)
	if len(failed) != 1 || !strings.Contains(failed[0], "SPDK has not answered for 10s") {
		t.Errorf("failures told: %q, want the fence probe's saying SPDK has not answered for 10s", failed)
	}
	versionErr = nil
	probe("/fence", "once SPDK answers again", http.StatusOK)
	versionErr = silent
	now = now.Add(5 * time.Second)
	probe("/fence", "5s after that answer", http.StatusOK)

	// The lease lapses with a held target: Probe asks SPDK which targets
	// let hosts in, and its answer is all that counts.
	if err := f.Write(now.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(20 * time.Second)
	asked := versionAsked
	probe("/fence", "lapsed, SPDK saying it serves no target but silent on its version", http.StatusOK)
	if versionAsked != asked {
		t.Error("the lapsed probe asked SPDK its version after Probe's question: a slow SPDK's two answers may outlast the kubelet's timeout")
	}
	if err := f.Write(now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(9 * time.Second)
	probe("/fence", "renewed, 9s after SPDK said which targets it serves", http.StatusOK)
	hostsErr = silent
	now = now.Add(time.Second)
	probe("/fence", "10s after SPDK last answered", http.StatusServiceUnavailable)
}

// A renewal holds no longer than its sender counts on, however late it
// arrives, and one that arrives after that is refused.
func TestRenewalHoldsNoLongerThanSent(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	f := File{Path: filepath.Join(t.TempDir(), "lease")}
	k, err := New(f, &fakeTargets{}, func() time.Time { return now }, 0)
	if err != nil {
		t.Fatal(err)
	}
	sent := now.Add(-15 * time.Second) // held up in retransmission
	expiry, err := k.Renew(20*time.Second, sent.Add(20*time.Second), 0)
	if err != nil || !expiry.Equal(sent.Add(20*time.Second)) {
		t.Fatalf("a renewal sent 15 s ago for 20 s: expiry %s (%v), want %s", expiry, err, sent.Add(20*time.Second))
	}
	if got, _ := f.Read(); !got.Equal(expiry) {
		t.Errorf("the lease file holds %s, want %s", got, expiry)
	}
	if _, err := k.Renew(20*time.Second, now.Add(-time.Millisecond), 0); !errors.Is(err, ErrLate) {
		t.Errorf("a renewal whose lease already ended: %v, want ErrLate", err)
	}
	if k.Expiry() != expiry {
		t.Errorf("a refused renewal moved the expiry to %s", k.Expiry())
	}
}

// A fence outlives the agent: the next one, on the same file, lets no
// host in again unconfirmed, and a confirmed change lifts it for good.
func TestFenceOutlivesTheAgent(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	f := File{Path: filepath.Join(t.TempDir(), "lease")}
	if err := f.Write(now.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	k, err := New(f, &fakeTargets{volumes: []string{"pvc-1"}}, clock, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	restarted, err := New(f, &fakeTargets{}, clock, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := restarted.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := restarted.Renew(10*time.Second, now.Add(10*time.Second), 0); err != nil {
		t.Fatal(err)
	}
	if err := restarted.Serve("pvc-1", false, func() error { return nil }); !errors.Is(err, ErrFenced) {
		t.Fatalf("a restarted agent's unconfirmed change of a fenced target: %v, want ErrFenced", err)
	}
	if err := restarted.Serve("pvc-1", true, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	again, err := New(f, &fakeTargets{}, clock, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fenced := again.Fenced(); len(fenced) != 0 {
		t.Fatalf("a confirmed target is still fenced after a restart: %v", fenced)
	}
}

// An agent that starts with its lease lapsed cannot know which targets its
// predecessor fenced: it serves none unconfirmed, refuses renewals, and
// fences them all again first.
func TestAgentStartedInALapseFencesAgain(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	f := File{Path: filepath.Join(t.TempDir(), "lease")}
	if err := f.Write(now.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	targets := &fakeTargets{volumes: []string{"pvc-1"}}
	k, err := New(f, targets, clock, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Renew(10*time.Second, now.Add(10*time.Second), 0); !errors.Is(err, ErrFencing) {
		t.Fatalf("a renewal before the fence was redone: %v, want ErrFencing", err)
	}
	if err := k.Serve("pvc-1", false, func() error { return nil }); !errors.Is(err, ErrLapsed) {
		t.Fatalf("an unconfirmed change before the fence was redone: %v, want ErrLapsed", err)
	}
	if err := k.Check(context.Background()); err != nil || targets.calls != 1 {
		t.Fatalf("the first check of an agent started in a lapse: %v, %d fences; want one", err, targets.calls)
	}
	if _, ok := k.Fenced()["pvc-1"]; !ok {
		t.Fatal("pvc-1 is not recorded fenced")
	}
	if _, err := k.Renew(10*time.Second, now.Add(10*time.Second), 0); err != nil {
		t.Fatalf("a renewal once the fence was redone: %v", err)
	}
	if err := k.Check(context.Background()); err != nil || targets.calls != 1 {
		t.Fatalf("a renewed lease fenced again: %v, %d fences", err, targets.calls)
	}
}

// With holds on, a target keeps its hosts past the lapse while its
// members answer: the agent asks them once the lease has less than half
// left before its lapse, spares the target at the lapse's fence, and fences it a lead
// before the hold it recorded for the probe runs out. A target whose
// members have not answered is fenced at the lapse, and without holds
// nothing is asked and every target is fenced.
func TestAHeldTargetKeepsItsHostsWhileItsMembersAnswer(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	now := start
	at := func(d time.Duration) time.Time { return start.Add(d) }
	f := File{Path: filepath.Join(t.TempDir(), "lease")}
	targets := &fakeTargets{volumes: []string{"pvc-1", "pvc-2"}}
	k, err := New(f, targets, func() time.Time { return now }, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Renew(10*time.Second, at(10*time.Second), 8*time.Second); err != nil {
		t.Fatal(err)
	}
	check := func(when time.Duration) {
		t.Helper()
		now = at(when)
		if err := k.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	probe := func(when time.Duration, served ...string) error {
		return Probe(context.Background(), f, at(when), func(context.Context) ([]string, error) { return served, nil })
	}

	check(2 * time.Second)
	if targets.asks != 0 {
		t.Fatalf("with more than half the lease left before its lapse (at 8s) the members were asked %d times", targets.asks)
	}
	targets.answered = map[string]time.Time{"pvc-1": at(6 * time.Second)}
	check(6 * time.Second)
	if targets.asks != 1 || targets.calls != 0 {
		t.Fatalf("with less than half left: %d asks, %d fences; want 1 and 0", targets.asks, targets.calls)
	}
	check(8 * time.Second) // the lapse, a lead before the expiry
	if got := k.Fenced(); len(got) != 1 || got["pvc-2"].IsZero() {
		t.Fatalf("at the lapse fenced %v, want pvc-2 alone (its members never answered)", got)
	}
	if err := probe(10*time.Second, "pvc-1"); err != nil {
		t.Fatalf("the probe after the expiry, pvc-1 held until 14s: %v", err)
	}
	if err := probe(10*time.Second, "pvc-1", "pvc-2"); err == nil {
		t.Fatal("the probe passed with pvc-2, which holds nothing, served after the expiry")
	}

	targets.answered = map[string]time.Time{"pvc-1": at(9 * time.Second)}
	check(10 * time.Second)
	check(14 * time.Second)
	if _, fenced := k.Fenced()["pvc-1"]; fenced {
		t.Fatal("pvc-1 was fenced while its members' last answers hold it until 17s")
	}
	check(15 * time.Second) // 17s less the lead: the members answered no more
	if _, fenced := k.Fenced()["pvc-1"]; !fenced {
		t.Fatalf("pvc-1 not fenced once its hold ran out: fenced %v", k.Fenced())
	}
	if err := probe(17*time.Second, "pvc-1"); err == nil {
		t.Fatal("the probe passed with pvc-1 served after its hold ran out")
	}
	calls := targets.calls
	check(16 * time.Second)
	if targets.calls != calls {
		t.Fatal("the agent fences again with no target held")
	}
	if err := k.Serve("pvc-1", false, func() error { return nil }); !errors.Is(err, ErrLapsed) {
		t.Fatalf("a change while the lease is lapsed: %v, want ErrLapsed", err)
	}

	// Renewed without holds: nothing is asked, and the next lapse fences
	// every target, whatever its members answered.
	if _, err := k.Renew(10*time.Second, at(26*time.Second), 0); err != nil {
		t.Fatal(err)
	}
	asks := targets.asks
	targets.answered = map[string]time.Time{"pvc-1": at(24 * time.Second), "pvc-2": at(24 * time.Second)}
	check(24 * time.Second)
	if targets.asks != asks || len(k.Fenced()) != 2 {
		t.Fatalf("without holds: %d asks, fenced %v; want none asked and both fenced", targets.asks-asks, k.Fenced())
	}
}

// An agent restarted during a lapse goes by the holds its predecessor
// recorded: a target its members' answers still hold keeps its hosts, is
// recorded held and refuses an unconfirmed change; the others, and one
// recorded fenced whatever its members answer, are fenced again, before
// any renewal is taken; it asks the members itself, and their answers
// extend the hold; once they stop, the target is fenced a lead before its
// hold runs out.
func TestARestartedAgentKeepsWhatItsMembersHold(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	now := start
	at := func(d time.Duration) time.Time { return start.Add(d) }
	clock := func() time.Time { return now }
	f := File{Path: filepath.Join(t.TempDir(), "lease")}
	targets := &fakeTargets{volumes: []string{"pvc-1", "pvc-2", "pvc-3"},
		answered: map[string]time.Time{"pvc-1": at(6 * time.Second), "pvc-3": at(6 * time.Second)}}
	k, err := New(f, targets, clock, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Renew(10*time.Second, at(10*time.Second), 8*time.Second); err != nil {
		t.Fatal(err)
	}
	now = at(6 * time.Second)
	if err := k.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := f.writeFenced(map[string]time.Time{"pvc-3": start}); err != nil {
		t.Fatal(err)
	}

	// The agent dies before the lapse's fence and starts again after it.
	now = at(9 * time.Second)
	restarted, err := New(f, targets, clock, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	check := func(when time.Duration) {
		t.Helper()
		now = at(when)
		if err := restarted.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := restarted.Renew(10*time.Second, at(19*time.Second), 8*time.Second); !errors.Is(err, ErrFencing) {
		t.Fatalf("a renewal before the restarted agent's first fence: %v, want ErrFencing", err)
	}
	asks := targets.asks
	check(9 * time.Second)
	if held := restarted.HeldTargets(); len(held) != 1 || held["pvc-1"].IsZero() {
		t.Fatalf("a restarted agent: held %v, want pvc-1 alone (its members' answers hold it to 14s)", held)
	}
	if _, fenced := restarted.Fenced()["pvc-1"]; fenced {
		t.Fatal("a restarted agent fenced a target its members' answers hold")
	}
	for _, v := range []string{"pvc-2", "pvc-3"} {
		if _, fenced := restarted.Fenced()[v]; !fenced {
			t.Fatalf("a restarted agent spared %s: fenced %v", v, restarted.Fenced())
		}
	}
	if targets.asks == asks {
		t.Fatal("a restarted agent in a lapse did not ask the members")
	}
	for _, v := range []string{"pvc-1", "pvc-2"} {
		if err := restarted.Serve(v, false, func() error { return nil }); !errors.Is(err, ErrLapsed) {
			t.Fatalf("an unconfirmed change of %s in the lapse: %v, want ErrLapsed", v, err)
		}
	}
	if err := Probe(context.Background(), f, at(11*time.Second), func(context.Context) ([]string, error) { return []string{"pvc-1"}, nil }); err != nil {
		t.Fatalf("the probe within the recorded hold: %v", err)
	}

	targets.answered = map[string]time.Time{"pvc-1": at(10 * time.Second)} // then no more answers
	check(11 * time.Second)
	check(15 * time.Second) // held to 18s, less the lead
	if _, held := restarted.HeldTargets()["pvc-1"]; !held {
		t.Fatalf("the restarted agent's own answers did not extend the hold: held %v, fenced %v", restarted.HeldTargets(), restarted.Fenced())
	}
	if _, err := restarted.Renew(10*time.Second, at(25*time.Second), 8*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := restarted.Serve("pvc-1", false, func() error { return nil }); !errors.Is(err, ErrFenced) {
		t.Fatalf("an unconfirmed change of the held target after a renewal: %v, want ErrFenced", err)
	}
	check(16 * time.Second)
	if _, fenced := restarted.Fenced()["pvc-1"]; !fenced || len(restarted.HeldTargets()) != 0 {
		t.Fatalf("once its hold ran out: fenced %v, held %v; want pvc-1 fenced", restarted.Fenced(), restarted.HeldTargets())
	}
}

// A held target stays held after a renewal: the renewal does not say
// that the operator did not move it meanwhile. It keeps its hosts while
// its members answer, refuses an unconfirmed change, is fenced once its
// hold runs out with the lease valid (and the probe acts if not), keeps
// being held by an agent that restarts, and a confirmed change releases
// it.
func TestAHeldTargetStaysHeldAfterARenewal(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	now := start
	at := func(d time.Duration) time.Time { return start.Add(d) }
	f := File{Path: filepath.Join(t.TempDir(), "lease")}
	targets := &fakeTargets{volumes: []string{"pvc-1"}, answered: map[string]time.Time{"pvc-1": at(6 * time.Second)}}
	clock := func() time.Time { return now }
	k, err := New(f, targets, clock, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Renew(10*time.Second, at(10*time.Second), 8*time.Second); err != nil {
		t.Fatal(err)
	}
	check := func(k *Keeper, when time.Duration) {
		t.Helper()
		now = at(when)
		if err := k.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	check(k, 6*time.Second)
	check(k, 8*time.Second) // the lapse: held
	if _, held := k.HeldTargets()["pvc-1"]; !held || len(k.Fenced()) != 0 {
		t.Fatalf("at the lapse held %v, fenced %v; want pvc-1 held", k.HeldTargets(), k.Fenced())
	}
	now = at(9 * time.Second)
	if _, err := k.Renew(10*time.Second, at(19*time.Second), 8*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := k.Serve("pvc-1", false, func() error { return nil }); !errors.Is(err, ErrFenced) {
		t.Fatalf("an unconfirmed change of a held target after the renewal: %v, want ErrFenced", err)
	}
	targets.answered = map[string]time.Time{"pvc-1": at(9 * time.Second)} // then no more answers
	check(k, 9*time.Second)

	restarted, err := New(f, targets, clock, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	check(restarted, 14*time.Second)
	if _, held := restarted.HeldTargets()["pvc-1"]; !held || len(restarted.Fenced()) != 0 {
		t.Fatalf("a restarted agent: held %v, fenced %v; want pvc-1 still held (its hold runs to 17s)", restarted.HeldTargets(), restarted.Fenced())
	}
	if err := Probe(context.Background(), f, at(16*time.Second), func(context.Context) ([]string, error) { return []string{"pvc-1"}, nil }); err != nil {
		t.Fatalf("the probe within the hold, lease valid: %v", err)
	}
	check(restarted, 15*time.Second) // 17s less the lead, the lease valid to 19s
	if _, fenced := restarted.Fenced()["pvc-1"]; !fenced || len(restarted.HeldTargets()) != 0 {
		t.Fatalf("once its hold ran out: fenced %v, held %v; want pvc-1 fenced", restarted.Fenced(), restarted.HeldTargets())
	}
	if err := Probe(context.Background(), f, at(17*time.Second), func(context.Context) ([]string, error) { return []string{"pvc-1"}, nil }); err != nil {
		t.Fatalf("the probe after a fence that was recorded: %v", err)
	}
	if err := restarted.Serve("pvc-1", true, func() error { return nil }); err != nil || len(restarted.Fenced()) != 0 {
		t.Fatalf("a confirmed change: %v, fenced %v; want the fence lifted", err, restarted.Fenced())
	}
}

// The probe stops SPDK when a target held past a lapse still lets hosts
// in after its hold ran out, though the lease was renewed since: the
// agent that should have fenced it did not.
func TestTheProbeActsOnAHoldThatRanOutUnderAValidLease(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f := File{Path: filepath.Join(t.TempDir(), "lease")}
	if err := f.Write(now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := f.writeHolds(holdsFile{Hold: 8 * time.Second, Until: map[string]time.Time{"pvc-1": now, "pvc-2": now}, Held: map[string]time.Time{"pvc-1": now}}); err != nil {
		t.Fatal(err)
	}
	serving := func(v ...string) func(context.Context) ([]string, error) {
		return func(context.Context) ([]string, error) { return v, nil }
	}
	if err := Probe(context.Background(), f, now, serving("pvc-1")); err == nil {
		t.Fatal("the probe passed with a held target served past its hold")
	}
	if err := Probe(context.Background(), f, now, serving("pvc-2")); err != nil {
		t.Fatalf("the probe with the lease valid and only a target never held served: %v", err)
	}
	if err := Probe(context.Background(), f, now.Add(-time.Second), serving("pvc-1")); err != nil {
		t.Fatalf("the probe within the held target's hold: %v", err)
	}
}

// A renewal that comes after the lease counted as lapsed, before a Check
// fenced it, is refused until one has: it must not undo the lapse. The
// next renewal is taken, and the target fenced at the lapse serves only
// confirmed.
func TestARenewalDoesNotUndoAnUnfencedLapse(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f := File{Path: filepath.Join(t.TempDir(), "lease")}
	targets := &fakeTargets{volumes: []string{"pvc-1"}}
	k, err := New(f, targets, func() time.Time { return now }, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Renew(10*time.Second, now.Add(10*time.Second), 0); err != nil {
		t.Fatal(err)
	}
	now = now.Add(9 * time.Second) // lapsed at 8s; no Check ran
	if _, err := k.Renew(10*time.Second, now.Add(10*time.Second), 0); !errors.Is(err, ErrFencing) {
		t.Fatalf("a renewal before the lapse was fenced: %v, want ErrFencing", err)
	}
	if err := k.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Renew(10*time.Second, now.Add(10*time.Second), 0); err != nil {
		t.Fatalf("a renewal once the lapse was fenced: %v", err)
	}
	if err := k.Serve("pvc-1", false, func() error { return nil }); !errors.Is(err, ErrFenced) {
		t.Fatalf("an unconfirmed change after the lapse: %v, want ErrFenced", err)
	}
}

// A fence that checks the held targets alone, and ends after the lease
// lapsed, does not count as that lapse's: the next Check fences the
// targets no member holds.
func TestAFenceOfTheHeldTargetsIsNotTheLapses(t *testing.T) {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	now := start
	f := File{Path: filepath.Join(t.TempDir(), "lease")}
	targets := &fakeTargets{volumes: []string{"pvc-1", "pvc-2"}}
	k, err := New(f, targets, func() time.Time { return now }, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	k.Held = map[string]time.Time{"pvc-1": start} // held since an earlier lapse
	if _, err := k.Renew(10*time.Second, start.Add(10*time.Second), 8*time.Second); err != nil {
		t.Fatal(err)
	}
	targets.onFence = func() { now = start.Add(9 * time.Second) } // the lease lapses meanwhile
	if err := k.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, fenced := k.Fenced()["pvc-2"]; fenced {
		t.Fatal("the fence of the held targets fenced pvc-2, which its lease still covered when it began")
	}
	targets.onFence = nil
	if err := k.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, fenced := k.Fenced()["pvc-2"]; !fenced {
		t.Fatalf("the lapse was not fenced: fenced %v", k.Fenced())
	}
}
