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

package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/flint-io/flint/internal/keylock"
	"github.com/flint-io/flint/internal/spdk/client"
	"github.com/flint-io/flint/internal/spdk/jsonrpc"
	"github.com/flint-io/flint/internal/spdk/types"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// BlockSize is the logical block size of every OSD's base bdev, so of its
// lvstore and lvols: SPDK's raid1 mirrors only members of one block size,
// and any two OSDs may hold replicas of one Volume.
const BlockSize = 4096

// Errors of the OSD's operations, matched with errors.Is. The agent's API
// maps each to one gRPC code.
var (
	// ErrConflict: an object of that name exists with other parameters.
	ErrConflict = errors.New("exists with different parameters")
	// ErrInvalid: the request itself is wrong.
	ErrInvalid = errors.New("invalid request")
	// ErrNotFound: something the request refers to does not exist.
	ErrNotFound = errors.New("not found")
	// ErrForeignDevice: the device holds data Flint does not own; nothing
	// on it was touched.
	ErrForeignDevice = errors.New("device holds data this OSD does not own")
	// ErrBlockSize: the device's logical blocks are not BlockSize bytes;
	// nothing on it was touched.
	ErrBlockSize = errors.New("device block size is not the OSDs' block size")
	// ErrInUse: the object is still used by another and cannot go first.
	ErrInUse = errors.New("in use")
	// ErrTargetLost: a target asked to resume has no raid any more (SPDK
	// restarted); its replicas may differ in the writes that were in flight.
	ErrTargetLost = errors.New("target lost")
	// ErrNotBootstrapped: the OSD's lvstore is not loaded (SPDK restarted
	// and the agent has not bootstrapped it again yet): nothing can be
	// said about what the device holds, so it is never a "not found".
	ErrNotBootstrapped = errors.New("not bootstrapped")
)

// Device drivers.
const (
	DriverPCIe   = "pcie"
	DriverAIO    = "aio"
	DriverURing  = "uring"
	DriverMalloc = "malloc"
)

// Device is the one device an OSD owns.
type Device struct {
	Driver string
	// PCIAddress of the NVMe controller, for pcie.
	PCIAddress string
	// Path of the block device or file, for aio and uring.
	Path string
	// MallocBytes is the size of a RAM-backed device (development only).
	MallocBytes uint64
	// PowerLossProtected says the device keeps what its volatile write
	// cache holds through a power loss, so the agent leaves the cache on.
	PowerLossProtected bool
}

// Listener is where the OSD's subsystems listen.
type Listener struct {
	// Transport is "tcp" or "rdma".
	Transport string
	Address   string
	Port      int
}

// Tuning sizes the NVMe-oF transport; zero keeps SPDK's default.
type Tuning struct {
	IOUnitSize, InCapsuleDataSize, NumSharedBuffers, BufCacheSize, MaxQueueDepth uint32
}

// Config is what an OSD is.
type Config struct {
	// UID identifies the OSD; its lvstore is named after it.
	UID      string
	Device   Device
	Listener Listener
	Tuning   Tuning
	// EpochFile keeps the target epoch each replica was last exported for
	// (beside the lease, so that an agent restart keeps it); empty keeps
	// it in memory.
	EpochFile string
	// MembersFile keeps the remote members each target counts on for
	// its hold (beside the lease, so that an agent restart keeps it);
	// empty keeps it in memory.
	MembersFile string
	// KeyDir is where the DH-HMAC-CHAP secrets SPDK authenticates with
	// are kept, a directory SPDK reads (a tmpfs: they are re-sent after
	// a restart); empty refuses requests that carry keys.
	KeyDir string
	// SilentAfter is how long a remote member may hold I/O without
	// completing any before it counts as holding writes (silenceWatch);
	// 0 is DefaultSilentAfter.
	SilentAfter time.Duration
}

// Engine drives the SPDK application of one OSD: its device and
// lvstore, its replicas, the targets it runs and its snapshots.
type Engine struct {
	cfg  Config
	spdk *client.Client

	mu         sync.Mutex
	writeCache WriteCache
	// volumeBdev says whether SPDK is flint_tgt, with the flint_volume
	// module: read at every Bootstrap.
	volumeBdev bool
	epochs     exportEpochs
	// keys are the secrets registered in SPDK's keyring since it
	// started, by key name.
	keys map[string]string
	// rebuildStart pairs setting SPDK's rebuild cap with the rebuild that
	// takes it.
	rebuildStart sync.Mutex
	silence      *silenceWatch
	// accessible holds the volume subsystems whose listener is known to
	// let host I/O through since this agent started; pauses counts the
	// pauses of each, so that a read overtaken by a pause is not
	// remembered (pause.go).
	accessible map[string]bool
	pauses     map[string]uint64
	// members are the targets' remote members and their answers (hold.go).
	members memberAnswers
	// targets serialises the calls that change one volume's target: a
	// call its caller gave up on still runs here, and a delta resync's
	// join must meet no other call's resume of the volume (resync.go).
	targets keylock.Locks
}

