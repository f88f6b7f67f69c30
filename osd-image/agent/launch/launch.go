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

// Package launch starts SPDK in the OSD pod's SPDK container: it turns what
// the container was given (its cpuset, its hugepage limit, the NVMe device
// the device plugin allocated) into nvmf_tgt's command line, records the
// device for the agent, and replaces itself with SPDK so that SPDK is the
// container's process and the kubelet restarts it when it dies.
package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/flint-io/flint/osd-image/agent/deviceplugin"
)

// Options is one SPDK start.
type Options struct {
	// Binary is the SPDK application: nvmf_tgt (spdk_tgt works too).
	Binary string
	// Socket is SPDK's JSON-RPC socket, on the volume shared with the agent.
	Socket string
	// CPUs are the cores SPDK's reactors poll (Cores): the container's
	// cpuset, so that no two reactors share a core.
	CPUs []int
	// HugePagesBytes is the container's hugepage limit; zero runs SPDK
	// with --no-huge out of MemoryMiB of ordinary memory.
	HugePagesBytes int64
	MemoryMiB      int64
	// InterruptMode makes reactors sleep when idle, for shared cores.
	InterruptMode bool
	// PCIAddress is the NVMe controller SPDK may probe; empty for aio,
	// uring and malloc devices, where SPDK touches no PCI device at all.
	PCIAddress string
	// DHGroups are the Diffie-Hellman groups SPDK's target lets DH-HMAC-CHAP
	// use, by SPDK's names; empty leaves SPDK's default, all of them.
	DHGroups []string
}

// DefaultDHGroups are the groups an OSD's target allows. SPDK takes the
// strongest group a host offers, and Linux and SPDK hosts offer all: left
// alone, every queue pays for ffdhe8192, about 0.2 s of the target's
// reactor on each connect and reconnect (docs/security.md).
var DefaultDHGroups = []string{"null", "ffdhe2048"}

// dhGroups are the groups SPDK v25.09 knows.
var dhGroups = []string{"null", "ffdhe2048", "ffdhe3072", "ffdhe4096", "ffdhe6144", "ffdhe8192"}

// ParseDHGroups reads a comma-separated list of DH groups by SPDK's names;
// an empty list leaves SPDK's default, all of them.
func ParseDHGroups(list string) ([]string, error) {
	var groups []string
	for g := range strings.SplitSeq(list, ",") {
		if g = strings.TrimSpace(g); g == "" {
			continue
		}
		if err := knownDHGroup(g); err != nil {
			return nil, err
		}
		groups = append(groups, g)
	}
	return groups, nil
}

func knownDHGroup(g string) error {
	if !slices.Contains(dhGroups, g) {
		return fmt.Errorf("DH group %q is not one SPDK knows: use %s", g, strings.Join(dhGroups, ", "))
	}
	return nil
}

// StartupConfigFile is SPDK's --json configuration's name next to its
// socket: what SPDK takes only before its subsystems start.
const StartupConfigFile = "spdk-startup.json"

// WriteStartupConfig writes SPDK's --json configuration for o to path,
// atomically; o must need one (DHGroups set).
func WriteStartupConfig(path string, o Options) error {
	config, err := startupConfig(o)
	if err != nil {
		return err
	}
	if err := writeAtomically(path, config); err != nil {
		return fmt.Errorf("write SPDK's startup configuration: %w", err)
	}
	return nil
}

// startupConfig is SPDK's --json configuration for o.
func startupConfig(o Options) ([]byte, error) {
	for _, g := range o.DHGroups {
		if err := knownDHGroup(g); err != nil {
			return nil, err
		}
	}
	type method struct {
		Method string `json:"method"`
		Params any    `json:"params"`
	}
	type subsystem struct {
		Subsystem string   `json:"subsystem"`
		Config    []method `json:"config"`
	}
	// nvmf_set_config is SPDK_RPC_STARTUP: refused once SPDK runs.
	nvmf := subsystem{Subsystem: "nvmf", Config: []method{{Method: "nvmf_set_config", Params: map[string][]string{"dhchap_dhgroups": o.DHGroups}}}}
	return json.Marshal(map[string][]subsystem{"subsystems": {nvmf}})
}

// Args is SPDK's command line for o, without the binary.
func Args(o Options) ([]string, error) {
	if len(o.CPUs) == 0 {
		return nil, errors.New("no CPUs to run SPDK on")
	}
	args := []string{"-m", CoreMask(o.CPUs), "-r", o.Socket}
	switch {
	case o.HugePagesBytes > 0:
		mib := o.HugePagesBytes >> 20
		if mib == 0 {
			return nil, fmt.Errorf("hugepage limit %d bytes is less than 1 MiB; give the OSD at least 1Gi of hugepages", o.HugePagesBytes)
		}
		args = append(args, "-s", strconv.FormatInt(mib, 10))
	case o.MemoryMiB > 0:
		args = append(args, "--no-huge", "-s", strconv.FormatInt(o.MemoryMiB, 10))
	default:
		return nil, errors.New("neither a hugepage limit nor memory for --no-huge: the container needs hugepages or spec.memory")
	}
	if o.PCIAddress != "" {
		args = append(args, "--pci-allowed", o.PCIAddress)
	} else {
		args = append(args, "--no-pci")
	}
	if o.InterruptMode {
		args = append(args, "--interrupt-mode")
	}
	if len(o.DHGroups) > 0 {
		args = append(args, "--json", filepath.Join(filepath.Dir(o.Socket), StartupConfigFile))
	}
	return args, nil
}

