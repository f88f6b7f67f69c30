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

package agentv1

import "testing"

func TestExportValidate(t *testing.T) {
	const nqn = "nqn.2026-01.io.flint:volume:0c7e1d2a-5b3f-4e6d-9a8c-1b2c3d4e5f60"
	for _, tt := range []struct {
		name string
		e    *Export
		ok   bool
	}{
		{"an OSD's endpoint", &Export{Transport: "tcp", Address: "10.0.0.5", Port: 4420}, true},
		{"a volume's export over rdma, IPv6", &Export{Nqn: nqn, Transport: "rdma", Address: "fd00::5", Port: 4420}, true},
		{"none", nil, false},
		{"options injected in the address", &Export{Transport: "tcp", Address: "10.0.0.5,hostnqn=nqn.evil", Port: 4420}, false},
		{"options injected in the NQN", &Export{Nqn: nqn + ",traddr=10.9.9.9", Transport: "tcp", Address: "10.0.0.5", Port: 4420}, false},
		{"another transport", &Export{Transport: "fc", Address: "10.0.0.5", Port: 4420}, false},
		{"a port beyond 65535", &Export{Transport: "tcp", Address: "10.0.0.5", Port: 70000}, false},
		{"no port", &Export{Transport: "tcp", Address: "10.0.0.5"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.e.Validate(); (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}
