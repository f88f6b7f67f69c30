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

package spdktest

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flint-io/flint/internal/spdk/jsonrpc"
)

type handler func(t *Target, params json.RawMessage) (any, error)

// handlers maps every method the double answers. Any other method is
// "Method not found", as in an SPDK built without that module.
var handlers = map[string]handler{}

func init() {
	for name, h := range map[string]handler{
		"spdk_get_version":      spdkGetVersion,
		"rpc_get_methods":       rpcGetMethods,
		"bdev_wait_for_examine": func(*Target, json.RawMessage) (any, error) { return true, nil },
		"log_set_level":         logSetLevel(func(st *state) *string { return &st.logLevel }),
		"log_get_level":         logGetLevel(func(st *state) *string { return &st.logLevel }),
		"log_set_print_level":   logSetLevel(func(st *state) *string { return &st.printLevel }),
		"log_get_print_level":   logGetLevel(func(st *state) *string { return &st.printLevel }),

		"bdev_malloc_create": bdevMallocCreate,
		"bdev_malloc_delete": bdevDeleteOf(kindMalloc),
		"bdev_null_create":   bdevNullCreate,
		"bdev_null_delete":   bdevDeleteOf(kindNull),
		"bdev_aio_create":    bdevFileCreate(kindAio),
		"bdev_aio_delete":    bdevDeleteOf(kindAio),
		"bdev_uring_create":  bdevFileCreate(kindUring),
		"bdev_uring_delete":  bdevDeleteOf(kindUring),
		"bdev_get_bdevs":     bdevGetBdevs,
		"bdev_get_iostat":    bdevGetIostat,
		"bdev_set_qos_limit": bdevSetQosLimit,

		"bdev_set_qd_sampling_period": bdevSetQdSamplingPeriod,

		"bdev_enable_histogram": bdevEnableHistogram,
		"bdev_get_histogram":    bdevGetHistogram,

		"bdev_nvme_set_options":       bdevNvmeSetOptions,
		"bdev_nvme_attach_controller": bdevNvmeAttachController,
		"bdev_nvme_detach_controller": bdevNvmeDetachController,
		"bdev_nvme_get_controllers":   bdevNvmeGetControllers,
		"bdev_nvme_send_cmd":          bdevNvmeSendCmd,

		"bdev_lvol_create_lvstore":  bdevLvolCreateLvstore,
		"bdev_lvol_get_lvstores":    bdevLvolGetLvstores,
		"bdev_lvol_delete_lvstore":  bdevLvolDeleteLvstore,
		"bdev_lvol_create":          bdevLvolCreate,
		"bdev_lvol_resize":          bdevLvolResize,
		"bdev_lvol_snapshot":        bdevLvolSnapshot,
		"bdev_lvol_clone":           bdevLvolClone,
		"bdev_lvol_delete":          bdevLvolDelete,
		"bdev_lvol_get_lvols":       bdevLvolGetLvols,
		"bdev_lvol_rename":          bdevLvolRename,
		"bdev_lvol_rename_lvstore":  bdevLvolRenameLvstore,
		"bdev_lvol_inflate":         bdevLvolInflate,
		"bdev_lvol_decouple_parent": bdevLvolDecoupleParent,

		"nvmf_create_transport":                 nvmfCreateTransport,
		"nvmf_get_transports":                   nvmfGetTransports,
		"nvmf_create_subsystem":                 nvmfCreateSubsystem,
		"nvmf_delete_subsystem":                 nvmfDeleteSubsystem,
		"nvmf_get_subsystems":                   nvmfGetSubsystems,
		"nvmf_subsystem_add_ns":                 nvmfSubsystemAddNs,
		"nvmf_subsystem_remove_ns":              nvmfSubsystemRemoveNs,
		"nvmf_subsystem_add_listener":           nvmfSubsystemListener(true),
		"nvmf_subsystem_remove_listener":        nvmfSubsystemListener(false),
		"nvmf_subsystem_add_host":               nvmfSubsystemHost(true),
		"nvmf_subsystem_remove_host":            nvmfSubsystemHost(false),
		"nvmf_subsystem_get_controllers":        nvmfSubsystemGetControllers,
		"nvmf_subsystem_get_listeners":          nvmfSubsystemGetListeners,
		"nvmf_subsystem_listener_set_ana_state": nvmfSubsystemListenerSetAnaState,
		"nvmf_subsystem_set_ns_ana_group":       nvmfSubsystemSetNsAnaGroup,

		"keyring_file_add_key":    keyringFileAddKey,
		"keyring_file_remove_key": keyringFileRemoveKey,
		"keyring_get_keys":        keyringGetKeys,

		"bdev_raid_create":           bdevRaidCreate,
		"bdev_raid_delete":           bdevRaidDelete,
		"bdev_raid_add_base_bdev":    bdevRaidAddBaseBdev,
		"bdev_raid_remove_base_bdev": bdevRaidRemoveBaseBdev,
		"bdev_raid_get_bdevs":        bdevRaidGetBdevs,
		"bdev_raid_set_options":      bdevRaidSetOptions,
	} {
		handlers[name] = h
	}
}

