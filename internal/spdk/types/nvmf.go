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

// NvmfCreateTransportRequest creates an NVMe-oF transport ("TCP", "RDMA").
// Zero fields keep SPDK's default for the transport.
type NvmfCreateTransportRequest struct {
	Trtype              string `json:"trtype"`
	MaxQueueDepth       uint32 `json:"max_queue_depth,omitempty"`
	MaxIOQpairsPerCtrlr uint32 `json:"max_io_qpairs_per_ctrlr,omitempty"`
	InCapsuleDataSize   uint32 `json:"in_capsule_data_size,omitempty"`
	IOUnitSize          uint32 `json:"io_unit_size,omitempty"`
	NumSharedBuffers    uint32 `json:"num_shared_buffers,omitempty"`
	BufCacheSize        uint32 `json:"buf_cache_size,omitempty"`
}

// NvmfGetTransportsRequest lists transports, one when Trtype is set.
type NvmfGetTransportsRequest struct {
	Trtype string `json:"trtype,omitempty"`
}

// NvmfTransport is one transport and its effective settings.
type NvmfTransport struct {
	Trtype              string `json:"trtype"`
	MaxQueueDepth       uint32 `json:"max_queue_depth"`
	MaxIOQpairsPerCtrlr uint32 `json:"max_io_qpairs_per_ctrlr"`
	InCapsuleDataSize   uint32 `json:"in_capsule_data_size"`
	MaxIOSize           uint32 `json:"max_io_size"`
	IOUnitSize          uint32 `json:"io_unit_size"`
	NumSharedBuffers    uint32 `json:"num_shared_buffers"`
	BufCacheSize        uint32 `json:"buf_cache_size"`
}

// NvmfCreateSubsystemRequest creates an NVMe subsystem. SerialNumber is at
// most 20 characters, ModelNumber at most 40. MinCntlid and MaxCntlid
// bound the controller ids the subsystem hands out (SPDK's default is
// 1-65519, its whole range); a range outside it, or reversed, is refused
// with -32602 and no subsystem is created.
type NvmfCreateSubsystemRequest struct {
	NQN           string `json:"nqn"`
	SerialNumber  string `json:"serial_number,omitempty"`
	ModelNumber   string `json:"model_number,omitempty"`
	AllowAnyHost  bool   `json:"allow_any_host"`
	AnaReporting  bool   `json:"ana_reporting,omitempty"`
	MaxNamespaces uint32 `json:"max_namespaces,omitempty"`
	MinCntlid     uint16 `json:"min_cntlid,omitempty"`
	MaxCntlid     uint16 `json:"max_cntlid,omitempty"`
}

// The controller ids SPDK can hand out.
const (
	MinCntlid = 1
	MaxCntlid = 0xffef
)

// NQNRequest names one subsystem.
type NQNRequest struct {
	NQN string `json:"nqn"`
}

// NvmfGetSubsystemsRequest lists subsystems, one when NQN is set.
type NvmfGetSubsystemsRequest struct {
	NQN string `json:"nqn,omitempty"`
}

// ListenAddress is an NVMe-oF listener.
type ListenAddress struct {
	Trtype  string `json:"trtype"`
	Adrfam  string `json:"adrfam"`
	Traddr  string `json:"traddr"`
	Trsvcid string `json:"trsvcid"`
}

// NvmfController is a controller a host holds on a subsystem. SPDK lists
// it until the host's queue pairs are gone, which waits for the I/O
// outstanding on them.
type NvmfController struct {
	Cntlid      uint16 `json:"cntlid"`
	Cntrltype   string `json:"cntrltype"`
	HostNQN     string `json:"hostnqn"`
	HostID      string `json:"hostid"`
	NumIOQpairs uint32 `json:"num_io_qpairs"`
}

// NvmfQpair is one queue pair a host holds on a subsystem: qid 0 is its
// controller's admin queue.
type NvmfQpair struct {
	Cntlid uint16 `json:"cntlid"`
	Qid    uint16 `json:"qid"`
	State  string `json:"state"`
	// Auth is how the queue authenticated; nil when it did not.
	Auth *NvmfQpairAuth `json:"auth,omitempty"`
}

// NvmfQpairAuth is a queue's DH-HMAC-CHAP exchange, by SPDK's names.
type NvmfQpairAuth struct {
	State   string `json:"state"`
	Digest  string `json:"digest"`
	DHGroup string `json:"dhgroup"`
}

// NvmfSubsystem is one subsystem. The discovery subsystem is listed too.
type NvmfSubsystem struct {
	NQN             string          `json:"nqn"`
	Subtype         string          `json:"subtype"`
	ListenAddresses []ListenAddress `json:"listen_addresses"`
	AllowAnyHost    bool            `json:"allow_any_host"`
	Hosts           []NvmfHost      `json:"hosts"`
	SerialNumber    string          `json:"serial_number,omitempty"`
	ModelNumber     string          `json:"model_number,omitempty"`
	MaxNamespaces   uint32          `json:"max_namespaces,omitempty"`
	MinCntlid       uint16          `json:"min_cntlid,omitempty"`
	MaxCntlid       uint16          `json:"max_cntlid,omitempty"`
	Namespaces      []NvmfNamespace `json:"namespaces,omitempty"`
}

