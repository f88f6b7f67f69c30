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

package certs

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// The client configuration is built once for the Secrets as they are,
// and again when the client certificate is due for renewal or the CA is
// replaced.
func TestClientTLSIsBuiltAgainOnlyWhenItsSecretsChange(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	a := &Authority{Client: fake.NewClientBuilder().WithScheme(scheme).Build(), Namespace: "flint-system", Now: func() time.Time { return clock }}
	ctx := context.Background()
	client := func() []byte {
		t.Helper()
		cfg, err := a.ClientTLS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Certificates[0].Certificate[0]
	}
	first, err := a.ClientTLS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := a.ClientTLS(ctx); again != first {
		t.Fatal("an unchanged pair of Secrets built a new configuration")
	}

	clock = clock.Add(leafValidity * 2 / 3)
	renewed := client()
	if string(renewed) == string(first.Certificates[0].Certificate[0]) {
		t.Fatal("a client certificate due for renewal was kept")
	}

	if err := a.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flint-system", Name: CASecret}}); err != nil {
		t.Fatal(err)
	}
	if string(client()) == string(renewed) {
		t.Fatal("a new CA kept the client certificate of the old one")
	}
}
