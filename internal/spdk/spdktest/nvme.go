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
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flint-io/flint/internal/spdk/jsonrpc"
	"github.com/flint-io/flint/internal/spdk/types"
)

// Controller states of bdev_nvme_get_controllers.
const (
	ctrlrEnabled            = "enabled"
	ctrlrFailed             = "failed"
	ctrlrReconnectIsDelayed = "reconnect_is_delayed"
)

// ctrlr is an NVMe controller attached by a Target: a PCIe device or a
// subsystem of a Target on the fabric.
type ctrlr struct {
	name    string
	trid    listenAddr
	subnqn  string
	hostnqn string
	pcie    bool
	// disk is a PCIe controller's device.
	disk *disk

	lossTimeout    int32
	reconnectDelay uint32
	fastIOFail     uint32
	// key and ctrlrKey are the DH-HMAC-CHAP keys the controller
	// authenticates with at every connect.
	key, ctrlrKey *key

	state         string
	cntlid        int
	lostAt        time.Time
	serial, model string
	bdevs         []*bdev
	// synced is the remote state an enabled controller last followed.
	synced *syncMark
	// home is the state of the Target that holds the controller; gone
	// says it was deleted from there.
	home *state
	gone bool
}

// settled is whether refreshCtrlr has nothing to do for c: a PCIe or
// failed controller, or an enabled one whose remote has not changed.
func (c *ctrlr) settled() bool {
	return c.pcie || c.state == ctrlrFailed || (c.state == ctrlrEnabled && c.synced.current())
}

// syncMark is a Target's state at a generation: while the Target runs with
// that state unchanged, nothing a controller of it follows has changed.
type syncMark struct {
	target *Target
	st     *state
	gen    uint64
}

func (m *syncMark) current() bool {
	return m != nil && m.target.running && m.target.st == m.st && m.st.gen == m.gen
}

func (st *state) ctrlr(name string) *ctrlr {
	for _, c := range st.ctrlrs {
		if c.name == name {
			return c
		}
	}
	return nil
}

// remote finds the subsystem a fabric controller talks to, if it can be
// reached: a running Target listening on the address with that subsystem
// listening there too, and the host allowed.
func (f *Fabric) remote(trid listenAddr, subnqn, host string) (*Target, *subsystem) {
	return remoteIn(f.running(), trid, subnqn, host)
}

// remoteIn finds, among targets, the subsystem a host reaches at trid.
func remoteIn(targets []*Target, trid listenAddr, subnqn, host string) (*Target, *subsystem) {
	for _, t := range targets {
		if s := t.reachable(trid, subnqn, host); s != nil {
			return t, s
		}
	}
	return nil, nil
}

// reachable is t's subsystem subnqn if host reaches it at trid.
func (t *Target) reachable(trid listenAddr, subnqn, host string) *subsystem {
	s := t.st.subsystem(subnqn)
	if s == nil || !s.listensOn(trid) || !s.allows(host) {
		return nil
	}
	return s
}

// remote is remoteIn for c, asking first the Target c followed last: a
// Target's change has every controller following it looked at again, and
// at thousands of Volumes asking every Target for each of them was most
// of what a refresh cost.
func (c *ctrlr) remote(running []*Target) (*Target, *subsystem) {
	if m := c.synced; m != nil && m.target.running {
		if s := m.target.reachable(c.trid, c.subnqn, c.hostnqn); s != nil {
			return m.target, s
		}
	}
	return remoteIn(running, c.trid, c.subnqn, c.hostnqn)
}

// validReconnectOptions follows bdev_nvme's documented rules for the three
// reconnect options.
func validReconnectOptions(loss int32, delay, fastFail uint32) bool {
	switch {
	case loss < -1:
		return false
	case loss == 0:
		return delay == 0 && fastFail == 0
	case delay == 0:
		return false
	case loss > 0 && int64(delay) > int64(loss):
		return false
	case fastFail != 0 && (fastFail < delay || (loss > 0 && int64(fastFail) >= int64(loss))):
		return false
	}
	return true
}

