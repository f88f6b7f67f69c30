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

package types

import "math"

// BdevMallocCreateRequest creates a RAM-backed bdev.
type BdevMallocCreateRequest struct {
	Name      string `json:"name,omitempty"`
	NumBlocks uint64 `json:"num_blocks"`
	BlockSize uint32 `json:"block_size"`
	UUID      string `json:"uuid,omitempty"`
}

// BdevAioCreateRequest creates a bdev on a file or kernel block device
// through Linux AIO.
type BdevAioCreateRequest struct {
	Filename  string `json:"filename"`
	Name      string `json:"name"`
	BlockSize uint32 `json:"block_size,omitempty"`
	Readonly  bool   `json:"readonly,omitempty"`
	Fallocate bool   `json:"fallocate,omitempty"`
	UUID      string `json:"uuid,omitempty"`
}

// BdevUringCreateRequest creates a bdev on a file or kernel block device
// through io_uring.
type BdevUringCreateRequest struct {
	Filename  string `json:"filename"`
	Name      string `json:"name"`
	BlockSize uint32 `json:"block_size,omitempty"`
	UUID      string `json:"uuid,omitempty"`
}

// BdevNameRequest names one bdev or controller: the parameters of the
// delete and detach methods.
type BdevNameRequest struct {
	Name string `json:"name"`
}

// BdevNvmeAttachControllerRequest attaches an NVMe controller: a local PCIe
// device (Trtype "pcie", Traddr the PCI address) or a remote subsystem over
// a fabric. The three reconnect options make a lost fabric controller retry
// and finally be deleted; with SPDK's defaults a controller that dies while
// idle is never noticed.
type BdevNvmeAttachControllerRequest struct {
	Name    string `json:"name"`
	Trtype  string `json:"trtype"`
	Traddr  string `json:"traddr"`
	Adrfam  string `json:"adrfam,omitempty"`
	Trsvcid string `json:"trsvcid,omitempty"`
	Subnqn  string `json:"subnqn,omitempty"`
	Hostnqn string `json:"hostnqn,omitempty"`
	// CtrlrLossTimeoutSec is how long a lost controller retries before it is
	// deleted with its bdevs; -1 retries forever.
	CtrlrLossTimeoutSec int32 `json:"ctrlr_loss_timeout_sec,omitempty"`
	// ReconnectDelaySec is the time between retries.
	ReconnectDelaySec uint32 `json:"reconnect_delay_sec,omitempty"`
	// FastIOFailTimeoutSec is how long I/O is held before it fails while
	// the controller retries.
	FastIOFailTimeoutSec uint32 `json:"fast_io_fail_timeout_sec,omitempty"`
	// DhchapKey names the keyring key the host authenticates with
	// (DH-HMAC-CHAP).
	DhchapKey string `json:"dhchap_key,omitempty"`
	// DhchapCtrlrKey names the key the controller must prove it holds
	// (bidirectional authentication).
	DhchapCtrlrKey string `json:"dhchap_ctrlr_key,omitempty"`
}

// BdevNvmeSetOptionsRequest sets bdev_nvme's process-wide options; SPDK
// takes them only while no controller is attached. Fields left out keep
// their values.
type BdevNvmeSetOptionsRequest struct {
	// BdevRetryCount is how often an I/O that failed without the Do Not
	// Retry bit is tried again; -1 retries for ever (SPDK's default is 3).
	BdevRetryCount int32 `json:"bdev_retry_count"`
	// NvmeErrorStat counts failed completions per status in
	// bdev_get_iostat's nvme_error.
	NvmeErrorStat bool `json:"nvme_error_stat"`
	// TimeoutUs is how long an I/O may be outstanding before
	// ActionOnTimeout ("none", "abort" or "reset"); 0 never times out.
	TimeoutUs       uint64 `json:"timeout_us,omitempty"`
	ActionOnTimeout string `json:"action_on_timeout,omitempty"`
	// TimeoutAdminUs is the same for admin commands, keep-alives
	// included; it needs TimeoutUs.
	TimeoutAdminUs uint64 `json:"timeout_admin_us,omitempty"`
}

// BdevNvmeGetControllersRequest lists NVMe controllers, one when Name is set.
type BdevNvmeGetControllersRequest struct {
	Name string `json:"name,omitempty"`
}

// TransportID addresses an NVMe controller.
type TransportID struct {
	Trtype  string `json:"trtype"`
	Adrfam  string `json:"adrfam,omitempty"`
	Traddr  string `json:"traddr"`
	Trsvcid string `json:"trsvcid,omitempty"`
	Subnqn  string `json:"subnqn,omitempty"`
}

