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
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/csi"
	"github.com/flint-io/flint/csi/nvmeof"
	"github.com/flint-io/flint/internal/fabric"
	spdkclient "github.com/flint-io/flint/internal/spdk/client"
	"github.com/flint-io/flint/internal/spdk/spdklab"
	"github.com/flint-io/flint/osd-image/agent/storage"
)

// hostsAuthenticate is NVMe in-band authentication (DH-HMAC-CHAP, both
// ways) between the guest kernel's host and the OSD's SPDK target, as a
// Volume with spec.hostAuthentication DHHMACCHAP has it: no key, or a
// wrong one, is refused; the node plugin connects with the node-stage
// secret; a rotation (the target's key file rewritten by EnsureTarget,
// then the node's controller given the new secrets by a republish) costs
// the I/O no error, and a reconnect after it proves the new keys. (A
// reconnect between the two steps is refused, and Linux 6.12 does not
// retry a rejected key: docs/security.md.) It runs over NVMe/TCP, a
// second listener of the OSD's SPDK: under TCG, soft-RoCE stalled a
// connect that followed a refused one past the kernel's admin timeout.
func hostsAuthenticate(ctx context.Context, t *testing.T, spdk *spdkclient.Client, bdf, keyDir string) {
	if _, err := os.Stat("/sys/module/nvme_auth"); err != nil {
		t.Fatalf("the guest kernel has no NVMe host authentication (nvme_auth): %v", err)
	}
	o := storage.New(storage.Config{UID: osdUID, Device: storage.Device{Driver: storage.DriverPCIe, PCIAddress: bdf},
		Listener: storage.Listener{Transport: "tcp", Address: address, Port: 4421}, KeyDir: keyDir}, spdk)
	_, err := o.Bootstrap(ctx)
	must(t, err, "bootstrap the OSD with a TCP listener")
	const key = "auth-vol"
	keys := newKeys(t)
	_, err = o.CreateReplica(ctx, key, 64<<20)
	must(t, err, "create the replica")
	spec := storage.TargetSpec{Volume: key, Epoch: 1, Members: []storage.MemberSpec{{OSD: osdUID, InSync: true}}, Hosts: []string{hostNQN}, HostKeys: keys}
	target, err := o.EnsureTarget(ctx, spec)
	must(t, err, "ensure the target")
	nqn := target.Export.NQN
	path := nvmeof.Path{Transport: target.Export.Transport, Address: target.Export.Address, Port: int32(target.Export.Port)}

	host := attacher.Host
	for _, refused := range []struct {
		what    string
		secrets nvmeof.Secrets
	}{
		{"no key", nvmeof.Secrets{}},
		{"a wrong key", nvmeof.Secrets{Host: newKeys(t).Secret}},
		{"the right key and a wrong one asked of the target", nvmeof.Secrets{Host: keys.Secret, Ctrl: newKeys(t).CtrlSecret}},
	} {
		err := host.Connect(ctx, nqn, path, refused.secrets)
		if err == nil {
			t.Fatalf("the target let in a host with %s", refused.what)
		}
		t.Logf("%s: refused: %v", refused.what, err)
		noControllers(t, nqn)
	}

	v := &volume{
		id: key, fsType: "ext4", staging: "/run/staging/" + key, target: "/run/pods/" + key + "/volume",
		publish: map[string]string{csi.PublishNQN: nqn, csi.PublishTransport: path.Transport, csi.PublishPaths: fmt.Sprintf("%s:%d", path.Address, path.Port)},
		context: map[string]string{csi.ContextHostAuthentication: string(flintv1.HostAuthenticationDHHMACCHAP)},
		secrets: map[string]string{flintv1.SecretKeyDHCHAP: keys.Secret, flintv1.SecretKeyDHCHAPCtrl: keys.CtrlSecret},
	}
	must(t, v.stage(ctx), "NodeStageVolume with the node-stage secret")
	must(t, v.publishAt(ctx), "NodePublishVolume")
	first := randomBytes(t, 1<<20)
	must(t, writeSynced(v.dataPath(), first), "write and fsync")
	// The kernel offers every DH group; the target takes the strongest
	// exec-spdk allows it, not SPDK's default ffdhe8192.
	auth, err := spdklab.QueuesAuthenticated(ctx, spdk, nqn, "ffdhe2048")
	must(t, err, "the host's queues' DH group")
	t.Log(auth)

	// The rotation reaches the target first (the Volume's Secret changed,
	// the operator drove the target): its connected host stays, its I/O
	// goes on.
	rotated := newKeys(t)
	spec.HostKeys = rotated
	_, err = o.EnsureTarget(ctx, spec)
	must(t, err, "ensure the target with rotated keys")
	second := randomBytes(t, 1<<20)
	must(t, writeSynced(v.dataPath()+".2", second), "write and fsync after the target's rotation")
	// The kubelet's next republish brings the rotated Secret: the kernel
	// re-authenticates its live controller with it.
	ctrl := controllerOf(t, nqn)
	v.secrets = map[string]string{flintv1.SecretKeyDHCHAP: rotated.Secret, flintv1.SecretKeyDHCHAPCtrl: rotated.CtrlSecret}
	must(t, v.publishAt(ctx), "NodePublishVolume again, with the rotated secret")
	if got := readSysfs(t, ctrl, "dhchap_secret"); got != rotated.Secret {
		t.Fatalf("controller %s authenticates with %q, want the rotated secret", ctrl, got)
	}
	// A reconnect now proves the new keys.
	must(t, os.WriteFile(filepath.Join("/sys/class/nvme", ctrl, "reset_controller"), []byte("1"), 0), "reset the controller after the rotation")
	if state := readSysfs(t, ctrl, "state"); state != "live" {
		t.Fatalf("controller %s is %s after a reset with the rotated keys", ctrl, state)
	}
	third := randomBytes(t, 1<<20)
	must(t, writeSynced(v.dataPath()+".3", third), "write and fsync after the reconnect")
	for name, want := range map[string][]byte{v.dataPath(): first, v.dataPath() + ".2": second, v.dataPath() + ".3": third} {
		got, err := os.ReadFile(name)
		must(t, err, "read back")
		if !bytes.Equal(got, want) {
			t.Fatalf("%s read back other data than was written", name)
		}
	}
	must(t, v.unpublish(ctx), "NodeUnpublishVolume")
	must(t, v.unstage(ctx), "NodeUnstageVolume")
	if _, err := o.DeleteTarget(ctx, key, []string{osdUID}, nil); err != nil {
		t.Fatalf("delete the target: %v", err)
	}
	t.Logf("DH-HMAC-CHAP: no key and wrong keys refused, the node-stage secret let in, a rotation crossed without an I/O error")
}

func newKeys(t *testing.T) storage.Keys {
	t.Helper()
	secret, err := fabric.NewSecret()
	must(t, err, "make a secret")
	ctrl, err := fabric.NewSecret()
	must(t, err, "make a secret")
	return storage.Keys{Secret: secret, CtrlSecret: ctrl}
}

// controllerOf is the name of the kernel host's controller of nqn.
func controllerOf(t *testing.T, nqn string) string {
	t.Helper()
	ctrls, err := attacher.Host.Controllers(nqn)
	must(t, err, "list controllers")
	if len(ctrls) != 1 {
		t.Fatalf("controllers of %s: %+v, want one", nqn, ctrls)
	}
	return ctrls[0].Name
}

func readSysfs(t *testing.T, ctrl, attr string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/sys/class/nvme", ctrl, attr))
	must(t, err, "read "+attr)
	return strings.TrimSpace(string(b))
}