// bdevNvmeSetOptions checks the options Flint sets as SPDK does, from the
// request alone (SPDK checks them merged with those set before). The
// double keeps none: it fails no I/O and times none out, so there is
// nothing to retry, count or reset.
func bdevNvmeSetOptions(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		BdevRetryCount  int32   `json:"bdev_retry_count"`
		NvmeErrorStat   bool    `json:"nvme_error_stat"`
		TimeoutUs       uint64  `json:"timeout_us"`
		ActionOnTimeout *string `json:"action_on_timeout"`
		TimeoutAdminUs  uint64  `json:"timeout_admin_us"`
	}
	if err := decode(p, &req, errDecode()); err != nil {
		return nil, err
	}
	if a := req.ActionOnTimeout; a != nil && *a != "none" && *a != "abort" && *a != "reset" {
		return nil, errDecode()
	}
	if req.BdevRetryCount < -1 || req.TimeoutUs == 0 && req.TimeoutAdminUs != 0 {
		return nil, errf(jsonrpc.CodeInvalid, "Invalid argument")
	}
	if len(t.st.ctrlrs) > 0 {
		return nil, errf(jsonrpc.CodeNotPermitted, "RPC not permitted with nvme controllers already attached")
	}
	return true, nil
}

func bdevNvmeAttachController(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		Name                 string `json:"name"`
		Trtype               string `json:"trtype"`
		Traddr               string `json:"traddr"`
		Adrfam               string `json:"adrfam"`
		Trsvcid              string `json:"trsvcid"`
		Subnqn               string `json:"subnqn"`
		Hostnqn              string `json:"hostnqn"`
		CtrlrLossTimeoutSec  int32  `json:"ctrlr_loss_timeout_sec"`
		ReconnectDelaySec    uint32 `json:"reconnect_delay_sec"`
		FastIOFailTimeoutSec uint32 `json:"fast_io_fail_timeout_sec"`
		DhchapKey            string `json:"dhchap_key"`
		DhchapCtrlrKey       string `json:"dhchap_ctrlr_key"`
	}
	if err := decode(p, &req, errDecode(), "name", "trtype", "traddr"); err != nil {
		return nil, err
	}
	if t.st.ctrlr(req.Name) != nil {
		return nil, errf(jsonrpc.CodeAlready, "A controller named %s already exists with the specified network path", req.Name)
	}
	if !validReconnectOptions(req.CtrlrLossTimeoutSec, req.ReconnectDelaySec, req.FastIOFailTimeoutSec) {
		return nil, errf(jsonrpc.CodeInvalid, "Invalid argument")
	}
	c := &ctrlr{
		name: req.Name, lossTimeout: req.CtrlrLossTimeoutSec, reconnectDelay: req.ReconnectDelaySec,
		fastIOFail: req.FastIOFailTimeoutSec, state: ctrlrEnabled,
	}
	if strings.EqualFold(req.Trtype, "pcie") {
		return t.attachPCIe(c, req.Traddr)
	}
	trid, ok := normalizeListenAddr(listenAddr{Trtype: req.Trtype, Adrfam: req.Adrfam, Traddr: req.Traddr, Trsvcid: req.Trsvcid})
	if !ok || (trid.Trtype != "TCP" && trid.Trtype != "RDMA") {
		return nil, errf(jsonrpc.CodeInvalid, "Invalid argument")
	}
	if req.Hostnqn == "" {
		req.Hostnqn = "nqn.2014-08.org.nvmexpress:uuid:" + newUUID()
	}
	key, ctrlrKey, err := t.st.holdKeys(req.DhchapKey, req.DhchapCtrlrKey, errf(jsonrpc.CodeNoKey, "Required key not available"))
	if err != nil {
		return nil, err
	}
	_, s := t.fabric.remote(trid, req.Subnqn, req.Hostnqn)
	if s == nil || !s.authenticates(req.Hostnqn, key, ctrlrKey) {
		t.st.release(key, ctrlrKey)
		return nil, errf(jsonrpc.CodeIOError, "Input/output error")
	}
	c.key, c.ctrlrKey = key, ctrlrKey
	c.trid, c.subnqn, c.hostnqn = trid, req.Subnqn, req.Hostnqn
	c.serial, c.model = s.serial, s.model
	c.cntlid = s.nextCntlid()
	t.addCtrlr(c)
	names := []string{}
	for _, ns := range s.namespaces {
		b := &bdev{
			name: fmt.Sprintf("%sn%d", c.name, ns.nsid), product: "NVMe disk",
			blockSize: ns.b.blockSize, numBlocks: ns.b.numBlocks, kind: kindNvme, ctrlr: c, nsid: ns.nsid,
		}
		b.uuid = uuidOfNGUID(ns.nguid)
		b.aliases = []string{b.uuid}
		c.bdevs = append(c.bdevs, b)
		t.register(b)
		names = append(names, b.name)
	}
	return names, nil
}

// uuidOfNGUID formats an NGUID as the uuid an initiator gives its bdev.
func uuidOfNGUID(nguid string) string {
	n := strings.ToLower(nguid)
	return n[0:8] + "-" + n[8:12] + "-" + n[12:16] + "-" + n[16:20] + "-" + n[20:32]
}

