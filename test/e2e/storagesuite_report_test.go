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
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The suite's counts come from its JUnit report: only specs of the
// focus count, specs the focus or skip expressions left out are not
// "skipped", and each skip keeps its reason.
func TestSuiteTableCountsTheReport(t *testing.T) {
	specs, err := readJUnit("testdata/junit.xml")
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 6 {
		t.Fatalf("read %d specs, want 6", len(specs))
	}
	ours := regexp.MustCompile(suiteFocusFull)
	var ran []suiteSpec
	for _, s := range specs {
		if ours.MatchString(s.Name) && !s.filteredOut() {
			ran = append(ran, s)
		}
	}
	if len(ran) != 4 {
		t.Fatalf("%d specs of the focus ran, want 4 (the Disruptive one and the other driver's were left out): %+v", len(ran), ran)
	}
	// Compared with the columns' padding squeezed out.
	var rows []string
	for _, line := range strings.Split(suiteTable(ran), "\n") {
		rows = append(rows, strings.Join(strings.Fields(line), " "))
	}
	for _, want := range []string{
		"Dynamic PV (block volmode) | volumes 1 0 1 0",
		`Dynamic PV (default fs) | provisioning 0 0 0 2 Driver "csi.flint.io" does not support cloning - skipping; Driver "csi.flint.io" does not support populating data from snapshot - skipping`,
		"Dynamic PV (default fs) | volumes 1 1 0 0",
		"total 2 1 1 2",
	} {
		if !slices.Contains(rows, want) {
			t.Errorf("the table lacks the row %q:\n%s", want, strings.Join(rows, "\n"))
		}
	}
}

// CI's focus takes the specs it names, and none of their neighbours: the
// names are e2e.test's (k8s.io/kubernetes v1.37.1, --ginkgo.dry-run with
// testdriver.yaml), as its JUnit report writes them.
func TestCIFocusTakesItsSpecs(t *testing.T) {
	const driver = "[It] External Storage [Driver: csi.flint.io] [Testpattern: "
	const snapshotLabels = " [Driver: csi.flint.io, Feature:VolumeSnapshotDataSource]"
	const vac = "volume-modify [FeatureGate:VolumeAttributesClass] [Feature:VolumeAttributesClass] "
	const vacLabels = " [Driver: csi.flint.io, FeatureGate:VolumeAttributesClass, Feature:VolumeAttributesClass]"
	const snapshottable = "snapshottable [Feature:VolumeSnapshotDataSource] volume snapshot controller should check snapshot fields, check restore correctly works"
	for name, want := range map[string]bool{
		driver + "Dynamic PV (default fs)] volumes should store data [Driver: csi.flint.io]":                                                                                                        true,
		driver + "Dynamic PV (block volmode)] volumes should store data [Driver: csi.flint.io]":                                                                                                     true,
		driver + "Dynamic PV (ext4)] volumes should store data [Driver: csi.flint.io]":                                                                                                              false,
		driver + "Dynamic Snapshot (delete policy)] " + snapshottable + " after modifying source data, check deletion (persistent)" + snapshotLabels:                                                true,
		driver + "Dynamic Snapshot (delete policy)] " + snapshottable + ", check deletion (ephemeral)" + snapshotLabels:                                                                             false,
		driver + "Dynamic Snapshot (retain policy)] " + snapshottable + " after modifying source data, check deletion (persistent)" + snapshotLabels:                                                false,
		driver + "Dynamic PV (default fs)] provisioning should provision storage with pvc data source [Driver: csi.flint.io]":                                                                       true,
		driver + "Dynamic PV (default fs)] provisioning should provision storage with pvc data source in parallel [Slow] [Driver: csi.flint.io, Slow]":                                              false,
		driver + "Dynamic PV (default fs)] provisioning should provision storage with pvc data source (ROX mode) [Driver: csi.flint.io]":                                                            false,
		driver + "Dynamic PV (block volmode)] provisioning should provision storage with pvc data source [Driver: csi.flint.io]":                                                                    false,
		driver + "Dynamic PV (default fs)] provisioning should provision correct filesystem size when restoring snapshot to larger size pvc [Feature:VolumeSnapshotDataSource]" + snapshotLabels:    true,
		driver + "Dynamic PV (block volmode)] provisioning should provision correct filesystem size when restoring snapshot to larger size pvc [Feature:VolumeSnapshotDataSource]" + snapshotLabels: false,
		driver + "Dynamic PV (default fs)] " + vac + "should recover from invalid target VAC by updating PVC to new valid VAC" + vacLabels:                                                          true,
		driver + "Dynamic PV (default fs)] " + vac + "should modify volume with no VAC" + vacLabels:                                                                                                 false,
		driver + "Dynamic PV (delayed binding)] topology should provision a volume and schedule a pod with AllowedTopologies [Driver: csi.flint.io]":                                                true,
		driver + "Dynamic PV (delayed binding)] topology should fail to schedule a pod which has topologies that conflict with AllowedTopologies [Driver: csi.flint.io]":                            false,
		driver + "Dynamic PV (immediate binding)] topology should provision a volume and schedule a pod with AllowedTopologies [Driver: csi.flint.io]":                                              false,
	} {
		if got := regexp.MustCompile(suiteFocus).MatchString(name); got != want {
			t.Errorf("CI's focus takes %q: %v, want %v", name, got, want)
		}
	}
}
