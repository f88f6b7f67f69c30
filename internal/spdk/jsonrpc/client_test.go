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

package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestErrorIs(t *testing.T) {
	// Codes and messages as a real SPDK v25.09 answered them.
	tests := []struct {
		code int
		msg  string
		want error
	}{
		{-17, "File exists", ErrExists},
		{-32602, "File exists", ErrExists},
		{-114, "A controller named nvme0 already exists with the specified network path", ErrExists},
		{-32603, "Transport type 'TCP' already exists", ErrExists},
		{-19, "No such device", ErrNotFound},
		{-19, "raid bdev nosuch not found", ErrNotFound},
		{22, "Controller nosuch does not exist", ErrNotFound},
		{-2, "No such file or directory", ErrNotFound},
		{-32602, "No space left on device", ErrNoSpace},
		{-1, "Operation not permitted", ErrNotPermitted},
		{-32603, "Operation not permitted", ErrNotPermitted},
		{-32602, "Operation not permitted", ErrNotPermitted},
		{-22, "Invalid argument", ErrInvalid},
		{-32602, "Invalid parameters", ErrInvalid},
		{-32603, "spdk_json_decode_object failed", ErrInvalid},
		{-32700, "spdk_json_decode_object failed", ErrInvalid},
	}
	all := []error{ErrExists, ErrNotFound, ErrNoSpace, ErrNotPermitted, ErrInvalid}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d %s", tt.code, tt.msg), func(t *testing.T) {
			err := fmt.Errorf("wrapped: %w", &Error{Method: "m", Code: tt.code, Message: tt.msg})
			for _, sentinel := range all {
				if got := errors.Is(err, sentinel); got != (sentinel == tt.want) {
					t.Errorf("errors.Is(%v, %v) = %v", err, sentinel, got)
				}
			}
			if CodeOf(err) != tt.code {
				t.Errorf("CodeOf = %d, want %d", CodeOf(err), tt.code)
			}
		})
	}
	if errors.Is(&Error{Code: -5, Message: "Input/output error"}, ErrInvalid) {
		t.Error("an I/O error is no invalid argument")
	}
}

// fakeSPDK answers each request with handle's result after delay(method).
type fakeSPDK struct {
	t      *testing.T
	socket string
	ln     net.Listener
	mu     sync.Mutex
	seen   []map[string]json.RawMessage
	delay  func(method string) time.Duration
	silent bool // never answer
}

func startFake(t *testing.T, socket string) *fakeSPDK {
	f := &fakeSPDK{t: t, socket: socket, delay: func(string) time.Duration { return 0 }}
	f.listen()
	t.Cleanup(func() { _ = f.ln.Close() })
	return f
}

func (f *fakeSPDK) listen() {
	ln, err := net.Listen("unix", f.socket)
	if err != nil {
		f.t.Fatal(err)
	}
	f.ln = ln
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(c)
		}
	}()
}

// waitFor waits until the fake has read a request whose method is
// method (JSON-quoted).
func (f *fakeSPDK) waitFor(method string) {
	f.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		f.mu.Lock()
		read := slices.ContainsFunc(f.seen, func(req map[string]json.RawMessage) bool { return string(req["method"]) == method })
		f.mu.Unlock()
		if read {
			return
		}
	}
	f.t.Fatalf("the fake read no %s request within 10s", method)
}

func (f *fakeSPDK) serve(c net.Conn) {
	defer func() { _ = c.Close() }()
	dec := json.NewDecoder(c)
	var wmu sync.Mutex
	for {
		var req map[string]json.RawMessage
		if err := dec.Decode(&req); err != nil {
			return
		}
		f.mu.Lock()
		f.seen = append(f.seen, req)
		silent := f.silent
		f.mu.Unlock()
		if silent {
			continue
		}
		var method string
		_ = json.Unmarshal(req["method"], &method)
		go func() {
			time.Sleep(f.delay(method))
			resp := map[string]any{"jsonrpc": "2.0", "id": req["id"], "result": method}
			if method == "fail" {
				delete(resp, "result")
				resp["error"] = map[string]any{"code": -19, "message": "No such device"}
			}
			wmu.Lock()
			defer wmu.Unlock()
			_ = json.NewEncoder(c).Encode(resp)
		}()
	}
}