func (t *Target) attachPCIe(c *ctrlr, traddr string) (any, error) {
	d := t.fabric.disks[pcieKey(traddr)]
	if d == nil || t.fabric.pcieInUse(traddr) {
		return nil, errf(jsonrpc.CodeNoSuchDevice, "No such device")
	}
	c.pcie = true
	c.disk = d
	// Attaching resets the controller: a feature set without saving it
	// returns to its default.
	d.writeCacheEnabled = d.volatileWriteCache
	c.trid = listenAddr{Trtype: "PCIe", Traddr: strings.ToLower(traddr)}
	c.serial, c.model = d.serial, d.model
	c.cntlid = 1
	t.addCtrlr(c)
	u := newUUID()
	b := &bdev{
		name: c.name + "n1", uuid: u, aliases: []string{u}, product: "NVMe disk",
		blockSize: d.blockSize, numBlocks: d.size / uint64(d.blockSize), kind: kindNvme, ctrlr: c, nsid: 1, disk: d,
	}
	c.bdevs = append(c.bdevs, b)
	t.register(b)
	return []string{b.name}, nil
}

// pcieInUse reports whether a running Target already drives the device.
func (f *Fabric) pcieInUse(traddr string) bool {
	for _, t := range f.running() {
		for _, c := range t.st.ctrlrs {
			if c.pcie && strings.EqualFold(c.trid.Traddr, traddr) {
				return true
			}
		}
	}
	return false
}

// refreshCtrlr follows the fabric: a controller that loses its subsystem
// (Target gone, listener or host removed) fails at once with SPDK's
// defaults, or retries and is deleted with its bdevs once
// ctrlr_loss_timeout_sec has passed. A retrying controller reconnects when
// the subsystem is reachable again.
func (t *Target) refreshCtrlr(c *ctrlr, now time.Time, running []*Target) {
	if c.pcie {
		return
	}
	if c.state == ctrlrEnabled && c.synced.current() {
		return
	}
	remote, s := c.remote(running)
	c.synced = nil
	switch c.state {
	case ctrlrEnabled:
		if s == nil {
			if c.lossTimeout == 0 {
				c.state = ctrlrFailed
			} else {
				c.state, c.lostAt = ctrlrReconnectIsDelayed, now
			}
			return
		}
		t.syncNamespaces(c, s)
		c.synced = &syncMark{target: remote, st: remote.st, gen: remote.st.gen}
	case ctrlrReconnectIsDelayed:
		if s != nil && s.authenticates(c.hostnqn, c.key, c.ctrlrKey) {
			c.state, c.cntlid = ctrlrEnabled, s.nextCntlid()
			t.syncNamespaces(c, s)
			c.synced = &syncMark{target: remote, st: remote.st, gen: remote.st.gen}
			return
		}
		if c.lossTimeout > 0 && since(c.lostAt, now) >= time.Duration(c.lossTimeout)*time.Second {
			t.deleteCtrlr(c)
		}
	}
}

// syncNamespaces follows namespace removal and resize on the subsystem.
func (t *Target) syncNamespaces(c *ctrlr, s *subsystem) {
	for _, b := range slices.Clone(c.bdevs) {
		ns := s.namespace(b.nsid)
		if ns == nil {
			c.bdevs = slices.DeleteFunc(c.bdevs, func(x *bdev) bool { return x == b })
			t.unregister(b)
			continue
		}
		t.resize(b, ns.b.numBlocks*uint64(ns.b.blockSize)/uint64(b.blockSize))
	}
}

func (t *Target) deleteCtrlr(c *ctrlr) {
	for _, b := range c.bdevs {
		t.unregister(b)
	}
	c.bdevs = nil
	t.st.release(c.key, c.ctrlrKey)
	t.st.ctrlrs = slices.DeleteFunc(t.st.ctrlrs, func(x *ctrlr) bool { return x == c })
	c.gone = true
	t.fabric.forget(c)
}

func (t *Target) addCtrlr(c *ctrlr) {
	c.home = t.st
	t.st.ctrlrs = append(t.st.ctrlrs, c)
}

func bdevNvmeDetachController(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		Name string `json:"name"`
	}
	if err := decode(p, &req, errDecode(), "name"); err != nil {
		return nil, err
	}
	c := t.st.ctrlr(req.Name)
	if c == nil {
		return nil, errf(jsonrpc.CodeNoSuchDevice, "No such device")
	}
	t.deleteCtrlr(c)
	return true, nil
}

