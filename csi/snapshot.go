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
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// SnapshotID is the Snapshot (and CSI snapshot id) for a CreateSnapshot
// name, derived as VolumeID derives a Volume's.
func SnapshotID(name string) string { return VolumeID(name) }

// CreateSnapshot writes a Snapshot of the source Volume and waits, within
// the call's time, until it is ready to use; a cut not taken by then is
// answered not ready, and the CO asks again.
func (c *Controller) CreateSnapshot(ctx context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	if err := requireField(req.GetName(), "name"); err != nil {
		return nil, err
	}
	if err := requireField(req.GetSourceVolumeId(), "source volume id"); err != nil {
		return nil, err
	}
	id := SnapshotID(req.GetName())
	unlock, err := c.locks.lock(id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := c.APIReader.Get(ctx, client.ObjectKey{Name: req.GetSourceVolumeId()}, &flintv1.Volume{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, status.Errorf(codes.NotFound, "source volume %s does not exist", req.GetSourceVolumeId())
		}
		return nil, apiError(err)
	}
	snap, err := c.ensureSnapshot(ctx, id, req)
	if err != nil {
		return nil, err
	}
	snap, err = c.awaitSnapshot(ctx, snap)
	if err != nil {
		return nil, err
	}
	return &csi.CreateSnapshotResponse{Snapshot: csiSnapshot(snap)}, nil
}

// ensureSnapshot creates the Snapshot, or checks that the one there was
// made by the same request.
func (c *Controller) ensureSnapshot(ctx context.Context, id string, req *csi.CreateSnapshotRequest) (*flintv1.Snapshot, error) {
	snap := &flintv1.Snapshot{
		ObjectMeta: metav1.ObjectMeta{Name: id, Annotations: map[string]string{AnnotationCSIName: req.GetName()}},
		Spec:       flintv1.SnapshotSpec{Volume: req.GetSourceVolumeId()},
	}
	err := c.Client.Create(ctx, snap)
	if err == nil {
		return snap, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, apiError(err)
	}
	if err := c.APIReader.Get(ctx, client.ObjectKey{Name: id}, snap); err != nil {
		return nil, apiError(err)
	}
	switch {
	case snap.Annotations[AnnotationCSIName] != req.GetName():
		return nil, status.Errorf(codes.AlreadyExists, "Snapshot %s exists for another name (%q)", id, snap.Annotations[AnnotationCSIName])
	case snap.Spec.Volume != req.GetSourceVolumeId():
		return nil, status.Errorf(codes.AlreadyExists, "snapshot %s exists of volume %s, not %s", req.GetName(), snap.Spec.Volume, req.GetSourceVolumeId())
	case !snap.DeletionTimestamp.IsZero():
		return nil, status.Errorf(codes.Aborted, "snapshot %s is being deleted: retry when it is gone", req.GetName())
	}
	return snap, nil
}

// awaitSnapshot reads snap until it is ready to use or the call's time
// (bounded as a Volume's wait is) runs out; it returns it as last read.
func (c *Controller) awaitSnapshot(ctx context.Context, snap *flintv1.Snapshot) (*flintv1.Snapshot, error) {
	wait := c.MaxWait
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d) * 9 / 10
	}
	deadline := time.Now().Add(wait)
	for !snap.Status.ReadyToUse && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		case <-time.After(c.PollInterval):
		}
		if err := c.APIReader.Get(ctx, client.ObjectKeyFromObject(snap), snap); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, status.Errorf(codes.Aborted, "snapshot %s was deleted while it was being taken", snap.Name)
			}
			return nil, apiError(err)
		}
	}
	return snap, nil
}

// csiSnapshot is snap as the CO sees it: its size is the Volume's at the
// cut (the Volume's now until then), its creation time the cut's.
func csiSnapshot(snap *flintv1.Snapshot) *csi.Snapshot {
	created := snap.CreationTimestamp.Time
	if t := snap.Status.CreationTime; t != nil {
		created = t.Time
	}
	var size int64
	if s := snap.Status.Size; s != nil {
		size = s.Value()
	}
	return &csi.Snapshot{
		SnapshotId: snap.Name, SourceVolumeId: snap.Spec.Volume, SizeBytes: size,
		CreationTime: timestamppb.New(created), ReadyToUse: snap.Status.ReadyToUse,
	}
}

