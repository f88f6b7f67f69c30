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

package launch

import (
	"os"
	"path/filepath"
	"testing"
)

// Whatever the hand-off file holds, the agent takes from it only a PCI
// address and a core mask of the shapes the SPDK container writes.
func FuzzReadHandoff(f *testing.F) {
	f.Add([]byte(`{"pciAddress":"0000:5e:00.0","coreMask":"0x3","args":["-m","0x3"]}`))
	f.Add([]byte(`{"coreMask":"0x1"}`))
	f.Add([]byte(`{"pciAddress":"0000:5e:00.0,trtype=tcp","coreMask":"0x3"}`))
	f.Add([]byte(`{"coreMask":"3 --rpc-socket /tmp/x"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, HandoffFile), b, 0o600); err != nil {
			t.Fatal(err)
		}
		h, err := ReadHandoff(dir)
		if err != nil {
			return
		}
		if h.PCIAddress != "" && !pciAddressPattern.MatchString(h.PCIAddress) || !coreMaskPattern.MatchString(h.CoreMask) {
			t.Fatalf("took %+v", h)
		}
	})
}

// The device plugin's variable gives one PCI address or a refusal.
func FuzzPCIAddressFromEnv(f *testing.F) {
	f.Add("0000:5e:00.0")
	f.Add("0000:5e:00.0,0000:5f:00.0")
	f.Add(" 0000:5e:00.0 ")
	f.Add("0000:5e:00.0 trtype=tcp")
	f.Fuzz(func(t *testing.T, value string) {
		addr, err := PCIAddressFromEnv("flint.io/nvme", func(string) string { return value })
		if err == nil && !pciAddressPattern.MatchString(addr) {
			t.Fatalf("took %q from %q", addr, value)
		}
	})
}