// NvmeController is one named controller and its paths.
type NvmeController struct {
	Name   string          `json:"name"`
	Ctrlrs []NvmeCtrlrPath `json:"ctrlrs"`
}

// NvmeCtrlrPath is one path of a controller. State is "enabled",
// "resetting", "reconnect_is_delayed" or "failed".
type NvmeCtrlrPath struct {
	State  string      `json:"state"`
	Trid   TransportID `json:"trid"`
	Cntlid int         `json:"cntlid"`
	Host   struct {
		NQN string `json:"nqn"`
	} `json:"host"`
}

// BdevGetBdevsRequest lists bdevs, one when Name (a name, alias or uuid) is
// set.
type BdevGetBdevsRequest struct {
	Name string `json:"name,omitempty"`
}

// Bdev is one block device.
type Bdev struct {
	Name           string             `json:"name"`
	Aliases        []string           `json:"aliases"`
	ProductName    string             `json:"product_name"`
	BlockSize      uint32             `json:"block_size"`
	NumBlocks      uint64             `json:"num_blocks"`
	UUID           string             `json:"uuid"`
	Claimed        bool               `json:"claimed"`
	ClaimType      string             `json:"claim_type,omitempty"`
	DriverSpecific BdevDriverSpecific `json:"driver_specific"`
	// AssignedRateLimits are the bdev's QoS limits; SPDK keeps them in
	// memory only, so a restarted SPDK has none.
	AssignedRateLimits QosLimits `json:"assigned_rate_limits"`
}

// QosLimits are a bdev's rate limits: I/Os per second, reads and writes
// together, and MiB per second; 0 is no limit.
type QosLimits struct {
	RwIOsPerSec    uint64 `json:"rw_ios_per_sec"`
	RwMbytesPerSec uint64 `json:"rw_mbytes_per_sec"`
	RMbytesPerSec  uint64 `json:"r_mbytes_per_sec"`
	WMbytesPerSec  uint64 `json:"w_mbytes_per_sec"`
}

// QosIOsStep is the granularity of an I/O rate limit: SPDK rounds one up
// to a multiple of it.
const QosIOsStep = 1000

// Applied is l as SPDK keeps it once set: the I/O rate rounded up to a
// multiple of QosIOsStep.
func (l QosLimits) Applied() QosLimits {
	l.RwIOsPerSec = (l.RwIOsPerSec + QosIOsStep - 1) / QosIOsStep * QosIOsStep
	return l
}

// BdevSetQosLimitRequest sets every rate limit of a bdev at once: each
// given replaces the bdev's, 0 removes it. (SPDK keeps a limit left out;
// Flint always gives all four, so that the request alone says what holds.)
type BdevSetQosLimitRequest struct {
	Name string `json:"name"`
	QosLimits
}

// SizeBytes is the bdev's capacity.
func (b Bdev) SizeBytes() uint64 { return b.NumBlocks * uint64(b.BlockSize) }

// BdevDriverSpecific holds the module-specific part of a Bdev that Flint
// reads.
type BdevDriverSpecific struct {
	Lvol *LvolBdevInfo  `json:"lvol,omitempty"`
	Raid *RaidBdev      `json:"raid,omitempty"`
	Nvme []NvmeBdevInfo `json:"nvme,omitempty"`
	// FlintVolume is flint_tgt's (its base is null while detached).
	FlintVolume *FlintVolumeInfo `json:"flint_volume,omitempty"`
}

// LvolBdevInfo is the lvol part of an lvol bdev.
type LvolBdevInfo struct {
	LvolStoreUUID        string   `json:"lvol_store_uuid"`
	BaseBdev             string   `json:"base_bdev"`
	ThinProvision        bool     `json:"thin_provision"`
	NumAllocatedClusters uint64   `json:"num_allocated_clusters"`
	Snapshot             bool     `json:"snapshot"`
	Clone                bool     `json:"clone"`
	Clones               []string `json:"clones,omitempty"`
	BaseSnapshot         string   `json:"base_snapshot,omitempty"`
}

// NvmeBdevInfo is one path of an NVMe bdev and the controller's identity.
type NvmeBdevInfo struct {
	Trid      TransportID `json:"trid"`
	CtrlrData struct {
		Cntlid       int    `json:"cntlid"`
		ModelNumber  string `json:"model_number"`
		SerialNumber string `json:"serial_number"`
		Firmware     string `json:"firmware_revision"`
		Subnqn       string `json:"subnqn"`
	} `json:"ctrlr_data"`
}

