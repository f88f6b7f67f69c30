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
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/flint-io/flint/internal/durable"
)

// stagedVolume is what the node service knows of a volume it staged,
// persisted so that a restarted plugin can unstage, expand, report and
// follow it.
type stagedVolume struct {
	Target      Target `json:"target"`
	Device      string `json:"device"`
	StagingPath string `json:"stagingPath"`
	Block       bool   `json:"block"`
	FsType      string `json:"fsType,omitempty"`
	// Published are the target paths the volume is published at.
	Published map[string]publication `json:"published,omitempty"`
}

type publication struct {
	ReadOnly bool `json:"readOnly"`
	// SingleWriter: published with SINGLE_NODE_SINGLE_WRITER (RWOP), so
	// no other target path may be added.
	SingleWriter bool `json:"singleWriter"`
}

// stateStore keeps one JSON file per staged volume.
type stateStore struct{ dir string }

func (s stateStore) path(id string) string { return filepath.Join(s.dir, url.PathEscape(id)+".json") }

// load returns the volume's state, or nil when it is not staged here.
func (s stateStore) load(id string) (*stagedVolume, error) {
	b, err := os.ReadFile(s.path(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	v := &stagedVolume{}
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("read the node state of volume %s (%s): %w", id, s.path(id), err)
	}
	// The node connects from what the file says: never from what the
	// publish context would have been refused for.
	if err := v.Target.Validate(); err != nil {
		return nil, fmt.Errorf("the node state of volume %s (%s) names a target no connect string may be made from: %w; remove the file and stage the volume again", id, s.path(id), err)
	}
	return v, nil
}

// save replaces the volume's state atomically and durably: the new file
// is synced before it is renamed into place and the directory after, so a
// node crash leaves the old state or the new one, never an empty file.
func (s stateStore) save(v *stagedVolume) error {
	if err := os.MkdirAll(s.dir, 0o750); err != nil {
		return err
	}
	return durable.WriteJSON(s.path(v.Target.VolumeID), v, 0o600)
}

func (s stateStore) remove(id string) error {
	if err := os.Remove(s.path(id)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	return durable.SyncDir(s.dir)
}

// ids lists the volumes staged here.
func (s stateStore) ids() ([]string, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		if id, err := url.PathUnescape(name); err == nil {
			ids = append(ids, id)
		}
	}
	return ids, nil
}
