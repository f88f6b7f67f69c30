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

// Package rpclog is what Flint's gRPC servers (the OSD agent, the CSI
// driver) put around every call: a log line per call, with its method,
// code and duration, and a panic turned into an INTERNAL answer, logged
// with its stack, instead of ending the process (an agent that ends takes
// every target it serves with it). Chain LogCalls outside RecoverPanics,
// so that a recovered panic is logged as the call's INTERNAL answer too.
package rpclog

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// LogCalls logs each call once it is answered: failures at the default
// level, successes at V(1), since the operator polls some every few
// seconds.
func LogCalls(log logr.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		began := time.Now()
		resp, err := next(ctx, req)
		kv := []any{"method", info.FullMethod, "code", status.Code(err).String(), "duration", time.Since(began).Round(time.Microsecond).String()}
		if err != nil {
			log.Info("call failed", append(kv, "error", status.Convert(err).Message())...)
		} else {
			log.V(1).Info("call", kv...)
		}
		return resp, err
	}
}

// RecoverPanics answers a call whose handler panicked with INTERNAL and
// logs the panic with its stack.
func RecoverPanics(log logr.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if r := recover(); r != nil {
				log.Info("call panicked: this is a bug, please report it with this log", "method", info.FullMethod, "panic", r, "stack", string(debug.Stack()))
				resp, err = nil, status.Errorf(codes.Internal, "serving %s failed: %v; this is a bug, please report it with the server's log", info.FullMethod, r)
			}
		}()
		return next(ctx, req)
	}
}
