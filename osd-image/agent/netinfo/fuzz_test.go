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

package netinfo

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// Whatever Multus' network status holds, the agent listens on a dotted-quad
// IPv4 address or says why it cannot.
func FuzzListenAddress(f *testing.F) {
	f.Add("flint-system/storage", []byte(`[{"name":"k8s-pod-network","ips":["10.244.1.5"],"default":true},{"name":"flint-system/storage","interface":"net1","ips":["fd00::5","192.168.50.5"]}]`), "10.244.1.5")
	f.Add("storage", []byte(`[{"name":"flint-system/storage","ips":["::ffff:192.168.50.5"]}]`), "")
	f.Add("", []byte(``), "::ffff:10.0.0.1")
	f.Add("storage", []byte(`[{"name":null,"ips":[1]}]`), "")
	f.Fuzz(func(t *testing.T, attachment string, status []byte, podIP string) {
		file := filepath.Join(t.TempDir(), "network-status")
		if err := os.WriteFile(file, status, 0o600); err != nil {
			t.Fatal(err)
		}
		addr, err := ListenAddress(attachment, file, podIP)
		if err != nil {
			return
		}
		if ip := net.ParseIP(addr).To4(); ip == nil || ip.String() != addr {
			t.Fatalf("listen address %q is not a dotted-quad IPv4 address", addr)
		}
	})
}
