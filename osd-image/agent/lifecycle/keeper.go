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

// Package lifecycle keeps the OSD bootstrapped on whatever SPDK answers
// behind the shared socket and says whether the agent is ready. SPDK runs
// in its own container; when it dies the kubelet restarts it empty, and the
// keeper notices at its next probe: the agent is NotReady until the device
// is claimed, the lvstore reloaded and the transport re-created. Exports,
// attachments and raids are the operator's to re-drive.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/flint-io/flint/internal/spdk/client"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
	"github.com/flint-io/flint/osd-image/agent/launch"
	"github.com/flint-io/flint/osd-image/agent/storage"
)

// ErrStarting is the reason before the first probe.
var ErrStarting = errors.New("the agent has not probed SPDK yet")

// Keeper probes SPDK and re-bootstraps the OSD on it.
type Keeper struct {
	engine   *storage.Engine
	spdk     *client.Client
	logLevel string
	log      logr.Logger

	mu       sync.Mutex
	notReady error
	version  string
	warnings []agentv1.PreflightFinding
}

// New returns a Keeper of o on spdk; logLevel is SPDK's log level.
func New(engine *storage.Engine, spdk *client.Client, logLevel string, log logr.Logger) *Keeper {
	return &Keeper{engine: engine, spdk: spdk, logLevel: logLevel, log: log, notReady: ErrStarting}
}

// probeTimeout bounds one probe: a wedged SPDK is not a ready one.
const probeTimeout = 10 * time.Second

// Run probes every interval until ctx ends.
func (k *Keeper) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		_ = k.Probe(ctx) // the outcome is the readiness reason, logged when it changes
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Probe checks SPDK once and brings the OSD's base state back if SPDK lost
// it. Bootstrap is idempotent and only reads when nothing is missing, so a
// probe does the same work whether SPDK restarted or not: a restart between
// two probes cannot go unnoticed.
func (k *Keeper) Probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	err := k.bootstrap(ctx)
	// The SPDK container's hand-off is rewritten at each start of SPDK.
	var warnings []agentv1.PreflightFinding
	if h, herr := launch.ReadHandoff(filepath.Dir(k.spdk.Socket())); herr == nil {
		warnings = h.Warnings
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.warnings = warnings
	switch {
	case err == nil && k.notReady != nil:
		k.log.Info("OSD ready", "spdk", k.version)
	case err != nil && (k.notReady == nil || k.notReady.Error() != err.Error()):
		k.log.Info("OSD not ready", "reason", err.Error())
	}
	k.notReady = err
	return err
}

func (k *Keeper) bootstrap(ctx context.Context) error {
	v, err := k.spdk.SpdkGetVersion(ctx)
	if err != nil {
		return fmt.Errorf("SPDK does not answer on %s: %w", k.spdk.Socket(), err)
	}
	k.mu.Lock()
	k.version = v.Version
	k.mu.Unlock()
	if err := k.spdk.LogSetLevel(ctx, k.logLevel); err != nil {
		return fmt.Errorf("set SPDK's log level to %s: %w", k.logLevel, err)
	}
	if err := k.spdk.LogSetPrintLevel(ctx, k.logLevel); err != nil {
		return fmt.Errorf("set SPDK's print level to %s: %w", k.logLevel, err)
	}
	if _, err := k.engine.Bootstrap(ctx); err != nil {
		return fmt.Errorf("bootstrap the OSD: %w", err)
	}
	return nil
}

// Warnings are the preflight findings the running SPDK started despite.
func (k *Keeper) Warnings() []agentv1.PreflightFinding {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.warnings
}

// Ready is nil when the OSD serves, else why it does not.
func (k *Keeper) Ready() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.notReady
}

// Readyz answers 200 when ready says nil and 503 with the reason when not.
func Readyz(ready func() error) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = fmt.Fprintln(w, "ok")
	}
}

// Healthz answers 200 while the agent runs: SPDK being down is a reason
// not to be ready, never to restart the agent.
func Healthz(w http.ResponseWriter, _ *http.Request) {
	_, _ = fmt.Fprintln(w, "ok")
}
