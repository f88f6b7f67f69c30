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

package e2e

import (
	"bufio"
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers"
	"github.com/flint-io/flint/test/e2e/lab"
	"github.com/flint-io/flint/test/ledger"
)

// The kernel host's storm: the fault storm's shorter variant (make
// test-faults is the long one, on SPDK's initiator), with the writer in
// a Pod of the workload node, on a raw block PVC the guest kernel's
// NVMe-oF host serves through native multipath and the node plugin's
// path follower.
const (
	stormClaim  = "storm"
	stormWriter = "storm-writer"
	// stormBlocks is the region the writer writes and reads back.
	stormBlocks = 256
	// stormStopAnnotation tells the writer, through its downward API
	// volume, to stop writing.
	stormStopAnnotation = "lab.flint.io/storm-stop"
)

// stormKind is a fault of the kernel host's storm.
type stormKind int

const (
	stormKillSPDK stormKind = iota
	stormStopSPDK
	stormKillAgent
	stormKillOperator
	// stormPartitionHost drops the packets between the workload node and
	// the target, which the lab's namespace routes (FORWARD).
	stormPartitionHost
	stormKinds
)

func (k stormKind) String() string {
	return [...]string{"SIGKILL SPDK", "SIGSTOP SPDK", "SIGKILL agent", "SIGKILL operator", "partition the host from the target"}[k]
}

// held says whether the fault lasts until healed; a kill is over at once
// (the kubelet restarts the container).
func (k stormKind) held() bool { return k == stormStopSPDK || k == stormPartitionHost }

// kernelHostStorm is TestAKernelHostWritesThroughAStorm.
func kernelHostStorm(t *testing.T) {
	clients := inLab(t)
	if cluster.Worker == nil {
		t.Skip("no workload node")
	}
	needStorage(t)
	if !cluster.SecondStorageNode || !haveImage("storm-writer") {
		t.Skip("needs the second storage node and the storm writer's image")
	}
	faults, seed, err := stormBudget()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seed %d, %d faults; replay with E2E_STORM_SEED=%d E2E_STORM_FAULTS=%d", seed, faults, seed, faults)
	c := flintClient(t)
	t.Cleanup(func() { removeReplicatedPool(t, clients, c, []string{stormWriter}, stormClaim) })
	replicatedPoolReady(t, clients, c)
	createClaim(t, clients, stormClaim, replicatedClass, corev1.PersistentVolumeBlock)
	startStormWriter(t, clients, seed, 20*time.Second)
	began := time.Now()
	acked := waitWrites(t, clients, 20, 20*time.Minute, "before the faults (20 of them)")
	vol := volumeOfClaim(t, clients, c, stormClaim)
	t.Logf("the writer writes after %s; Volume %s: %s", time.Since(began).Round(time.Second), vol.Name, volumeState(vol))

	rng := rand.New(rand.NewPCG(seed, 0))
	// Every kind comes once in each run of stormKinds rounds, in an order
	// the seed draws: a short storm leaves none out.
	order := rng.Perm(int(stormKinds))
	byKind := map[stormKind]int{}
	for round := 1; round <= faults; round++ {
		kind := stormKind(order[(round-1)%len(order)])
		onTarget := rng.IntN(2) == 0
		hold := time.Second + time.Duration(rng.Int64N(int64(7*time.Second)))
		if rng.IntN(4) == 0 {
			hold = time.Minute // beyond the target grace and the fence probe
		}
		waitWrites(t, clients, acked, time.Minute, "before the fault")
		before := noteStormMarks(t, clients)
		struck := time.Now()
		desc, killed, heal := injectStormFault(t, clients, c, vol, kind, onTarget)
		if kind.held() {
			desc += fmt.Sprintf(" for %s", hold.Round(100*time.Millisecond))
			time.Sleep(hold)
			heal()
		}
		healed := time.Now()
		byKind[kind]++
		// A write in flight as the fault ends counts when it completes.
		atHeal, _ := lastAcked(t, clients)
		acked = waitWrites(t, clients, atHeal, 5*time.Minute, fmt.Sprintf("after round %d (%s)", round, desc))
		writesAgain := time.Since(healed)
		recovered(t, clients, c, vol, before, struck, killed)
		volumeWhole(t, c, vol, 10*time.Minute)
		t.Logf("round %d at %s: %s; writes again %.1fs after; whole again %s after: %s%s", round, struck.UTC().Format("15:04:05"), desc, writesAgain.Seconds(), time.Since(healed).Round(time.Second), volumeState(vol), movesIn(t, clients, vol, struck))
	}

	stopStormWriter(t, clients)
	j := checkedJournal(t, clients)
	var kinds []string
	for k := range stormKinds {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, byKind[k]))
	}
	t.Logf("seed %d: %d faults (%s) over %s; %d writes tried, %d acknowledged, %d failed; longest write stall %.1fs; %d reads checked, the last: %s",
		seed, faults, strings.Join(kinds, ", "), time.Since(began).Round(time.Second), j.tried, j.acked, j.failed, j.stall.Seconds(), j.reads, j.final)
	// On the workload node's clock, beside the rounds' on the host's.
	t.Logf("the writer's waits over 1s: %s", strings.Join(j.gaps, ", "))
}

