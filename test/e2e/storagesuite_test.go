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
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flint-io/flint/test/e2e/lab"
)

// suiteFocus is the part of the external storage suite every CI run
// takes, for Flint's driver only (about 15 minutes on the emulated
// workload node): a filesystem and a raw block volume written by one Pod
// and read back by another; a snapshot restored after its source changed,
// and into a larger claim; a clone; a modification to an invalid
// VolumeAttributesClass refused and then one to a valid class done; a
// claim bound WaitForFirstConsumer under a class's allowedTopologies.
const suiteFocus = `External.Storage \[Driver: csi\.flint\.io\] \[Testpattern: (` +
	`Dynamic PV \((default fs|block volmode)\)\] volumes should store data` +
	`|Dynamic Snapshot \(delete policy\)\] snapshottable .* \(persistent\)` +
	`|Dynamic PV \(default fs\)\] provisioning should provision (storage with pvc data source( \[|$)|correct filesystem size when restoring snapshot to larger size pvc)` +
	`|Dynamic PV \(default fs\)\] volume-modify .* should recover from invalid target VAC` +
	`|Dynamic PV \(delayed binding\)\] topology should provision a volume and schedule a pod with AllowedTopologies)`

// suiteFocusFull (E2E_SUITE=full) is the suites a block driver's users
// rely on: provisioning (with snapshot and PVC data sources), data,
// volume modes, expansion, several volumes and pods, generic ephemeral
// volumes, subPath, snapshots, VolumeAttributesClasses and topology. It
// takes about two hours on the emulated workload node.
// FLINT_E2E_SUITE_FOCUS (E2E_SUITE_FOCUS) replaces either.
const suiteFocusFull = `External.Storage \[Driver: csi\.flint\.io\] \[Testpattern: [^]]*\] (provisioning|volumes|volumeMode|volume-expand|multiVolume|ephemeral|subPath|snapshottable|volume-modify|topology) `

// suiteSkip leaves out what cannot run in the lab, each for its reason:
// Disruptive tests restart the kubelet, which the lab runs outside any
// service manager; Serial ones need a quiet cluster and more than one
// workload node; SELinux needs an SELinux host; snapshot metadata and
// group snapshots are CSI services Flint does not offer; alpha feature
// gates are off in the lab's API server.
const suiteSkip = `\[Disruptive\]|\[Serial\]|\[Feature:(SELinux|SnapshotMetadata|VolumeGroupSnapshotDataSource)\]|\[FeatureGate:[^]]*\] \[Alpha\]`

