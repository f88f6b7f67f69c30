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
	"fmt"
	"os"
	"os/exec"
	"strconv"
)

// ownNetwork reports whether this process runs in a network namespace
// other than FLINT_OUTER_NETNS, its caller's (make test-faults sets it):
// partitions are firewall rules, and they go only where the test owns
// every address.
func ownNetwork() (bool, error) {
	outer := os.Getenv("FLINT_OUTER_NETNS")
	if outer == "" {
		return false, nil
	}
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return false, err
	}
	return self != outer, nil
}

// partition drops TCP packets both ways between addresses, in this
// network namespace's OUTPUT chain: every packet here is loopback, so each
// passes it once. Dropped, not refused: a partitioned peer hears nothing,
// as across a failed switch.
type partition struct {
	// rules are iptables rule specifications, each added and deleted
	// whole.
	rules [][]string
}

// between cuts a from b (any port of each) both ways.
func between(a, b string) partition {
	return partition{rules: [][]string{
		{"-p", "tcp", "-s", a, "-d", b, "-j", "DROP"},
		{"-p", "tcp", "-s", b, "-d", a, "-j", "DROP"},
	}}
}

// toPort cuts every peer from port of addr, both ways.
func toPort(addr string, port int) partition {
	p := strconv.Itoa(port)
	return partition{rules: [][]string{
		{"-p", "tcp", "-d", addr, "--dport", p, "-j", "DROP"},
		{"-p", "tcp", "-s", addr, "--sport", p, "-j", "DROP"},
	}}
}

func (p partition) apply() error {
	for i, r := range p.rules {
		if err := iptables("-A", r); err != nil {
			partition{rules: p.rules[:i]}.heal()
			return err
		}
	}
	return nil
}

// heal deletes every rule; a rule already gone is no error.
func (p partition) heal() {
	for _, r := range p.rules {
		_ = iptables("-D", r)
	}
}

func iptables(op string, rule []string) error {
	args := append([]string{"-w", op, "OUTPUT"}, rule...)
	if out, err := exec.Command("iptables", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("iptables %v: %v: %s", args, err, out)
	}
	return nil
}