// movesIn says how the round that struck at struck moved the target, from
// the operator's Events (the host's clock): when the new target served
// tells a long stall of the operator's making from the host's.
func movesIn(t *testing.T, clients *kubernetes.Clientset, vol *flintv1.Volume, struck time.Time) string {
	notes := eventsOf(t, clients, vol.Name, "TargetMoved", struck)
	if len(notes) == 0 {
		return ""
	}
	return "; target moves: " + strings.Join(notes, " | ")
}

// stormBudget reads E2E_STORM_FAULTS (default 10: each kind twice) and
// E2E_STORM_SEED (default: a new one).
func stormBudget() (faults int, seed uint64, err error) {
	faults = 10
	if s := os.Getenv("FLINT_E2E_STORM_FAULTS"); s != "" {
		if faults, err = strconv.Atoi(s); err != nil || faults < 1 || faults > 50 {
			return 0, 0, fmt.Errorf("E2E_STORM_FAULTS=%q: want a count of faults from 1 to 50", s)
		}
	}
	seed = rand.Uint64() % 1_000_000
	if s := os.Getenv("FLINT_E2E_STORM_SEED"); s != "" {
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			return 0, 0, fmt.Errorf("E2E_STORM_SEED=%q: want a number", s)
		}
	}
	return faults, seed, nil
}

// stopStormWriter tells the writer to stop and waits until it read the
// region a last time and exited.
func stopStormWriter(t *testing.T, clients *kubernetes.Clientset) {
	t.Helper()
	ctx := t.Context()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, stormStopAnnotation)
	if _, err := clients.CoreV1().Pods("default").Patch(ctx, stormWriter, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// Not waitSucceeded: it would print the whole journal.
	eventually(t, 10*time.Minute, func() error {
		p, err := clients.CoreV1().Pods("default").Get(ctx, stormWriter, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase == corev1.PodFailed {
			_, tail := lastAcked(t, clients)
			t.Fatalf("the writer failed; its last lines: %s", tail)
		}
		if p.Status.Phase != corev1.PodSucceeded {
			return fmt.Errorf("the writer, told to stop, is %s", p.Status.Phase)
		}
		return nil
	})
}

// checkedJournal reads the stopped writer's journal and fails the test on
// a read that found an acknowledged write lost or corrupted or a phantom
// block, and on a write that failed.
func checkedJournal(t *testing.T, clients *kubernetes.Clientset) stormJournal {
	t.Helper()
	j := readJournal(t, clients)
	if j.final == nil {
		t.Fatalf("the writer read nothing back after its last write; its last lines: %s", j.tail)
	}
	if j.bad > 0 {
		t.Errorf("%d reads found acknowledged writes lost or corrupted, or phantom blocks; the first: %s", j.bad, j.firstBad)
	}
	if j.failed > 0 {
		t.Errorf("%d writes failed (the first: %s): a fault reached the application", j.failed, j.firstFailure)
	}
	return j
}

// startStormWriter starts the writer on the workload node, on the storm's
// claim as /dev/storm, with its annotations at /podinfo/annotations; it
// reads the region back every checkEvery.
func startStormWriter(t *testing.T, clients *kubernetes.Clientset, seed uint64, checkEvery time.Duration) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: stormWriter, Namespace: "default"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			NodeSelector:  map[string]string{corev1.LabelHostname: lab.WorkerNode},
			Containers: []corev1.Container{{
				Name: stormWriter, Image: lab.StormWriterImage,
				Args: []string{"--device=/dev/storm", fmt.Sprintf("--blocks=%d", stormBlocks), "--check-every=" + checkEvery.String(),
					fmt.Sprintf("--seed=%d", seed), "--stop-file=/podinfo/annotations", "--stop-word=" + stormStopAnnotation,
					// A bound, should the test never stop it.
					fmt.Sprintf("--until=%d", time.Now().Add(2*time.Hour).Unix())},
				VolumeDevices: []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/storm"}},
				VolumeMounts:  []corev1.VolumeMount{{Name: "podinfo", MountPath: "/podinfo", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: stormClaim}}},
				{Name: "podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{
					Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations"},
				}}}}},
			},
		},
	}
	if _, err := clients.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// injectStormFault starts a fault on the target's OSD (onTarget) or the
