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
	"math"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestSizeFor(t *testing.T) {
	tests := []struct {
		name            string
		required, limit int64
		want            int64
		code            codes.Code
	}{
		{"default", 0, 0, 1 << 30, codes.OK},
		{"default capped by the limit", 0, 16 << 20, 16 << 20, codes.OK},
		{"rounded up to a MiB", 1, 0, 1 << 20, codes.OK},
		{"whole MiB kept", 5 << 20, 0, 5 << 20, codes.OK},
		{"rounding passes the limit", (5 << 20) + 1, (5 << 20) + 2, 0, codes.OutOfRange},
		{"required above limit", 10 << 20, 5 << 20, 0, codes.InvalidArgument},
		{"negative", -1, 0, 0, codes.InvalidArgument},
		{"the largest volume", MaxVolumeBytes, 0, MaxVolumeBytes, codes.OK},
		{"past the largest volume", MaxVolumeBytes + 1, 0, 0, codes.OutOfRange},
		// Rounding MaxInt64 up to a MiB overflowed into a 1 MiB volume.
		{"near MaxInt64", math.MaxInt64 - 5, 0, 0, codes.OutOfRange},
		{"MaxInt64 with a limit", math.MaxInt64, math.MaxInt64, 0, codes.OutOfRange},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sizeFor(&csi.CapacityRange{RequiredBytes: tc.required, LimitBytes: tc.limit})
			if status.Code(err) != tc.code || got != tc.want {
				t.Fatalf("sizeFor(%d, %d) = %d, %v; want %d, %s", tc.required, tc.limit, got, err, tc.want, tc.code)
			}
		})
	}
}
