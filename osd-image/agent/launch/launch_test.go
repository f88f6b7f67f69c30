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
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

func TestArgs(t *testing.T) {
	tests := []struct {
		name    string
		o       Options
		want    string
		wantErr string
	}{
		{"hugepages and an NVMe device", Options{Socket: "/run/spdk/spdk.sock", CPUs: []int{2, 3}, HugePagesBytes: 2 << 30, PCIAddress: "0000:3b:00.0"},
			"-m 0xc -r /run/spdk/spdk.sock -s 2048 --pci-allowed 0000:3b:00.0", ""},
		{"no hugepages, no PCI, interrupt mode", Options{Socket: "s", CPUs: []int{0}, MemoryMiB: 1024, InterruptMode: true},
			"-m 0x1 -r s --no-huge -s 1024 --no-pci --interrupt-mode", ""},
		{"hugepages win over memory", Options{Socket: "s", CPUs: []int{0}, HugePagesBytes: 1 << 30, MemoryMiB: 512},
			"-m 0x1 -r s -s 1024 --no-pci", ""},
		{"DH groups limited", Options{Socket: "/run/spdk/spdk.sock", CPUs: []int{0}, MemoryMiB: 64, DHGroups: []string{"ffdhe2048"}},
			"-m 0x1 -r /run/spdk/spdk.sock --no-huge -s 64 --no-pci --json /run/spdk/" + StartupConfigFile, ""},
		{"no CPUs", Options{Socket: "s", MemoryMiB: 1}, "", "no CPUs"},
		{"no memory", Options{Socket: "s", CPUs: []int{0}}, "", "neither a hugepage limit nor memory"},
		{"hugepages below a MiB", Options{Socket: "s", CPUs: []int{0}, HugePagesBytes: 4096}, "", "less than 1 MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, err := Args(tt.o)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || strings.Join(args, " ") != tt.want {
				t.Fatalf("args = %q, %v; want %q", strings.Join(args, " "), err, tt.want)
			}
		})
	}
}

func TestStartupConfigLimitsTheDHGroups(t *testing.T) {
	path := filepath.Join(t.TempDir(), StartupConfigFile)
	if err := WriteStartupConfig(path, Options{DHGroups: DefaultDHGroups}); err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile(path)
	want := `{"subsystems":[{"subsystem":"nvmf","config":[{"method":"nvmf_set_config","params":{"dhchap_dhgroups":["null","ffdhe2048"]}}]}]}`
	if err != nil || string(config) != want {
		t.Fatalf("config = %s, %v; want %s", config, err, want)
	}
	if err := WriteStartupConfig(path, Options{DHGroups: []string{"ffdhe1024"}}); err == nil || !strings.Contains(err.Error(), `"ffdhe1024" is not one SPDK knows`) {
		t.Errorf("an unknown group: %v", err)
	}
}

func TestParseDHGroups(t *testing.T) {
	for list, want := range map[string][]string{
		"null,ffdhe2048":     {"null", "ffdhe2048"},
		" ffdhe4096 , null ": {"ffdhe4096", "null"},
		"":                   nil,
	} {
		if got, err := ParseDHGroups(list); err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseDHGroups(%q) = %q, %v; want %q", list, got, err, want)
		}
	}
	if _, err := ParseDHGroups("null,ffdhe1024"); err == nil || !strings.Contains(err.Error(), `"ffdhe1024" is not one SPDK knows`) {
		t.Errorf("an unknown group: %v", err)
	}
}

func TestCoreMask(t *testing.T) {
	for _, tt := range []struct {
		cpus []int
		want string
	}{
		{[]int{0}, "0x1"},
		{[]int{0, 1}, "0x3"},
		{[]int{4, 5, 6, 7}, "0xf0"},
		{[]int{0, 64, 127}, "0x80000000000000010000000000000001"},
	} {
		if got := CoreMask(tt.cpus); got != tt.want {
			t.Errorf("CoreMask(%v) = %s, want %s", tt.cpus, got, tt.want)
		}
	}
}

