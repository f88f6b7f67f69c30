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
	"encoding/hex"
	"encoding/json"
	"maps"
	"net"
	"regexp"
	"slices"
	"strings"

	"github.com/flint-io/flint/internal/spdk/jsonrpc"
)

const discoveryNQN = "nqn.2014-08.org.nvmexpress.discovery"

type transport struct {
	trtype string
	opts   map[string]any
}

type listenAddr struct {
	Trtype  string `json:"trtype"`
	Adrfam  string `json:"adrfam"`
	Traddr  string `json:"traddr"`
	Trsvcid string `json:"trsvcid"`
}

func (a listenAddr) same(b listenAddr) bool {
	return strings.EqualFold(a.Trtype, b.Trtype) && a.Traddr == b.Traddr && a.Trsvcid == b.Trsvcid
}

type namespace struct {
	nsid               uint32
	b                  *bdev
	nguid, uuid, eui64 string
	// anagrpid is the namespace's ANA group: its nsid unless moved.
	anagrpid uint32
}

// The controller ids SPDK hands out (NVMF_MIN_CNTLID, NVMF_MAX_CNTLID).
const (
	minCntlid = 1
	maxCntlid = 0xffef
)

type subsystem struct {
	nqn, serial, model string
	allowAnyHost, ana  bool
	maxNS              uint32
	// Controller ids are handed out in turn from minCntlid to maxCntlid,
	// and again from minCntlid.
	minCntlid, maxCntlid, lastCntlid int
	hosts                            []*nvmfHost
	listeners                        []listenAddr
	namespaces                       []*namespace // by nsid
	// anaStates are the ANA states set on a listener for a group; a
	// group not listed is optimized, as SPDK starts every listener.
	anaStates map[anaGroup]string
}

// anaGroup is one ANA group as one listener reports it.
type anaGroup struct {
	listener listenAddr
	group    uint32
}

// accessible says whether I/O to ns arriving at listener a is served:
// SPDK fails it with the ANA Inaccessible path status otherwise.
func (s *subsystem) accessible(a listenAddr, ns *namespace) bool {
	for g, state := range s.anaStates {
		if g.group == ns.anagrpid && g.listener.same(a) && state == "inaccessible" {
			return false
		}
	}
	return true
}

// nextCntlid is the id of the next controller a host connects.
func (s *subsystem) nextCntlid() int {
	s.lastCntlid++
	if s.lastCntlid < s.minCntlid || s.lastCntlid > s.maxCntlid {
		s.lastCntlid = s.minCntlid
	}
	return s.lastCntlid
}

// nvmfHost is a host a subsystem allows, with the keys it holds for its
// authentication.
type nvmfHost struct {
	nqn           string
	key, ctrlrKey *key
}

func (s *subsystem) host(nqn string) *nvmfHost {
	i := slices.IndexFunc(s.hosts, func(h *nvmfHost) bool { return h.nqn == nqn })
	if i < 0 {
		return nil
	}
	return s.hosts[i]
}

func (s *subsystem) allows(host string) bool {
	return s.allowAnyHost || s.host(host) != nil
}

// authenticates is whether a host connecting with key and ctrlrKey gets
// through DH-HMAC-CHAP: it proves the key its subsystem holds for it, if
// any, and, when it asks, the subsystem proves the controller key.
func (s *subsystem) authenticates(host string, key, ctrlrKey *key) bool {
	h := s.host(host)
	if h == nil || h.key == nil {
		return ctrlrKey == nil
	}
	return sameSecret(h.key, key) && (ctrlrKey == nil || sameSecret(h.ctrlrKey, ctrlrKey))
}

func (s *subsystem) listensOn(a listenAddr) bool {
	return slices.ContainsFunc(s.listeners, a.same)
}

func (s *subsystem) namespace(nsid uint32) *namespace {
	for _, ns := range s.namespaces {
		if ns.nsid == nsid {
			return ns
		}
	}
	return nil
}

// removeNamespaceOf drops the namespace of a bdev that went away.
func (s *subsystem) removeNamespaceOf(b *bdev) {
	s.namespaces = slices.DeleteFunc(s.namespaces, func(ns *namespace) bool { return ns.b == b })
}

func (st *state) subsystem(nqn string) *subsystem { return st.subsystemByNQN[nqn] }

