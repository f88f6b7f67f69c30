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
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	mount "k8s.io/mount-utils"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/csi/nvmeof"
)

// TopologyKeyNode is the topology key the node service reports with the
// node's name; it reports the node's topology.kubernetes.io/zone beside
// it, when the node has one, so that a StorageClass's allowedTopologies
// may name zones.
const TopologyKeyNode = "topology.flint.io/node"

// Node is the CSI node service.
type Node struct {
	csi.UnimplementedNodeServer
	// NodeID is the node's host NQN: ControllerPublishVolume puts it in
	// the Volume's allow-list as it is.
	NodeID   string
	NodeName string
	// Zone is the node's topology.kubernetes.io/zone label, read at start;
	// "" for none.
	Zone     string
	Attacher Attacher
	Mounter  *mount.SafeFormatAndMount
	// StateDir holds what the node knows of the volumes it staged.
	StateDir string
	// ResizeTimeout bounds NodeExpandVolume's wait for the device to grow.
	ResizeTimeout time.Duration
	// Volumes, when set, is where NodeStageVolume reads a Volume's
	// current target (currentTarget).
	Volumes client.Reader
	locks   volumeLocks
}

func (n *Node) state() stateStore { return stateStore{dir: n.StateDir} }

// staged is what the node staged of volume id; a volume not staged here
// is NotFound.
func (n *Node) staged(id string) (*stagedVolume, error) {
	vol, err := n.state().load(id)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if vol == nil {
		return nil, status.Errorf(codes.NotFound, "volume %s is not staged on this node", id)
	}
	return vol, nil
}

// NodeGetInfo returns the host NQN as node id and the node's topology:
// its name, and its zone when it has one.
func (n *Node) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	segments := map[string]string{TopologyKeyNode: n.NodeName}
	if n.Zone != "" {
		segments[corev1.LabelTopologyZone] = n.Zone
	}
	return &csi.NodeGetInfoResponse{NodeId: n.NodeID, AccessibleTopology: &csi.Topology{Segments: segments}}, nil
}

// NodeGetCapabilities lists what the node serves.
func (n *Node) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	var caps []*csi.NodeServiceCapability
	for _, t := range []csi.NodeServiceCapability_RPC_Type{
		csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
		csi.NodeServiceCapability_RPC_EXPAND_VOLUME,
		csi.NodeServiceCapability_RPC_GET_VOLUME_STATS,
		csi.NodeServiceCapability_RPC_GET_VOLUME_HEALTH,
		csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
	} {
		caps = append(caps, &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: t}}})
	}
	return &csi.NodeGetCapabilitiesResponse{Capabilities: caps}, nil
}

