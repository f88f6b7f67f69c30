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
	"context"
	"testing"
	"time"

	"github.com/flint-io/flint/internal/spdk/client"
	"github.com/flint-io/flint/internal/spdk/spdktest"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// Whatever SPDK answers (here: the same answer to every call), the agent's
// storage operations end with a result or an error and never index past
// what the answer holds.
func FuzzSPDKAnswers(f *testing.F) {
	for _, a := range spdktest.TranscriptAnswers(f) {
		f.Add(a)
	}
	f.Add([]byte(`"result":[{}]}`))
	f.Add([]byte(`"result":[{"name":"raid_v","base_bdevs_list":[{"name":null}],"process":{}}]}`))
	f.Add([]byte(`"result":[{"nqn":"nqn.2026-01.io.flint:volume:v","namespaces":[],"listen_addresses":[{}]}]}`))
	f.Fuzz(func(t *testing.T, tail []byte) {
		spdk := client.New(spdktest.AnsweringOnce(t, func(string) []byte { return tail }))
		defer func() { _ = spdk.Close() }()
		o := New(Config{UID: "osd-0", Device: Device{Driver: DriverAIO, Path: "/dev/null"}, Listener: Listener{Transport: "tcp", Address: "127.0.0.1", Port: 4420}}, spdk)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		remote := MemberSpec{OSD: "osd-1", InSync: true, Export: Subsystem{NQN: agentv1.ReplicaNQN("v", "5b4bcc9c-597c-415c-b21a-8820464ec253"), Transport: "tcp", Address: "127.0.0.2", Port: 4420}}
		_, _ = o.Inventory(ctx)
		_, _ = o.DegradedTargets(ctx)
		_, _ = o.CreateReplica(ctx, "v", 1<<20)
		_, _ = o.ExportReplica(ctx, "v", agentv1.HostNQN("osd-1"), 1, Keys{})
		_, _ = o.EnsureTarget(ctx, TargetSpec{Volume: "v", Epoch: 1, Members: []MemberSpec{{OSD: "osd-0", InSync: true}, remote}, Hosts: []string{"nqn.2014-08.org.nvmexpress:uuid:1f3c5e7a-9b2d-4f6e-8a1c-3e5d7f9b1a2c"}})
		_, _ = o.DeleteTarget(ctx, "v", []string{"osd-0", "osd-1"}, []string{"osd-1"})
		_ = o.DeleteReplica(ctx, "v")
	})
}