func (st *state) transport(trtype string) *transport {
	for _, tr := range st.transports {
		if strings.EqualFold(tr.trtype, trtype) {
			return tr
		}
	}
	return nil
}

var nqnPattern = regexp.MustCompile(`^nqn\.[0-9]{4}-(0[1-9]|1[0-2])\.[a-zA-Z0-9][a-zA-Z0-9.-]*:.+$`)

// validNQN follows the NVMe base specification's NQN format, as SPDK checks it.
func validNQN(nqn string) bool {
	return len(nqn) <= 223 && (nqn == discoveryNQN || nqnPattern.MatchString(nqn))
}

// Transport defaults SPDK applies for options left out.
var transportDefaults = map[string]map[string]any{
	"TCP": {
		"max_queue_depth": 128, "max_io_qpairs_per_ctrlr": 127, "in_capsule_data_size": 4096,
		"max_io_size": 131072, "io_unit_size": 131072, "max_aq_depth": 128, "num_shared_buffers": 511,
		"buf_cache_size": uint32(4294967295), "dif_insert_or_strip": false, "zcopy": false,
		"c2h_success": true, "sock_priority": 0, "abort_timeout_sec": 1, "ack_timeout": 0, "data_wr_pool_size": 0,
	},
	"RDMA": {
		"max_queue_depth": 128, "max_io_qpairs_per_ctrlr": 127, "in_capsule_data_size": 4096,
		"max_io_size": 131072, "io_unit_size": 8192, "max_aq_depth": 128, "num_shared_buffers": 4095,
		"buf_cache_size": 32, "dif_insert_or_strip": false, "abort_timeout_sec": 1,
	},
}

func nvmfCreateTransport(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		Trtype              string  `json:"trtype"`
		MaxQueueDepth       *uint32 `json:"max_queue_depth"`
		MaxIOQpairsPerCtrlr *uint32 `json:"max_io_qpairs_per_ctrlr"`
		InCapsuleDataSize   *uint32 `json:"in_capsule_data_size"`
		MaxIOSize           *uint32 `json:"max_io_size"`
		IOUnitSize          *uint32 `json:"io_unit_size"`
		MaxAQDepth          *uint32 `json:"max_aq_depth"`
		NumSharedBuffers    *uint32 `json:"num_shared_buffers"`
		BufCacheSize        *uint32 `json:"buf_cache_size"`
	}
	if err := decode(p, &req, errInvalidParams(), "trtype"); err != nil {
		return nil, err
	}
	trtype := strings.ToUpper(req.Trtype)
	if trtype != "TCP" && trtype != "RDMA" {
		return nil, errf(jsonrpc.CodeInvalidParams, "Invalid transport type '%s'", req.Trtype)
	}
	// The SPDK Flint builds has RDMA; without an RDMA device it cannot
	// create the transport.
	if trtype == "RDMA" && !t.rdma {
		return nil, errf(jsonrpc.CodeInternalError, "Failed to create transport.")
	}
	if t.st.transport(trtype) != nil {
		return nil, errf(jsonrpc.CodeInternalError, "Transport type '%s' already exists", trtype)
	}
	opts := map[string]any{"trtype": trtype}
	for k, v := range transportDefaults[trtype] {
		opts[k] = v
	}
	for k, v := range map[string]*uint32{
		"max_queue_depth": req.MaxQueueDepth, "max_io_qpairs_per_ctrlr": req.MaxIOQpairsPerCtrlr,
		"in_capsule_data_size": req.InCapsuleDataSize, "max_io_size": req.MaxIOSize, "io_unit_size": req.IOUnitSize,
		"max_aq_depth": req.MaxAQDepth, "num_shared_buffers": req.NumSharedBuffers, "buf_cache_size": req.BufCacheSize,
	} {
		if v != nil {
			opts[k] = *v
		}
	}
	t.st.transports = append(t.st.transports, &transport{trtype: trtype, opts: opts})
	return true, nil
}

func nvmfGetTransports(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		Trtype string `json:"trtype"`
	}
	if err := decode(p, &req, errInvalidParams()); err != nil {
		return nil, err
	}
	out := []any{}
	for _, tr := range t.st.transports {
		if req.Trtype == "" || strings.EqualFold(tr.trtype, req.Trtype) {
			out = append(out, tr.opts)
		}
	}
	if req.Trtype != "" && len(out) == 0 {
		return nil, errf(jsonrpc.CodeNoSuchDevice, "No such device")
	}
	return out, nil
}