// NvmfHost is a host allowed to connect, with the names of its
// DH-HMAC-CHAP keys in SPDK's keyring when it must authenticate.
type NvmfHost struct {
	NQN            string `json:"nqn"`
	DhchapKey      string `json:"dhchap_key,omitempty"`
	DhchapCtrlrKey string `json:"dhchap_ctrlr_key,omitempty"`
}

// HostNQNs lists the hosts allowed to connect.
func (s NvmfSubsystem) HostNQNs() []string {
	hosts := make([]string, 0, len(s.Hosts))
	for _, h := range s.Hosts {
		hosts = append(hosts, h.NQN)
	}
	return hosts
}

// NvmfNamespace is one namespace of a subsystem. An initiator's bdev takes
// its uuid from the NGUID. SPDK reports NGUID and EUI64 as upper-case hex
// without separators.
type NvmfNamespace struct {
	NSID     uint32 `json:"nsid"`
	BdevName string `json:"bdev_name"`
	NGUID    string `json:"nguid,omitempty"`
	EUI64    string `json:"eui64,omitempty"`
	UUID     string `json:"uuid,omitempty"`
	AnaGrpID uint32 `json:"anagrpid,omitempty"`
}

// NvmfSubsystemAddNsRequest adds a namespace; SPDK answers its nsid.
type NvmfSubsystemAddNsRequest struct {
	NQN       string               `json:"nqn"`
	Namespace NvmfNamespaceRequest `json:"namespace"`
}

// NvmfNamespaceRequest describes a namespace to add; zero fields are
// assigned by SPDK (NGUID and UUID from the bdev's uuid, no EUI64). NGUID
// is 32 hex digits, EUI64 16, UUID the usual 8-4-4-4-12 form.
type NvmfNamespaceRequest struct {
	BdevName string `json:"bdev_name"`
	NSID     uint32 `json:"nsid,omitempty"`
	NGUID    string `json:"nguid,omitempty"`
	EUI64    string `json:"eui64,omitempty"`
	UUID     string `json:"uuid,omitempty"`
}

// NvmfSubsystemListenerRequest adds or removes a listener.
type NvmfSubsystemListenerRequest struct {
	NQN           string        `json:"nqn"`
	ListenAddress ListenAddress `json:"listen_address"`
}

// ANA states a listener reports for a namespace group
// (nvmf_subsystem_listener_set_ana_state).
const (
	AnaOptimized    = "optimized"
	AnaInaccessible = "inaccessible"
)

// NvmfListenerAnaStateRequest sets the ANA state listener reports for
// group AnaGrpID, or for every group when it is 0. SPDK sends the change
// to the listener's controllers (an ANA change notice) and from then on
// fails the I/O that arrives there in an inaccessible group with the ANA
// Inaccessible path status. A subsystem created without ana_reporting,
// or a listener it does not have, is refused with -32603.
type NvmfListenerAnaStateRequest struct {
	NQN           string        `json:"nqn"`
	ListenAddress ListenAddress `json:"listen_address"`
	AnaState      string        `json:"ana_state"`
	AnaGrpID      uint32        `json:"anagrpid,omitempty"`
}

// NvmfNsAnaGroupRequest moves namespace NSID to ANA group AnaGrpID. SPDK
// pauses the subsystem for that namespace first: the call returns only
// once no I/O to it is outstanding in any poll group, the I/O arriving
// meanwhile being queued and run after. A missing namespace or a group
// outside 1..max_namespaces is refused with -32602.
type NvmfNsAnaGroupRequest struct {
	NQN      string `json:"nqn"`
	NSID     uint32 `json:"nsid"`
	AnaGrpID uint32 `json:"anagrpid"`
}

// NvmfListener is a subsystem's listener with the ANA state it reports
// for each group.
type NvmfListener struct {
	Address   ListenAddress  `json:"address"`
	AnaStates []NvmfAnaState `json:"ana_states"`
}

// NvmfAnaState is one group's ANA state on a listener.
type NvmfAnaState struct {
	AnaGroup uint32 `json:"ana_group"`
	AnaState string `json:"ana_state"`
}

// NvmfSubsystemHostRequest allows or disallows a host. Removing a host
// drops its live connections at once.
type NvmfSubsystemHostRequest struct {
	NQN  string `json:"nqn"`
	Host string `json:"host"`
	// DhchapKey names the keyring key the host must prove it holds
	// (DH-HMAC-CHAP); unset, the host connects without authenticating.
	DhchapKey string `json:"dhchap_key,omitempty"`
	// DhchapCtrlrKey names the key the subsystem proves itself with when
	// the host asks (bidirectional authentication); it needs DhchapKey.
	DhchapCtrlrKey string `json:"dhchap_ctrlr_key,omitempty"`
}
