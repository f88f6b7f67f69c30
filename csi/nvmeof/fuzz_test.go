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
	"fmt"
	"strings"
	"testing"
)

// A controller's sysfs address reads as the path it was connected with, and
// a port out of range never reads as another, valid one.
func FuzzPathOf(f *testing.F) {
	f.Add("tcp", "traddr=10.0.0.5,trsvcid=4420,src_addr=10.0.0.9")
	f.Add("rdma", "traddr=fd00::5,trsvcid=4421")
	f.Add("tcp", "traddr=10.0.0.5,trsvcid=4294971716")
	f.Add("tcp", "trsvcid=-1,traddr=")
	f.Fuzz(func(t *testing.T, transport, address string) {
		p := pathOf(transport, address)
		if p.Port < 0 || p.Port > 65535 {
			t.Fatalf("port %d from %q", p.Port, address)
		}
		if p.Port != 0 && !strings.Contains(address, fmt.Sprintf("trsvcid=%d", p.Port)) && !strings.Contains(address, "trsvcid=0") {
			t.Fatalf("port %d is not what %q says", p.Port, address)
		}
	})
}