// replica's, or on the operator, and returns what it hit, the container
// it killed ("pod/container", for a kill) and what heals it (a no-op for
// a kill: the kubelet restarts the container).
func injectStormFault(t *testing.T, clients *kubernetes.Clientset, c client.Client, vol *flintv1.Volume, kind stormKind, onTarget bool) (desc, killed string, heal func()) {
	t.Helper()
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(vol), vol); err != nil {
		t.Fatal(err)
	}
	if kind == stormKillOperator {
		pods, err := clients.CoreV1().Pods(namespace).List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=flint-operator"})
		if err != nil || len(pods.Items) == 0 {
			t.Fatalf("the operator's pod: %v (%d found)", err, len(pods.Items))
		}
		pid := podProcess(t, &pods.Items[0], func(argv []string) bool { return filepath.Base(argv[0]) == "operator" })
		signal(t, pid, syscall.SIGKILL)
		return fmt.Sprintf("SIGKILL operator (pod %s)", pods.Items[0].Name), pods.Items[0].Name + "/operator", func() {}
	}
	if kind == stormPartitionHost {
		addr := vol.Status.Target.Endpoints[0].Address
		rules := [][]string{{"-s", lab.WorkerIP, "-d", addr, "-p", "tcp", "-j", "DROP"}, {"-s", addr, "-d", lab.WorkerIP, "-p", "tcp", "-j", "DROP"}}
		for _, r := range rules {
			iptables(t, append([]string{"-I", "FORWARD"}, r...))
		}
		return fmt.Sprintf("%s at %s (OSD %s)", kind, addr, vol.Status.Target.OSD), "", func() {
			for _, r := range rules {
				iptables(t, append([]string{"-D", "FORWARD"}, r...))
			}
		}
	}
	osd, role := vol.Status.Target.OSD, "target"
	if !onTarget {
		for _, r := range vol.Status.Replicas {
			if r.OSD != osd {
				osd, role = r.OSD, "replica"
			}
		}
	}
	pod, err := clients.CoreV1().Pods(namespace).Get(t.Context(), "osd-"+osd, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	desc = fmt.Sprintf("%s on the %s's OSD %s", kind, role, osd)
	isSPDK := func(argv []string) bool {
		return slices.Contains([]string{"flint_tgt", "nvmf_tgt"}, filepath.Base(argv[0]))
	}
	switch kind {
	case stormKillSPDK:
		signal(t, podProcess(t, pod, isSPDK), syscall.SIGKILL)
		return desc, pod.Name + "/spdk", func() {}
	case stormStopSPDK:
		pid := podProcess(t, pod, isSPDK)
		signal(t, pid, syscall.SIGSTOP)
		return desc, "", func() { _ = syscall.Kill(pid, syscall.SIGCONT) }
	case stormKillAgent:
		// The agent container's osd-agent runs with flags only; the SPDK
		// container's (exec-spdk, serve-fence) with a subcommand.
		signal(t, podProcess(t, pod, func(argv []string) bool {
			return filepath.Base(argv[0]) == "osd-agent" && len(argv) > 1 && strings.HasPrefix(argv[1], "-")
		}), syscall.SIGKILL)
		return desc, pod.Name + "/agent", func() {}
	}
	t.Fatalf("no fault of kind %s", kind)
	return "", "", nil
}

// stormMarks counts the restarts of each container of Flint's namespace,
// by "pod/container", before a fault strikes.
type stormMarks map[string]int32

func noteStormMarks(t *testing.T, clients *kubernetes.Clientset) stormMarks {
	t.Helper()
	m := stormMarks{}
	pods, err := clients.CoreV1().Pods(namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			m[p.Name+"/"+cs.Name] = cs.RestartCount
		}
	}
	return m
}

