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
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// loopDevice backs a loop device with a file of t's; it needs root.
func loopDevice(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("loop devices need root")
	}
	file := filepath.Join(t.TempDir(), "disk")
	if err := os.WriteFile(file, make([]byte, 8<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", file).CombinedOutput()
	if err != nil {
		t.Skipf("no loop device: losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "--detach", dev).Run() })
	return dev
}

// The first OSD claims its block device; a second one, by the same path
// or another, is refused with DeviceInUse until the first lets go. A file
// is not claimed.
func TestClaimDevice(t *testing.T) {
	dev := loopDevice(t)
	fd, f, err := ClaimDevice(dev)
	if err != nil || f != nil || fd < 0 {
		t.Fatalf("first claim of %s: fd %d, finding %v, %v", dev, fd, f, err)
	}
	if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC != 0 {
		t.Errorf("the claim's descriptor closes on exec (flags %#x, %v): SPDK would not hold it", flags, err)
	}
	other := filepath.Join(t.TempDir(), "by-id")
	if err := os.Symlink(dev, other); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dev, other} {
		_, f, err := ClaimDevice(path)
		if err != nil || f == nil || f.Reason != agentv1.PreflightDeviceInUse || !f.Fatal {
			t.Errorf("a second claim by %s: finding %+v, %v; want a fatal %s", path, f, err, agentv1.PreflightDeviceInUse)
		}
	}
	if err := unix.Close(fd); err != nil {
		t.Fatal(err)
	}
	fd, f, err = ClaimDevice(other)
	if err != nil || f != nil {
		t.Fatalf("a claim after the first let go: finding %v, %v", f, err)
	}
	_ = unix.Close(fd)

	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if fd, f, err := ClaimDevice(file); fd != -1 || f != nil || err != nil {
		t.Errorf("a file: fd %d, finding %v, %v; want no claim", fd, f, err)
	}
}