func nvmfCreateSubsystem(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		NQN           string `json:"nqn"`
		SerialNumber  string `json:"serial_number"`
		ModelNumber   string `json:"model_number"`
		AllowAnyHost  bool   `json:"allow_any_host"`
		AnaReporting  bool   `json:"ana_reporting"`
		MaxNamespaces uint32 `json:"max_namespaces"`
		MinCntlid     uint16 `json:"min_cntlid"`
		MaxCntlid     uint16 `json:"max_cntlid"`
	}
	req.MinCntlid, req.MaxCntlid = minCntlid, maxCntlid
	if err := decode(p, &req, errInvalidParams(), "nqn"); err != nil {
		return nil, err
	}
	if !validNQN(req.NQN) || req.NQN == discoveryNQN || t.st.subsystem(req.NQN) != nil {
		return nil, errf(jsonrpc.CodeInternalError, "Unable to create subsystem %s", req.NQN)
	}
	if req.SerialNumber == "" {
		req.SerialNumber = "00000000000000000000"
	}
	if len(req.SerialNumber) > 20 || !printable(req.SerialNumber) {
		return nil, errf(jsonrpc.CodeInvalidParams, "Invalid SN %s", req.SerialNumber)
	}
	if req.ModelNumber == "" {
		req.ModelNumber = "SPDK bdev Controller"
	}
	if len(req.ModelNumber) > 40 || !printable(req.ModelNumber) {
		return nil, errf(jsonrpc.CodeInvalidParams, "Invalid MN %s", req.ModelNumber)
	}
	if req.MinCntlid < minCntlid || req.MaxCntlid > maxCntlid || req.MinCntlid > req.MaxCntlid {
		return nil, errf(jsonrpc.CodeInvalidParams, "Invalid cntlid range [%d-%d]", req.MinCntlid, req.MaxCntlid)
	}
	if req.MaxNamespaces == 0 {
		req.MaxNamespaces = 32
	}
	s := &subsystem{
		nqn: req.NQN, serial: req.SerialNumber, model: req.ModelNumber,
		allowAnyHost: req.AllowAnyHost, ana: req.AnaReporting, maxNS: req.MaxNamespaces,
		minCntlid: int(req.MinCntlid), maxCntlid: int(req.MaxCntlid),
	}
	t.st.subsystems = append(t.st.subsystems, s)
	t.st.subsystemByNQN[s.nqn] = s
	return true, nil
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r > 0x7e {
			return false
		}
	}
	return true
}

func nqnParam(t *Target, p json.RawMessage) (*subsystem, error) {
	var req struct {
		NQN string `json:"nqn"`
	}
	if err := decode(p, &req, errInvalidParams(), "nqn"); err != nil {
		return nil, err
	}
	s := t.st.subsystem(req.NQN)
	if s == nil {
		return nil, errInvalidParams()
	}
	return s, nil
}

func nvmfDeleteSubsystem(t *Target, p json.RawMessage) (any, error) {
	s, err := nqnParam(t, p)
	if err != nil {
		return nil, err
	}
	for _, ns := range s.namespaces {
		if ns.b.kind == kindRaid {
			if err := t.quiesce(ns.b.raid); err != nil {
				return nil, err
			}
		}
	}
	for _, ns := range s.namespaces {
		ns.b.release()
	}
	for _, h := range s.hosts {
		t.st.release(h.key, h.ctrlrKey)
	}
	t.st.subsystems = slices.DeleteFunc(t.st.subsystems, func(x *subsystem) bool { return x == s })
	delete(t.st.subsystemByNQN, s.nqn)
	return true, nil
}

func nvmfGetSubsystems(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		NQN string `json:"nqn"`
	}
	if err := decode(p, &req, errInvalidParams()); err != nil {
		return nil, err
	}
	out := []any{}
	if req.NQN == "" || req.NQN == discoveryNQN {
		out = append(out, map[string]any{
			"nqn": discoveryNQN, "subtype": "Discovery", "listen_addresses": []any{}, "allow_any_host": true, "hosts": []any{},
		})
	}
	for _, s := range t.st.subsystems {
		if req.NQN == "" || req.NQN == s.nqn {
			out = append(out, renderSubsystem(s))
		}
	}
	if len(out) == 0 {
		return nil, errf(jsonrpc.CodeNoSuchDevice, "No such device")
	}
	return out, nil
}