// NodeStageVolume connects the volume and, for a filesystem, formats it
// if blank, mounts it at the staging path and grows it to the device.
func (n *Node) NodeStageVolume(ctx context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	id, staging := req.GetVolumeId(), req.GetStagingTargetPath()
	if err := requireField(id, "volume id"); err != nil {
		return nil, err
	}
	if err := requireField(staging, "staging target path"); err != nil {
		return nil, err
	}
	if err := checkCapability(req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	target, err := targetFromContext(id, req.GetPublishContext())
	if err != nil {
		return nil, err
	}
	target = n.currentTarget(ctx, target)
	if target.Secrets, err = stageSecrets(id, req.GetVolumeContext(), req.GetSecrets()); err != nil {
		return nil, err
	}
	unlock, err := n.locks.lock(id)
	if err != nil {
		return nil, err
	}
	defer unlock()

	vol, err := n.state().load(id)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if vol != nil && vol.StagingPath != staging {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is staged at %s already, not %s", id, vol.StagingPath, staging)
	}
	mnt := req.GetVolumeCapability().GetMount()
	if vol == nil {
		vol = &stagedVolume{StagingPath: staging, Block: isBlock(req.GetVolumeCapability())}
		if !vol.Block {
			vol.FsType = firstNonEmpty(mnt.GetFsType(), req.GetVolumeContext()[ContextFsType], DefaultFsType)
			// The volume context is anyone's who can write a
			// PersistentVolume; its fsType picks the mkfs that runs.
			if !slices.Contains(FsTypes, vol.FsType) {
				return nil, status.Errorf(codes.InvalidArgument, "fsType %q of volume %s is not supported: use one of %v", vol.FsType, id, FsTypes)
			}
		}
	}
	vol.Target = target
	if vol.Device, err = n.Attacher.Attach(ctx, target); err != nil {
		return nil, err
	}
	// Saved before mounting: an unstage after a failed mount still
	// disconnects.
	if err := n.state().save(vol); err != nil {
		return nil, status.Errorf(codes.Internal, "save the node state of %s: %v", id, err)
	}
	if vol.Block {
		return &csi.NodeStageVolumeResponse{}, nil
	}
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "create the staging path: %v", err)
	}
	source, mounted, err := n.mountSource(staging)
	if err != nil {
		return nil, err
	}
	if mounted && source != vol.Device {
		return nil, status.Errorf(codes.FailedPrecondition, "staging path %s holds %s, not volume %s's %s: unmount it", staging, source, id, vol.Device)
	}
	if !mounted {
		format, err := n.Mounter.GetDiskFormat(vol.Device)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "read the filesystem of %s: %v", vol.Device, err)
		}
		if err := n.Mounter.FormatAndMount(vol.Device, staging, vol.FsType, mnt.GetMountFlags()); err != nil {
			return nil, status.Errorf(codes.Internal, "format (if blank) and mount %s as %s at %s: %v", vol.Device, vol.FsType, staging, err)
		}
		if format == "" {
			return &csi.NodeStageVolumeResponse{}, nil // made just now, as large as the device
		}
	}
	// A filesystem made on a smaller volume (restored from a Snapshot, or
	// cloned, into a larger one) grows to its device; at its size already,
	// the resize does nothing. A retry after a failed one grows it too.
	if !slices.Contains(mnt.GetMountFlags(), "ro") {
		if _, err := mount.NewResizeFs(n.Mounter.Exec).Resize(vol.Device, staging); err != nil {
			return nil, status.Errorf(codes.Internal, "grow the %s filesystem of %s to its device: %v", vol.FsType, id, err)
		}
	}
	return &csi.NodeStageVolumeResponse{}, nil
}

// stageSecrets are the DH-HMAC-CHAP secrets a volume that asks hosts to
// authenticate is connected with: the kubelet reads them from the
// StorageClass's node-stage secret, which only a node running a Pod of
// the volume may read (the Node authorizer).
func stageSecrets(id string, volumeContext, secrets map[string]string) (nvmeof.Secrets, error) {
	if flintv1.HostAuthentication(volumeContext[ContextHostAuthentication]) != flintv1.HostAuthenticationDHHMACCHAP {
		return nvmeof.Secrets{}, nil
	}
	s := nvmeof.Secrets{Host: secrets[flintv1.SecretKeyDHCHAP], Ctrl: secrets[flintv1.SecretKeyDHCHAPCtrl]}
	if s.Host == "" || s.Ctrl == "" {
		return s, status.Errorf(codes.FailedPrecondition, "volume %s asks hosts to authenticate (DH-HMAC-CHAP), and NodeStageVolume came without its %s and %s: its StorageClass must set csi.storage.k8s.io/node-stage-secret-name: %s and csi.storage.k8s.io/node-stage-secret-namespace: the operator's namespace", id, flintv1.SecretKeyDHCHAP, flintv1.SecretKeyDHCHAPCtrl, flintv1.HostAuthSecretName("${pv.name}"))
	}
	if err := s.Validate(); err != nil {
		return s, status.Errorf(codes.InvalidArgument, "volume %s: its node-stage secret: %v", id, err)
	}
	return s, nil
}

