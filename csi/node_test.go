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

package csi

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/mount-utils"
	"k8s.io/utils/exec"
	testingexec "k8s.io/utils/exec/testing"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/csi/nvmeof"
	"github.com/flint-io/flint/internal/fabric"
)

// recordingAttacher attaches every target as /dev/nvme9n1 and records
// what it did.
type recordingAttacher struct {
	attached, detached []string
	// secrets are those of the last attach.
	secrets nvmeof.Secrets
}

func (a *recordingAttacher) Attach(_ context.Context, t Target) (string, error) {
	a.attached = append(a.attached, t.VolumeID)
	a.secrets = t.Secrets
	return "/dev/nvme9n1", nil
}

func (a *recordingAttacher) Detach(_ context.Context, t Target) error {
	a.detached = append(a.detached, t.VolumeID)
	return nil
}

func (a *recordingAttacher) Refresh(context.Context, Target) error { return nil }

func (a *recordingAttacher) Health(Target) []*csi.VolumeHealth_VolumeHealthEntry { return nil }

func (a *recordingAttacher) SetSecrets(t Target) error {
	a.secrets = t.Secrets
	return nil
}

// unlistable is a node whose mount table cannot be read.
type unlistable struct{ *mount.FakeMounter }

func (unlistable) List() ([]mount.MountPoint, error) {
	return nil, errors.New("open /proc/self/mountinfo: too many open files")
}

const nodeTestNQN = "nqn.2024-01.io.flint:volume:3f2a"

func testNode(t *testing.T, m mount.Interface) (*Node, *recordingAttacher) {
	a := &recordingAttacher{}
	return &Node{
		NodeID: "nqn.2014-08.org.nvmexpress:uuid:1b4e28ba-2fa1-11d2-883f-0016d3cca427", NodeName: "worker-a",
		Attacher: a, Mounter: &mount.SafeFormatAndMount{Interface: m, Exec: exec.New()},
		StateDir: t.TempDir(),
	}, a
}

// A node that cannot read its mount table does not take the staged
// filesystem for unmounted: it refuses to unstage, and never disconnects
// the device under it.
func TestUnstageRefusesWhenMountsCannotBeListed(t *testing.T) {
	n, a := testNode(t, unlistable{mount.NewFakeMounter(nil)})
	staging := filepath.Join(t.TempDir(), "staging")
	vol := &stagedVolume{Target: Target{VolumeID: "v1", NQN: nodeTestNQN}, Device: "/dev/nvme9n1", StagingPath: staging, FsType: "ext4"}
	if err := n.state().save(vol); err != nil {
		t.Fatal(err)
	}
	_, err := n.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{VolumeId: "v1", StagingTargetPath: staging})
	if status.Code(err) != codes.Unavailable || len(a.detached) != 0 {
		t.Fatalf("NodeUnstageVolume = %v, detached %v; want Unavailable and no detach", err, a.detached)
	}
	if _, err := n.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: "v1", TargetPath: filepath.Join(t.TempDir(), "pod")}); status.Code(err) != codes.Unavailable {
		t.Fatalf("NodeUnpublishVolume = %v, want Unavailable", err)
	}
}

// The volume context's fsType picks the mkfs the node runs: one Flint
// does not make is refused before anything is attached.
func TestStageRefusesAnFsTypeFromTheContextFlintDoesNotMake(t *testing.T) {
	n, a := testNode(t, mount.NewFakeMounter(nil))
	_, err := n.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{
		VolumeId: "v1", StagingTargetPath: filepath.Join(t.TempDir(), "staging"),
		VolumeCapability: &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		},
		PublishContext: map[string]string{PublishNQN: nodeTestNQN, PublishTransport: "tcp", PublishPaths: "10.0.0.1:4420"},
		VolumeContext:  map[string]string{ContextFsType: "ext4 -E root_owner=0:0 /dev/sda"},
	})
	if status.Code(err) != codes.InvalidArgument || len(a.attached) != 0 {
		t.Fatalf("NodeStageVolume = %v, attached %v; want InvalidArgument and nothing attached", err, a.attached)
	}
}

func blockCapability() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
}

