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

package rpclog

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// call runs handler through both interceptors, as a server chains them,
// and returns its answer and the log lines at verbosity v.
func call(t *testing.T, v int, handler grpc.UnaryHandler) ([]string, error) {
	t.Helper()
	var lines []string
	log := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: v})
	info := &grpc.UnaryServerInfo{FullMethod: "/flint.agent.v1.OSDAgent/EnsureTarget"}
	logged, recovered := LogCalls(log), RecoverPanics(log)
	_, err := logged(context.Background(), nil, info, func(ctx context.Context, req any) (any, error) {
		return recovered(ctx, req, info, handler)
	})
	return lines, err
}

func TestEveryCallSaysWhatItDid(t *testing.T) {
	t.Run("a failure: method, code, duration and message", func(t *testing.T) {
		lines, err := call(t, 0, func(context.Context, any) (any, error) {
			return nil, status.Error(codes.NotFound, "volume v has no lvol here")
		})
		if status.Code(err) != codes.NotFound {
			t.Fatalf("answer %v, want the handler's NotFound", err)
		}
		if len(lines) != 1 {
			t.Fatalf("logged %q, want one line", lines)
		}
		for _, want := range []string{`"method"="/flint.agent.v1.OSDAgent/EnsureTarget"`, `"code"="NotFound"`, `"duration"=`, `volume v has no lvol here`} {
			if !strings.Contains(lines[0], want) {
				t.Errorf("logged %s, want it to hold %s", lines[0], want)
			}
		}
	})
	t.Run("a success: only at V(1)", func(t *testing.T) {
		ok := func(context.Context, any) (any, error) { return "answer", nil }
		if lines, _ := call(t, 0, ok); len(lines) != 0 {
			t.Errorf("logged %q at the default level, want nothing", lines)
		}
		lines, _ := call(t, 1, ok)
		if len(lines) != 1 || !strings.Contains(lines[0], `"code"="OK"`) {
			t.Errorf("logged %q at V(1), want one line with code OK", lines)
		}
	})
	t.Run("a panic: INTERNAL, logged with its stack", func(t *testing.T) {
		lines, err := call(t, 0, func(context.Context, any) (any, error) {
			var subs []int
			return subs[0], nil // what an unchecked SPDK answer does
		})
		if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "this is a bug") {
			t.Fatalf("answer %v, want INTERNAL saying it is a bug", err)
		}
		if len(lines) != 2 {
			t.Fatalf("logged %q, want the panic and the failed call", lines)
		}
		if !strings.Contains(lines[0], "index out of range") || !strings.Contains(lines[0], "rpclog.TestEveryCallSaysWhatItDid") {
			t.Errorf("the panic's line %s, want the panic and a stack through the handler", lines[0])
		}
		if !strings.Contains(lines[1], `"code"="Internal"`) {
			t.Errorf("the call's line %s, want code Internal", lines[1])
		}
	})
}
