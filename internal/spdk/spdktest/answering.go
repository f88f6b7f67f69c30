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

package spdktest

import (
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/flint-io/flint/internal/spdk/transcript"
)

// Answering serves a Unix socket that answers every request with
// `{"id":<the request's id>,` followed by tail(method) and a newline: what
// no SPDK answers, for tests of the code that reads SPDK's answers. It
// returns the socket's path; it stops when tb ends.
func Answering(tb testing.TB, tail func(method string) []byte) string {
	return answering(tb, tail, false)
}

// AnsweringOnce is Answering closing each connection after one answer, so
// that an answer cut short ends the call at once instead of at its
// deadline: for fuzz targets, whose calls each dial again.
func AnsweringOnce(tb testing.TB, tail func(method string) []byte) string {
	return answering(tb, tail, true)
}

func answering(tb testing.TB, tail func(method string) []byte, once bool) string {
	tb.Helper()
	socket := filepath.Join(tb.TempDir(), "spdk.sock")
	lis, err := net.Listen("unix", socket)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = lis.Close() })
	go func() {
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = conn.Close() }()
				dec := json.NewDecoder(conn)
				for {
					var req struct {
						ID     json.RawMessage `json:"id"`
						Method string          `json:"method"`
					}
					if dec.Decode(&req) != nil {
						return
					}
					if _, err := fmt.Fprintf(conn, "{\"id\":%s,%s\n", req.ID, tail(req.Method)); err != nil || once {
						return
					}
				}
			}()
		}
	}()
	return socket
}

// TranscriptAnswers are the answers a real SPDK v25.09 gave in the recorded
// transcripts, each without its id and opening brace (as Answering's tail
// takes them): seeds for fuzz targets of the code that reads SPDK.
func TranscriptAnswers(tb testing.TB) [][]byte {
	tb.Helper()
	_, self, _, _ := runtime.Caller(0)
	files, err := filepath.Glob(filepath.Join(filepath.Dir(self), "testdata", "transcripts", "*.jsonl"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no transcripts beside %s: %v", self, err)
	}
	var out [][]byte
	for _, file := range files {
		lines, err := transcript.Read(file)
		if err != nil {
			tb.Fatal(err)
		}
		for _, l := range lines {
			var response map[string]json.RawMessage
			if json.Unmarshal(l.Response, &response) != nil || response == nil {
				continue
			}
			delete(response, "id")
			b, _ := json.Marshal(response)
			out = append(out, b[1:])
		}
	}
	return out
}