// nvmfSubsystemGetControllers lists the controllers hosts hold on a
// subsystem: those of the fabric's Targets connected to it. Hosts that
// write through Fabric.Write hold none.
func nvmfSubsystemGetControllers(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		NQN     string `json:"nqn"`
		TgtName string `json:"tgt_name"`
	}
	if err := decode(p, &req, errInvalidParams(), "nqn"); err != nil {
		return nil, err
	}
	s := t.st.subsystem(req.NQN)
	if s == nil {
		return nil, errInvalidParams()
	}
	out := []any{}
	for _, host := range t.fabric.running() {
		for _, c := range host.st.ctrlrs {
			if c.pcie || c.state != ctrlrEnabled || c.subnqn != req.NQN {
				continue
			}
			if rt, rs := t.fabric.remote(c.trid, c.subnqn, c.hostnqn); rt == t && rs == s {
				out = append(out, map[string]any{
					"cntlid": c.cntlid, "cntrltype": "io", "hostnqn": c.hostnqn, "hostid": host.st.hostID, "num_io_qpairs": 1,
				})
			}
		}
	}
	return out, nil
}

func renderSubsystem(s *subsystem) map[string]any {
	hosts := []any{}
	for _, h := range s.hosts {
		host := map[string]any{"nqn": h.nqn}
		if h.key != nil {
			host["dhchap_key"] = h.key.name
		}
		if h.ctrlrKey != nil {
			host["dhchap_ctrlr_key"] = h.ctrlrKey.name
		}
		hosts = append(hosts, host)
	}
	listeners := []any{}
	for _, l := range s.listeners {
		listeners = append(listeners, l)
	}
	nss := []any{}
	for _, ns := range s.namespaces {
		m := map[string]any{"nsid": ns.nsid, "bdev_name": ns.b.name, "name": ns.b.name, "nguid": ns.nguid, "uuid": ns.uuid}
		if ns.eui64 != "" {
			m["eui64"] = ns.eui64
		}
		if s.ana {
			m["anagrpid"] = ns.anagrpid
		}
		nss = append(nss, m)
	}
	return map[string]any{
		"nqn": s.nqn, "subtype": "NVMe", "listen_addresses": listeners, "allow_any_host": s.allowAnyHost,
		"hosts": hosts, "serial_number": s.serial, "model_number": s.model, "max_namespaces": s.maxNS,
		"min_cntlid": s.minCntlid, "max_cntlid": s.maxCntlid, "namespaces": nss,
	}
}

func nvmfSubsystemAddNs(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		NQN       string `json:"nqn"`
		Namespace struct {
			BdevName string `json:"bdev_name"`
			NSID     uint32 `json:"nsid"`
			NGUID    string `json:"nguid"`
			UUID     string `json:"uuid"`
			EUI64    string `json:"eui64"`
		} `json:"namespace"`
	}
	if err := decode(p, &req, errInvalidParams(), "nqn", "namespace"); err != nil {
		return nil, err
	}
	ns := req.Namespace
	s := t.st.subsystem(req.NQN)
	b := t.st.bdev(ns.BdevName)
	switch {
	case s == nil, b == nil, b.claimType != "",
		ns.NSID > s.maxNS, ns.NSID != 0 && s.namespace(ns.NSID) != nil,
		ns.NGUID != "" && !isHex(ns.NGUID, 32), ns.EUI64 != "" && !isHex(ns.EUI64, 16),
		ns.UUID != "" && !isUUID(ns.UUID):
		return nil, errInvalidParams()
	}
	if ns.NSID == 0 {
		ns.NSID = 1
		for s.namespace(ns.NSID) != nil {
			ns.NSID++
		}
		if ns.NSID > s.maxNS {
			return nil, errInvalidParams()
		}
	}
	if ns.UUID == "" {
		ns.UUID = b.uuid
	}
	if ns.NGUID == "" {
		ns.NGUID = strings.ToUpper(strings.ReplaceAll(b.uuid, "-", ""))
	}
	b.claim(claimExclusiveWrite, "nvmf:"+s.nqn)
	s.namespaces = append(s.namespaces, &namespace{nsid: ns.NSID, anagrpid: ns.NSID, b: b, nguid: strings.ToUpper(ns.NGUID), uuid: ns.UUID, eui64: strings.ToUpper(ns.EUI64)})
	slices.SortFunc(s.namespaces, func(a, b *namespace) int { return int(a.nsid) - int(b.nsid) })
	return ns.NSID, nil
}

