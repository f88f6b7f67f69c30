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
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flint-io/flint/internal/fabric"
)

const (
	volumeNQN = "nqn.2026-01.io.flint:volume:pvc-1"
	hostNQN   = "nqn.2014-08.org.nvmexpress:uuid:1f3c5e7a-9b2d-4f6e-8a1c-3e5d7f9b1a2c"
	secret    = "DHHC-1:00:gAv0CYxM4+bm0TFi+17GxxyI9W5A/UvRd5UV5UHMTuLwT6OZ:"
)

// Nothing outside the grammar of a connect option reaches the kernel: a
// value from a Volume's status with a ',' would add options of its own.
func TestConnectRefusesWhatIsNotAConnectOption(t *testing.T) {
	good := Path{Transport: "tcp", Address: "10.0.0.5", Port: 4420}
	tests := []struct {
		name    string
		nqn     string
		host    string
		path    Path
		secrets Secrets
	}{
		{"injected options in the NQN", volumeNQN + ",hostnqn=nqn.evil,traddr=10.9.9.9", hostNQN, good, Secrets{}},
		{"injected options in the address", volumeNQN, hostNQN, Path{Transport: "tcp", Address: "10.0.0.5,hostnqn=nqn.evil", Port: 4420}, Secrets{}},
		{"injected options in the transport", volumeNQN, hostNQN, Path{Transport: "tcp,traddr=10.9.9.9", Address: "10.0.0.5", Port: 4420}, Secrets{}},
		{"a host name, not an address", volumeNQN, hostNQN, Path{Transport: "tcp", Address: "target.example", Port: 4420}, Secrets{}},
		{"port zero", volumeNQN, hostNQN, Path{Transport: "tcp", Address: "10.0.0.5"}, Secrets{}},
		{"port past 65535", volumeNQN, hostNQN, Path{Transport: "tcp", Address: "10.0.0.5", Port: 70000}, Secrets{}},
		{"unknown transport", volumeNQN, hostNQN, Path{Transport: "fc", Address: "10.0.0.5", Port: 4420}, Secrets{}},
		{"not an NQN", "pvc-1", hostNQN, good, Secrets{}},
		{"NQN too long", "nqn." + strings.Repeat("a", fabric.MaxNQNLength), hostNQN, good, Secrets{}},
		{"space in the NQN", volumeNQN + " x", hostNQN, good, Secrets{}},
		{"'=' in the host NQN", volumeNQN, hostNQN + "=x", good, Secrets{}},
		{"injected options in a secret", volumeNQN, hostNQN, good, Secrets{Host: secret + ",hostnqn=nqn.evil"}},
		{"a malformed secret", volumeNQN, hostNQN, good, Secrets{Host: "DHHC-1:00:abc:"}},
		{"a controller secret alone", volumeNQN, hostNQN, good, Secrets{Ctrl: secret}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dev := t.TempDir()
			fabrics := filepath.Join(dev, "nvme-fabrics")
			if err := os.WriteFile(fabrics, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			h := &Host{Sysfs: multipathSysfs(t, "Y"), Dev: dev, HostNQN: tc.host}
			err := h.Connect(context.Background(), tc.nqn, tc.path, tc.secrets)
			if err == nil || !strings.Contains(err.Error(), "refusing to connect") {
				t.Fatalf("Connect = %v, want a refusal", err)
			}
			if b, _ := os.ReadFile(fabrics); len(b) != 0 {
				t.Fatalf("the kernel was sent %q", b)
			}
		})
	}
}

