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

package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/internal/bench"
	"github.com/flint-io/flint/test/localcluster"
)

// qosTolerance is how far from its IOPS limit a limited Volume may run
// under a load that exceeds it.
const qosTolerance = 0.05

// qosJob loads a limited Volume beyond its limit: 4 KiB random writes at
// QD32, the job flint-bench calls 4k-randwrite-qd32.
var qosJob = bench.Jobs[2]

// measureQoS runs qosJob on a Volume of n replicas, unlimited, then with
// spec.qos.iops at limit (through the operator and the target's agent,
// as a VolumeAttributesClass sets it), and says whether the limited rate
// is within qosTolerance of the limit.
func measureQoS(ctx context.Context, c *localcluster.Cluster, perf string, runtime time.Duration, n int, limit int64) error {
	config := fmt.Sprintf("flint-%d", n)
	pool, vol, ep, place, err := startFlint(ctx, c, config, n)
	if err != nil {
		return err
	}
	free, err := runPerf(ctx, perf, config, ep, qosJob, runtime, place.initiator)
	if err != nil {
		return err
	}
	if err := limitVolume(ctx, c, vol, &flintv1.VolumeQoS{IOPS: limit}); err != nil {
		return err
	}
	limited, err := runPerf(ctx, perf, config, ep, qosJob, runtime, place.initiator)
	if err != nil {
		return err
	}
	off := limited.IOPS/float64(limit) - 1
	fmt.Printf("\nQoS, %s, %s for %s: unlimited %.0f IOPS; limited to %d IOPS: %.0f IOPS (%+.1f%%, p99 %.0f us)\n",
		config, qosJob.Name, runtime, free.IOPS, limit, limited.IOPS, 100*off, limited.P99Us)
	if err := deleteAndWait(ctx, c, vol, pool); err != nil {
		return err
	}
	switch {
	case free.IOPS < float64(limit)*(1+2*qosTolerance):
		return fmt.Errorf("unlimited, the Volume did %.0f IOPS: too close to the %d IOPS limit to show it; ask for a lower -qos", free.IOPS, limit)
	case math.Abs(off) > qosTolerance:
		return fmt.Errorf("the limited Volume did %.0f IOPS, %+.1f%% off its %d IOPS limit (goal: within %.0f%%)", limited.IOPS, 100*off, limit, 100*qosTolerance)
	}
	fmt.Printf("within %.0f%% of the limit: yes\n", 100*qosTolerance)
	return nil
}

// limitVolume sets vol's limits and waits until its target enforces them.
func limitVolume(ctx context.Context, c *localcluster.Cluster, vol *flintv1.Volume, q *flintv1.VolumeQoS) error {
	patch := client.MergeFrom(vol.DeepCopy())
	vol.Spec.QoS = q
	if err := c.Client.Patch(ctx, vol, patch); err != nil {
		return err
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(vol), vol); err != nil {
			return false, err
		}
		return vol.Status.Target != nil && equality.Semantic.DeepEqual(vol.Status.Target.QoS, q), nil
	})
	if err != nil {
		return fmt.Errorf("the target of %s does not enforce %+v after a minute (it reports %+v): %w", vol.Name, *q, vol.Status.Target, err)
	}
	return nil
}