func isHex(s string, n int) bool {
	_, err := hex.DecodeString(s)
	return len(s) == n && err == nil
}

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func isUUID(s string) bool { return uuidPattern.MatchString(s) }

func nvmfSubsystemRemoveNs(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		NQN  string `json:"nqn"`
		NSID uint32 `json:"nsid"`
	}
	if err := decode(p, &req, errInvalidParams(), "nqn", "nsid"); err != nil {
		return nil, err
	}
	s := t.st.subsystem(req.NQN)
	if s == nil {
		return nil, errInvalidParams()
	}
	ns := s.namespace(req.NSID)
	if ns == nil {
		return nil, errInvalidParams()
	}
	ns.b.release()
	s.removeNamespaceOf(ns.b)
	return true, nil
}

func nvmfSubsystemListener(add bool) handler {
	return func(t *Target, p json.RawMessage) (any, error) {
		var req struct {
			NQN           string     `json:"nqn"`
			ListenAddress listenAddr `json:"listen_address"`
		}
		if err := decode(p, &req, errInvalidParams(), "nqn", "listen_address"); err != nil {
			return nil, err
		}
		s := t.st.subsystem(req.NQN)
		if s == nil {
			return nil, errInvalidParams()
		}
		a, ok := normalizeListenAddr(req.ListenAddress)
		if !ok {
			return nil, errInvalidParams()
		}
		if !add {
			if !s.listensOn(a) {
				return nil, errInvalidParams()
			}
			s.listeners = slices.DeleteFunc(s.listeners, a.same)
			maps.DeleteFunc(s.anaStates, func(g anaGroup, _ string) bool { return g.listener.same(a) })
			return true, nil
		}
		if t.st.transport(a.Trtype) == nil || s.listensOn(a) || t.fabric.listenedByOther(t, a) {
			return nil, errInvalidParams()
		}
		s.listeners = append(s.listeners, a)
		return true, nil
	}
}

// nvmfSubsystemGetListeners lists a subsystem's listeners, with the ANA
// state of every group when it reports ANA.
func nvmfSubsystemGetListeners(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		NQN     string `json:"nqn"`
		TgtName string `json:"tgt_name"`
	}
	if err := decode(p, &req, errInvalidParams(), "nqn"); err != nil {
		return nil, err
	}
	s := t.st.subsystem(req.NQN)
	if s == nil {
		return nil, errInvalidParams()
	}
	out := []any{}
	for _, l := range s.listeners {
		m := map[string]any{"address": l}
		if s.ana {
			states := []any{}
			for g := uint32(1); g <= s.maxNS; g++ {
				state := s.anaStates[anaGroup{l, g}]
				if state == "" {
					state = "optimized"
				}
				states = append(states, map[string]any{"ana_group": g, "ana_state": state})
			}
			m["ana_states"] = states
		}
		out = append(out, m)
	}
	return out, nil
}

// nvmfSubsystemListenerSetAnaState sets the ANA state a listener reports
// for one group, or for all.
func nvmfSubsystemListenerSetAnaState(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		NQN           string     `json:"nqn"`
		ListenAddress listenAddr `json:"listen_address"`
		AnaState      string     `json:"ana_state"`
		AnaGrpID      uint32     `json:"anagrpid"`
		TgtName       string     `json:"tgt_name"`
	}
	if err := decode(p, &req, errInvalidParams(), "nqn", "listen_address", "ana_state"); err != nil {
		return nil, err
	}
	s := t.st.subsystem(req.NQN)
	if s == nil {
		return nil, errf(jsonrpc.CodeInvalidParams, "Unable to find subsystem with NQN %s", req.NQN)
	}
	a, ok := normalizeListenAddr(req.ListenAddress)
	if !ok || !slices.Contains([]string{"optimized", "non_optimized", "inaccessible"}, req.AnaState) {
		return nil, errInvalidParams()
	}
	if !s.ana || req.AnaGrpID > s.maxNS || !s.listensOn(a) {
		return nil, errf(jsonrpc.CodeInternalError, "error setting ANA state: -22")
	}
	if s.anaStates == nil {
		s.anaStates = map[anaGroup]string{}
	}
	for g := uint32(1); g <= s.maxNS; g++ {
		if req.AnaGrpID == 0 || g == req.AnaGrpID {
			s.anaStates[anaGroup{a, g}] = req.AnaState
		}
	}
	return true, nil
}

