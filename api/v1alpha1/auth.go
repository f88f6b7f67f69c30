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

package v1alpha1

// The Secrets of the operator's namespace that hold DH-HMAC-CHAP keys
// (docs/security.md), each with two entries: the secret the connecting
// side proves, and the one the exporting side proves back.
const (
	// SecretKeyDHCHAP is the secret the connecting side proves.
	SecretKeyDHCHAP = "dhchap-secret"
	// SecretKeyDHCHAPCtrl is the secret the exporting side proves.
	SecretKeyDHCHAPCtrl = "dhchap-ctrl-secret"
)

// HostAuthSecretName is the Secret holding the keys hosts and the target
// of Volume volume authenticate with, when it asks for it
// (spec.hostAuthentication): the StorageClass's node-stage secret.
func HostAuthSecretName(volume string) string { return "flint-host-auth-" + volume }

// ReplicaAuthSecretName is the Secret holding the keys every replica link
// of Pool pool authenticates with: a target to the replicas' exports.
func ReplicaAuthSecretName(pool string) string { return "flint-replica-auth-" + pool }

// AuthenticatesHosts says whether v's hosts must prove its host secret.
func (v *Volume) AuthenticatesHosts() bool {
	return v.Spec.HostAuthentication == HostAuthenticationDHHMACCHAP
}