// A volume that asks hosts to authenticate is staged only with its
// secrets, from the node-stage secret, and connected with them; they are
// never written to the node's state. A republish rotates them.
func TestStageConnectsWithTheNodeStageSecret(t *testing.T) {
	n, a := testNode(t, mount.NewFakeMounter(nil))
	staging := filepath.Join(t.TempDir(), "staging")
	hostSecret, err := fabric.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	ctrlSecret, err := fabric.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	stage := func(secrets map[string]string) error {
		_, err := n.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{
			VolumeId: "v1", StagingTargetPath: staging, VolumeCapability: blockCapability(),
			PublishContext: map[string]string{PublishNQN: nodeTestNQN, PublishTransport: "tcp", PublishPaths: "10.0.0.1:4420"},
			VolumeContext:  map[string]string{ContextHostAuthentication: string(flintv1.HostAuthenticationDHHMACCHAP)},
			Secrets:        secrets,
		})
		return err
	}
	if err := stage(nil); status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "node-stage-secret-name") || len(a.attached) != 0 {
		t.Fatalf("NodeStageVolume without secrets = %v, attached %v; want FailedPrecondition naming the class's node-stage secret, nothing attached", err, a.attached)
	}
	if err := stage(map[string]string{flintv1.SecretKeyDHCHAP: hostSecret + ",hostnqn=nqn.x", flintv1.SecretKeyDHCHAPCtrl: ctrlSecret}); status.Code(err) != codes.InvalidArgument || len(a.attached) != 0 {
		t.Fatalf("NodeStageVolume with a malformed secret = %v, attached %v; want InvalidArgument, nothing attached", err, a.attached)
	}
	if err := stage(map[string]string{flintv1.SecretKeyDHCHAP: hostSecret, flintv1.SecretKeyDHCHAPCtrl: ctrlSecret}); err != nil {
		t.Fatal(err)
	}
	if a.secrets != (nvmeof.Secrets{Host: hostSecret, Ctrl: ctrlSecret}) {
		t.Fatalf("attached with secrets %+v, want the node-stage secret's", a.secrets)
	}
	state, err := os.ReadFile(n.state().path("v1"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(state), "DHHC-1") {
		t.Fatalf("the node's state holds a secret: %s", state)
	}

	// Every republish brings the node-publish secret as it is now: a
	// rotated one reaches the connection; none changes nothing.
	rotated, err := fabric.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	publish := func(secrets map[string]string) {
		t.Helper()
		_, err := n.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
			VolumeId: "v1", StagingTargetPath: staging, TargetPath: filepath.Join(t.TempDir(), "pod"),
			VolumeCapability: blockCapability(),
			VolumeContext:    map[string]string{ContextHostAuthentication: string(flintv1.HostAuthenticationDHHMACCHAP)},
			Secrets:          secrets,
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	publish(map[string]string{flintv1.SecretKeyDHCHAP: rotated, flintv1.SecretKeyDHCHAPCtrl: ctrlSecret})
	if a.secrets != (nvmeof.Secrets{Host: rotated, Ctrl: ctrlSecret}) {
		t.Fatalf("after a republish with a rotated secret the connection has %+v", a.secrets)
	}
	publish(nil)
	if a.secrets.Host != rotated {
		t.Fatalf("a republish without secrets changed the connection's to %+v", a.secrets)
	}
}

// A filesystem the node finds on the device (a volume restored from a
// Snapshot, or cloned, into a larger one) is grown to the device once
// mounted; one it made just now is not, and a staged one is grown again
// on a retry.
func TestStageGrowsAFilesystemItFound(t *testing.T) {
	for _, tt := range []struct {
		name, fs string
		mounted  bool
		want     []string // the programs run, in order
	}{
		{"found", "ext4", false, []string{"blkid", "blkid", "fsck", "blkid", "resize2fs"}},
		{"made", "", false, []string{"blkid", "blkid", "mkfs.ext4"}},
		{"staged, a retry", "ext4", true, []string{"blkid", "resize2fs"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ran []string
			run := func(cmd string, _ ...string) exec.Cmd {
				ran = append(ran, cmd)
				out := func() ([]byte, []byte, error) { return nil, nil, nil }
				if cmd == "blkid" {
					out = func() ([]byte, []byte, error) {
						if tt.fs == "" {
							return nil, nil, testingexec.FakeExitError{Status: 2} // nothing found
						}
						return []byte("DEVNAME=/dev/nvme9n1\nTYPE=" + tt.fs + "\n"), nil, nil
					}
				}
				fake := &testingexec.FakeCmd{CombinedOutputScript: []testingexec.FakeAction{out}, OutputScript: []testingexec.FakeAction{out}, RunScript: []testingexec.FakeAction{out}}
				return testingexec.InitFakeCmd(fake, cmd)
			}
			staging := filepath.Join(t.TempDir(), "staging")
			m := mount.NewFakeMounter(nil)
			if tt.mounted {
				m = mount.NewFakeMounter([]mount.MountPoint{{Device: "/dev/nvme9n1", Path: staging, Type: "ext4"}})
			}
			n, _ := testNode(t, m)
			n.Mounter.Exec = &testingexec.FakeExec{CommandScript: slices.Repeat([]testingexec.FakeCommandAction{run}, 10)}
			_, err := n.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{
				VolumeId: "v1", StagingTargetPath: staging,
				VolumeCapability: &csi.VolumeCapability{
					AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "ext4"}},
					AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
				},
				PublishContext: map[string]string{PublishNQN: nodeTestNQN, PublishTransport: "tcp", PublishPaths: "10.0.0.1:4420"},
			})
			if err != nil || !slices.Equal(ran, tt.want) {
				t.Fatalf("NodeStageVolume = %v, ran %v; want %v", err, ran, tt.want)
			}
		})
	}
}

// A node whose native NVMe multipath is off reports its volumes degraded,
// saying how to turn it on: a volume staged before the plugin refused
// such nodes fails its I/O at its next snapshot.
func TestHealthSaysWhenMultipathIsOff(t *testing.T) {
	sysfs := t.TempDir()
	params := filepath.Join(sysfs, "module", "nvme_core", "parameters")
	if err := os.MkdirAll(params, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(params, "multipath"), []byte("N\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &FabricAttacher{Host: &nvmeof.Host{Sysfs: sysfs, Dev: t.TempDir()}}
	h := a.Health(Target{VolumeID: "v", NQN: "nqn.2026-01.io.flint:volume:v"})
	if len(h) != 1 || h[0].Status != csi.VolumeHealthErrorType_DEGRADED || h[0].Reason != "NoMultipath" || !strings.Contains(h[0].Message, "nvme_core.multipath=Y") {
		t.Fatalf("health with multipath off = %+v, want DEGRADED NoMultipath saying how to turn it on", h)
	}
}
