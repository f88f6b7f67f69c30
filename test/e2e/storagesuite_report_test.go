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

// CI's focus takes the two "volumes should store data" specs, a
// filesystem and a raw block volume, and nothing else.
func TestCIFocusTakesTheDataSpecs(t *testing.T) {
	specs, err := readJUnit("testdata/junit.xml")
	if err != nil {
		t.Fatal(err)
	}
	ours := regexp.MustCompile(suiteFocus)
	var names []string
	for _, s := range specs {
		if ours.MatchString(s.Name) {
			names = append(names, s.Name)
		}
	}
	want := []string{
		"[It] External Storage [Driver: csi.flint.io] [Testpattern: Dynamic PV (default fs)] volumes should store data [Driver: csi.flint.io]",
		"[It] External Storage [Driver: csi.flint.io] [Testpattern: Dynamic PV (block volmode)] volumes should store data [Driver: csi.flint.io]",
	}
	if !slices.Equal(names, want) {
		t.Errorf("CI's focus takes %q, want %q", names, want)
	}
}
