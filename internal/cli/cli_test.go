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

package cli

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantDone bool
		wantErr  bool
		wantOut  string
	}{
		{name: "version", args: []string{"--version"}, wantDone: true, wantOut: "flint-test dev"},
		{name: "help", args: []string{"--help"}, wantDone: true, wantOut: "flint-test - does a test thing"},
		{name: "help lists flags", args: []string{"-h"}, wantDone: true, wantOut: "-socket"},
		{name: "no flags runs", args: nil, wantDone: false},
		{name: "unknown flag", args: []string{"--nope"}, wantDone: true, wantErr: true, wantOut: "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("flint-test", flag.ContinueOnError)
			fs.String("socket", "/var/tmp/spdk.sock", "SPDK's RPC socket")
			c := &Command{Name: "flint-test", Summary: "does a test thing", Description: "Test.", Flags: fs}
			var out bytes.Buffer
			done, err := c.Parse(tt.args, &out)
			if done != tt.wantDone || (err != nil) != tt.wantErr {
				t.Fatalf("Parse(%v) = %v, %v; want done=%v err=%v", tt.args, done, err, tt.wantDone, tt.wantErr)
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("output %q does not contain %q", out.String(), tt.wantOut)
			}
		})
	}
}
