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

package fabric

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestNewSecretsAreValidAndDistinct(t *testing.T) {
	a, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatalf("two secrets are the same: %s", a)
	}
	for _, s := range []string{a, b} {
		if err := ValidateSecret(s); err != nil {
			t.Errorf("ValidateSecret(%q) = %v", s, err)
		}
	}
}

func TestValidateSecretRefuses(t *testing.T) {
	good, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	key := good[len("DHHC-1:00:") : len(good)-1]
	raw, _ := base64.StdEncoding.DecodeString(key)
	raw[0] ^= 0xff // the checksum no longer matches
	for name, s := range map[string]string{
		"empty":            "",
		"another prefix":   "DHHC-2:00:" + key + ":",
		"transform 04":     "DHHC-1:04:" + key + ":",
		"no closing colon": "DHHC-1:00:" + key,
		"not base64":       "DHHC-1:00:" + strings.Repeat("!", 48) + ":",
		"short key":        "DHHC-1:00:" + base64.StdEncoding.EncodeToString(raw[:20]) + ":",
		"bad checksum":     "DHHC-1:00:" + base64.StdEncoding.EncodeToString(raw) + ":",
		"a connect option": good + ",hostnqn=nqn.x:",
	} {
		if err := ValidateSecret(s); err == nil {
			t.Errorf("%s: ValidateSecret(%q) accepted it", name, s)
		}
	}
}