// SPDK's decode failures: most methods answer -32603, the nvmf methods
// -32602.
func errDecode() *rpcError        { return errf(jsonrpc.CodeInternalError, "spdk_json_decode_object failed") }
func errInvalidParams() *rpcError { return errf(jsonrpc.CodeInvalidParams, "Invalid parameters") }

// decode decodes params strictly into dst, as spdk_json_decode_object does:
// unknown keys, wrong types (null is none of SPDK's) and missing required
// keys fail with fail.
func decode(params json.RawMessage, dst any, fail *rpcError, required ...string) error {
	if params == nil {
		if len(required) > 0 {
			return fail
		}
		return nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(params, &keys); err != nil {
		return fail
	}
	for _, k := range required {
		if _, ok := keys[k]; !ok {
			return fail
		}
	}
	for _, v := range keys {
		if string(bytes.TrimSpace(v)) == "null" {
			return fail
		}
	}
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fail
	}
	return nil
}

func spdkGetVersion(*Target, json.RawMessage) (any, error) {
	return map[string]any{
		"version": "SPDK v25.09 flint-spdktest",
		"fields":  map[string]any{"major": 25, "minor": 9, "patch": 0, "suffix": "", "commit": "spdktest"},
	}, nil
}

// rpcGetMethods lists the methods the double answers, as SPDK lists those
// of its linked modules.
func rpcGetMethods(*Target, json.RawMessage) (any, error) {
	return slices.Sorted(maps.Keys(handlers)), nil
}

var logLevels = []string{"ERROR", "WARNING", "NOTICE", "INFO", "DEBUG"}

func logSetLevel(field func(*state) *string) handler {
	return func(t *Target, p json.RawMessage) (any, error) {
		var req struct {
			Level string `json:"level"`
		}
		if err := decode(p, &req, errDecode(), "level"); err != nil {
			return nil, err
		}
		for _, l := range logLevels {
			if strings.EqualFold(l, req.Level) {
				*field(t.st) = l
				return true, nil
			}
		}
		return nil, errf(jsonrpc.CodeInvalidParams, "invalid log level")
	}
}

func logGetLevel(field func(*state) *string) handler {
	return func(t *Target, _ json.RawMessage) (any, error) { return *field(t.st), nil }
}

