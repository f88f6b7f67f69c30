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

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
)

// NVMe admin opcodes and the one feature Flint reads and sets.
const (
	NvmeOpcodeSetFeatures = 0x09
	NvmeOpcodeGetFeatures = 0x0a
	NvmeOpcodeIdentify    = 0x06
	// NvmeOpcodeKeepAlive carries no data and changes nothing: a target
	// asks its members with it whether they still admit it.
	NvmeOpcodeKeepAlive = 0x18
	// NvmeFeatureVolatileWriteCache is the Volatile Write Cache feature;
	// bit 0 of its value is WCE, the cache enabled.
	NvmeFeatureVolatileWriteCache = 0x06
	// NvmeIdentifyCNSController identifies the controller (4096 bytes).
	NvmeIdentifyCNSController = 0x01
	// NvmeIdentifyVWCOffset is the byte of Identify Controller whose bit 0
	// says a volatile write cache is present.
	NvmeIdentifyVWCOffset = 525
	NvmeIdentifySize      = 4096
)

// NvmeCommand is the part of a 64-byte NVMe submission queue entry a
// caller sets; SPDK fills in the command id and the data pointer.
type NvmeCommand struct {
	Opcode uint8
	NSID   uint32
	CDW10  uint32
	CDW11  uint32
}

// Encode is the entry as bdev_nvme_send_cmd takes it: 64 bytes, little
// endian, URL-safe base64.
func (c NvmeCommand) Encode() string {
	b := make([]byte, 64)
	b[0] = c.Opcode
	binary.LittleEndian.PutUint32(b[4:], c.NSID)
	binary.LittleEndian.PutUint32(b[40:], c.CDW10)
	binary.LittleEndian.PutUint32(b[44:], c.CDW11)
	return base64.URLEncoding.EncodeToString(b)
}

// DecodeNvmeCommand reads an entry Encode wrote.
func DecodeNvmeCommand(s string) (NvmeCommand, error) {
	b, err := decodeBase64(s)
	if err != nil || len(b) != 64 {
		return NvmeCommand{}, fmt.Errorf("not a base64 64-byte NVMe command")
	}
	return NvmeCommand{Opcode: b[0], NSID: binary.LittleEndian.Uint32(b[4:]),
		CDW10: binary.LittleEndian.Uint32(b[40:]), CDW11: binary.LittleEndian.Uint32(b[44:])}, nil
}

// BdevNvmeSendCmdRequest sends one raw command to the NVMe controller
// named (the name bdev_nvme_attach_controller was given). An admin
// command without data still names a direction: SPDK requires one.
type BdevNvmeSendCmdRequest struct {
	Name          string `json:"name"`
	CmdType       string `json:"cmd_type"`       // admin or io
	DataDirection string `json:"data_direction"` // c2h or h2c
	Cmdbuf        string `json:"cmdbuf"`
	DataLen       uint32 `json:"data_len,omitempty"`
}

// BdevNvmeSendCmdResponse is the command's completion queue entry and,
// for c2h, the data the controller returned, both URL-safe base64.
type BdevNvmeSendCmdResponse struct {
	Cpl  string `json:"cpl"`
	Data string `json:"data,omitempty"`
}

// NvmeCompletion is the part of a completion queue entry a caller reads.
type NvmeCompletion struct {
	// CDW0 is the command's result (a feature's value for Get Features).
	CDW0 uint32
	// StatusCodeType and StatusCode are zero on success.
	StatusCodeType, StatusCode uint8
}

// OK says the command succeeded.
func (c NvmeCompletion) OK() bool { return c.StatusCodeType == 0 && c.StatusCode == 0 }

func (c NvmeCompletion) String() string {
	return fmt.Sprintf("status code type %#x, status code %#x", c.StatusCodeType, c.StatusCode)
}

// EncodeNvmeCompletion is a 16-byte completion entry as SPDK returns it.
func EncodeNvmeCompletion(c NvmeCompletion) string {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint32(b[0:], c.CDW0)
	status := uint16(c.StatusCode)<<1 | uint16(c.StatusCodeType&0x7)<<9
	binary.LittleEndian.PutUint16(b[14:], status)
	return base64.URLEncoding.EncodeToString(b)
}

// DecodeNvmeCompletion reads the cpl of bdev_nvme_send_cmd.
func DecodeNvmeCompletion(s string) (NvmeCompletion, error) {
	b, err := decodeBase64(s)
	if err != nil || len(b) != 16 {
		return NvmeCompletion{}, fmt.Errorf("cpl %q is not a base64 16-byte NVMe completion", s)
	}
	status := binary.LittleEndian.Uint16(b[14:])
	return NvmeCompletion{CDW0: binary.LittleEndian.Uint32(b[0:]),
		StatusCode: uint8(status >> 1), StatusCodeType: uint8(status>>9) & 0x7}, nil
}

// DecodeNvmeData reads the data of bdev_nvme_send_cmd.
func DecodeNvmeData(s string) ([]byte, error) { return decodeBase64(s) }

// decodeBase64 reads SPDK's URL-safe base64, padded or not.
func decodeBase64(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}
