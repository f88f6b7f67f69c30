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

package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/flint-io/flint/internal/spdk/spdklab"
	"github.com/flint-io/flint/test/ledger"
)

// host runs SPDK's own initiator, spdk_dd, once per transfer: each run
// connects afresh to where the Volume's target is then, the way a host
// follows the paths it is given. It binds the address hostAddr, which
// partitions from the target match.
type host struct {
	dd  string
	dir string
}

// endpoint is a namespace to connect to over NVMe/TCP.
type endpoint struct {
	addr string
	port int
	nqn  string
}

const (
	hostNQN  = "nqn.2014-08.org.nvmexpress:uuid:fa017000-0000-4000-8000-000000000001"
	hostAddr = "127.0.3.1"
	// ddTimeout bounds one transfer: a write held longer is given up as
	// not acknowledged.
	ddTimeout = 30 * time.Second
)

// write writes data at block first of ep's namespace; nil means it was
// acknowledged.
func (h *host) write(ctx context.Context, ep endpoint, first uint64, data []byte) error {
	in := filepath.Join(h.dir, "write.bin")
	if err := os.WriteFile(in, data, 0o600); err != nil {
		return err
	}
	return h.run(ctx, nvmeConfig(ep), "hn1", "--if="+in, "--ob=hn1", "--bs="+strconv.Itoa(ledger.BlockSize),
		fmt.Sprintf("--count=%d", len(data)/ledger.BlockSize), fmt.Sprintf("--seek=%d", first))
}

// read reads size bytes from the start of ep's namespace.
func (h *host) read(ctx context.Context, ep endpoint, size int) ([]byte, error) {
	return h.readBdev(ctx, nvmeConfig(ep), "hn1", size)
}

// readLvol reads size bytes of the lvol lvstore/lvol on the device image
// of a stopped OSD, as SPDK finds it there: independent of Flint's code.
func (h *host) readLvol(ctx context.Context, image, lvstore, lvol string, size int) ([]byte, error) {
	conf := []any{
		map[string]any{"method": "bdev_aio_create", "params": map[string]any{"name": "disk", "filename": image, "block_size": ledger.BlockSize}},
		map[string]any{"method": "bdev_wait_for_examine"},
	}
	return h.readBdev(ctx, conf, lvstore+"/"+lvol, size)
}

func (h *host) readBdev(ctx context.Context, conf []any, bdev string, size int) ([]byte, error) {
	out := filepath.Join(h.dir, "read.bin")
	if err := h.run(ctx, conf, bdev, "--ib="+bdev, "--of="+out, "--bs=1048576", fmt.Sprintf("--count=%d", size>>20)); err != nil {
		return nil, err
	}
	return os.ReadFile(out)
}

// nvmeConfig attaches ep as controller h (namespace bdev hn1), bound to
// hostAddr. SPDK's defaults fail I/O as soon as the connection is lost.
func nvmeConfig(ep endpoint) []any {
	return []any{map[string]any{"method": "bdev_nvme_attach_controller", "params": map[string]any{
		"name": "h", "trtype": "tcp", "adrfam": "ipv4", "traddr": ep.addr, "trsvcid": strconv.Itoa(ep.port),
		"subnqn": ep.nqn, "hostnqn": hostNQN, "hostaddr": hostAddr,
	}}}
}

// A transfer needs few buffers and bdev_ios; SPDK's default pools need
// 512 MiB, and a process's start (with --no-huge, in ordinary memory)
// takes as long as touching it: with these 128 MiB do, and a write costs a
// quarter of the time.
var (
	leanBuffers = map[string]any{"method": "iobuf_set_options", "params": map[string]any{"small_pool_count": 1024, "large_pool_count": 128}}
	leanBdevIOs = map[string]any{"method": "bdev_set_options", "params": map[string]any{"bdev_io_pool_size": 2048, "bdev_io_cache_size": 64}}
)

// run runs spdk_dd with the bdev configuration conf; bdev names what the
// error is about.
func (h *host) run(ctx context.Context, conf []any, bdev string, args ...string) error {
	data, err := json.Marshal(map[string]any{"subsystems": []any{
		map[string]any{"subsystem": "iobuf", "config": []any{leanBuffers}},
		map[string]any{"subsystem": "bdev", "config": append([]any{leanBdevIOs}, conf...)},
	}})
	if err != nil {
		return err
	}
	path := filepath.Join(h.dir, "dd.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, ddTimeout)
	defer cancel()
	args = append([]string{"--no-huge", "-s", "128", "-m", "0x1", "--disable-cpumask-locks", "--no-rpc-server", "--json", path}, args...)
	out, err := exec.CommandContext(ctx, h.dd, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("spdk_dd on %s: %w: %s", bdev, err, lastLines(out, 3))
	}
	if lines := spdklab.DDFailures(out); len(lines) > 0 {
		return fmt.Errorf("spdk_dd on %s exited 0, but its I/O failed: %s", bdev, strings.Join(lines, " | "))
	}
	return nil
}

// lastLines is the end of a program's output, for an error.
func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