func bdevMallocCreate(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		Name      string `json:"name"`
		NumBlocks uint64 `json:"num_blocks"`
		BlockSize uint32 `json:"block_size"`
		UUID      string `json:"uuid"`
	}
	if err := decode(p, &req, errDecode(), "num_blocks", "block_size"); err != nil {
		return nil, err
	}
	if req.BlockSize == 0 || req.BlockSize%512 != 0 || req.NumBlocks == 0 {
		return nil, errf(jsonrpc.CodeInvalid, "Invalid argument")
	}
	if req.Name == "" {
		req.Name = nextName(t.st, "Malloc")
	}
	if t.st.bdev(req.Name) != nil {
		return nil, errf(jsonrpc.CodeExists, "File exists")
	}
	if req.UUID == "" {
		req.UUID = newUUID()
	}
	t.register(&bdev{
		name: req.Name, uuid: req.UUID, aliases: []string{req.UUID}, product: "Malloc disk",
		blockSize: req.BlockSize, numBlocks: req.NumBlocks, kind: kindMalloc,
		disk: &disk{size: req.NumBlocks * uint64(req.BlockSize)},
	})
	return req.Name, nil
}

// bdevNullCreate follows SPDK's documented bdev_null_create; it is not in
// the recorded transcripts.
func bdevNullCreate(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		Name      string `json:"name"`
		NumBlocks uint64 `json:"num_blocks"`
		BlockSize uint32 `json:"block_size"`
		UUID      string `json:"uuid"`
	}
	if err := decode(p, &req, errDecode(), "name", "num_blocks", "block_size"); err != nil {
		return nil, err
	}
	if req.BlockSize == 0 || req.BlockSize%512 != 0 || req.NumBlocks == 0 {
		return nil, errf(jsonrpc.CodeInvalid, "Invalid argument")
	}
	if t.st.bdev(req.Name) != nil {
		return nil, errf(jsonrpc.CodeExists, "File exists")
	}
	if req.UUID == "" {
		req.UUID = newUUID()
	}
	t.register(&bdev{
		name: req.Name, uuid: req.UUID, aliases: []string{req.UUID}, product: "Null disk",
		blockSize: req.BlockSize, numBlocks: req.NumBlocks, kind: kindNull,
	})
	return req.Name, nil
}

func nextName(st *state, prefix string) string {
	for i := 0; ; i++ {
		name := prefix + strconv.Itoa(i)
		if st.bdev(name) == nil {
			return name
		}
	}
}

// bdevFileCreate creates an aio or uring bdev on a real file or block
// device: its size is the file's, and an lvstore written to it before
// (even by another Target) loads.
func bdevFileCreate(kind bdevKind) handler {
	return func(t *Target, p json.RawMessage) (any, error) {
		var req struct {
			Filename  string `json:"filename"`
			Name      string `json:"name"`
			BlockSize uint32 `json:"block_size"`
			Readonly  bool   `json:"readonly"`
			Fallocate bool   `json:"fallocate"`
			UUID      string `json:"uuid"`
		}
		if err := decode(p, &req, errDecode(), "filename", "name"); err != nil {
			return nil, err
		}
		if kind == kindUring && (req.Readonly || req.Fallocate) {
			return nil, errDecode()
		}
		if t.st.bdev(req.Name) != nil {
			return nil, errf(jsonrpc.CodeExists, "File exists")
		}
		fi, err := os.Stat(req.Filename)
		if err != nil {
			return nil, errf(jsonrpc.CodeNoEntry, "No such file or directory")
		}
		size := uint64(fi.Size())
		if fi.Mode()&os.ModeDevice != 0 {
			return nil, errf(CodeNotModeled, "the double models files only, not block devices")
		}
		if req.BlockSize == 0 {
			req.BlockSize = 512
		}
		if req.BlockSize%512 != 0 || size < uint64(req.BlockSize) {
			return nil, errf(jsonrpc.CodeInvalid, "Invalid argument")
		}
		key := fileKey(req.Filename)
		d := t.fabric.disks[key]
		if d == nil || d.size != size {
			d = &disk{size: size}
			t.fabric.disks[key] = d
		}
		if req.UUID == "" {
			req.UUID = newUUID()
		}
		product := "AIO disk"
		if kind == kindUring {
			product = "URING bdev"
		}
		t.register(&bdev{
			name: req.Name, uuid: req.UUID, aliases: []string{req.UUID}, product: product,
			blockSize: req.BlockSize, numBlocks: size / uint64(req.BlockSize), kind: kind,
			disk: d,
		})
		return req.Name, nil
	}
}