func TestConnectWritesTheConnectString(t *testing.T) {
	dev := t.TempDir()
	fabrics := filepath.Join(dev, "nvme-fabrics")
	if err := os.WriteFile(fabrics, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h := &Host{Sysfs: multipathSysfs(t, "Y"), Dev: dev, HostNQN: hostNQN}
	for _, p := range []Path{{Transport: "tcp", Address: "10.0.0.5", Port: 4420}, {Transport: "rdma", Address: "fd00::5", Port: 4421}} {
		if err := h.Connect(context.Background(), volumeNQN, p, Secrets{}); err != nil {
			t.Fatalf("Connect over %s: %v", p, err)
		}
	}
	b, err := os.ReadFile(fabrics)
	if err != nil {
		t.Fatal(err)
	}
	want := "nqn=" + volumeNQN + ",transport=rdma,traddr=fd00::5,trsvcid=4421,hostnqn=" + hostNQN
	if string(b) != want {
		t.Fatalf("the kernel was sent %q, want %q", b, want)
	}

	ctrl, err := fabric.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Connect(context.Background(), volumeNQN, Path{Transport: "tcp", Address: "10.0.0.5", Port: 4420}, Secrets{Host: secret, Ctrl: ctrl}); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(fabrics)
	if want := "nqn=" + volumeNQN + ",transport=tcp,traddr=10.0.0.5,trsvcid=4420,hostnqn=" + hostNQN + ",dhchap_secret=" + secret + ",dhchap_ctrl_secret=" + ctrl; string(b) != want {
		t.Fatalf("the kernel was sent %q, want %q", b, want)
	}
}

// The secrets a path added later connects with are the kernel's: what
// the first path was connected with, or what SetSecrets gave it.
func TestSecretsAreTheKernelsControllers(t *testing.T) {
	sysfs := t.TempDir()
	h := &Host{Sysfs: sysfs, HostNQN: hostNQN}
	ctrl := filepath.Join(sysfs, "class", "nvme", "nvme3")
	other := filepath.Join(sysfs, "class", "nvme", "nvme1")
	for dir, attrs := range map[string]map[string]string{
		ctrl:  {"subsysnqn": volumeNQN, "state": "live", "transport": "tcp", "address": "traddr=10.0.0.5,trsvcid=4420", "dhchap_secret": secret, "dhchap_ctrl_secret": "none"},
		other: {"subsysnqn": "nqn.2026-01.io.flint:volume:other", "dhchap_secret": "none", "dhchap_ctrl_secret": "none"},
	} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, v := range attrs {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	if s, err := h.SecretsOf(volumeNQN); err != nil || s != (Secrets{Host: secret}) {
		t.Fatalf("SecretsOf = %+v, %v; want the host secret and no controller secret", s, err)
	}
	if s, err := h.SecretsOf("nqn.2026-01.io.flint:volume:other"); err != nil || s != (Secrets{}) {
		t.Fatalf("SecretsOf a subsystem without secrets = %+v, %v; want none", s, err)
	}
	rotated, err := fabric.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.SetSecrets(volumeNQN, Secrets{Host: rotated}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ctrl, "dhchap_secret")); string(b) != rotated {
		t.Fatalf("the controller's secret is %q after SetSecrets, want %q", b, rotated)
	}
	if err := h.SetSecrets(volumeNQN, Secrets{Host: rotated + ",x"}); err == nil {
		t.Fatal("SetSecrets took a secret outside the grammar")
	}
}

// The host ID goes with the host NQN on every connect: nvme-cli's file
// when there is one, else the NQN's own UUID, else one made from the NQN.
func TestHostIDFollowsNvmeCLI(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "hostid")
	if id, err := HostID(hostNQN, file); err != nil || id != "1f3c5e7a-9b2d-4f6e-8a1c-3e5d7f9b1a2c" {
		t.Fatalf("HostID of a UUID-based NQN without a file = %q, %v; want the NQN's UUID", id, err)
	}
	other := "nqn.2026-01.io.example:worker-7"
	a, err := HostID(other, file)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := HostID(other, file); a != b || !uuidForm.MatchString(a) {
		t.Fatalf("HostID of %s = %q, then %q; want one UUID", other, a, b)
	}
	if err := os.WriteFile(file, []byte("8E1B2C3D-4F5A-4B6C-8D7E-9F0A1B2C3D4E\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if id, err := HostID(hostNQN, file); err != nil || id != "8e1b2c3d-4f5a-4b6c-8d7e-9f0a1b2c3d4e" {
		t.Fatalf("HostID with nvme-cli's file = %q, %v; want the file's", id, err)
	}
	if err := os.WriteFile(file, []byte("host-7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := HostID(hostNQN, file); err == nil {
		t.Fatal("HostID took a file that holds no UUID")
	}

	dev := t.TempDir()
	fabrics := filepath.Join(dev, "nvme-fabrics")
	if err := os.WriteFile(fabrics, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h := &Host{Sysfs: multipathSysfs(t, "Y"), Dev: dev, HostNQN: hostNQN, HostID: "1f3c5e7a-9b2d-4f6e-8a1c-3e5d7f9b1a2c"}
	if err := h.Connect(context.Background(), volumeNQN, Path{Transport: "tcp", Address: "10.0.0.5", Port: 4420}, Secrets{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(fabrics); !strings.HasSuffix(string(b), ",hostnqn="+hostNQN+",hostid=1f3c5e7a-9b2d-4f6e-8a1c-3e5d7f9b1a2c") {
		t.Fatalf("the kernel was sent %q, want the host ID after the host NQN", b)
	}
}

// multipathSysfs is a sysfs whose nvme_core has native multipath set to
// on ("Y", "N").
func multipathSysfs(t *testing.T, on string) string {
	t.Helper()
	sysfs := t.TempDir()
	params := filepath.Join(sysfs, "module", "nvme_core", "parameters")
	if err := os.MkdirAll(params, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(params, "multipath"), []byte(on+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return sysfs
}

// A kernel without native NVMe multipath, or with it off, is refused
// before anything reaches it, saying how to turn it on.
func TestConnectNeedsNativeMultipath(t *testing.T) {
	for _, tc := range []struct{ name, sysfs, want string }{
		{"off", multipathSysfs(t, "N"), "boot with nvme_core.multipath=Y"},
		{"built without", t.TempDir(), "CONFIG_NVME_MULTIPATH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := t.TempDir()
			fabrics := filepath.Join(dev, "nvme-fabrics")
			if err := os.WriteFile(fabrics, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			h := &Host{Sysfs: tc.sysfs, Dev: dev, HostNQN: hostNQN}
			err := h.Connect(context.Background(), volumeNQN, Path{Transport: "tcp", Address: "10.0.0.5", Port: 4420}, Secrets{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Connect = %v, want a refusal saying %q", err, tc.want)
			}
			if b, _ := os.ReadFile(fabrics); len(b) != 0 {
				t.Fatalf("the kernel was sent %q", b)
			}
		})
	}
}
