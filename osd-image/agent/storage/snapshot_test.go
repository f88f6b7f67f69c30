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

package storage

import (
	"context"
	"errors"
	"testing"

	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

func TestSnapshotsAndClones(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	o := r.osd(osdUID, r.file("dev", gib), Tuning{})
	if _, err := o.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"pvc-1", "pvc-2"} {
		if _, err := o.CreateReplica(ctx, v, 64<<20); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		op      func() error
		wantErr error
	}{
		{"snapshot", func() error { _, err := o.CreateSnapshot(ctx, "pvc-1", "snap-1"); return err }, nil},
		{"snapshot again", func() error { _, err := o.CreateSnapshot(ctx, "pvc-1", "snap-1"); return err }, nil},
		{"a later snapshot", func() error { _, err := o.CreateSnapshot(ctx, "pvc-1", "snap-2"); return err }, nil},
		{"the first snapshot again, now deeper in history", func() error { _, err := o.CreateSnapshot(ctx, "pvc-1", "snap-1"); return err }, nil},
		{"same name, other volume", func() error { _, err := o.CreateSnapshot(ctx, "pvc-2", "snap-1"); return err }, ErrConflict},
		{"a replica's name", func() error { _, err := o.CreateSnapshot(ctx, "pvc-1", "pvc-2"); return err }, ErrConflict},
		{"of a missing volume", func() error { _, err := o.CreateSnapshot(ctx, "pvc-9", "snap-9"); return err }, ErrNotFound},
		{"with a bad name", func() error { _, err := o.CreateSnapshot(ctx, "pvc-1", "Snap_1"); return err }, ErrInvalid},
		{"clone", func() error { _, err := o.CloneSnapshot(ctx, "snap-1", "pvc-3"); return err }, nil},
		{"clone again", func() error { _, err := o.CloneSnapshot(ctx, "snap-1", "pvc-3"); return err }, nil},
		{"clone onto an existing replica", func() error { _, err := o.CloneSnapshot(ctx, "snap-1", "pvc-2"); return err }, ErrConflict},
		{"clone a replica", func() error { _, err := o.CloneSnapshot(ctx, "pvc-2", "pvc-4"); return err }, ErrInvalid},
		{"clone a missing snapshot", func() error { _, err := o.CloneSnapshot(ctx, "snap-9", "pvc-4"); return err }, ErrNotFound},
		{"a second clone", func() error { _, err := o.CloneSnapshot(ctx, "snap-1", "pvc-4"); return err }, nil},
		{"delete a snapshot with two clones", func() error { return o.DeleteSnapshot(ctx, "snap-1") }, ErrInUse},
		{"delete a replica as a snapshot", func() error { return o.DeleteSnapshot(ctx, "pvc-2") }, ErrInvalid},
		{"delete one clone", func() error { return o.DeleteReplica(ctx, "pvc-4") }, nil},
		{"delete a snapshot still cloned by a replica and a snapshot", func() error { return o.DeleteSnapshot(ctx, "snap-1") }, ErrInUse},
		{"delete the latest snapshot into its volume", func() error { return o.DeleteSnapshot(ctx, "snap-2") }, nil},
		{"delete it again", func() error { return o.DeleteSnapshot(ctx, "snap-2") }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.op()
			if (tt.wantErr == nil && err != nil) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
	if _, err := o.CreateSnapshot(ctx, "pvc-1", "snap-1"); err != nil {
		t.Errorf("snap-1 left pvc-1's history when snap-2 merged: %v", err)
	}
	s, err := o.CreateSnapshot(ctx, "pvc-1", "snap-2")
	if err != nil || s.SizeBytes != 64<<20 || s.Lvol != agentv1.LvstoreName(osdUID)+"/snap-2" {
		t.Errorf("snapshot: %+v, %v", s, err)
	}
}