// followSecrets gives the connection of a staged volume that asks hosts
// to authenticate the secrets NodePublishVolume came with: the kubelet
// calls it again every sync (the CSIDriver's requiresRepublish) with the
// StorageClass's node-publish secret as it is now, so a rotated key
// reaches the kernel's controllers, which re-authenticate with it, while
// I/O goes on. A class that names no node-publish secret sends none: the
// node keeps the secrets it was staged with.
func (n *Node) followSecrets(vol *stagedVolume, volumeContext, secrets map[string]string) error {
	if len(secrets) == 0 {
		return nil
	}
	s, err := stageSecrets(vol.Target.VolumeID, volumeContext, secrets)
	if err != nil || s == (nvmeof.Secrets{}) {
		return err
	}
	t := vol.Target
	t.Secrets = s
	return n.Attacher.SetSecrets(t)
}

// currentTarget is where the Volume's status says its target listens
// now, when that is the published subsystem (same NQN): the publish
// context is the target's at attach time, and a volume that stays attached
// to this node from one Pod to the next keeps it after the target moved
// (the e2e lab's Pod after a move timed out connecting to the old
// target). Without Volumes, or when the Volume cannot be read, the
// publish context's.
func (n *Node) currentTarget(ctx context.Context, published Target) Target {
	if n.Volumes == nil {
		return published
	}
	vol := &flintv1.Volume{}
	if err := n.Volumes.Get(ctx, client.ObjectKey{Name: published.VolumeID}, vol); err != nil {
		return published
	}
	if now, ok := targetOf(vol); ok && now.NQN == published.NQN {
		return now
	}
	return published
}

// NodeUnstageVolume unmounts the staging path and disconnects the volume
// once nothing on the node uses its device.
func (n *Node) NodeUnstageVolume(ctx context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	id, staging := req.GetVolumeId(), req.GetStagingTargetPath()
	if err := requireField(id, "volume id"); err != nil {
		return nil, err
	}
	if err := requireField(staging, "staging target path"); err != nil {
		return nil, err
	}
	unlock, err := n.locks.lock(id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	vol, err := n.state().load(id)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if vol == nil {
		return &csi.NodeUnstageVolumeResponse{}, nil
	}
	if len(vol.Published) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is still published at %v: unpublish it first", id, slices.Sorted(maps.Keys(vol.Published)))
	}
	_, mounted, err := n.mountSource(staging)
	if err != nil {
		return nil, err
	}
	if mounted {
		if err := n.Mounter.Unmount(staging); err != nil {
			return nil, status.Errorf(codes.Internal, "unmount %s: %v", staging, err)
		}
	}
	users, err := n.mountsOf(vol.Device)
	if err != nil {
		return nil, err
	}
	if len(users) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s's device %s is still mounted at %v: unmount it there first", id, vol.Device, users)
	}
	if err := n.Attacher.Detach(ctx, vol.Target); err != nil {
		return nil, err
	}
	if err := n.state().remove(id); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.NodeUnstageVolumeResponse{}, nil
}

