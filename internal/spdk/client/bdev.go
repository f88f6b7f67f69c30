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

package client

import (
	"context"
	"fmt"

	"github.com/flint-io/flint/internal/spdk/types"
)

// BdevMallocCreate creates a RAM-backed bdev and returns its name.
func (c *Client) BdevMallocCreate(ctx context.Context, req types.BdevMallocCreateRequest) (string, error) {
	var name string
	err := c.rpc.Call(ctx, "bdev_malloc_create", req, &name)
	return name, err
}

// BdevAioCreate creates an AIO bdev on a file or block device and returns
// its name. An lvstore on it is loaded by examine: call BdevWaitForExamine.
func (c *Client) BdevAioCreate(ctx context.Context, req types.BdevAioCreateRequest) (string, error) {
	var name string
	err := c.rpc.Call(ctx, "bdev_aio_create", req, &name)
	return name, err
}

// BdevUringCreate creates an io_uring bdev and returns its name.
func (c *Client) BdevUringCreate(ctx context.Context, req types.BdevUringCreateRequest) (string, error) {
	var name string
	err := c.rpc.Call(ctx, "bdev_uring_create", req, &name)
	return name, err
}

// BdevNvmeAttachController attaches a PCIe NVMe device or a remote
// NVMe-oF subsystem and returns the names of the bdevs of its namespaces.
func (c *Client) BdevNvmeAttachController(ctx context.Context, req types.BdevNvmeAttachControllerRequest) ([]string, error) {
	var bdevs []string
	err := c.rpc.Call(ctx, "bdev_nvme_attach_controller", req, &bdevs)
	return bdevs, err
}

// BdevNvmeDetachController detaches a controller and deletes its bdevs.
func (c *Client) BdevNvmeDetachController(ctx context.Context, name string) error {
	return c.rpc.Call(ctx, "bdev_nvme_detach_controller", types.BdevNameRequest{Name: name}, nil)
}

// BdevNvmeSetOptions sets bdev_nvme's options; SPDK refuses them
// (jsonrpc.CodeNotPermitted) once a controller is attached.
func (c *Client) BdevNvmeSetOptions(ctx context.Context, req types.BdevNvmeSetOptionsRequest) error {
	return c.rpc.Call(ctx, "bdev_nvme_set_options", req, nil)
}

// BdevNvmeDisableController disconnects a controller and keeps it from
// reconnecting; its bdevs stay. I/O it holds or retries fails.
func (c *Client) BdevNvmeDisableController(ctx context.Context, name string) error {
	return c.rpc.Call(ctx, "bdev_nvme_disable_controller", types.BdevNameRequest{Name: name}, nil)
}

// BdevNvmeGetControllers lists NVMe controllers, or the one named.
func (c *Client) BdevNvmeGetControllers(ctx context.Context, name string) ([]types.NvmeController, error) {
	var ctrlrs []types.NvmeController
	err := c.rpc.Call(ctx, "bdev_nvme_get_controllers", optional(types.BdevNvmeGetControllersRequest{Name: name}, name != ""), &ctrlrs)
	return ctrlrs, err
}

// BdevGetBdevs lists bdevs, or the one whose name, alias or uuid is name.
func (c *Client) BdevGetBdevs(ctx context.Context, name string) ([]types.Bdev, error) {
	var bdevs []types.Bdev
	err := c.rpc.Call(ctx, "bdev_get_bdevs", optional(types.BdevGetBdevsRequest{Name: name}, name != ""), &bdevs)
	return named("bdev_get_bdevs", name, bdevs, err)
}

// BdevGetIostat returns I/O counters of every bdev, or of the one named.
func (c *Client) BdevGetIostat(ctx context.Context, name string) (types.Iostat, error) {
	var stat types.Iostat
	err := c.rpc.Call(ctx, "bdev_get_iostat", optional(types.BdevGetIostatRequest{Name: name}, name != ""), &stat)
	return stat, err
}

