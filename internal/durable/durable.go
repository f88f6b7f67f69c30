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

// Package durable writes the small files whose loss or tearing would
// change a decision: a lease's expiry, a replica's export epochs, a staged
// volume's state.
package durable

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
)

// WriteFile replaces path with data atomically and durably: the new file
// is synced before it is renamed into place and the directory after, so a
// crash leaves the old content or the new one, never a torn or empty file.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	if err := writeSynced(tmp, data, perm); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// WriteJSON replaces path with v as JSON, through WriteFile.
func WriteJSON(path string, v any, perm os.FileMode) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return WriteFile(path, b, perm)
}

// ReadJSON reads the JSON in path into v; it reports false, and leaves v
// as it is, when there is no such file.
func ReadJSON(path string, v any) (bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, json.Unmarshal(b, v)
}

// SyncDir makes the entries of dir (a rename, a removal) durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	return d.Sync()
}

func writeSynced(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close() // the write failed first: that is the error
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close() // the sync failed first: that is the error
		return err
	}
	return f.Close()
}
