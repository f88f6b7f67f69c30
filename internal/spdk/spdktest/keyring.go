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

package spdktest

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"syscall"

	"github.com/flint-io/flint/internal/fabric"
	"github.com/flint-io/flint/internal/spdk/jsonrpc"
)

// key is a file key of the keyring, as keyring_file keeps it: a name and
// a path, the file read at every use. holders counts the hosts and
// controllers that hold it; a removed key lives on, unusable, while held.
type key struct {
	name, path string
	removed    bool
	holders    int
}

// secret reads k's file as SPDK does at an authentication; a removed
// key, a file gone or opened to others, or a secret SPDK cannot parse
// yields nothing.
func (k *key) secret() (string, bool) {
	if k == nil || k.removed || checkKeyFile(k.path) != nil {
		return "", false
	}
	b, err := os.ReadFile(k.path)
	if err != nil {
		return "", false
	}
	s := string(bytes.TrimRight(b, "\n"))
	return s, fabric.ValidateSecret(s) == nil
}

// sameSecret is whether two keys hold the same usable secret: what a
// DH-HMAC-CHAP exchange between their holders proves.
func sameSecret(a, b *key) bool {
	sa, okA := a.secret()
	sb, okB := b.secret()
	return okA && okB && sa == sb
}

// checkKeyFile is keyring_file's check: an absolute path to a file of
// this process's user that group and others cannot reach.
func checkKeyFile(path string) *rpcError {
	if len(path) == 0 || path[0] != '/' {
		return errf(jsonrpc.CodeNotPermitted, "Operation not permitted")
	}
	fi, err := os.Stat(path)
	if err != nil {
		return errf(jsonrpc.CodeNoEntry, "No such file or directory")
	}
	if fi.Mode().Perm()&0o077 != 0 || !ownedBySelf(fi) {
		return errf(jsonrpc.CodeNotPermitted, "Operation not permitted")
	}
	return nil
}

func ownedBySelf(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// keyIndex is where the keyring holds the key of name; -1 when it does
// not.
func (st *state) keyIndex(name string) int {
	return slices.IndexFunc(st.keys, func(k *key) bool { return k.name == name })
}

// hold takes a reference to the key of name for a host or controller;
// an empty name is no key.
func (st *state) hold(name string) (*key, bool) {
	if name == "" {
		return nil, true
	}
	i := st.keyIndex(name)
	if i < 0 {
		return nil, false
	}
	st.keys[i].holders++
	return st.keys[i], true
}

// holdKeys holds the named host and controller keys; a name the keyring
// lacks is missing, the error the RPC answers for it.
func (st *state) holdKeys(keyName, ctrlrKeyName string, missing *rpcError) (*key, *key, error) {
	key, found := st.hold(keyName)
	if !found {
		return nil, nil, missing
	}
	ctrlrKey, found := st.hold(ctrlrKeyName)
	if !found {
		st.release(key)
		return nil, nil, missing
	}
	return key, ctrlrKey, nil
}

// release drops a holder's reference: a removed key goes with its last.
func (st *state) release(keys ...*key) {
	for _, k := range keys {
		if k != nil {
			k.holders--
		}
	}
}

func keyringFileAddKey(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		Name string `json:"name"`
		Path string `json:"path"`
	}
	if err := decode(p, &req, errf(jsonrpc.CodeInvalidParams, "Invalid argument"), "name", "path"); err != nil {
		return nil, err
	}
	if t.st.keyIndex(req.Name) >= 0 {
		return nil, errf(jsonrpc.CodeExists, "File exists")
	}
	if err := checkKeyFile(req.Path); err != nil {
		return nil, err
	}
	t.st.keys = append(t.st.keys, &key{name: req.Name, path: req.Path})
	return true, nil
}

func keyringFileRemoveKey(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		Name string `json:"name"`
	}
	if err := decode(p, &req, errf(jsonrpc.CodeInvalidParams, "Invalid argument"), "name"); err != nil {
		return nil, err
	}
	i := t.st.keyIndex(req.Name)
	if i < 0 {
		return nil, errf(jsonrpc.CodeNoKey, "Required key not available")
	}
	t.st.keys[i].removed = true
	t.st.removedKeys = append(t.st.removedKeys, t.st.keys[i])
	t.st.keys = slices.Delete(t.st.keys, i, i+1)
	return true, nil
}

// keyringGetKeys lists the keys, and the removed ones still held.
func keyringGetKeys(t *Target, _ json.RawMessage) (any, error) {
	t.st.removedKeys = slices.DeleteFunc(t.st.removedKeys, func(k *key) bool { return k.holders <= 0 })
	out := []map[string]any{}
	for _, k := range slices.Concat(t.st.keys, t.st.removedKeys) {
		m := map[string]any{"name": k.name, "module": "keyring_file", "removed": k.removed, "probed": false, "refcnt": k.holders + 1}
		if k.removed {
			m["refcnt"] = k.holders
		} else {
			m["path"] = k.path
		}
		out = append(out, m)
	}
	return out, nil
}
