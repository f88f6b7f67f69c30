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

package fabric

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
)

// secretBytes is the length of the secrets NewSecret makes: 32 bytes, the
// size of a SHA-256 HMAC key.
const secretBytes = 32

// NewSecret makes a DH-HMAC-CHAP secret in the representation NVMe
// defines and both SPDK and the Linux host read: "DHHC-1:00:" then the
// base64 of the key followed by its CRC-32, then ":". Transform 00 uses
// the key as it is, so the same secret serves any host NQN.
func NewSecret() (string, error) {
	key := make([]byte, secretBytes, secretBytes+4)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("make a DH-HMAC-CHAP secret: %w", err)
	}
	key = binary.LittleEndian.AppendUint32(key, crc32.ChecksumIEEE(key))
	return "DHHC-1:00:" + base64.StdEncoding.EncodeToString(key) + ":", nil
}

// ValidateSecret checks s as SPDK and the Linux host do before they use
// it: the DHHC-1 prefix, a two-digit transform, a base64 key of 32, 48
// or 64 bytes whose CRC-32 follows it, and the closing ':'. Nothing else
// is allowed in it: it goes into a connect string.
func ValidateSecret(s string) error {
	rest, found := strings.CutPrefix(s, "DHHC-1:")
	if !found || len(rest) < 4 || rest[2] != ':' || !strings.HasSuffix(rest, ":") {
		return fmt.Errorf("a DH-HMAC-CHAP secret has the form DHHC-1:<transform>:<base64 key>: (nvme gen-dhchap-key makes one)")
	}
	switch rest[:2] {
	case "00", "01", "02", "03":
	default:
		return fmt.Errorf("a DH-HMAC-CHAP secret's transform is 00 to 03, not %q", rest[:2])
	}
	raw, err := base64.StdEncoding.DecodeString(rest[3 : len(rest)-1])
	if err != nil {
		return fmt.Errorf("a DH-HMAC-CHAP secret's key is not base64: %w", err)
	}
	n := len(raw) - 4
	if n != 32 && n != 48 && n != 64 {
		return fmt.Errorf("a DH-HMAC-CHAP secret's key has %d bytes, not 32, 48 or 64", max(n, 0))
	}
	if crc32.ChecksumIEEE(raw[:n]) != binary.LittleEndian.Uint32(raw[n:]) {
		return fmt.Errorf("a DH-HMAC-CHAP secret's checksum does not match its key")
	}
	return nil
}
