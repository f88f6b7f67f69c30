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
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/flint-io/flint/internal/durable"
	"github.com/flint-io/flint/internal/fabric"
	"github.com/flint-io/flint/internal/spdk/jsonrpc"
)

// Keys are the DH-HMAC-CHAP secrets of a link (NVMe in-band
// authentication): the connecting side proves Secret, and the exporting
// side proves CtrlSecret back when it is set. Zero Keys authenticate
// nothing.
type Keys struct {
	Secret, CtrlSecret string
}

func (k Keys) enabled() bool { return k.Secret != "" }

// A volume's links, each with its own keys in SPDK's keyring: its replica
// exported to the target, the target attaching a remote replica, and
// the hosts connecting to the target.
const (
	linkExport = "export"
	linkMember = "member"
	linkHost   = "host"
)

// keyNames are the keyring names of a link's keys; empty when the link
// does not authenticate.
type keyNames struct{ key, ctrlr string }

func keyNamesOf(volume, link string, k Keys) keyNames {
	var n keyNames
	if k.Secret != "" {
		n.key = keyName(volume, link, "key")
	}
	if k.CtrlSecret != "" {
		n.ctrlr = keyName(volume, link, "ctrl")
	}
	return n
}

// keyName names one key of volume's link, in the keyring and as a file
// of the key directory.
func keyName(volume, link, which string) string { return volume + "." + link + "." + which }

// ensureKeys puts k where SPDK authenticates volume's link with it: each
// secret in a file of the key directory that only SPDK's user reads, and
// registered in the keyring under the link's names. SPDK reads a file
// key at every authentication, so a secret that changed is a rewrite of
// its file: connected peers stay, the next connection needs the new one.
// What was written and registered since SPDK's start is remembered, so
// that a re-drive costs neither a file read nor an RPC.
func (e *Engine) ensureKeys(ctx context.Context, volume, link string, k Keys) (keyNames, error) {
	names := keyNamesOf(volume, link, k)
	if !k.enabled() {
		if k.CtrlSecret != "" {
			return keyNames{}, fmt.Errorf("%w: volume %s: a controller secret needs a host secret", ErrInvalid, volume)
		}
		return names, nil
	}
	if e.cfg.KeyDir == "" {
		return keyNames{}, fmt.Errorf("%w: volume %s asks for DH-HMAC-CHAP, and this agent has no key directory (--key-dir)", ErrInvalid, volume)
	}
	for _, key := range []struct{ name, secret string }{{names.key, k.Secret}, {names.ctrlr, k.CtrlSecret}} {
		if key.name == "" {
			continue
		}
		if err := fabric.ValidateSecret(key.secret); err != nil {
			return keyNames{}, fmt.Errorf("%w: volume %s, key %s: %v", ErrInvalid, volume, key.name, err)
		}
		if err := e.ensureKey(ctx, key.name, key.secret); err != nil {
			return keyNames{}, err
		}
	}
	return names, nil
}

func (e *Engine) ensureKey(ctx context.Context, name, secret string) error {
	e.mu.Lock()
	known := e.keys[name] == secret
	e.mu.Unlock()
	if known {
		return nil
	}
	path := filepath.Join(e.cfg.KeyDir, name)
	if err := writeKeyFile(path, secret); err != nil {
		return err
	}
	if err := e.spdk.KeyringFileAddKey(ctx, name, path); err != nil && !errors.Is(err, jsonrpc.ErrExists) {
		return fmt.Errorf("register key %s: %w", name, err)
	}
	e.mu.Lock()
	e.keys[name] = secret
	e.mu.Unlock()
	return nil
}

// writeKeyFile makes path hold secret, unless it does: replaced
// atomically, so that SPDK reads the old secret or the new one, never
// part of either.
func writeKeyFile(path, secret string) error {
	if b, err := os.ReadFile(path); err == nil && bytes.Equal(b, []byte(secret)) {
		return nil
	}
	if err := durable.WriteFile(path, []byte(secret), 0o600); err != nil {
		return fmt.Errorf("write key file: %w", err)
	}
	return nil
}

// forgetKeys removes volume's link keys from the keyring and their files;
// keys that are not there are success. Whatever still holds one (a
// controller being torn down) keeps it until it lets go.
func (e *Engine) forgetKeys(ctx context.Context, volume, link string) error {
	if e.cfg.KeyDir == "" {
		return nil
	}
	for _, name := range []string{keyName(volume, link, "key"), keyName(volume, link, "ctrl")} {
		e.mu.Lock()
		_, known := e.keys[name]
		delete(e.keys, name)
		e.mu.Unlock()
		path := filepath.Join(e.cfg.KeyDir, name)
		// Without its file, a key was never registered by this agent, or
		// was removed already: no RPC for the common case of no key.
		if _, err := os.Stat(path); !known && errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := e.spdk.KeyringFileRemoveKey(ctx, name); err != nil && !errors.Is(err, jsonrpc.ErrNotFound) {
			return fmt.Errorf("remove key %s: %w", name, err)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove key file: %w", err)
		}
	}
	return nil
}

// forgetRegisteredKeys is for a new SPDK: its keyring starts empty.
func (e *Engine) forgetRegisteredKeys() {
	e.mu.Lock()
	clear(e.keys)
	e.mu.Unlock()
}
