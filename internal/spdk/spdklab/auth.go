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

package spdklab

import (
	"context"
	"fmt"

	"github.com/flint-io/flint/internal/spdk/client"
)

// QueuesAuthenticated checks, on real SPDK c, that every queue hosts hold
// on subsystem nqn (an admin queue and I/O queues) completed DH-HMAC-CHAP
// with dhgroup, and says how many did, with which digest.
func QueuesAuthenticated(ctx context.Context, c *client.Client, nqn, dhgroup string) (string, error) {
	qpairs, err := c.NvmfSubsystemGetQpairs(ctx, nqn)
	if err != nil {
		return "", fmt.Errorf("list the queues on %s: %w", nqn, err)
	}
	if len(qpairs) < 2 {
		return "", fmt.Errorf("hosts hold %d queues on %s, want an admin queue and I/O queues", len(qpairs), nqn)
	}
	for _, q := range qpairs {
		if q.Auth == nil || q.Auth.State != "completed" || q.Auth.DHGroup != dhgroup {
			return "", fmt.Errorf("queue %d of %s authenticated %+v, want completed with %s", q.Qid, nqn, q.Auth, dhgroup)
		}
	}
	return fmt.Sprintf("%d queues authenticated with %s and %s", len(qpairs), qpairs[0].Auth.Digest, dhgroup), nil
}
