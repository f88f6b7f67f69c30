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

// Package dhchap keeps the Secrets that hold the DH-HMAC-CHAP keys of
// NVMe-oF links (docs/security.md): made once with fresh secrets, owned by
// what they authenticate, and read into the keys an agent call carries.
// A Secret that exists is never rewritten: a person may have rotated it.
package dhchap

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/internal/fabric"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// Ensure returns the keys of the Secret key names, making it first, with
// fresh secrets and owner as its controller, when it does not exist.
func Ensure(ctx context.Context, c client.Client, scheme *runtime.Scheme, key client.ObjectKey, owner client.Object, labels map[string]string) (*agentv1.DhchapKeys, error) {
	var s corev1.Secret
	err := c.Get(ctx, key, &s)
	if apierrors.IsNotFound(err) {
		s, err = create(ctx, c, scheme, key, owner, labels)
	}
	if err != nil {
		return nil, fmt.Errorf("the DH-HMAC-CHAP Secret %s: %w", key, err)
	}
	return Read(&s)
}

func create(ctx context.Context, c client.Client, scheme *runtime.Scheme, key client.ObjectKey, owner client.Object, labels map[string]string) (corev1.Secret, error) {
	s := corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Labels: labels}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{}}
	for _, k := range []string{flintv1.SecretKeyDHCHAP, flintv1.SecretKeyDHCHAPCtrl} {
		secret, err := fabric.NewSecret()
		if err != nil {
			return s, err
		}
		s.Data[k] = []byte(secret)
	}
	if err := controllerutil.SetControllerReference(owner, &s, scheme); err != nil {
		return s, err
	}
	err := c.Create(ctx, &s)
	if apierrors.IsAlreadyExists(err) {
		// Made by an earlier pass the cache has not shown yet: take
		// that one, never a second set of keys.
		err = c.Get(ctx, key, &s)
	}
	return s, err
}

// Read returns the keys Secret s holds, checked: what an agent is sent
// goes into SPDK's keyring.
func Read(s *corev1.Secret) (*agentv1.DhchapKeys, error) {
	keys := &agentv1.DhchapKeys{Secret: string(s.Data[flintv1.SecretKeyDHCHAP]), CtrlSecret: string(s.Data[flintv1.SecretKeyDHCHAPCtrl])}
	for k, v := range map[string]string{flintv1.SecretKeyDHCHAP: keys.Secret, flintv1.SecretKeyDHCHAPCtrl: keys.CtrlSecret} {
		if err := fabric.ValidateSecret(v); err != nil {
			return nil, fmt.Errorf("the DH-HMAC-CHAP Secret %s/%s, entry %s: %w; put a valid secret there (nvme gen-dhchap-key makes one)", s.Namespace, s.Name, k, err)
		}
	}
	return keys, nil
}