// BdevGetIostatRequest asks for I/O counters, of one bdev when Name is set.
type BdevGetIostatRequest struct {
	Name string `json:"name,omitempty"`
}

// QueueDepthUnsampled is the queue depth SPDK reports before its first
// sample.
const QueueDepthUnsampled = math.MaxUint64

// Completions counts the I/O the bdev completed successfully.
func (b BdevIostat) Completions() uint64 {
	return b.NumReadOps + b.NumWriteOps + b.NumUnmapOps
}

// BdevSetQdSamplingPeriodRequest turns on (Period in µs) or off (0) the
// sampling of a bdev's queue depth.
type BdevSetQdSamplingPeriodRequest struct {
	Name   string `json:"name"`
	Period uint64 `json:"period"`
}

// Iostat is SPDK's I/O counters; latencies are in ticks of TickRate per
// second.
type Iostat struct {
	TickRate uint64       `json:"tick_rate"`
	Ticks    uint64       `json:"ticks"`
	Bdevs    []BdevIostat `json:"bdevs"`
}

// BdevIostat is the I/O counters of one bdev since it was registered.
type BdevIostat struct {
	Name                 string `json:"name"`
	BytesRead            uint64 `json:"bytes_read"`
	NumReadOps           uint64 `json:"num_read_ops"`
	BytesWritten         uint64 `json:"bytes_written"`
	NumWriteOps          uint64 `json:"num_write_ops"`
	BytesUnmapped        uint64 `json:"bytes_unmapped"`
	NumUnmapOps          uint64 `json:"num_unmap_ops"`
	ReadLatencyTicks     uint64 `json:"read_latency_ticks"`
	MaxReadLatencyTicks  uint64 `json:"max_read_latency_ticks"`
	MinReadLatencyTicks  uint64 `json:"min_read_latency_ticks"`
	WriteLatencyTicks    uint64 `json:"write_latency_ticks"`
	MaxWriteLatencyTicks uint64 `json:"max_write_latency_ticks"`
	MinWriteLatencyTicks uint64 `json:"min_write_latency_ticks"`
	UnmapLatencyTicks    uint64 `json:"unmap_latency_ticks"`
	// QueueDepthPollingPeriod is the queue-depth sampling period in µs
	// (bdev_set_qd_sampling_period); the fields below are there only
	// while it is set.
	QueueDepthPollingPeriod uint64 `json:"queue_depth_polling_period,omitempty"`
	// QueueDepth is the I/O outstanding on the bdev at the last sample,
	// QueueDepthUnsampled before the first.
	QueueDepth     uint64 `json:"queue_depth,omitempty"`
	IOTime         uint64 `json:"io_time,omitempty"`
	WeightedIOTime uint64 `json:"weighted_io_time,omitempty"`
	// DriverSpecific is what the bdev's module adds.
	DriverSpecific *IostatDriverSpecific `json:"driver_specific,omitempty"`
}

// IostatDriverSpecific is a module's own counters.
type IostatDriverSpecific struct {
	// NvmeError counts the failed completions of an NVMe bdev, every try
	// of a retried I/O included; present once nvme_error_stat is on.
	NvmeError *NvmeErrorStat `json:"nvme_error,omitempty"`
}

// NvmeErrorStat counts failed NVMe completions by status type ("generic",
// "media_error", "path", ...) and by status code ("internal_device_error",
// "aborted_sq_deletion", ...), as SPDK names them; zero counts are left out.
type NvmeErrorStat struct {
	StatusType map[string]uint32 `json:"status_type"`
	StatusCode map[string]uint32 `json:"status_code"`
}

// SpdkVersion is the answer of spdk_get_version.
type SpdkVersion struct {
	Version string `json:"version"`
	Fields  struct {
		Major  int    `json:"major"`
		Minor  int    `json:"minor"`
		Patch  int    `json:"patch"`
		Suffix string `json:"suffix"`
		Commit string `json:"commit"`
	} `json:"fields"`
}

// LogSetLevelRequest sets a log level (ERROR, WARNING, NOTICE, INFO, DEBUG;
// any case).
type LogSetLevelRequest struct {
	Level string `json:"level"`
}

// BdevNullCreateRequest creates a null bdev: writes are dropped and reads
// return zeroes. Flint uses one only as a raid slot placeholder that is
// removed before the raid serves I/O.
type BdevNullCreateRequest struct {
	Name      string `json:"name"`
	NumBlocks uint64 `json:"num_blocks"`
	BlockSize uint32 `json:"block_size"`
}