// Kubernetes' external storage e2e suite (k8s.io/kubernetes/test/e2e/
// storage/external), built from k8s.io/kubernetes at the lab's version,
// runs against csi.flint.io as test/e2e/testdriver.yaml describes it: its
// pods run on the workload node, whose kernel NVMe-oF host connects to
// the storage node's OSD. The test fails when any spec fails, and prints
// what ran, passed and skipped for each test pattern and suite, with each
// skip's reason.
func TestKubernetesStorageSuite(t *testing.T) {
	clients := inLab(t)
	if cluster.Worker == nil {
		t.Skip("no workload node")
	}
	needStorage(t)
	if !haveImage("e2e-busybox") {
		t.Skip("no e2e.test and its images: hack/e2e/run.sh builds them when all sources are given, unless E2E_SUITE=0")
	}
	devPoolReady(t, clients, flintClient(t))
	// The suite's pods go to the workload node as soon as it starts:
	// the node plugin there has to be registered first.
	csiNodeRegistered(t, clients, lab.WorkerNode, 10*time.Minute)
	// Some specs name no node for their pods, and the second storage node
	// has no CSI node plugin (nor the suite's images): keep them off it.
	if cluster.SecondStorageNode {
		setUnschedulable(t, clients, lab.SecondStorageNodeName, true)
	}
	// The snapshot specs need the cluster's snapshot controller, which
	// runs on the storage node: before the taint below.
	startSnapshotController(t, clients)
	// The storage node has the node plugin but no kernel NVMe-oF host: the
	// topology specs, whose pods go to any node their class allows, and
	// which take every schedulable node's topology, must see only the
	// workload node.
	keepNewPodsOff(t, clients, lab.StorageNode)

	// testdriver.yaml names the sample class for the volume-modify tests,
	// which copy it.
	vac := readConfig[storagev1.VolumeAttributesClass](t, "csi", "samples", "volumeattributesclass.yaml")
	if _, err := clients.StorageV1().VolumeAttributesClasses().Create(t.Context(), vac, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	report := filepath.Join(cluster.Dir, "storage-suite")
	if err := os.MkdirAll(report, 0o755); err != nil {
		t.Fatal(err)
	}
	focus := suiteFocus
	if os.Getenv("FLINT_E2E_SUITE") == "full" {
		focus = suiteFocusFull
	}
	if f := os.Getenv("FLINT_E2E_SUITE_FOCUS"); f != "" {
		focus = f
	}
	driver := repoPath("test", "e2e", "testdriver.yaml")
	logPath := filepath.Join(report, "e2e.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.CommandContext(t.Context(), filepath.Join(cluster.Assets, "e2e.test"),
		"--kubeconfig="+cluster.AdminKubeconfig,
		"--kubectl-path="+filepath.Join(cluster.Assets, "kubectl"),
		"--provider=skeleton",
		"-storage.testdriver="+driver,
		"--ginkgo.focus="+focus,
		"--ginkgo.skip="+suiteSkip,
		"--ginkgo.junit-report="+filepath.Join(report, "junit.xml"),
		"--ginkgo.no-color", "--ginkgo.v",
		// The storage node's taint (keepNewPodsOff) keeps the topology
		// specs off it, but must not hold the suite's start.
		"--non-blocking-taints=node-role.kubernetes.io/control-plane,"+noKernelHostTaint,
		"--ginkgo.timeout=3h",
		// Nothing but the lab's nodes: no system pods to wait for.
		"--minStartupPods=0",
		"--report-dir="+report,
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	began := time.Now()
	runErr := cmd.Run()
	t.Logf("e2e.test ran for %s; its log: %s", time.Since(began).Round(time.Second), logPath)

	specs, err := readJUnit(filepath.Join(report, "junit.xml"))
	if err != nil {
		t.Fatalf("e2e.test: %v (%v); the end of its log:\n%s", err, runErr, tail(logPath, 40))
	}
	ours := regexp.MustCompile(focus)
	var ran []suiteSpec
	for _, s := range specs {
		if ours.MatchString(s.Name) && !s.filteredOut() {
			ran = append(ran, s)
		}
	}
	t.Logf("the external storage suite, by test pattern and suite:\n%s", suiteTable(ran))
	for _, s := range ran {
		if s.failed() {
			t.Errorf("FAILED %s", s.Name)
		}
	}
	if runErr != nil && !t.Failed() {
		t.Fatalf("e2e.test: %v, and no spec failed; the end of its log:\n%s", runErr, tail(logPath, 40))
	}
	if len(ran) == 0 {
		t.Fatalf("no spec of the focus %q ran", focus)
	}
}

// csiNodeRegistered waits for node's CSINode to list csi.flint.io.
func csiNodeRegistered(t *testing.T, clients *kubernetes.Clientset, node string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, func() error {
		csiNode, err := clients.StorageV1().CSINodes().Get(t.Context(), node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, d := range csiNode.Spec.Drivers {
			if d.Name == "csi.flint.io" {
				return nil
			}
		}
		return fmt.Errorf("CSINode %s lists no csi.flint.io yet; pods: %s", node, podStates(t, clients))
	})
}

// suiteSpec is one spec of a JUnit report written by Ginkgo.
type suiteSpec struct {
	Name    string    `xml:"name,attr"`
	Status  string    `xml:"status,attr"`
	Time    float64   `xml:"time,attr"`
	Skipped *junitMsg `xml:"skipped"`
	Failure *junitMsg `xml:"failure"`
	Error   *junitMsg `xml:"error"`
}

type junitMsg struct {
	Message string `xml:"message,attr"`
}

// failed says the spec failed, timed out or broke.
func (s suiteSpec) failed() bool { return s.Failure != nil || s.Error != nil }

// filteredOut says the spec was not run because the focus or skip
// expressions left it out, rather than skipped by the spec itself.
func (s suiteSpec) filteredOut() bool {
	return s.Status == "skipped" && (s.Skipped == nil || !strings.Contains(s.Skipped.Message, "skipped -"))
}

// readJUnit reads the specs of a Ginkgo JUnit report.
func readJUnit(path string) ([]suiteSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("no JUnit report: %w", err)
	}
	var report struct {
		Suites []struct {
			Specs []suiteSpec `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &report); err != nil {
		return nil, fmt.Errorf("JUnit report %s: %w", path, err)
	}
	var specs []suiteSpec
	for _, s := range report.Suites {
		specs = append(specs, s.Specs...)
	}
	return specs, nil
}

// patternSuite is the test pattern and test suite a spec's name names.
var patternSuite = regexp.MustCompile(`\[Testpattern: ([^]]*)\] (\S+)`)

// suiteTable counts specs by test pattern and suite: ran (passed or
// failed), passed, failed, and skipped with the distinct reasons.
func suiteTable(specs []suiteSpec) string {
	type counts struct {
		ran, passed, failed, skipped int
		reasons                      []string
	}
	rows := map[string]*counts{}
	var keys []string
	for _, s := range specs {
		key := "?"
		if m := patternSuite.FindStringSubmatch(s.Name); m != nil {
			key = m[1] + " | " + m[2]
		}
		c := rows[key]
		if c == nil {
			c = &counts{}
			rows[key] = c
			keys = append(keys, key)
		}
		switch {
		case s.failed():
			c.ran++
			c.failed++
		case s.Skipped != nil || s.Status == "skipped":
			c.skipped++
			reason := ""
			if s.Skipped != nil {
				reason = skipReason(s.Skipped.Message)
			}
			if !slices.Contains(c.reasons, reason) {
				c.reasons = append(c.reasons, reason)
			}
		default:
			c.ran++
			c.passed++
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	total := counts{}
	fmt.Fprintf(&b, "%-60s %4s %6s %6s %7s  %s\n", "test pattern | suite", "ran", "passed", "failed", "skipped", "why skipped")
	for _, k := range keys {
		c := rows[k]
		fmt.Fprintf(&b, "%-60s %4d %6d %6d %7d  %s\n", k, c.ran, c.passed, c.failed, c.skipped, strings.Join(c.reasons, "; "))
		total.ran += c.ran
		total.passed += c.passed
		total.failed += c.failed
		total.skipped += c.skipped
	}
	fmt.Fprintf(&b, "%-60s %4d %6d %6d %7d\n", "total", total.ran, total.passed, total.failed, total.skipped)
	return b.String()
}

// skipReason is the first line of a skip message, without Ginkgo's
// prefix and the source location.
func skipReason(msg string) string {
	msg = strings.TrimPrefix(strings.TrimSpace(msg), "skipped - ")
	msg, _, _ = strings.Cut(msg, "\n")
	return strings.TrimSpace(msg)
}

// tail is the last n lines of a file.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
