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

package guest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// nvmetRoot is the kernel NVMe-oF target's configfs.
const nvmetRoot = "/sys/kernel/config/nvmet"

// subsystem is a kernel target subsystem with one namespace on a loop
// device over a sparse file, allowing one host.
type subsystem struct {
	t       *testing.T
	nqn     string
	image   string
	loop    string
	ports   []int
	allowed string
	id      identity
}

// identity is what the host compares to tell one namespace from another:
// a target re-created with another one is another namespace to it.
type identity struct {
	uuid, nguid, serial string
}

func write(t *testing.T, path, value string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(value), 0); err != nil {
		t.Fatalf("write %s to %s: %v", value, path, err)
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v: %s", name, args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// newIdentity is a random namespace identity.
func newIdentity(t *testing.T) identity {
	b := randomBytes(t, 16)
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return identity{
		uuid:   fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]),
		nguid:  fmt.Sprintf("%x-%x-%x-%x-%x", b[8:12], b[12:14], b[14:16], b[0:2], b[2:8]),
		serial: fmt.Sprintf("%x", b[10:16]),
	}
}

// newSubsystem creates subsystem nqn of sizeMiB allowing host, with a
// random identity; removed at the test's end.
func newSubsystem(t *testing.T, nqn, host string, sizeMiB int64) *subsystem {
	s := &subsystem{t: t, nqn: nqn, allowed: host, image: filepath.Join("/tmp", strings.ReplaceAll(nqn, ":", "_")+".img"), id: newIdentity(t)}
	f, err := os.Create(s.image)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(sizeMiB << 20); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	s.loop = run(t, "losetup", "--find", "--show", s.image)
	s.configure(1)
	t.Cleanup(s.remove)
	return s
}

// configure creates the subsystem in configfs with s.id, numbering its
// controllers from cntlidMin.
func (s *subsystem) configure(cntlidMin int) {
	t := s.t
	dir := filepath.Join(nvmetRoot, "subsystems", s.nqn)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "attr_allow_any_host"), "0")
	write(t, filepath.Join(dir, "attr_serial"), s.id.serial)
	write(t, filepath.Join(dir, "attr_cntlid_min"), fmt.Sprint(cntlidMin))
	hostDir := filepath.Join(nvmetRoot, "hosts", s.allowed)
	if err := os.Mkdir(hostDir, 0o755); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	if err := os.Symlink(hostDir, filepath.Join(dir, "allowed_hosts", s.allowed)); err != nil {
		t.Fatal(err)
	}
	ns := filepath.Join(dir, "namespaces", "1")
	if err := os.Mkdir(ns, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(ns, "device_path"), s.loop)
	write(t, filepath.Join(ns, "device_uuid"), s.id.uuid)
	write(t, filepath.Join(ns, "device_nguid"), s.id.nguid)
	write(t, filepath.Join(ns, "enable"), "1")
}

// port creates (once) kernel target port id listening on transport
// address:svcid.
func port(t *testing.T, id int, transport, address string, svcid int) {
	dir := filepath.Join(nvmetRoot, "ports", fmt.Sprint(id))
	if _, err := os.Stat(dir); err == nil {
		return
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "addr_trtype"), transport)
	write(t, filepath.Join(dir, "addr_adrfam"), "ipv4")
	write(t, filepath.Join(dir, "addr_traddr"), address)
	write(t, filepath.Join(dir, "addr_trsvcid"), fmt.Sprint(svcid))
}

// expose makes the subsystem reachable on port id.
func (s *subsystem) expose(id int) {
	link := filepath.Join(nvmetRoot, "ports", fmt.Sprint(id), "subsystems", s.nqn)
	if err := os.Symlink(filepath.Join(nvmetRoot, "subsystems", s.nqn), link); err != nil {
		s.t.Fatal(err)
	}
	s.ports = append(s.ports, id)
}

// hide takes the subsystem off port id: its controllers there are torn
// down, as when a target goes away.
func (s *subsystem) hide(id int) {
	if err := os.Remove(filepath.Join(nvmetRoot, "ports", fmt.Sprint(id), "subsystems", s.nqn)); err != nil {
		s.t.Fatal(err)
	}
	for i, p := range s.ports {
		if p == id {
			s.ports = append(s.ports[:i], s.ports[i+1:]...)
			break
		}
	}
}

// renumber makes controllers created from now on take ids from lowest: a
// moved target must not hand the host a controller id its dead path still
// holds (the host rejects a duplicate cntlid within a subsystem).
func (s *subsystem) renumber(lowest int) {
	write(s.t, filepath.Join(nvmetRoot, "subsystems", s.nqn, "attr_cntlid_min"), fmt.Sprint(lowest))
}

// recreate deletes the subsystem, as a lost target's is gone, and creates
// it again over the same data with identity id and controller ids from
// cntlidMin, as a new target built for the volume is; it listens nowhere
// until exposed.
func (s *subsystem) recreate(id identity, cntlidMin int) {
	s.unconfigure()
	s.id = id
	s.configure(cntlidMin)
}

// grow makes the namespace sizeMiB and tells the host.
func (s *subsystem) grow(sizeMiB int64) {
	if err := os.Truncate(s.image, sizeMiB<<20); err != nil {
		s.t.Fatal(err)
	}
	run(s.t, "losetup", "-c", s.loop)
	write(s.t, filepath.Join(nvmetRoot, "subsystems", s.nqn, "namespaces", "1", "revalidate_size"), "1")
}

// unconfigure takes the subsystem off its ports and out of configfs,
// keeping its data.
func (s *subsystem) unconfigure() {
	for _, id := range append([]int(nil), s.ports...) {
		s.hide(id)
	}
	dir := filepath.Join(nvmetRoot, "subsystems", s.nqn)
	_ = os.WriteFile(filepath.Join(dir, "namespaces", "1", "enable"), []byte("0"), 0)
	_ = os.Remove(filepath.Join(dir, "namespaces", "1"))
	_ = os.Remove(filepath.Join(dir, "allowed_hosts", s.allowed))
	_ = os.Remove(dir)
}

func (s *subsystem) remove() {
	s.unconfigure()
	_ = exec.Command("losetup", "-d", s.loop).Run()
	_ = os.Remove(s.image)
}