// nvmfSubsystemSetNsAnaGroup moves a namespace to another ANA group. SPDK
// pauses the namespace's I/O first, and answers once none is outstanding:
// at once in the double, unless a raid under it holds a write, which SPDK
// would wait for as long as it is held; that wait is not modeled.
func nvmfSubsystemSetNsAnaGroup(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		NQN      string `json:"nqn"`
		NSID     uint32 `json:"nsid"`
		AnaGrpID uint32 `json:"anagrpid"`
		TgtName  string `json:"tgt_name"`
	}
	if err := decode(p, &req, errInvalidParams(), "nqn", "nsid", "anagrpid"); err != nil {
		return nil, err
	}
	s := t.st.subsystem(req.NQN)
	if s == nil {
		return nil, errInvalidParams()
	}
	ns := s.namespace(req.NSID)
	if ns == nil || req.AnaGrpID == 0 || req.AnaGrpID > s.maxNS {
		return nil, errInvalidParams()
	}
	if ns.b.kind == kindRaid && t.fabric.holdsWrites(ns.b.raid) {
		return nil, errf(CodeNotModeled, "namespace %d holds writes: SPDK would wait until they complete", req.NSID)
	}
	ns.anagrpid = req.AnaGrpID
	return true, nil
}

func normalizeListenAddr(a listenAddr) (listenAddr, bool) {
	a.Trtype = strings.ToUpper(a.Trtype)
	ip := net.ParseIP(a.Traddr)
	switch strings.ToLower(a.Adrfam) {
	case "ipv4", "":
		a.Adrfam = "IPv4"
		return a, ip != nil && ip.To4() != nil && a.Trsvcid != ""
	case "ipv6":
		a.Adrfam = "IPv6"
		return a, ip != nil && ip.To4() == nil && a.Trsvcid != ""
	}
	return a, false
}

// listenedByOther reports whether another Target already listens on the
// address: a second process cannot bind it.
func (f *Fabric) listenedByOther(self *Target, a listenAddr) bool {
	for _, t := range f.running() {
		if t == self {
			continue
		}
		for _, s := range t.st.subsystems {
			if s.listensOn(a) {
				return true
			}
		}
	}
	return false
}

func nvmfSubsystemHost(add bool) handler {
	return func(t *Target, p json.RawMessage) (any, error) {
		var req struct {
			NQN            string `json:"nqn"`
			Host           string `json:"host"`
			DhchapKey      string `json:"dhchap_key"`
			DhchapCtrlrKey string `json:"dhchap_ctrlr_key"`
		}
		if err := decode(p, &req, errInvalidParams(), "nqn", "host"); err != nil {
			return nil, err
		}
		s := t.st.subsystem(req.NQN)
		if s == nil {
			return nil, errInvalidParams()
		}
		h := s.host(req.Host)
		if !add {
			if h == nil {
				return nil, errf(jsonrpc.CodeInternalError, "Internal error")
			}
			t.st.release(h.key, h.ctrlrKey)
			s.hosts = slices.DeleteFunc(s.hosts, func(x *nvmfHost) bool { return x == h })
			return true, nil
		}
		key, ctrlrKey, err := t.st.holdKeys(req.DhchapKey, req.DhchapCtrlrKey, errInvalidParams())
		if err != nil {
			return nil, err
		}
		if h != nil || !validNQN(req.Host) || (key == nil && ctrlrKey != nil) {
			t.st.release(key, ctrlrKey)
			return nil, errf(jsonrpc.CodeInternalError, "Internal error")
		}
		s.hosts = append(s.hosts, &nvmfHost{nqn: req.Host, key: key, ctrlrKey: ctrlrKey})
		return true, nil
	}
}