// New returns the Engine of the OSD of cfg, driving the SPDK behind spdk.
func New(cfg Config, spdk *client.Client) *Engine {
	return &Engine{cfg: cfg, spdk: spdk, epochs: exportEpochs{path: cfg.EpochFile}, members: memberAnswers{path: cfg.MembersFile}, keys: map[string]string{}, accessible: map[string]bool{}, pauses: map[string]uint64{}, silence: newSilenceWatch(cfg.SilentAfter, time.Now)}
}

const baseBdevName = "flint_base"

// lvs is the name of the OSD's lvstore.
func (e *Engine) lvs() string { return agentv1.LvstoreName(e.cfg.UID) }

// Bootstrap brings SPDK to the OSD's base state: failed NVMe I/O retried
// (ensureNvmeOptions), the device claimed with its volatile write cache
// off (ensureWriteCache), the OSD's lvstore loaded (created on a blank
// device), the transport up. It is idempotent and is what the agent runs
// after every SPDK start. It refuses, touching nothing, a device that
// holds another owner's lvstore or data that is no lvstore.
func (e *Engine) Bootstrap(ctx context.Context) (types.Lvstore, error) {
	e.forgetRegisteredKeys()
	if err := e.ensureNvmeOptions(ctx); err != nil {
		return types.Lvstore{}, err
	}
	methods, err := e.spdk.RPCGetMethods(ctx)
	if err != nil {
		return types.Lvstore{}, fmt.Errorf("list SPDK's methods: %w", err)
	}
	e.mu.Lock()
	e.volumeBdev = slices.Contains(methods, "flint_volume_create")
	e.mu.Unlock()
	base, err := e.claimDevice(ctx)
	if err != nil {
		return types.Lvstore{}, err
	}
	cache, err := e.ensureWriteCache(ctx)
	e.mu.Lock()
	e.writeCache = cache
	e.mu.Unlock()
	if err != nil {
		return types.Lvstore{}, err
	}
	store, err := e.ensureLvstore(ctx, base)
	if err != nil {
		return types.Lvstore{}, err
	}
	if err := e.ensureTransport(ctx); err != nil {
		return types.Lvstore{}, err
	}
	return store, nil
}

// ensureNvmeOptions makes bdev_nvme retry a failed I/O for ever and count
// failures per status. SPDK's raid1 acknowledges a write once one member
// took it and drops a member that failed it: a remote replica whose device
// fails writes (ENOSPC on a full lvstore, a media error) would lack
// acknowledged writes while the operator still counts it in sync, and a
// target lost before the next check could be rebuilt from it. Retried, the
// write is held like a write to a lost connection, the error count shows
// the member stuck (memberStuck), and it leaves only once recorded out
// of sync.
//
// No command timeouts: SPDK's action on a timeout (reset, or abort, which
// falls back to one) fails the I/O in flight on the controller's
// connection with Do Not Retry (a reset marks the controller dont_retry),
// and no retry count holds that. The raid then drops the member and
// acknowledges the write without it, unrecorded. A silent replica (its
// SPDK hung, a network that drops its packets) is noticed by watching
// instead (silenceWatch), and let go only once recorded (docs/volumes.md,
// "Writes wait for a lost replica").
//
// SPDK takes the options only before the first controller, so they come
// first here; refused, a controller exists, which only a Bootstrap of this
// SPDK attached, after setting them.
func (e *Engine) ensureNvmeOptions(ctx context.Context) error {
	err := e.spdk.BdevNvmeSetOptions(ctx, types.BdevNvmeSetOptionsRequest{BdevRetryCount: -1, NvmeErrorStat: true})
	if err != nil && jsonrpc.CodeOf(err) != jsonrpc.CodeNotPermitted {
		return fmt.Errorf("set NVMe options: %w", err)
	}
	return nil
}

