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

// Package spdktest is an in-process double of SPDK's JSON-RPC server for
// tests. Each Target serves one Unix socket and keeps the state a real
// spdk_tgt keeps: bdevs with their claims, lvstores with cluster
// accounting, snapshots and clones, NVMe-oF transports and subsystems, NVMe
// controllers attached over the fabric to other Targets, and raid1 with
// degraded and rebuilding states. It answers with the codes and messages a
// real SPDK v25.09 answers (recorded in spdk-transcripts).
//
// It never accepts what SPDK rejects. Where it does not model a behaviour it
// refuses the call with CodeNotModeled rather than pretend.
//
// A Fabric connects Targets the way a network and the disks of a node do:
// listeners are found by address, and disks (files for aio/uring, PCI
// devices for pcie) keep their lvstores when a Target is killed and
// restarted, while everything SPDK keeps in memory is lost.
package spdktest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/flint-io/flint/internal/spdk/jsonrpc"
)

// CodeNotModeled answers a call the double does not model (-EOPNOTSUPP).
const CodeNotModeled = -95

// Clock tells the double the time: controller loss timeouts and rebuild
// progress follow it.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// FakeClock is a Clock that moves only when told to.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock returns a FakeClock at a fixed instant.
func NewFakeClock() *FakeClock {
	return &FakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// Now returns the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Fabric holds what Targets share: listeners by address and persistent
// disks. One lock serialises every call on every Target of the Fabric, so
// calls that span Targets (attaching a remote controller) see one state.
type Fabric struct {
	mu    sync.Mutex
	clock Clock
	// rebuildRate is how fast a raid1 rebuild copies, in blocks a second.
	rebuildRate uint64
	disks       map[string]*disk
	targets     []*Target
	// writeSeq numbers host writes; held are those not settled, acked
	// those acknowledged (writes.go).
	writeSeq uint64
	held     []*hostWrite
	acked    map[uint64]bool
	// seen are the Targets' marks as the last refresh began: a Target
	// whose mark moved since has its controllers and raids looked at,
	// and the controllers following it.
	seen []targetMark
	// followers maps each Target to the controllers whose remote it is,
	// each to the Target holding it; pending holds the controllers the
	// last refresh left unsettled (reconnecting); rebuilding the Targets
	// with a raid rebuilding. Only these are looked at when nothing
	// changed: a refresh costs what changed, not the fabric's size.
	followers  map[*Target]map[*ctrlr]*Target
	pending    map[*ctrlr]*Target
	rebuilding map[*Target]bool
}

// FabricOption configures a Fabric.
type FabricOption func(*Fabric)

// WithClock makes the Fabric follow clock.
func WithClock(clock Clock) FabricOption { return func(f *Fabric) { f.clock = clock } }

// WithRebuildRate sets how many blocks per second a raid1 rebuild copies.
func WithRebuildRate(blocksPerSecond uint64) FabricOption {
	return func(f *Fabric) { f.rebuildRate = blocksPerSecond }
}

// NewFabric returns an empty Fabric on the real clock.
func NewFabric(opts ...FabricOption) *Fabric {
	f := &Fabric{
		clock: realClock{}, rebuildRate: 64 * 1024, disks: map[string]*disk{}, acked: map[uint64]bool{},
		followers: map[*Target]map[*ctrlr]*Target{}, pending: map[*ctrlr]*Target{}, rebuilding: map[*Target]bool{},
	}
	for _, o := range opts {
		o(f)
	}
	return f
}

// AddPCIeDevice makes an NVMe device at a PCI address that a Target can
// attach with trtype pcie.
func (f *Fabric) AddPCIeDevice(pciAddress string, sizeBytes uint64, serial, model string, opts ...PCIeDeviceOption) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := &disk{size: sizeBytes, serial: serial, model: model, blockSize: 4096}
	for _, o := range opts {
		o(d)
	}
	f.disks[pcieKey(pciAddress)] = d
}

// PCIeDeviceOption describes a PCIe device's controller.
type PCIeDeviceOption func(*disk)

// WithVolatileWriteCache gives the controller a volatile write cache,
// enabled after every controller reset (an attach), as drives ship.
func WithVolatileWriteCache() PCIeDeviceOption {
	return func(d *disk) { d.volatileWriteCache = true }
}

// WithLogicalBlockSize formats the namespace with another LBA size, such
// as 512 (drives often ship so).
func WithLogicalBlockSize(bytes uint32) PCIeDeviceOption {
	return func(d *disk) { d.blockSize = bytes }
}

// WriteCacheEnabled says whether the device's volatile write cache is on.
func (f *Fabric) WriteCacheEnabled(pciAddress string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.disks[pcieKey(pciAddress)]
	return d != nil && d.writeCacheEnabled
}

// TargetOption configures a Target.
type TargetOption func(*Target)

// WithRDMA makes the Target behave like SPDK on a machine with an RDMA
// device: it accepts the RDMA transport. Without it the Target is the
// SPDK Flint builds (with RDMA) on a machine without one, which refuses
// it (-32603 "Failed to create transport.").
func WithRDMA() TargetOption { return func(t *Target) { t.rdma = true } }

