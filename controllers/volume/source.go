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

package volume

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// origin is the Snapshot a Volume with spec.source starts from: its
// replicas on OSDs holding a copy are thin clones of it, the others are
// rebuilt from those.
type origin struct {
	snapshot *flintv1.Snapshot
	// copies are the OSDs holding a Ready copy.
	copies map[string]bool
}

// cloneOf is the copy replica rep starts from, as the Snapshot's uid; ""
// when it starts empty: a Volume without a source, a replica that is not
// being created, or one on an OSD holding no copy.
func (s *origin) cloneOf(rep *flintv1.ReplicaStatus) string {
	if s == nil || rep.State != flintv1.ReplicaStateCreating || !s.copies[rep.OSD] {
		return ""
	}
	return string(s.snapshot.UID)
}

// observeSource reads what vol starts from while its replicas are being
// created; why says what it waits for when it cannot start yet. A Volume
// copying another has its Snapshot taken first.
func (r *Reconciler) observeSource(ctx context.Context, vol *flintv1.Volume, w *world) (why string, err error) {
	if !vol.Restoring() {
		return "", nil
	}
	name := vol.SourceSnapshot()
	var snap flintv1.Snapshot
	err = r.Get(ctx, client.ObjectKey{Name: name}, &snap)
	switch {
	case apierrors.IsNotFound(err) && vol.Spec.Source.Volume != "":
		return fmt.Sprintf("taking Snapshot %s of Volume %s to copy it", name, vol.Spec.Source.Volume), r.snapshotSourceVolume(ctx, vol)
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("Snapshot %s does not exist: start from a Snapshot that exists", name), nil
	case err != nil:
		return "", err
	case !snap.Status.ReadyToUse:
		return fmt.Sprintf("Snapshot %s is not ready to use (%s): the Volume starts once it is", name, orUnknown(string(snap.Status.Phase))), nil
	}
	if snap.Status.Size != nil && vol.Spec.Size.Cmp(*snap.Status.Size) < 0 {
		return fmt.Sprintf("size %s is smaller than Snapshot %s (%s): ask for at least %s", vol.Spec.Size.String(), name, snap.Status.Size.String(), snap.Status.Size.String()), nil
	}
	w.origin = &origin{snapshot: &snap, copies: map[string]bool{}}
	for _, c := range snap.Status.Copies {
		if c.State == flintv1.SnapshotCopyReady && w.osds[c.OSD] != nil {
			w.origin.copies[c.OSD] = true
		}
	}
	if len(w.origin.copies) == 0 {
		return fmt.Sprintf("no copy of Snapshot %s is on an OSD of Pool %s: restore it into the Pool of the Volume it was taken of", name, vol.Spec.Pool), nil
	}
	return "", nil
}

// snapshotSourceVolume takes the Snapshot a Volume copying another starts
// from, owned by the copy: it goes with it at the latest.
func (r *Reconciler) snapshotSourceVolume(ctx context.Context, vol *flintv1.Volume) error {
	snap := &flintv1.Snapshot{
		ObjectMeta: metav1.ObjectMeta{
			Name: vol.CloneSnapshotName(),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: flintv1.GroupVersion.String(), Kind: "Volume", Name: vol.Name, UID: vol.UID, BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: flintv1.SnapshotSpec{Volume: vol.Spec.Source.Volume},
	}
	if err := r.Create(ctx, snap); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Snapshot %s of Volume %s: %w", snap.Name, vol.Spec.Source.Volume, err)
	}
	return nil
}

// releaseCloneSnapshot deletes the Snapshot taken for a Volume copying
// another once every replica of the copy is created: none clones it any
// more. SPDK keeps its lvols while they have clones; the Snapshot's
// finalizer waits for that.
func (r *Reconciler) releaseCloneSnapshot(ctx context.Context, vol *flintv1.Volume) error {
	if vol.Spec.Source == nil || vol.Spec.Source.Volume == "" || vol.Restoring() {
		return nil
	}
	snap := &flintv1.Snapshot{ObjectMeta: metav1.ObjectMeta{Name: vol.CloneSnapshotName()}}
	if err := r.Get(ctx, client.ObjectKeyFromObject(snap), snap); err != nil || !snap.DeletionTimestamp.IsZero() {
		return client.IgnoreNotFound(err)
	}
	if err := r.Delete(ctx, snap); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.Recorder.Eventf(vol, snap, corev1.EventTypeNormal, flintv1.EventCloneSnapshotReleased, "Restore", "the replicas of this copy of Volume %s are cloned: Snapshot %s, taken for it, is deleted", vol.Spec.Source.Volume, snap.Name)
	return nil
}
