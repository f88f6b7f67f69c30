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
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const fuzzNQN = "nqn.2026-01.io.flint:volume:0c7e1d2a-5b3f-4e6d-9a8c-1b2c3d4e5f60"

// Whatever a publish context holds, the node either refuses it with
// InvalidArgument or gets a target every connect-string field of which is
// checked: no option can be smuggled into the write to /dev/nvme-fabrics.
func FuzzPublishContext(f *testing.F) {
	f.Add(fuzzNQN, "tcp", "10.0.0.5:4420")
	f.Add(fuzzNQN, "rdma", "10.0.0.5:4420,[fd00::1]:4421")
	f.Add(fuzzNQN+",hostnqn=nqn.evil", "tcp", "10.0.0.5:4420")
	f.Add(fuzzNQN, "tcp,traddr=10.9.9.9", "10.0.0.5:4420")
	f.Add(fuzzNQN, "tcp", "10.0.0.5:4420,trsvcid=1")
	f.Add(fuzzNQN, "tcp", "10.0.0.5:99999")
	f.Fuzz(func(t *testing.T, nqn, transport, paths string) {
		target, err := targetFromContext("vol", map[string]string{PublishNQN: nqn, PublishTransport: transport, PublishPaths: paths})
		if err != nil {
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("refusal %v is not InvalidArgument", err)
			}
			return
		}
		if err := target.Validate(); err != nil {
			t.Fatalf("accepted a target that does not validate: %+v: %v", target, err)
		}
		for _, p := range target.Paths {
			for _, field := range []string{target.NQN, p.Transport, p.Address} {
				if strings.ContainsAny(field, ",=\n") {
					t.Fatalf("a connect-string field carries a separator: %q", field)
				}
			}
		}
	})
}

// StorageClass parameters are taken only as documented: a pool, replicas
// 1-5, a known fsType, and the provisioner's own keys.
func FuzzParameters(f *testing.F) {
	f.Add("pool-a", "3", "ext4", "csi.storage.k8s.io/fstype", "xfs")
	f.Add("", "0", "btrfs", "color", "blue")
	f.Add("p", "+5", "xfs", "replicas ", "9223372036854775808")
	f.Fuzz(func(t *testing.T, pool, replicas, fsType, key, value string) {
		in := map[string]string{ParamPool: pool, ParamReplicas: replicas, ParamFsType: fsType, key: value}
		p, err := parseParameters(in)
		if err != nil {
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("refusal %v is not InvalidArgument", err)
			}
			return
		}
		if p.pool == "" || p.replicas == nil || *p.replicas < 1 || *p.replicas > 5 || (p.fsType != "ext4" && p.fsType != "xfs") {
			t.Fatalf("accepted %v as %+v", in, p)
		}
	})
}

// A capacity range gives a size in whole MiB within the range and the
// largest volume, or a refusal that says which bound was broken.
func FuzzSize(f *testing.F) {
	f.Add(int64(0), int64(0))
	f.Add(int64(1), int64(0))
	f.Add(int64(1<<30), int64(1<<30))
	f.Add(int64(9223372036854775807), int64(0))
	f.Add(int64(MaxVolumeBytes), int64(0))
	f.Add(int64(0), int64(512))
	f.Fuzz(func(t *testing.T, required, limit int64) {
		size, err := sizeFor(&csi.CapacityRange{RequiredBytes: required, LimitBytes: limit}, 0)
		if err != nil {
			if c := status.Code(err); c != codes.InvalidArgument && c != codes.OutOfRange {
				t.Fatalf("refusal %v is neither InvalidArgument nor OutOfRange", err)
			}
			return
		}
		if size < mib || size%mib != 0 || size < required || size > MaxVolumeBytes || (limit > 0 && size > limit) {
			t.Fatalf("required %d, limit %d gave %d bytes", required, limit, size)
		}
	})
}

// A node state file, whatever it holds (a torn write, an edit by hand), is
// refused or gives a state with a valid target that survives being saved
// and read again.
func FuzzNodeState(f *testing.F) {
	f.Add([]byte(`{"target":{"volumeID":"vol","nqn":"` + fuzzNQN + `","paths":[{"transport":"tcp","address":"10.0.0.5","port":4420}]},"device":"/dev/nvme0n1","stagingPath":"/staging","published":{"/pub":{"readOnly":true}}}`))
	f.Add([]byte(`{"target":{"nqn":"nqn.x,hostnqn=evil","paths":[]}}`))
	f.Add([]byte(`{"target":{"nqn":"` + fuzzNQN + `","paths":[{"transport":"tcp","address":"10.0.0.5","port":-1}]}}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := stateStore{dir: t.TempDir()}
		if err := os.WriteFile(s.path("vol"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		v, err := s.load("vol")
		if err != nil {
			return
		}
		if err := v.Target.Validate(); err != nil {
			t.Fatalf("loaded a target that does not validate: %+v", v.Target)
		}
		if err := s.save(v); err != nil {
			t.Fatal(err)
		}
		// Compared as written: an empty map and none are the same state.
		again, err := s.load("vol")
		want, _ := json.Marshal(v)
		got, _ := json.Marshal(again)
		if err != nil || string(got) != string(want) {
			t.Fatalf("saved and read again: %s, %v; want %s", got, err, want)
		}
	})
}