// Target is one SPDK application serving JSON-RPC on a Unix socket.
type Target struct {
	fabric *Fabric
	socket string
	rdma   bool

	// Guarded by fabric.mu.
	st      *state
	running bool
	// rpcs counts the calls answered since the Target was started first.
	rpcs uint64

	lnMu  sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// StartTarget starts a Target serving socket.
func (f *Fabric) StartTarget(socket string, opts ...TargetOption) (*Target, error) {
	t := &Target{fabric: f, socket: socket}
	for _, o := range opts {
		o(t)
	}
	if err := t.start(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.targets = append(f.targets, t)
	f.mu.Unlock()
	return t, nil
}

// Socket is the Target's RPC socket.
func (t *Target) Socket() string { return t.socket }

// Kill stops the Target the way SIGKILL stops SPDK: the socket closes, its
// listeners vanish from the fabric, and everything in memory is lost. Disks
// keep their lvstores.
func (t *Target) Kill() {
	t.lnMu.Lock()
	if t.ln != nil {
		_ = t.ln.Close()
		t.ln = nil
	}
	for c := range t.conns {
		_ = c.Close()
	}
	t.lnMu.Unlock()
	t.wg.Wait()

	t.fabric.mu.Lock()
	if t.st != nil {
		// What was on disks stays there, no longer loaded.
		for _, s := range t.st.lvstores {
			s.base = nil
			for _, l := range s.lvols {
				l.bdev = nil
			}
		}
	}
	t.running = false
	t.st = nil
	// Initiators see their connections drop now, not at their next call.
	t.fabric.refresh()
	t.fabric.mu.Unlock()
}

// Restart starts a killed Target again with an empty configuration, like a
// new SPDK process with the same arguments.
func (t *Target) Restart() error {
	t.Kill()
	return t.start()
}

// RPCs counts, by socket, the calls each Target has answered: what the
// control plane costs SPDK, whose reactor answers them on the core it
// polls I/O with.
func (f *Fabric) RPCs() map[string]uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	counts := make(map[string]uint64, len(f.targets))
	for _, t := range f.targets {
		counts[t.socket] = t.rpcs
	}
	return counts
}

// Running reports whether the Target serves its socket.
func (t *Target) Running() bool {
	t.fabric.mu.Lock()
	defer t.fabric.mu.Unlock()
	return t.running
}

func (t *Target) start() error {
	_ = os.Remove(t.socket)
	ln, err := net.Listen("unix", t.socket)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", t.socket, err)
	}
	t.fabric.mu.Lock()
	t.st = newState()
	t.running = true
	t.fabric.mu.Unlock()

	t.lnMu.Lock()
	t.ln = ln
	t.conns = map[net.Conn]bool{}
	t.lnMu.Unlock()
	t.wg.Add(1)
	go t.accept(ln)
	return nil
}

func (t *Target) accept(ln net.Listener) {
	defer t.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		t.lnMu.Lock()
		if t.ln != ln {
			t.lnMu.Unlock()
			_ = c.Close()
			return
		}
		t.conns[c] = true
		t.lnMu.Unlock()
		t.wg.Add(1)
		go t.serve(c)
	}
}

type rpcRequest struct {
	Version string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	ID      json.RawMessage `json:"id"`
	Params  json.RawMessage `json:"params"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%s (%d)", e.Message, e.Code) }

func errf(code int, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// serve answers the requests of one connection in order.
func (t *Target) serve(c net.Conn) {
	defer t.wg.Done()
	defer func() {
		t.lnMu.Lock()
		delete(t.conns, c)
		t.lnMu.Unlock()
		_ = c.Close()
	}()
	dec := json.NewDecoder(c)
	enc := json.NewEncoder(c)
	for {
		var req rpcRequest
		if err := dec.Decode(&req); err != nil {
			return
		}
		result, rerr := t.handle(context.Background(), req.Method, req.Params)
		resp := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		if rerr != nil {
			resp["error"] = rerr
		} else {
			resp["result"] = result
		}
		if err := enc.Encode(resp); err != nil {
			return
		}
	}
}

// handle runs one call the way the RPC server does; tests replay
// recorded calls through it without a socket.
func (t *Target) handle(_ context.Context, method string, params json.RawMessage) (any, *rpcError) {
	f := t.fabric
	f.mu.Lock()
	defer f.mu.Unlock()
	if !t.running {
		return nil, errf(CodeNotModeled, "target is not running")
	}
	t.rpcs++
	f.refresh()
	h, ok := handlers[method]
	if !ok {
		return nil, errf(jsonrpc.CodeMethodNotFound, "Method not found")
	}
	if len(params) > 0 && string(params) == "null" {
		params = nil
	}
	res, err := h(t, params)
	if !strings.Contains(method, "get") {
		t.st.gen++
		// Connections follow the change at once (a host removed, a
		// listener gone), as they do when SPDK drops them. A read changes
		// nothing to follow: what time changes, the next call's refresh
		// (or the test's) brings before anyone looks.
		f.refresh()
	}
	if err != nil {
		var re *rpcError
		if errors.As(err, &re) {
			return nil, re
		}
		return nil, errf(jsonrpc.CodeInternalError, "%v", err)
	}
	return res, nil
}

func (f *Fabric) now() time.Time { return f.clock.Now() }

// running lists the Targets that serve.
func (f *Fabric) running() []*Target {
	var ts []*Target
	for _, t := range f.targets {
		if t.running {
			ts = append(ts, t)
		}
	}
	return ts
}