func TestCallMatchesAnswersOutOfOrder(t *testing.T) {
	f := startFake(t, filepath.Join(t.TempDir(), "spdk.sock"))
	f.delay = func(m string) time.Duration {
		if m == "slow" {
			return 200 * time.Millisecond
		}
		return 0
	}
	c := NewClient(f.socket)
	defer func() { _ = c.Close() }()

	var wg sync.WaitGroup
	results := make([]string, 20)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			method := "fast"
			if i%2 == 0 {
				method = "slow"
			}
			if err := c.Call(context.Background(), method, nil, &results[i]); err != nil {
				t.Errorf("call %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	for i, r := range results {
		want := map[bool]string{true: "slow", false: "fast"}[i%2 == 0]
		if r != want {
			t.Errorf("call %d got the answer %q of another call, want %q", i, r, want)
		}
	}
}

func TestCallOmitsNilParamsAndReportsSPDKErrors(t *testing.T) {
	f := startFake(t, filepath.Join(t.TempDir(), "spdk.sock"))
	c := NewClient(f.socket)
	defer func() { _ = c.Close() }()
	if err := c.Call(context.Background(), "list", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(context.Background(), "list", map[string]string{"name": "x"}, nil); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	_, first := f.seen[0]["params"]
	_, second := f.seen[1]["params"]
	f.mu.Unlock()
	if first || !second {
		t.Errorf("params sent: without=%v with=%v; SPDK lists everything only when params are omitted", first, second)
	}

	err := c.Call(context.Background(), "fail", nil, nil)
	var rpcErr *Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != -19 || rpcErr.Method != "fail" || !errors.Is(err, ErrNotFound) {
		t.Errorf("err = %v, want the SPDK error -19 of method fail", err)
	}
}

func TestCallHonoursDeadline(t *testing.T) {
	f := startFake(t, filepath.Join(t.TempDir(), "spdk.sock"))
	f.silent = true
	c := NewClient(f.socket)
	defer func() { _ = c.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.Call(ctx, "hang", nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("returned after %v", time.Since(start))
	}
}

func TestCallRedialsAfterSPDKRestarts(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "spdk.sock")
	f := startFake(t, socket)
	f.delay = func(m string) time.Duration {
		if m == "inflight" {
			return time.Hour
		}
		return 0
	}
	c := NewClient(socket)
	defer func() { _ = c.Close() }()
	if err := c.Call(context.Background(), "ping", nil, nil); err != nil {
		t.Fatal(err)
	}

	// A call in flight when SPDK dies fails as a lost connection.
	inflight := make(chan error, 1)
	go func() { inflight <- c.Call(context.Background(), "inflight", nil, nil) }()
	f.waitFor(`"inflight"`)
	_ = f.ln.Close()
	c.mu.Lock()
	_ = c.conn.Close() // the process is gone: its end of every connection closes
	c.mu.Unlock()
	if err := <-inflight; !errors.Is(err, ErrDisconnected) {
		t.Fatalf("in-flight call: %v, want ErrDisconnected", err)
	}

	// While SPDK is down, calls fail fast as disconnected.
	if err := c.Call(context.Background(), "ping", nil, nil); !errors.Is(err, ErrDisconnected) {
		t.Fatalf("call while down: %v, want ErrDisconnected", err)
	}

	// Once SPDK listens again, the next call redials.
	f.listen()
	var got string
	if err := c.Call(context.Background(), "ping", nil, &got); err != nil || got != "ping" {
		t.Fatalf("call after restart: %q, %v", got, err)
	}
}
