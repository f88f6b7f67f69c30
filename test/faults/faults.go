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

package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/osd"
	"github.com/flint-io/flint/test/localcluster"
)

// kind is a kind of fault.
type kind int

const (
	killSPDK kind = iota
	stopSPDK
	killAgent
	stopAgent
	killLeader
	stopLeader
	partitionReplica
	partitionOperator
	partitionWriter
	kinds
)

func (k kind) String() string {
	return [...]string{
		"SIGKILL SPDK", "SIGSTOP SPDK", "SIGKILL agent", "SIGSTOP agent", "SIGKILL operator leader", "SIGSTOP operator leader",
		"partition replica from target", "partition operator from OSD", "partition writer from target",
	}[k]
}

// lasts says whether the fault is held for a while; a kill is over at once
// (the pod's supervisor starts the process again).
func (k kind) lasts() bool { return k != killSPDK && k != killAgent && k != killLeader }

// onOSD says whether it hits an OSD: the target's or a replica's.
func (k kind) onOSD() bool {
	return k == killSPDK || k == stopSPDK || k == killAgent || k == stopAgent || k == partitionOperator
}

// fault is one planned fault: all of it drawn from the seed, so a seed
// replays the same storm (its timing is the machine's).
type fault struct {
	kind kind
	// onTarget picks the target's OSD over a replica's; pick picks among
	// replicas.
	onTarget bool
	pick     int
	// after is when it starts in its round; hold how long it lasts.
	after, hold time.Duration
}

// plan draws the next round. Held faults mostly last 1–8 s; one in five
// outlasts longHold, the target grace, by 10–20 s, so that targets move,
// and carries three short faults that start within it: the long round
// hits while a part is already away, and the storm's time goes to faults,
// not to waiting. Any other round is one fault, or (one in two) two that
// overlap.
func plan(rng *rand.Rand, longHold time.Duration) []fault {
	first := drawFault(rng)
	long := first.kind.lasts() && rng.IntN(5) == 0
	if long {
		first.hold = longHold + 10*time.Second + randDuration(rng, 10*time.Second)
	}
	round := []fault{first}
	switch {
	case long:
		for range 3 {
			// Of another kind: the same kind could end it early (a
			// SIGCONT, an agent thawed).
			f := drawFault(rng)
			for f.kind == first.kind {
				f = drawFault(rng)
			}
			f.after = randDuration(rng, first.hold-f.hold)
			round = append(round, f)
		}
	case rng.IntN(2) == 0:
		f := drawFault(rng)
		f.after = randDuration(rng, max(first.hold, 3*time.Second))
		round = append(round, f)
	}
	return round
}

// drawFault draws a fault, held (if its kind lasts) for 1–8 s.
func drawFault(rng *rand.Rand) fault {
	f := fault{kind: kind(rng.IntN(int(kinds))), onTarget: rng.IntN(2) == 0, pick: rng.IntN(2)}
	if f.kind.lasts() {
		f.hold = time.Second + randDuration(rng, 7*time.Second)
	}
	return f
}

func randDuration(rng *rand.Rand, below time.Duration) time.Duration {
	return time.Duration(rng.Int64N(int64(below)))
}

// cluster is what faults act on.
type cluster struct {
	c   *localcluster.Cluster
	vol client.ObjectKey
}

// errNotNow says a fault found nothing to hit (no leader yet, a pod not
// running): it is skipped, not counted.
var errNotNow = errors.New("nothing to hit now")