func bdevDeleteOf(kind bdevKind) handler {
	return func(t *Target, p json.RawMessage) (any, error) {
		var req struct {
			Name string `json:"name"`
		}
		if err := decode(p, &req, errDecode(), "name"); err != nil {
			return nil, err
		}
		b := t.st.bdev(req.Name)
		if b == nil || b.kind != kind {
			return nil, errf(jsonrpc.CodeNoSuchDevice, "No such device")
		}
		t.unregister(b)
		return true, nil
	}
}

func bdevGetBdevs(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		Name    string `json:"name"`
		Timeout uint64 `json:"timeout"`
	}
	if err := decode(p, &req, errDecode()); err != nil {
		return nil, err
	}
	if req.Name != "" {
		b := t.st.bdev(req.Name)
		if b == nil {
			return nil, errf(jsonrpc.CodeNoSuchDevice, "No such device")
		}
		return []any{t.renderBdev(b)}, nil
	}
	out := []any{}
	for _, b := range t.st.bdevs {
		out = append(out, t.renderBdev(b))
	}
	return out, nil
}

// The double runs no I/O: counters stay zero. Ticks follow the clock in
// nanoseconds.
// bdevSetQdSamplingPeriod turns a bdev's queue-depth sampling on or off.
func bdevSetQdSamplingPeriod(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		Name   string `json:"name"`
		Period uint64 `json:"period"`
	}
	if err := decode(p, &req, errDecode(), "name", "period"); err != nil {
		return nil, err
	}
	b := t.st.bdev(req.Name)
	if b == nil {
		return nil, errf(jsonrpc.CodeNoSuchDevice, "No such device")
	}
	now := t.fabric.now()
	if !b.queueDepthSampled(now) && req.Period != 0 {
		b.qdFirst = now.Add(time.Duration(req.Period) * time.Microsecond)
	}
	b.qdPeriod = req.Period
	return true, nil
}

func bdevGetIostat(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		Name       string `json:"name"`
		PerChannel bool   `json:"per_channel"`
		ResetMode  string `json:"reset_mode"`
	}
	if err := decode(p, &req, errDecode()); err != nil {
		return nil, err
	}
	switch req.ResetMode {
	case "", "all", "maxmin", "none":
	default:
		return nil, errDecode()
	}
	if req.PerChannel {
		if req.Name == "" {
			return nil, errf(jsonrpc.CodeInvalid, "Invalid argument")
		}
		return nil, errf(CodeNotModeled, "the double does not model I/O channels")
	}
	bdevs := t.st.bdevs
	if req.Name != "" {
		b := t.st.bdev(req.Name)
		if b == nil {
			return nil, errf(jsonrpc.CodeNoSuchDevice, "No such device")
		}
		bdevs = []*bdev{b}
	}
	stats := []any{}
	for _, b := range bdevs {
		stat := map[string]any{
			"name": b.name, "bytes_read": 0, "num_read_ops": 0, "bytes_written": 0, "num_write_ops": 0,
			"bytes_unmapped": 0, "num_unmap_ops": 0, "read_latency_ticks": 0, "write_latency_ticks": 0,
			"unmap_latency_ticks": 0, "io_error": map[string]any{},
		}
		if b.qdPeriod != 0 {
			stat["queue_depth_polling_period"] = b.qdPeriod
			stat["queue_depth"] = t.fabric.sampledQueueDepth(b)
			stat["io_time"], stat["weighted_io_time"] = 0, 0
		}
		stats = append(stats, stat)
	}
	return map[string]any{
		"tick_rate": tscRate,
		"ticks":     ticks(t.fabric.now()),
		"bdevs":     stats,
	}, nil
}