// CoreMask is SPDK's hexadecimal core mask of cpus.
func CoreMask(cpus []int) string {
	mask := new(big.Int)
	for _, c := range cpus {
		mask.SetBit(mask, c, 1)
	}
	return "0x" + mask.Text(16)
}

// Affinity lists the CPUs this process may run on: under the kubelet's
// static CPU manager, the cores dedicated to the container.
func Affinity() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("read the CPU affinity: %w", err)
	}
	var cpus []int
	for c := range len(set) * 64 {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// Cores are the cores SPDK's reactors poll: the container's cpuset, at
// most limit of them (its CPU limit in whole cores; 0 for no limit).
// Under the kubelet's static CPU manager the cpuset is exactly the
// limit's dedicated cores. Under its default policy, none, it is every
// core of the node, and reactors busy-polling all of them would take the
// whole node for an OSD that asked for limit cores.
func Cores(cpuset []int, limit int) []int {
	if limit <= 0 || limit >= len(cpuset) {
		return cpuset
	}
	return cpuset[:limit]
}

// PCIAddressFromEnv reads the NVMe controller the device plugin allocated
// for resource (such as flint.io/nvme) from the PCIDEVICE_* variable it
// sets. An OSD owns exactly one device.
func PCIAddressFromEnv(resource string, getenv func(string) string) (string, error) {
	name := deviceplugin.EnvName(resource)
	v := strings.TrimSpace(getenv(name))
	switch addrs := strings.Split(v, ","); {
	case v == "":
		return "", fmt.Errorf("%s is not set: the container got no %s device; check that the pod requests it and the device plugin advertises it", name, resource)
	case len(addrs) != 1:
		return "", fmt.Errorf("%s lists %d devices (%s); an OSD owns exactly one: request 1 %s", name, len(addrs), v, resource)
	case !pciAddressPattern.MatchString(addrs[0]):
		return "", fmt.Errorf("%s is %q, not a PCI address (domain:bus:device.function, such as 0000:5e:00.0); check the device plugin's configuration", name, v)
	default:
		return addrs[0], nil
	}
}

// pciAddressPattern is a PCI address in full: domain:bus:device.function.
var pciAddressPattern = regexp.MustCompile(`^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[01][0-9a-fA-F]\.[0-7]$`)

// coreMaskPattern is a core mask as CoreMask writes it.
var coreMaskPattern = regexp.MustCompile(`^0x[0-9a-f]+$`)

// Handoff is what the SPDK container tells the agent about the SPDK it
// started: the agent cannot see the other container's devices or cpuset.
type Handoff struct {
	PCIAddress string   `json:"pciAddress,omitempty"`
	CoreMask   string   `json:"coreMask"`
	Args       []string `json:"args"`
	// Warnings are the preflight findings SPDK started despite.
	Warnings []Finding `json:"warnings,omitempty"`
}

// HandoffFile is the hand-off's name next to SPDK's socket.
const HandoffFile = "spdk-launch.json"

// WriteHandoff records h in dir, atomically.
func WriteHandoff(dir string, h Handoff) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if err := writeAtomically(filepath.Join(dir, HandoffFile), b); err != nil {
		return fmt.Errorf("write the SPDK hand-off: %w", err)
	}
	return nil
}

// writeAtomically replaces path with b through a hidden file beside it.
func writeAtomically(path string, b []byte) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path))
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadHandoff reads what the SPDK container recorded in dir.
func ReadHandoff(dir string) (Handoff, error) {
	var h Handoff
	b, err := os.ReadFile(filepath.Join(dir, HandoffFile))
	if err != nil {
		return h, fmt.Errorf("read the SPDK container's hand-off (has it started?): %w", err)
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return h, fmt.Errorf("parse %s: %w", HandoffFile, err)
	}
	// The agent hands the address to SPDK: take only what the SPDK
	// container could have written.
	if h.PCIAddress != "" && !pciAddressPattern.MatchString(h.PCIAddress) {
		return Handoff{}, fmt.Errorf("%s names device %q, not a PCI address; the SPDK container writes it at start: restart the pod", HandoffFile, h.PCIAddress)
	}
	if !coreMaskPattern.MatchString(h.CoreMask) {
		return Handoff{}, fmt.Errorf("%s gives core mask %q, not one SPDK takes; the SPDK container writes it at start: restart the pod", HandoffFile, h.CoreMask)
	}
	return h, nil
}

// Exec records the hand-off (with the preflight's warnings) and SPDK's
// startup configuration next to the socket, removes a stale socket left by a previous SPDK, and replaces
// this process with SPDK.
func Exec(o Options, warnings []Finding) error {
	args, err := Args(o)
	if err != nil {
		return err
	}
	dir := filepath.Dir(o.Socket)
	if len(o.DHGroups) > 0 {
		if err := WriteStartupConfig(filepath.Join(dir, StartupConfigFile), o); err != nil {
			return err
		}
	}
	if err := WriteHandoff(dir, Handoff{PCIAddress: o.PCIAddress, CoreMask: CoreMask(o.CPUs), Args: args, Warnings: warnings}); err != nil {
		return err
	}
	if err := os.Remove(o.Socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the stale socket %s: %w", o.Socket, err)
	}
	argv := append([]string{o.Binary}, args...)
	if err := syscall.Exec(o.Binary, argv, os.Environ()); err != nil {
		return fmt.Errorf("exec %s: %w", o.Binary, err)
	}
	return nil
}