// inject starts f and returns what heals it (nil for a kill) and what it
// hit.
func (s cluster) inject(ctx context.Context, f fault) (heal func(), hit string, err error) {
	switch f.kind {
	case killLeader, stopLeader:
		leader := s.c.Operators.Leader()
		if leader < 0 {
			return nil, "", fmt.Errorf("%w: no operator leads", errNotNow)
		}
		hit = fmt.Sprintf("operator %d", leader)
		if f.kind == killLeader {
			return nil, hit, s.c.Operators.Signal(leader, syscall.SIGKILL)
		}
		if err := s.c.Operators.Signal(leader, syscall.SIGSTOP); err != nil {
			return nil, hit, err
		}
		return func() { _ = s.c.Operators.Signal(leader, syscall.SIGCONT) }, hit, nil
	}
	var vol flintv1.Volume
	if err := s.c.Client.Get(ctx, s.vol, &vol); err != nil {
		return nil, "", err
	}
	if vol.Status.Target == nil {
		return nil, "", fmt.Errorf("%w: the Volume has no target", errNotNow)
	}
	target := vol.Status.Target.OSD
	var replicas []string
	for _, r := range vol.Status.Replicas {
		if r.OSD != target {
			replicas = append(replicas, r.OSD)
		}
	}
	if len(replicas) == 0 {
		return nil, "", fmt.Errorf("%w: the Volume has no replica beside its target's", errNotNow)
	}
	replica := replicas[f.pick%len(replicas)]
	osdName := replica
	if f.onTarget && f.kind.onOSD() {
		osdName = target
	}
	role := "replica"
	if osdName == target {
		role = "target"
	}
	podName := "osd-" + osdName
	hit = fmt.Sprintf("%s %s", role, osdName)
	switch f.kind {
	case killSPDK, stopSPDK:
		spdk, ok := s.c.Nodes.Target(podName).(signaler)
		if !ok {
			return nil, hit, fmt.Errorf("%w: pod %s's SPDK does not run", errNotNow, podName)
		}
		if f.kind == killSPDK {
			return nil, hit, spdk.Signal(syscall.SIGKILL)
		}
		if err := spdk.Signal(syscall.SIGSTOP); err != nil {
			return nil, hit, err
		}
		return func() { _ = spdk.Signal(syscall.SIGCONT) }, hit, nil
	case killAgent:
		return nil, hit, s.c.Nodes.RestartAgent(podName)
	case stopAgent:
		if err := s.c.Nodes.FreezeAgent(podName, true); err != nil {
			return nil, hit, err
		}
		return func() { _ = s.c.Nodes.FreezeAgent(podName, false) }, hit, nil
	}
	var pod corev1.Pod
	if err := s.c.Client.Get(ctx, client.ObjectKey{Namespace: localcluster.Namespace, Name: podName}, &pod); err != nil || pod.Status.PodIP == "" {
		return nil, hit, fmt.Errorf("%w: pod %s has no IP (%v)", errNotNow, podName, err)
	}
	var cut partition
	switch f.kind {
	case partitionReplica:
		port, ok := nvmfPort(&pod)
		if !ok {
			return nil, hit, fmt.Errorf("pod %s names no %s port", podName, osd.NVMeoFPortName)
		}
		cut = toPort(pod.Status.PodIP, port)
		hit = fmt.Sprintf("replica %s from target %s", osdName, target)
	case partitionOperator:
		cut = toPort(pod.Status.PodIP, osd.GRPCPort)
	case partitionWriter:
		var tpod corev1.Pod
		if err := s.c.Client.Get(ctx, client.ObjectKey{Namespace: localcluster.Namespace, Name: "osd-" + target}, &tpod); err != nil || tpod.Status.PodIP == "" {
			return nil, hit, fmt.Errorf("%w: the target's pod has no IP (%v)", errNotNow, err)
		}
		cut, hit = between(hostAddr, tpod.Status.PodIP), "target "+target
	}
	if err := cut.apply(); err != nil {
		return nil, hit, err
	}
	return cut.heal, hit, nil
}

// signaler is a real SPDK process.
type signaler interface{ Signal(syscall.Signal) error }

// nvmfPort is where pod's SPDK serves NVMe-oF.
func nvmfPort(pod *corev1.Pod) (int, bool) {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == osd.NVMeoFPortName {
				return int(p.ContainerPort), true
			}
		}
	}
	return 0, false
}