func bdevNvmeGetControllers(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		Name string `json:"name"`
	}
	if err := decode(p, &req, errDecode()); err != nil {
		return nil, err
	}
	out := []any{}
	for _, c := range t.st.ctrlrs {
		if req.Name == "" || req.Name == c.name {
			out = append(out, map[string]any{"name": c.name, "ctrlrs": []any{map[string]any{
				"state": c.state, "trid": c.renderTrid(), "cntlid": c.cntlid,
				"host": map[string]any{"nqn": c.hostnqn, "addr": "", "svcid": ""},
			}}})
		}
	}
	if req.Name != "" && len(out) == 0 {
		return nil, errf(jsonrpc.CodeNVMeNotExist, "Controller %s does not exist", req.Name)
	}
	return out, nil
}

func (c *ctrlr) renderTrid() map[string]any {
	if c.pcie {
		return map[string]any{"trtype": "PCIe", "traddr": c.trid.Traddr}
	}
	return map[string]any{
		"trtype": c.trid.Trtype, "adrfam": c.trid.Adrfam, "traddr": c.trid.Traddr,
		"trsvcid": c.trid.Trsvcid, "subnqn": c.subnqn,
	}
}

// bdevNvmeSendCmd passes an admin command to a PCIe controller's device,
// which answers Identify Controller and the Volatile Write Cache feature
// as the NVMe specification says, or a Keep Alive to a fabric
// controller: it completes while the controller is connected, and fails
// at once, -32603 "No such device or address" (ENXIO), while it is not;
// other commands are not modeled.
func bdevNvmeSendCmd(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		Name          string `json:"name"`
		CmdType       string `json:"cmd_type"`
		DataDirection string `json:"data_direction"`
		Cmdbuf        string `json:"cmdbuf"`
		TimeoutMs     uint32 `json:"timeout_ms"`
		DataLen       uint32 `json:"data_len"`
	}
	invalid := errf(jsonrpc.CodeInvalidParams, "Invalid argument")
	if err := decode(p, &req, invalid, "name", "cmd_type", "data_direction", "cmdbuf"); err != nil {
		return nil, err
	}
	cmd, err := types.DecodeNvmeCommand(req.Cmdbuf)
	if err != nil || (req.CmdType != "admin" && req.CmdType != "io") || (req.DataDirection != "c2h" && req.DataDirection != "h2c") {
		return nil, invalid
	}
	c := t.st.ctrlr(req.Name)
	if c == nil {
		return nil, invalid
	}
	if !c.pcie && req.CmdType == "admin" && cmd.Opcode == types.NvmeOpcodeKeepAlive {
		if c.state != ctrlrEnabled {
			return nil, errf(jsonrpc.CodeInternalError, "No such device or address")
		}
		return map[string]any{"cpl": types.EncodeNvmeCompletion(types.NvmeCompletion{})}, nil
	}
	if !c.pcie || req.CmdType != "admin" || req.DataDirection != "c2h" {
		return nil, errf(CodeNotModeled, "the double passes admin commands to PCIe controllers, and Keep Alives, only")
	}
	d := c.disk
	invalidField := types.NvmeCompletion{StatusCode: 0x02}
	var cpl types.NvmeCompletion
	var data []byte
	switch {
	case cmd.Opcode == types.NvmeOpcodeIdentify && cmd.CDW10&0xff == types.NvmeIdentifyCNSController:
		data = make([]byte, types.NvmeIdentifySize)
		copy(data[4:24], fmt.Sprintf("%-20s", d.serial))
		copy(data[24:64], fmt.Sprintf("%-40s", d.model))
		if d.volatileWriteCache {
			data[types.NvmeIdentifyVWCOffset] = 1
		}
	case cmd.CDW10&0xff != types.NvmeFeatureVolatileWriteCache || (cmd.Opcode != types.NvmeOpcodeGetFeatures && cmd.Opcode != types.NvmeOpcodeSetFeatures):
		return nil, errf(CodeNotModeled, "the double answers Identify Controller and the Volatile Write Cache feature only")
	case !d.volatileWriteCache:
		cpl = invalidField
	case cmd.Opcode == types.NvmeOpcodeGetFeatures:
		if d.writeCacheEnabled {
			cpl.CDW0 = 1
		}
	default:
		d.writeCacheEnabled = cmd.CDW11&1 == 1
	}
	out := map[string]any{"cpl": types.EncodeNvmeCompletion(cpl)}
	if req.DataLen > 0 {
		buf := make([]byte, req.DataLen)
		copy(buf, data)
		out["data"] = base64.URLEncoding.EncodeToString(buf)
	}
	return out, nil
}