// operatorLeads says whether the operator's leader election was renewed
// after started, a whole second late since started is in whole seconds:
// by a process that started then.
func operatorLeads(t *testing.T, clients *kubernetes.Clientset, started time.Time) error {
	t.Helper()
	l, err := clients.CoordinationV1().Leases(namespace).Get(t.Context(), controllers.LeaderElectionID, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("the operator's leader election: %w", err)
	}
	if l.Spec.RenewTime == nil || !l.Spec.RenewTime.After(started.Add(time.Second)) {
		return fmt.Errorf("the operator restarted at %s does not lead yet (the election last renewed at %v by %s)",
			started.Format(time.RFC3339), l.Spec.RenewTime, ptr.Deref(l.Spec.HolderIdentity, "nobody"))
	}
	return nil
}

// recovered waits until the lab is back from a fault struck at struck:
// the container it killed restarted and ready (the operator also leading
// again: under its pod's name it does not wait out its own lease), and
// the replica on each OSD whose SPDK restarted (the lab's malloc device
// comes back empty) rebuilt since. The Volume's status alone could pass
// at once, written before the operator saw the fault, and the next fault
// would then strike a lab still down a part.
func recovered(t *testing.T, clients *kubernetes.Clientset, c client.Client, vol *flintv1.Volume, before stormMarks, struck time.Time, killed string) {
	t.Helper()
	eventually(t, 10*time.Minute, func() error {
		pods, err := clients.CoreV1().Pods(namespace).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		var emptied []string
		killedBack := killed == ""
		for _, p := range pods.Items {
			for _, cs := range p.Status.ContainerStatuses {
				key := p.Name + "/" + cs.Name
				if cs.RestartCount <= before[key] {
					continue
				}
				if !cs.Ready || cs.State.Running == nil {
					return fmt.Errorf("container %s restarted and is not ready yet", key)
				}
				if key == killed && cs.Name == "operator" {
					if err := operatorLeads(t, clients, cs.State.Running.StartedAt.Time); err != nil {
						return err
					}
				}
				killedBack = killedBack || key == killed
				if osd, ok := strings.CutPrefix(p.Name, "osd-"); ok && cs.Name == "spdk" {
					emptied = append(emptied, osd)
				}
			}
		}
		if !killedBack {
			return fmt.Errorf("the kubelet has not restarted container %s yet", killed)
		}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(vol), vol); err != nil {
			return err
		}
		// Whole seconds: a transition in the fault's own second is taken
		// for an earlier one; a rebuild takes longer than that.
		since := struck.Truncate(time.Second)
		for _, osd := range emptied {
			for _, r := range vol.Status.Replicas {
				if r.OSD == osd && (r.LastTransitionTime == nil || !r.LastTransitionTime.After(since)) {
					return fmt.Errorf("SPDK on OSD %s restarted with an empty device, and its replica has not been rebuilt since: %s", osd, volumeState(vol))
				}
			}
		}
		return nil
	})
}

// podProcess finds the process of pod that match picks by its argv: the
// pods of the lab's storage nodes run on this machine, in cgroups named
// after the pod's UID.
func podProcess(t *testing.T, pod *corev1.Pod, match func(argv []string) bool) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	cgroup := "pod" + string(pod.UID)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		groups, err1 := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		cmdline, err2 := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err1 != nil || err2 != nil || !strings.Contains(string(groups), cgroup) || len(cmdline) == 0 {
			continue
		}
		if match(strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")) {
			return pid
		}
	}
	t.Fatalf("no process of pod %s (cgroup %s) matches", pod.Name, cgroup)
	return 0
}

// iptables changes the lab namespace's firewall; the test runs there.
func iptables(t *testing.T, args []string) {
	t.Helper()
	if out, err := exec.Command("iptables", append([]string{"-w"}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("iptables %v: %v: %s", args, err, out)
	}
}

func signal(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("signal %s to process %d: %v", sig, pid, err)
	}
}

// volumeWhole waits until vol is Ready with both of the replicated Pool's
// replicas Online.
func volumeWhole(t *testing.T, c client.Client, vol *flintv1.Volume, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(vol), vol); err != nil {
			return err
		}
		if vol.Status.Phase != flintv1.VolumePhaseReady || onlineReplicas(vol) != 2 {
			return fmt.Errorf("Volume %s not whole: %s", vol.Name, volumeState(vol))
		}
		return nil
	})
}

// onlineReplicas counts vol's replicas in sync.
func onlineReplicas(vol *flintv1.Volume) int {
	online := 0
	for _, r := range vol.Status.Replicas {
		if r.State == flintv1.ReplicaStateOnline {
			online++
		}
	}
	return online
}

