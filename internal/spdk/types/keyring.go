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

package types

// KeyringFileAddKeyRequest registers a key kept in a file. SPDK checks the
// file when the key is added (an absolute path, owned by SPDK's user,
// no access for group or others) and reads it on every use: rewriting
// the file changes the key for every authentication after it.
type KeyringFileAddKeyRequest struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// Key is one key of SPDK's keyring.
type Key struct {
	Name   string `json:"name"`
	Module string `json:"module"`
	// Removed is set once the key was removed while something still
	// holds it; such a key is listed only while held.
	Removed bool `json:"removed"`
	Probed  bool `json:"probed"`
	// Refcnt counts the keyring's own reference and every holder.
	Refcnt int32 `json:"refcnt"`
	// Path is a file key's file.
	Path string `json:"path,omitempty"`
}