func TestCores(t *testing.T) {
	node := []int{0, 1, 2, 3}
	for _, tt := range []struct {
		name   string
		cpuset []int
		limit  int
		want   []int
	}{
		{"static CPU manager: the cpuset is the limit's cores", []int{2, 3}, 2, []int{2, 3}},
		{"policy none: the cpuset is the node, capped at the limit", node, 1, []int{0}},
		{"no limit", node, 0, node},
		{"a limit beyond the cpuset", []int{5}, 4, []int{5}},
	} {
		if got := Cores(tt.cpuset, tt.limit); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Cores(%v, %d) = %v, want %v", tt.name, tt.cpuset, tt.limit, got, tt.want)
		}
	}
}

// Affinity reads the calling thread's cpuset, which is what a container's
// cpuset restricts.
func TestAffinityFollowsTheCPUSet(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		t.Fatal(err)
	}
	all, err := Affinity()
	if err != nil || len(all) != orig.Count() {
		t.Fatalf("Affinity() = %v, %v; want %d CPUs", all, err, orig.Count())
	}
	var one unix.CPUSet
	one.Set(all[len(all)-1])
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.SchedSetaffinity(0, &orig) }()
	if got, err := Affinity(); err != nil || !slices.Equal(got, all[len(all)-1:]) {
		t.Fatalf("Affinity() under a one-CPU set = %v, %v; want %v", got, err, all[len(all)-1:])
	}
}

func TestPCIAddressFromEnv(t *testing.T) {
	env := map[string]string{
		"PCIDEVICE_FLINT_IO_NVME":       "0000:3b:00.0",
		"PCIDEVICE_INTEL_COM_NVME_POOL": "0000:3b:00.0,0000:5e:00.0",
	}
	getenv := func(k string) string { return env[k] }
	if a, err := PCIAddressFromEnv("flint.io/nvme", getenv); err != nil || a != "0000:3b:00.0" {
		t.Errorf("flint.io/nvme: %q, %v", a, err)
	}
	if _, err := PCIAddressFromEnv("intel.com/nvme-pool", getenv); err == nil || !strings.Contains(err.Error(), "exactly one") {
		t.Errorf("two devices: %v, want a refusal", err)
	}
	if _, err := PCIAddressFromEnv("example.com/ssd", getenv); err == nil || !strings.Contains(err.Error(), "PCIDEVICE_EXAMPLE_COM_SSD is not set") {
		t.Errorf("no device: %v, want a refusal naming the variable", err)
	}
}

// TestExec runs Exec in a child process, where it replaces the child with
// a stand-in for nvmf_tgt that records its command line.
func TestExec(t *testing.T) {
	if os.Getenv("FLINT_LAUNCH_CHILD") == "1" {
		err := Exec(Options{Binary: os.Getenv("FLINT_FAKE_SPDK"), Socket: os.Getenv("FLINT_SOCKET"), CPUs: []int{1}, MemoryMiB: 64, PCIAddress: "0000:3b:00.0", DHGroups: DefaultDHGroups},
			[]Finding{{Reason: agentv1.PreflightSharedCores, Message: "shared"}})
		t.Fatalf("Exec returned: %v", err)
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "nvmf_tgt")
	out := filepath.Join(dir, "argv")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"$0 $*\" > "+out+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "spdk.sock")
	if err := os.WriteFile(socket, nil, 0o600); err != nil { // a dead SPDK's socket
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestExec$")
	cmd.Env = append(os.Environ(), "FLINT_LAUNCH_CHILD=1", "FLINT_FAKE_SPDK="+fake, "FLINT_SOCKET="+socket)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, b)
	}
	argv, err := os.ReadFile(out)
	config := filepath.Join(dir, StartupConfigFile)
	want := fake + " -m 0x2 -r " + socket + " --no-huge -s 64 --pci-allowed 0000:3b:00.0 --json " + config + "\n"
	if err != nil || string(argv) != want {
		t.Fatalf("SPDK ran as %q, %v; want %q", argv, err, want)
	}
	if b, err := os.ReadFile(config); err != nil || !strings.Contains(string(b), `"dhchap_dhgroups":["null","ffdhe2048"]`) {
		t.Errorf("SPDK's startup configuration = %s, %v", b, err)
	}
	h, err := ReadHandoff(dir)
	if err != nil || h.PCIAddress != "0000:3b:00.0" || h.CoreMask != "0x2" || len(h.Warnings) != 1 || h.Warnings[0].Reason != agentv1.PreflightSharedCores {
		t.Errorf("hand-off = %+v, %v", h, err)
	}
	if _, err := os.Stat(socket); !os.IsNotExist(err) {
		t.Errorf("the stale socket is still there: %v", err)
	}
}
