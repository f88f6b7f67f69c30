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

package lifecycle

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/flint-io/flint/internal/spdk/spdklab"
	"github.com/flint-io/flint/internal/spdk/types"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
	"github.com/flint-io/flint/osd-image/agent/storage"
)

// rig is one SPDK (the double, or a real flint_tgt under FLINT_SPDK_DIR)
// with an aio device file.
type rig struct {
	spdk   *spdklab.Target
	device string
}

func newRig(t *testing.T) *rig {
	l := spdklab.NewOf(t, 1, spdklab.FlintTgt)
	return &rig{spdk: l.Targets[0], device: l.Image(t, "dev", 1<<30)}
}

func (r *rig) keeper(uid string) *Keeper {
	o := storage.New(storage.Config{
		UID:      uid,
		Device:   storage.Device{Driver: storage.DriverAIO, Path: r.device},
		Listener: storage.Listener{Transport: "tcp", Address: "127.0.0.1", Port: 4420},
		Tuning:   storage.Tuning{IOUnitSize: 16384},
	}, r.spdk.Client)
	return New(o, r.spdk.Client, "warning", logr.Discard())
}

func readyz(k *Keeper) (int, string) {
	rec := httptest.NewRecorder()
	Readyz(k.Ready)(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	return rec.Code, rec.Body.String()
}

// SPDK killed and restarted: the agent goes NotReady, then Ready again with
// the transport re-created and its lvstore reloaded from the device. It
// runs against a real SPDK too (make test-spdk).
func TestSPDKRestartMakesTheAgentNotReadyThenReady(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	k := r.keeper("osd-a")
	if code, body := readyz(k); code != http.StatusServiceUnavailable || !strings.Contains(body, ErrStarting.Error()) {
		t.Fatalf("before the first probe: %d %q", code, body)
	}
	if err := k.Probe(ctx); err != nil {
		t.Fatal(err)
	}
	if code, _ := readyz(k); code != http.StatusOK {
		t.Fatalf("readyz after bootstrap = %d", code)
	}
	before, err := r.spdk.Client.BdevLvolGetLvstores(ctx, osdLvstore("osd-a"))
	if err != nil {
		t.Fatal(err)
	}

	r.spdk.Kill()
	if err := k.Probe(ctx); err == nil || !strings.Contains(err.Error(), "SPDK does not answer") {
		t.Fatalf("probe with SPDK dead: %v", err)
	}
	if code, body := readyz(k); code != http.StatusServiceUnavailable || !strings.Contains(body, "SPDK does not answer") {
		t.Fatalf("readyz with SPDK dead = %d %q", code, body)
	}

	r.spdk.Restart(t)
	if err := k.Probe(ctx); err != nil {
		t.Fatalf("probe after the restart: %v", err)
	}
	after, err := r.spdk.Client.BdevLvolGetLvstores(ctx, osdLvstore("osd-a"))
	if err != nil || after[0].UUID != before[0].UUID {
		t.Fatalf("lvstore after the restart: %+v, %v; want %s reloaded", after, err, before[0].UUID)
	}
	if tr, err := r.spdk.Client.NvmfGetTransports(ctx, "tcp"); err != nil || tr[0].IOUnitSize != 16384 {
		t.Fatalf("transport after the restart: %+v, %v", tr, err)
	}
	if code, _ := readyz(k); code != http.StatusOK {
		t.Fatalf("readyz after the restart = %d", code)
	}
}

// Run notices a restart on its own, within a few probe intervals.
func TestRunFollowsSPDK(t *testing.T) {
	r := newRig(t)
	k := r.keeper("osd-a")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.Run(ctx, 10*time.Millisecond); close(done) }()
	defer func() { cancel(); <-done }()
	waitFor := func(what string, cond func(error) bool) {
		t.Helper()
		for range 3000 { // 30 s at most: a real SPDK takes seconds to start
			if cond(k.Ready()) {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("the agent never became %s: %v", what, k.Ready())
	}
	isReady := func(err error) bool { return err == nil }
	waitFor("ready", isReady)
	r.spdk.Kill()
	waitFor("not ready", func(err error) bool { return err != nil })
	r.spdk.Restart(t)
	waitFor("ready again", isReady)
}

// A device another OSD owns keeps the agent NotReady with a reason that
// says what to do, and nothing on the device changes.
func TestForeignDeviceKeepsTheAgentNotReady(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	if err := r.keeper("osd-a").Probe(ctx); err != nil {
		t.Fatal(err)
	}
	k := r.keeper("osd-b")
	err := k.Probe(ctx)
	if !errors.Is(err, storage.ErrForeignDevice) || !errors.Is(k.Ready(), storage.ErrForeignDevice) {
		t.Fatalf("probe = %v, ready = %v; want ErrForeignDevice", err, k.Ready())
	}
	if code, body := readyz(k); code != http.StatusServiceUnavailable || !strings.Contains(body, "flint-osd-a") {
		t.Errorf("readyz = %d %q; want the owner named", code, body)
	}
}

func osdLvstore(uid string) types.LvstoreSelector {
	return types.LvstoreSelector{LvsName: agentv1.LvstoreName(uid)}
}