// NodePublishVolume bind-mounts the staged filesystem, or the raw device,
// at the target path.
func (n *Node) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id, targetPath := req.GetVolumeId(), req.GetTargetPath()
	if err := requireField(id, "volume id"); err != nil {
		return nil, err
	}
	if err := requireField(targetPath, "target path"); err != nil {
		return nil, err
	}
	if err := checkCapability(req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	if err := requireField(req.GetStagingTargetPath(), "staging target path"); err != nil {
		return nil, err
	}
	unlock, err := n.locks.lock(id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	vol, err := n.state().load(id)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if vol == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not staged on this node: NodeStageVolume first", id)
	}
	if vol.Block != isBlock(req.GetVolumeCapability()) {
		return nil, status.Errorf(codes.InvalidArgument, "volume %s was staged as %s and cannot be published as %s", id, accessType(vol.Block), accessType(!vol.Block))
	}
	if err := n.followSecrets(vol, req.GetVolumeContext(), req.GetSecrets()); err != nil {
		return nil, err
	}
	pub := publication{ReadOnly: req.GetReadonly(), SingleWriter: req.GetVolumeCapability().GetAccessMode().GetMode() == csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER}
	_, mounted, err := n.mountSource(targetPath)
	if err != nil {
		return nil, err
	}
	if have, ok := vol.Published[targetPath]; ok {
		if mounted {
			if have.ReadOnly != pub.ReadOnly {
				return nil, status.Errorf(codes.AlreadyExists, "volume %s is published at %s with readonly=%t", id, targetPath, have.ReadOnly)
			}
			return &csi.NodePublishVolumeResponse{}, nil
		}
	}
	for path, other := range vol.Published {
		if path != targetPath && (pub.SingleWriter || other.SingleWriter) {
			return nil, status.Errorf(codes.FailedPrecondition, "volume %s is ReadWriteOncePod and published at %s already", id, path)
		}
	}
	if vol.Published == nil {
		vol.Published = map[string]publication{}
	}
	vol.Published[targetPath] = pub
	if err := n.state().save(vol); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	options := []string{"bind"}
	if pub.ReadOnly {
		options = append(options, "ro")
	}
	source := vol.StagingPath
	if vol.Block {
		source = vol.Device
		err = makeFile(targetPath)
	} else {
		options = append(options, req.GetVolumeCapability().GetMount().GetMountFlags()...)
		err = os.MkdirAll(targetPath, 0o750)
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "create the target path: %v", err)
	}
	if !mounted {
		if err := n.Mounter.Mount(source, targetPath, "", options); err != nil {
			return nil, status.Errorf(codes.Internal, "bind-mount %s at %s: %v", source, targetPath, err)
		}
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

func accessType(block bool) string {
	if block {
		return "a raw block device"
	}
	return "a filesystem"
}

func makeFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE, 0o640)
	if err != nil {
		return err
	}
	return f.Close()
}

// NodeUnpublishVolume unmounts and removes the target path.
func (n *Node) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	id, targetPath := req.GetVolumeId(), req.GetTargetPath()
	if err := requireField(id, "volume id"); err != nil {
		return nil, err
	}
	if err := requireField(targetPath, "target path"); err != nil {
		return nil, err
	}
	unlock, err := n.locks.lock(id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	for {
		_, mounted, err := n.mountSource(targetPath)
		if err != nil {
			return nil, err
		}
		if !mounted {
			break
		}
		if err := n.Mounter.Unmount(targetPath); err != nil {
			return nil, status.Errorf(codes.Internal, "unmount %s: %v", targetPath, err)
		}
	}
	if err := os.Remove(targetPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "remove %s: %v", targetPath, err)
	}
	vol, err := n.state().load(id)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if vol != nil {
		delete(vol.Published, targetPath)
		if err := n.state().save(vol); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// NodeGetVolumeStats reports space and inodes (filesystem) or size
// (block).
func (n *Node) NodeGetVolumeStats(_ context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	id, path := req.GetVolumeId(), req.GetVolumePath()
	if err := requireField(id, "volume id"); err != nil {
		return nil, err
	}
	if err := requireField(path, "volume path"); err != nil {
		return nil, err
	}
	vol, err := n.staged(id)
	if err != nil {
		return nil, err
	}
	if _, ok := vol.Published[path]; !ok && path != vol.StagingPath {
		return nil, status.Errorf(codes.NotFound, "volume %s is not staged or published at %s", id, path)
	}
	if _, err := os.Stat(path); err != nil {
		return nil, status.Errorf(codes.NotFound, "volume %s's path %s: %v", id, path, err)
	}
	resp := &csi.NodeGetVolumeStatsResponse{}
	if vol.Block {
		size, err := deviceSize(vol.Device)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "size of %s: %v", vol.Device, err)
		}
		resp.Usage = []*csi.VolumeUsage{{Unit: csi.VolumeUsage_BYTES, Total: size}}
		return resp, nil
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil {
		return nil, status.Errorf(codes.Internal, "statfs %s: %v", path, err)
	}
	bsize := int64(fs.Bsize)
	resp.Usage = []*csi.VolumeUsage{
		{Unit: csi.VolumeUsage_BYTES, Total: int64(fs.Blocks) * bsize, Available: int64(fs.Bavail) * bsize, Used: int64(fs.Blocks-fs.Bfree) * bsize},
		{Unit: csi.VolumeUsage_INODES, Total: int64(fs.Files), Available: int64(fs.Ffree), Used: int64(fs.Files - fs.Ffree)},
	}
	return resp, nil
}