// claimDevice creates the device's bdev unless it exists and returns its
// name.
func (e *Engine) claimDevice(ctx context.Context) (string, error) {
	d := e.cfg.Device
	switch d.Driver {
	case DriverPCIe, DriverAIO, DriverURing, DriverMalloc:
	default:
		return "", fmt.Errorf("%w: device driver %q is none of pcie, aio, uring, malloc", ErrInvalid, d.Driver)
	}
	if d.Driver == DriverPCIe {
		// The controller is named after the OSD's base; its namespace 1
		// is the base bdev.
		name := baseBdevName + "n1"
		if _, err := e.spdk.BdevNvmeGetControllers(ctx, baseBdevName); err == nil {
			return name, nil
		} else if !errors.Is(err, jsonrpc.ErrNotFound) {
			return "", fmt.Errorf("look up NVMe controller %s: %w", baseBdevName, err)
		}
		if _, err := e.spdk.BdevNvmeAttachController(ctx, types.BdevNvmeAttachControllerRequest{
			Name: baseBdevName, Trtype: "pcie", Traddr: d.PCIAddress,
		}); err != nil {
			return "", fmt.Errorf("attach NVMe device %s: %w", d.PCIAddress, err)
		}
		return name, nil
	}
	if _, err := e.spdk.BdevGetBdevs(ctx, baseBdevName); err == nil {
		return baseBdevName, nil
	} else if !errors.Is(err, jsonrpc.ErrNotFound) {
		return "", fmt.Errorf("look up bdev %s: %w", baseBdevName, err)
	}
	var err error
	switch d.Driver {
	case DriverAIO:
		_, err = e.spdk.BdevAioCreate(ctx, types.BdevAioCreateRequest{Filename: d.Path, Name: baseBdevName, BlockSize: BlockSize})
	case DriverURing:
		_, err = e.spdk.BdevUringCreate(ctx, types.BdevUringCreateRequest{Filename: d.Path, Name: baseBdevName, BlockSize: BlockSize})
	case DriverMalloc:
		_, err = e.spdk.BdevMallocCreate(ctx, types.BdevMallocCreateRequest{Name: baseBdevName, NumBlocks: d.MallocBytes / BlockSize, BlockSize: BlockSize})
	}
	if err != nil {
		return "", fmt.Errorf("create %s bdev on %s: %w", d.Driver, e.deviceName(), err)
	}
	return baseBdevName, nil
}

func (e *Engine) deviceName() string {
	switch e.cfg.Device.Driver {
	case DriverPCIe:
		return e.cfg.Device.PCIAddress
	case DriverMalloc:
		return "malloc"
	}
	return e.cfg.Device.Path
}

// ensureLvstore loads or creates the OSD's lvstore on base.
func (e *Engine) ensureLvstore(ctx context.Context, base string) (types.Lvstore, error) {
	if err := e.spdk.BdevWaitForExamine(ctx); err != nil {
		return types.Lvstore{}, fmt.Errorf("wait for SPDK to examine %s: %w", base, err)
	}
	stores, err := e.spdk.BdevLvolGetLvstores(ctx, types.LvstoreSelector{})
	if err != nil {
		return types.Lvstore{}, fmt.Errorf("list lvstores: %w", err)
	}
	for _, s := range stores {
		switch {
		case s.BaseBdev == base && s.Name == e.lvs():
			return s, nil
		case s.BaseBdev == base:
			return types.Lvstore{}, fmt.Errorf("%w: %s holds lvstore %q, not this OSD's %q; if its data is no longer needed, delete that lvstore or wipe the device", ErrForeignDevice, e.deviceName(), s.Name, e.lvs())
		case s.Name == e.lvs():
			return types.Lvstore{}, fmt.Errorf("%w: this OSD's lvstore %q is on bdev %s, not on %s", ErrConflict, s.Name, s.BaseBdev, e.deviceName())
		}
	}
	bdevs, err := e.spdk.BdevGetBdevs(ctx, base)
	if err != nil {
		return types.Lvstore{}, fmt.Errorf("look up bdev %s: %w", base, err)
	}
	if bdevs[0].Claimed {
		return types.Lvstore{}, fmt.Errorf("%w: SPDK found something on %s that claims it (a raid superblock or partitions); wipe the device if it is really free", ErrForeignDevice, e.deviceName())
	}
	if bs := bdevs[0].BlockSize; bs != BlockSize {
		return types.Lvstore{}, fmt.Errorf("%w: %s is formatted with %d-byte logical blocks; every OSD's lvstore has %d-byte blocks, because SPDK's raid1 mirrors only members of one block size: format its namespace with a %d-byte LBA format first (nvme id-ns -H /dev/nvmeXn1 lists them, nvme format /dev/nvmeXn1 --lbaf=N erases the drive), then bind it to vfio-pci", ErrBlockSize, e.deviceName(), bs, BlockSize, BlockSize)
	}
	if err := e.checkBlank(); err != nil {
		return types.Lvstore{}, err
	}
	if _, err := e.spdk.BdevLvolCreateLvstore(ctx, types.BdevLvolCreateLvstoreRequest{BdevName: base, LvsName: e.lvs(), ClearMethod: "unmap"}); err != nil {
		return types.Lvstore{}, fmt.Errorf("create lvstore %s on %s: %w", e.lvs(), e.deviceName(), err)
	}
	stores, err = e.spdk.BdevLvolGetLvstores(ctx, types.LvstoreSelector{LvsName: e.lvs()})
	if err != nil {
		return types.Lvstore{}, fmt.Errorf("read lvstore %s: %w", e.lvs(), err)
	}
	if lvs := stores[0]; lvs.ClusterSize == 0 || lvs.BlockSize == 0 {
		return types.Lvstore{}, fmt.Errorf("SPDK reports lvstore %s with cluster size %d and block size %d: an answer no SPDK gives; check the SPDK version", e.lvs(), lvs.ClusterSize, lvs.BlockSize)
	}
	return stores[0], nil
}