// DeleteSnapshot deletes a Snapshot. The operator removes its copies; one
// SPDK keeps for the Volumes made from it stays hidden until they go
// (docs/snapshots.md), so the call does not wait.
func (c *Controller) DeleteSnapshot(ctx context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if err := requireField(id, "snapshot id"); err != nil {
		return nil, err
	}
	unlock, err := c.locks.lock(id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := c.Client.Delete(ctx, &flintv1.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: id}}); err != nil && !apierrors.IsNotFound(err) {
		return nil, apiError(err)
	}
	return &csi.DeleteSnapshotResponse{}, nil
}

// GetSnapshot reads one Snapshot; one being deleted is gone to the CO.
func (c *Controller) GetSnapshot(ctx context.Context, req *csi.GetSnapshotRequest) (*csi.GetSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if err := requireField(id, "snapshot id"); err != nil {
		return nil, err
	}
	var snap flintv1.Snapshot
	if err := c.APIReader.Get(ctx, client.ObjectKey{Name: id}, &snap); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, status.Errorf(codes.NotFound, "snapshot %s does not exist", id)
		}
		return nil, apiError(err)
	}
	if !snap.DeletionTimestamp.IsZero() {
		return nil, status.Errorf(codes.NotFound, "snapshot %s is deleted", id)
	}
	return &csi.GetSnapshotResponse{Snapshot: csiSnapshot(&snap)}, nil
}

// ListSnapshots pages through the Snapshots not being deleted, by name,
// those of one id or one source volume when asked.
func (c *Controller) ListSnapshots(ctx context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	var list flintv1.SnapshotList
	if err := c.APIReader.List(ctx, &list); err != nil {
		return nil, apiError(err)
	}
	var snaps []flintv1.Snapshot
	for _, s := range list.Items {
		switch {
		case !s.DeletionTimestamp.IsZero(),
			req.GetSnapshotId() != "" && s.Name != req.GetSnapshotId(),
			req.GetSourceVolumeId() != "" && s.Spec.Volume != req.GetSourceVolumeId():
			continue
		}
		snaps = append(snaps, s)
	}
	snaps, next, err := page(snaps, req.GetMaxEntries(), req.GetStartingToken())
	if err != nil {
		return nil, err
	}
	resp := &csi.ListSnapshotsResponse{NextToken: next}
	for i := range snaps {
		resp.Entries = append(resp.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: csiSnapshot(&snaps[i])})
	}
	return resp, nil
}

// volumeSource is the Volume source of a CreateVolume content source, and
// the least size it needs; nil without one.
func (c *Controller) volumeSource(ctx context.Context, src *csi.VolumeContentSource) (*flintv1.VolumeSource, int64, error) {
	switch {
	case src == nil:
		return nil, 0, nil
	case src.GetSnapshot() != nil:
		id := src.GetSnapshot().GetSnapshotId()
		var snap flintv1.Snapshot
		if err := c.APIReader.Get(ctx, client.ObjectKey{Name: id}, &snap); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, 0, status.Errorf(codes.NotFound, "source snapshot %s does not exist", id)
			}
			return nil, 0, apiError(err)
		}
		if !snap.DeletionTimestamp.IsZero() {
			return nil, 0, status.Errorf(codes.NotFound, "source snapshot %s is being deleted", id)
		}
		var size int64
		if s := snap.Status.Size; s != nil {
			size = s.Value()
		}
		return &flintv1.VolumeSource{Snapshot: id}, size, nil
	case src.GetVolume() != nil:
		id := src.GetVolume().GetVolumeId()
		var vol flintv1.Volume
		if err := c.APIReader.Get(ctx, client.ObjectKey{Name: id}, &vol); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, 0, status.Errorf(codes.NotFound, "source volume %s does not exist", id)
			}
			return nil, 0, apiError(err)
		}
		return &flintv1.VolumeSource{Volume: id}, vol.Spec.Size.Value(), nil
	}
	return nil, 0, status.Error(codes.InvalidArgument, "volume content source names neither a snapshot nor a volume")
}

// contentSource is a Volume's source as the CO named it.
func contentSource(src *flintv1.VolumeSource) *csi.VolumeContentSource {
	switch {
	case src == nil:
		return nil
	case src.Snapshot != "":
		return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: src.Snapshot}}}
	}
	return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: src.Volume}}}
}
