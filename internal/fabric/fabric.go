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

// Package fabric is the grammar of NVMe-oF endpoints: what an NQN, a
// transport, an address and a port may be wherever Flint takes them from
// another process (an agent's report, a Volume's status, a publish
// context) before it records them or builds a connect string from them.
package fabric

import (
	"fmt"
	"net"
	"strings"
)

// MaxNQNLength is the longest NQN the NVMe specification allows (223
// bytes).
const MaxNQNLength = 223

// ValidateNQN checks nqn against the NVMe NQN grammar as far as a connect
// string needs: "nqn." then printable ASCII without ',', '=', space or
// control characters, at most MaxNQNLength bytes.
func ValidateNQN(nqn string) error {
	if !strings.HasPrefix(nqn, "nqn.") || len(nqn) > MaxNQNLength {
		return fmt.Errorf("NQN %q must start with \"nqn.\" and be at most %d bytes", nqn, MaxNQNLength)
	}
	for _, r := range nqn {
		if r <= ' ' || r > '~' || r == ',' || r == '=' {
			return fmt.Errorf("NQN %q holds %q, which no NQN may", nqn, r)
		}
	}
	return nil
}

// ValidateEndpoint checks a listener: transport tcp or rdma, an IP
// address, a port in 1-65535.
func ValidateEndpoint(transport, address string, port int64) error {
	if transport != "tcp" && transport != "rdma" {
		return fmt.Errorf("transport %q is neither tcp nor rdma", transport)
	}
	if net.ParseIP(address) == nil {
		return fmt.Errorf("address %q is not an IP address", address)
	}
	if port < 1 || port > 65535 {
		return fmt.Errorf("port %d is outside 1-65535", port)
	}
	return nil
}