// NodeGetVolumeHealth reports the health of the volume's connection: no
// live path to its target makes it INACCESSIBLE.
func (n *Node) NodeGetVolumeHealth(_ context.Context, req *csi.NodeGetVolumeHealthRequest) (*csi.NodeGetVolumeHealthResponse, error) {
	id := req.GetVolumeId()
	if err := requireField(id, "volume id"); err != nil {
		return nil, err
	}
	vol, err := n.staged(id)
	if err != nil {
		return nil, err
	}
	if p := req.GetVolumePublishPath(); p != "" {
		if _, ok := vol.Published[p]; !ok {
			return nil, status.Errorf(codes.NotFound, "volume %s is not published at %s", id, p)
		}
	}
	return &csi.NodeGetVolumeHealthResponse{VolumeHealth: &csi.VolumeHealth{VolumeId: id, HealthStatuses: n.Attacher.Health(vol.Target)}}, nil
}

// NodeExpandVolume makes the device show the grown volume and grows the
// filesystem on it.
func (n *Node) NodeExpandVolume(ctx context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := requireField(id, "volume id"); err != nil {
		return nil, err
	}
	if err := requireField(req.GetVolumePath(), "volume path"); err != nil {
		return nil, err
	}
	unlock, err := n.locks.lock(id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	vol, err := n.staged(id)
	if err != nil {
		return nil, err
	}
	if err := n.Attacher.Refresh(ctx, vol.Target); err != nil {
		return nil, err
	}
	want := req.GetCapacityRange().GetRequiredBytes()
	size, err := deviceSize(vol.Device)
	for deadline := time.Now().Add(n.ResizeTimeout); err == nil && size < want && time.Now().Before(deadline); size, err = deviceSize(vol.Device) {
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "size of %s: %v", vol.Device, err)
	}
	if size < want {
		return nil, status.Errorf(codes.Unavailable, "device %s of volume %s shows %d bytes, not yet %d: the call is retried", vol.Device, id, size, want)
	}
	if !vol.Block {
		if _, err := mount.NewResizeFs(n.Mounter.Exec).Resize(vol.Device, vol.StagingPath); err != nil {
			return nil, status.Errorf(codes.Internal, "grow the %s filesystem of %s: %v", vol.FsType, id, err)
		}
	}
	return &csi.NodeExpandVolumeResponse{CapacityBytes: size}, nil
}

// mountSource is what is mounted at path, if anything.
func (n *Node) mountSource(path string) (source string, mounted bool, err error) {
	mps, err := n.listMounts()
	if err != nil {
		return "", false, err
	}
	for _, mp := range mps {
		if mp.Path == path {
			// The last mount at a path is the visible one.
			source, mounted = mp.Device, true
		}
	}
	return source, mounted, nil
}

// mountsOf lists where device is mounted.
func (n *Node) mountsOf(device string) ([]string, error) {
	mps, err := n.listMounts()
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, mp := range mps {
		if mp.Device == device {
			paths = append(paths, mp.Path)
		}
	}
	return paths, nil
}

// listMounts lists the node's mounts. A list that fails is an error, never
// "nothing is mounted": that would disconnect a device under a mounted
// filesystem.
func (n *Node) listMounts() ([]mount.MountPoint, error) {
	mps, err := n.Mounter.List()
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "list the node's mounts: %v; try again", err)
	}
	return mps, nil
}

func deviceSize(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	return f.Seek(0, io.SeekEnd)
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
