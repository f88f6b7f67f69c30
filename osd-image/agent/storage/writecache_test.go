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

package storage

import (
	"context"
	"testing"

	"github.com/flint-io/flint/internal/spdk/spdktest"
)

// A controller's volatile write cache is off once the OSD bootstrapped,
// and off again after SPDK restarted (attaching resets the controller,
// which turns the cache back on), unless power-loss protection is
// declared.
func TestBootstrapTurnsTheWriteCacheOff(t *testing.T) {
	ctx := context.Background()
	const cached, plain = "0000:3b:00.0", "0000:5e:00.0"
	for _, c := range []struct {
		name      string
		address   string
		protected bool
		want      WriteCache
		wantOn    bool
	}{
		{"cache turned off", cached, false, WriteCacheDisabled, false},
		{"power-loss protection leaves it on", cached, true, WriteCacheEnabled, true},
		{"no cache", plain, false, WriteCacheAbsent, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t)
			r.fabric.AddPCIeDevice(cached, 4*gib, "S4EVNF0M123456", "Samsung SSD 980 PRO", spdktest.WithVolatileWriteCache())
			r.fabric.AddPCIeDevice(plain, 4*gib, "PHLN0123456", "INTEL SSDPE2KX040T8")
			o := New(Config{UID: osdUID, Device: Device{Driver: DriverPCIe, PCIAddress: c.address, PowerLossProtected: c.protected},
				Listener: Listener{Transport: "tcp", Address: "127.0.0.1", Port: 4420}}, r.spdk)
			for _, when := range []string{"first start", "after SPDK restarted"} {
				if when != "first start" {
					if err := r.target.Restart(); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := o.Bootstrap(ctx); err != nil {
					t.Fatalf("%s: %v", when, err)
				}
				if got := o.WriteCache(); got != c.want {
					t.Errorf("%s: write cache %s, want %s", when, got, c.want)
				}
				if on := r.fabric.WriteCacheEnabled(c.address); on != c.wantOn {
					t.Errorf("%s: the device's cache is on=%t, want %t", when, on, c.wantOn)
				}
			}
		})
	}
	t.Run("aio", func(t *testing.T) {
		r := newRig(t)
		o := r.osd(osdUID, r.file("dev", gib), Tuning{})
		if _, err := o.Bootstrap(ctx); err != nil {
			t.Fatal(err)
		}
		if got := o.WriteCache(); got != WriteCacheUnknown {
			t.Errorf("write cache %s for an aio device, want Unknown: the kernel owns its cache", got)
		}
	})
}