// waitWrites waits until the writer acknowledged a write numbered above
// after, and returns the last number it saw acknowledged.
func waitWrites(t *testing.T, clients *kubernetes.Clientset, after uint64, timeout time.Duration, when string) uint64 {
	t.Helper()
	var last uint64
	eventually(t, timeout, func() error {
		var tail string
		last, tail = lastAcked(t, clients)
		if last <= after {
			return fmt.Errorf("no write acknowledged %s; the writer's last lines: %s", when, tail)
		}
		return nil
	})
	return last
}

// lastAcked is the number of the last write the writer acknowledged (0
// for none), and the end of its log. It reads only that end (the whole,
// read every second, would load the emulated node) and goes by numbers,
// not the guest's clock.
func lastAcked(t *testing.T, clients *kubernetes.Clientset) (uint64, string) {
	data, err := clients.CoreV1().Pods("default").GetLogs(stormWriter, &corev1.PodLogOptions{TailLines: ptr.To[int64](20)}).DoRaw(t.Context())
	if err != nil {
		return 0, fmt.Sprintf("the writer's log: %v; pod: %s", err, podEvents(t, clients, stormWriter))
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var last uint64
	for _, line := range lines {
		var seq, block uint64
		var ms int64
		if _, err := fmt.Sscanf(line, "ack %d %d %d", &seq, &block, &ms); err == nil {
			last = max(last, seq)
		}
	}
	return last, strings.Join(lines[max(len(lines)-3, 0):], " | ")
}

// stormJournal is the writer's journal, read from its log, with every
// read it printed judged against the writes before it.
type stormJournal struct {
	tried, acked, failed, reads, bad int
	lastAck                          time.Time
	// stall is the longest time between two acknowledged writes (reads
	// back included).
	stall time.Duration
	// gaps are the waits between two acknowledged writes over a second,
	// on the writer's clock.
	gaps []string
	// final is the verdict of the read after the last write.
	final                  *ledger.Verdict
	firstBad, firstFailure string
	tail                   string
}

func readJournal(t *testing.T, clients *kubernetes.Clientset) stormJournal {
	t.Helper()
	data, err := clients.CoreV1().Pods("default").GetLogs(stormWriter, &corev1.PodLogOptions{}).DoRaw(t.Context())
	if err != nil {
		t.Fatalf("the writer's journal: %v", err)
	}
	j, err := parseJournal(string(data))
	if err != nil {
		t.Fatalf("the writer's journal: %v", err)
	}
	return j
}

// parseJournal replays a journal into a ledger, judging each read
// against the writes before it.
func parseJournal(journal string) (stormJournal, error) {
	var j stormJournal
	l := ledger.New()
	var lines []string
	scan := bufio.NewScanner(strings.NewReader(journal))
	scan.Buffer(nil, 1<<20)
	for scan.Scan() {
		line := scan.Text()
		lines = append(lines, line)
		verb, rest, _ := strings.Cut(line, " ")
		var seq, block uint64
		var ms int64
		var err error
		switch verb {
		case "try":
			if _, err = fmt.Sscanf(rest, "%d %d", &seq, &block); err == nil {
				l.Try(seq, block, 1)
				j.tried++
				j.final = nil // a read counts as the last once no write follows
			}
		case "ack":
			if _, err = fmt.Sscanf(rest, "%d %d %d", &seq, &block, &ms); err == nil {
				l.Ack(seq, block, 1)
				j.acked++
				at := time.UnixMilli(ms)
				if gap := at.Sub(j.lastAck); !j.lastAck.IsZero() {
					j.stall = max(j.stall, gap)
					if gap > time.Second {
						j.gaps = append(j.gaps, fmt.Sprintf("%.1fs from %s", gap.Seconds(), j.lastAck.UTC().Format("15:04:05.000")))
					}
				}
				j.lastAck = at
			}
		case "fail":
			j.failed++
			j.firstFailure = cmp.Or(j.firstFailure, line)
		case "read":
			_, words, _ := strings.Cut(rest, " ")
			var found []ledger.Found
			if found, err = ledger.ParseFound(words); err == nil {
				v := l.CheckFound(found)
				j.reads++
				if v.Bad() > 0 {
					j.bad++
					j.firstBad = cmp.Or(j.firstBad, v.String())
				}
				j.final = &v
			}
		}
		if err != nil {
			return j, fmt.Errorf("line %d %q: %w", len(lines), line[:min(len(line), 80)], err)
		}
	}
	j.tail = strings.Join(lines[max(len(lines)-3, 0):], " | ")
	return j, scan.Err()
}