// BdevSetQdSamplingPeriod samples bdev name's queue depth every period
// (µs; 0 stops), which BdevGetIostat then reports. A bdev missing is
// CodeNoSuchDevice.
func (c *Client) BdevSetQdSamplingPeriod(ctx context.Context, name string, period uint64) error {
	return c.rpc.Call(ctx, "bdev_set_qd_sampling_period", types.BdevSetQdSamplingPeriodRequest{Name: name, Period: period}, nil)
}

// BdevSetQosLimit sets a bdev's rate limits; SPDK rounds the I/O rate up
// to a multiple of types.QosIOsStep. A bdev missing is CodeNoSuchDevice.
func (c *Client) BdevSetQosLimit(ctx context.Context, req types.BdevSetQosLimitRequest) error {
	return c.rpc.Call(ctx, "bdev_set_qos_limit", req, nil)
}

// BdevWaitForExamine returns when every module has examined every bdev, for
// example when an lvstore on a new bdev has loaded.
func (c *Client) BdevWaitForExamine(ctx context.Context) error {
	return c.rpc.Call(ctx, "bdev_wait_for_examine", nil, nil)
}

// optional returns params when present, else nil: SPDK lists everything when
// params are omitted and refuses an empty object for some methods.
func optional(params any, present bool) any {
	if !present {
		return nil
	}
	return params
}

// BdevNullCreate creates a null bdev and returns its name.
func (c *Client) BdevNullCreate(ctx context.Context, req types.BdevNullCreateRequest) (string, error) {
	var name string
	err := c.rpc.Call(ctx, "bdev_null_create", req, &name)
	return name, err
}

// BdevNullDelete deletes a null bdev.
func (c *Client) BdevNullDelete(ctx context.Context, name string) error {
	return c.rpc.Call(ctx, "bdev_null_delete", types.BdevNameRequest{Name: name}, nil)
}

// BdevEnableHistogram turns a bdev's latency histogram on or off. SPDK
// sizes the histogram of every I/O channel open at that moment from the
// request; a channel opened later while it is on gets SPDK's default size
// and is then left out of BdevGetHistogram's merge, so turn it on once the
// bdev's consumers have opened their channels (an nvmf namespace opens one
// per poll group when it is added).
func (c *Client) BdevEnableHistogram(ctx context.Context, req types.BdevEnableHistogramRequest) error {
	return c.rpc.Call(ctx, "bdev_enable_histogram", req, nil)
}

// BdevGetHistogram reads a bdev's latency histogram, merged over its I/O
// channels. A bdev whose histogram was never on fails with -ENOMEM, one
// turned off with "Bad address".
func (c *Client) BdevGetHistogram(ctx context.Context, name string) (types.Histogram, error) {
	var h types.Histogram
	err := c.rpc.Call(ctx, "bdev_get_histogram", types.BdevGetHistogramRequest{Name: name}, &h)
	return h, err
}

// BdevNvmeAdminCmd sends an admin command to the NVMe controller named
// and returns its completion and the dataLen bytes the controller
// returned (none when dataLen is zero). A command the controller fails is
// no error here: the completion says how it failed.
func (c *Client) BdevNvmeAdminCmd(ctx context.Context, name string, cmd types.NvmeCommand, dataLen uint32) (types.NvmeCompletion, []byte, error) {
	var resp types.BdevNvmeSendCmdResponse
	req := types.BdevNvmeSendCmdRequest{Name: name, CmdType: "admin", DataDirection: "c2h", Cmdbuf: cmd.Encode(), DataLen: dataLen}
	if err := c.rpc.Call(ctx, "bdev_nvme_send_cmd", req, &resp); err != nil {
		return types.NvmeCompletion{}, nil, err
	}
	cpl, err := types.DecodeNvmeCompletion(resp.Cpl)
	if err != nil {
		return types.NvmeCompletion{}, nil, fmt.Errorf("bdev_nvme_send_cmd: %w", err)
	}
	if dataLen == 0 {
		return cpl, nil, nil
	}
	data, err := types.DecodeNvmeData(resp.Data)
	if err != nil || len(data) != int(dataLen) {
		return types.NvmeCompletion{}, nil, fmt.Errorf("bdev_nvme_send_cmd returned %d bytes of data, want %d (%v)", len(data), dataLen, err)
	}
	return cpl, data, nil
}
