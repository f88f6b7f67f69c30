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

package nvmeof

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// validNQN is what the Volume API accepts in publishedHosts.
var validNQN = regexp.MustCompile(`^nqn\.[0-9]{4}-[0-9]{2}\.[a-z0-9.-]+(:.+)?$`)

// ValidNQN says whether s is an NQN Flint can put in an allow-list.
func ValidNQN(s string) bool { return len(s) <= 223 && validNQN.MatchString(s) }

// HostNQN reads the node's host NQN from path (/etc/nvme/hostnqn, shared
// with nvme-cli) or, when there is none, creates a UUID-based one and
// persists it there so the node keeps its identity across restarts.
func HostNQN(path string) (string, error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		nqn := strings.TrimSpace(string(b))
		if !ValidNQN(nqn) {
			return "", fmt.Errorf("%s holds %q, which is not an NVMe host NQN (nqn.yyyy-mm.reverse-domain:...): fix or remove the file", path, nqn)
		}
		return nqn, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("read the host NQN: %w", err)
	}
	u := make([]byte, 16)
	if _, err := rand.Read(u); err != nil {
		return "", err
	}
	nqn := uuidNQNPrefix + formatUUID(u, 0x40) // version 4: random
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("persist the host NQN: %w", err)
	}
	// Written aside and linked into place: two plugins starting at once
	// agree on whichever NQN landed first.
	tmp := fmt.Sprintf("%s.%d", path, os.Getpid())
	defer func() { _ = os.Remove(tmp) }() // gone once renamed
	if err := os.WriteFile(tmp, []byte(nqn+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("persist the host NQN: %w", err)
	}
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("persist the host NQN: %w", err)
	}
	return HostNQN(path)
}

// uuidNQNPrefix starts a host NQN made from a UUID, as nvme-cli and
// HostNQN make them.
const uuidNQNPrefix = "nqn.2014-08.org.nvmexpress:uuid:"

// uuidForm is the form the kernel parses a host ID in.
var uuidForm = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// formatUUID formats the first 16 bytes of b as a UUID of the given
// version (its high nibble), RFC 4122 variant.
func formatUUID(b []byte, version byte) string {
	u := slices.Clone(b[:16])
	u[6] = u[6]&0x0f | version
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// HostID is the host identifier the node connects with, beside hostNQN:
// what path (/etc/nvme/hostid, nvme-cli's) holds, else the UUID of a
// UUID-based NQN (what nvme-cli derives then), else a UUID made from the
// NQN's hash. It is sent with every connect: since Linux 6.5 the kernel
// refuses a host NQN that comes with another host ID than before, and a
// connect without one takes the kernel's own default ID, which belongs
// to its default host NQN ("found same hostid but different hostnqn").
func HostID(hostNQN, path string) (string, error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		id := strings.TrimSpace(string(b))
		if !uuidForm.MatchString(id) {
			return "", fmt.Errorf("%s holds %q, which is not an NVMe host ID (a UUID): fix or remove the file", path, id)
		}
		return strings.ToLower(id), nil
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("read the host ID: %w", err)
	}
	if id, ok := strings.CutPrefix(hostNQN, uuidNQNPrefix); ok && uuidForm.MatchString(id) {
		return strings.ToLower(id), nil
	}
	sum := sha256.Sum256([]byte(hostNQN))
	return formatUUID(sum[:], 0x80), nil // version 8: made by this rule
}