// blankProbe is how much of a kernel-visible device must be zero before a
// new lvstore may be written on it.
const blankProbe = 1 << 20

// checkBlank refuses a device whose first MiB is not zero: a filesystem,
// a partition table, anything Flint did not write. PCIe devices belong to
// the user-space driver and cannot be read from here; SPDK's own examine
// (lvstore, raid, GPT) guards them.
func (e *Engine) checkBlank() error {
	d := e.cfg.Device
	if d.Driver != DriverAIO && d.Driver != DriverURing {
		return nil
	}
	f, err := os.Open(d.Path)
	if err != nil {
		return fmt.Errorf("open %s to check it is blank: %w", d.Path, err)
	}
	defer func() { _ = f.Close() }()
	buf := make([]byte, blankProbe)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read %s to check it is blank: %w", d.Path, err)
	}
	if !bytes.Equal(buf[:n], make([]byte, n)) {
		return fmt.Errorf("%w: %s is not blank and holds no Flint lvstore (a filesystem or partition table?); wipe it (wipefs -a, blkdiscard) if it is really free", ErrForeignDevice, d.Path)
	}
	return nil
}

// ensureTransport creates the listener's transport with the OSD's tuning.
// A transport that exists with other settings cannot be changed while
// SPDK runs.
func (e *Engine) ensureTransport(ctx context.Context) error {
	tr := e.cfg.Listener.Transport
	want := types.NvmfCreateTransportRequest{
		Trtype: trtype(tr), IOUnitSize: e.cfg.Tuning.IOUnitSize, InCapsuleDataSize: e.cfg.Tuning.InCapsuleDataSize,
		NumSharedBuffers: e.cfg.Tuning.NumSharedBuffers, BufCacheSize: e.cfg.Tuning.BufCacheSize, MaxQueueDepth: e.cfg.Tuning.MaxQueueDepth,
	}
	have, err := e.spdk.NvmfGetTransports(ctx, trtype(tr))
	switch {
	case errors.Is(err, jsonrpc.ErrNotFound):
		if err := e.spdk.NvmfCreateTransport(ctx, want); err != nil {
			return fmt.Errorf("create the %s transport: %w", tr, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("list transports: %w", err)
	}
	h := have[0]
	for _, c := range []struct {
		name       string
		want, have uint32
	}{
		{"io_unit_size", want.IOUnitSize, h.IOUnitSize},
		{"in_capsule_data_size", want.InCapsuleDataSize, h.InCapsuleDataSize},
		{"num_shared_buffers", want.NumSharedBuffers, h.NumSharedBuffers},
		{"buf_cache_size", want.BufCacheSize, h.BufCacheSize},
		{"max_queue_depth", want.MaxQueueDepth, h.MaxQueueDepth},
	} {
		if c.want != 0 && c.want != c.have {
			return fmt.Errorf("%w: the %s transport runs with %s %d, want %d; restart the OSD to apply it", ErrConflict, tr, c.name, c.have, c.want)
		}
	}
	return nil
}

func trtype(transport string) string {
	if transport == "rdma" {
		return "RDMA"
	}
	return "TCP"
}

// Lvstore reads the OSD's lvstore: its capacity and free space.
func (e *Engine) Lvstore(ctx context.Context) (types.Lvstore, error) {
	stores, err := e.spdk.BdevLvolGetLvstores(ctx, types.LvstoreSelector{LvsName: e.lvs()})
	if errors.Is(err, jsonrpc.ErrNotFound) {
		return types.Lvstore{}, fmt.Errorf("%w: lvstore %s is not loaded (SPDK restarted?); retry once the agent bootstrapped it again", ErrNotBootstrapped, e.lvs())
	}
	if err != nil {
		return types.Lvstore{}, fmt.Errorf("read lvstore %s: %w", e.lvs(), err)
	}
	if lvs := stores[0]; lvs.ClusterSize == 0 || lvs.BlockSize == 0 {
		return types.Lvstore{}, fmt.Errorf("SPDK reports lvstore %s with cluster size %d and block size %d: an answer no SPDK gives; check the SPDK version", e.lvs(), lvs.ClusterSize, lvs.BlockSize)
	}
	return stores[0], nil
}

// Endpoint is the OSD's NVMe-oF listener.
func (e *Engine) Endpoint() Subsystem { return e.export("") }
