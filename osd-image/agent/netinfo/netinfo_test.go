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
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What Multus wrote for a pod with an SR-IOV RDMA attachment.
const status = `[{"name":"cbr0","interface":"eth0","ips":["10.244.1.5"],"mac":"0a:58:0a:f4:01:05","default":true,"dns":{}},
{"name":"flint-system/storage-rdma","interface":"net1","ips":["fd00::5","192.168.100.5"],"mac":"ae:12:9f:00:00:01","dns":{},
"device-info":{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:5e:00.2","rdma-device":"mlx5_3"}}},
{"name":"flint-system/v6-only","interface":"net2","ips":["fd01::5"],"dns":{}}]`

func TestListenAddress(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "network-status")
	if err := os.WriteFile(file, []byte(status), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, attachment, file, podIP string
		want, wantErr                 string
	}{
		{"attachment with namespace", "flint-system/storage-rdma", file, "10.244.1.5", "192.168.100.5", ""},
		{"attachment without namespace", "storage-rdma", file, "", "192.168.100.5", ""},
		{"pod IP for tcp", "", file, "10.244.1.5", "10.244.1.5", ""},
		{"no pod IP", "", file, "", "", "set POD_IP"},
		{"another namespace", "other/storage-rdma", file, "", "", "not attached to network other/storage-rdma"},
		{"no IPv4", "flint-system/v6-only", file, "", "", "no IPv4 address"},
		{"not yet attached", "storage-rdma", empty, "", "", "has not attached"},
		{"no file", "storage-rdma", filepath.Join(dir, "missing"), "", "", "read Multus' network status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ListenAddress(tt.attachment, tt.file, tt.podIP)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ListenAddress = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
