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
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/flint-io/flint/internal/spdk/transcript"
)

// transcriptDir holds real SPDK v25.09 JSON-RPC transcripts, recorded by
// hack/spdk-record. FLINT_SPDK_TRANSCRIPTS names a fresh recording
// instead (make test-transcripts): the double must answer as the SPDK
// built here does.
var transcriptDir = cmp.Or(os.Getenv("FLINT_SPDK_TRANSCRIPTS"), filepath.Join("testdata", "transcripts"))

// request is a transcript line's request, decoded.
type request struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// response is a transcript line's response, decoded.
type response struct {
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// notReplayed says, per transcript, which recorded steps the double cannot
// reproduce and why. Everything else must answer as SPDK did.
var notReplayed = map[string][]struct{ match, why string }{
	"nvmf.jsonl": {
		{"perform_tests", "bdevperf runs I/O; the double has no data path"},
		{"tgt nvmf_subsystem_get_controllers after re-add", "num_io_qpairs counts the initiator's I/O channels, which follow bdevperf's jobs"},
		{"nvmf_subsystem_get_qpairs", "qpairs are not modeled"},
		{"nvmf_get_stats", "poll group statistics are not modeled"},
		{"bdev_nvme_get_io_paths", "I/O paths are not modeled"},
		{"ini bdev_nvme_get_controllers after remove_host", "SPDK passes through 'resetting' for ~3 s; the double fails the controller at once"},
		{"ini bdev_nvme_get_controllers initiator controllers after perform_tests", "follows I/O"},
		{"ini bdev_get_bdevs", "ns_data.ana_state follows ANA, which is not modeled"},
		{"ini bdev_nvme_get_controllers initiator bdev_nvme_get_controllers (full)", "compared in part below"},
	},
	"raid.jsonl": {
		{"perform_tests", "bdevperf runs I/O; the double has no data path"},
		{"bdev_raid_set_options", "raid options are not modeled"},
		{"already deleted?", "follows the superblock run, which the double does not model"},
		{"create raidx", "raid superblocks are not modeled"},
	},
	"stats.jsonl": {
		{"framework_get_reactors", "reactors are not modeled"},
		{"spdk_get_version", "the double names itself in its version"},
		{"histogram Malloc0 after", "histogram counts follow I/O"},
		{"histogram lvol (writes only) after I/O", "histogram counts follow I/O"},
		{"iostat", "counters follow I/O; the double's stay zero (checked without I/O in the contract suite)"},
		{"perform_tests", "bdevperf runs I/O"},
		{"attach", "the initiator's steps here only drive I/O"},
		{"log_set_flag", "log flags are not modeled"},
		{"log_clear_flag", "log flags are not modeled"},
		{"bdev_reset_iostat", "counters follow I/O"},
		{"reset iostat", "counters follow I/O"},
		{"initiator", "reactors are not modeled"},
		{"histogram fields?", "histogram fields are not modeled"},
		{"bdev_get_bdevs lvol assigned_rate_limits", "num_allocated_clusters follows the I/O before it"},
	},
	"persist.jsonl": {},
	"lvol.jsonl":    {},
}

// timed names, per transcript, the steps whose answer depends on when
// they ran against SPDK's reconnect timers (a step named "+N" ran N
// seconds after an event; the others right after one): they are
// compared with the committed recording, taken on a quiet machine, but
// not with a fresh one (FLINT_SPDK_TRANSCRIPTS), whose timing is that of
// a busy CI machine.
var timed = map[string][]string{
	"nvmf.jsonl": {
		"ini bdev_nvme_get_controllers reconnect case",
		"ini bdev_nvme_get_controllers after re-add",
		"ini bdev_nvme_get_controllers initiator controllers after remove_listener",
	},
}

// errorsOnlyAfter names, per transcript, the event after which the recorded
// run depends on I/O the double does not run (a replica killed mid-write
// leaves its raid slot empty on the first failed I/O): from there on only
// the recorded error answers are replayed.
var errorsOnlyAfter = map[string]string{
	"raid.jsonl": "SIGKILL replica r3 while I/O runs",
}

func TestReplayTranscripts(t *testing.T) {
	for file := range notReplayed {
		t.Run(file, func(t *testing.T) { replay(t, file) })
	}
}

func replay(t *testing.T, file string) {
	lines := readTranscript(t, filepath.Join(transcriptDir, file))
	dir := t.TempDir()
	fabric := NewFabric()
	targets := map[string]*Target{}
	target := func(name string) *Target {
		if tg := targets[name]; tg != nil {
			return tg
		}
		tg, err := fabric.StartTarget(filepath.Join(dir, name+".sock"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tg.Kill)
		targets[name] = tg
		return tg
	}
	m := newUUIDMap()
	compared, skipped := 0, 0
	errorsOnly := false
	for _, l := range lines {
		if after := errorsOnlyAfter[file]; after != "" && strings.Contains(l.Event, after) {
			errorsOnly = true
		}
		if errorsOnly && (l.Event != "" || !strings.Contains(l.Step, "(error")) {
			skipped++
			continue
		}
		if l.Event != "" {
			switch transcript.What(l) {
			case transcript.Killed, transcript.Terminated, transcript.Exited:
				target(l.Target).Kill()
			case transcript.Started:
				if tg, started := targets[l.Target]; started {
					if err := tg.Restart(); err != nil {
						t.Fatal(err)
					}
				} else {
					target(l.Target)
				}
			}
			continue
		}
		var req request
		var resp response
		if err := json.Unmarshal(l.Request, &req); err != nil {
			t.Fatalf("%s: %v", l.Step, err)
		}
		if err := json.Unmarshal(l.Response, &resp); err != nil {
			t.Fatalf("%s: %v", l.Step, err)
		}
		key := l.Target + " " + req.Method + " " + l.Step
		if why := skipReason(file, key); why != "" || otherTickRate(req.Method, resp.Result) {
			skipped++
			continue
		}
		if _, ok := handlers[req.Method]; !ok {
			skipped++
			continue
		}
		params := m.rewriteRequest(req.Params, dir)
		res, rerr := target(l.Target).handle(context.Background(), req.Method, params)
		compared++
		if resp.Error != nil {
			if rerr == nil {
				t.Errorf("%s: SPDK answered error %d %q, the double succeeded with %v", key, resp.Error.Code, resp.Error.Message, res)
				continue
			}
			if rerr.Code != resp.Error.Code || rerr.Message != resp.Error.Message {
				t.Errorf("%s: SPDK answered error %d %q, the double %d %q", key, resp.Error.Code, resp.Error.Message, rerr.Code, rerr.Message)
			}
			continue
		}
		if rerr != nil {
			t.Errorf("%s: SPDK succeeded, the double answered %d %q", key, rerr.Code, rerr.Message)
			continue
		}
		got := roundTrip(t, res)
		var want any
		if err := json.Unmarshal(resp.Result, &want); err != nil {
			t.Fatal(err)
		}
		if err := m.subset(got, want, "result"); err != nil {
			t.Errorf("%s: %v\n double: %s\n   spdk: %s", key, err, mustJSON(got), resp.Result)
		}
	}
	t.Logf("%s: %d calls answered as SPDK did, %d steps not replayed", file, compared, skipped)
	if compared == 0 {
		t.Fatalf("%s: nothing compared", file)
	}
}

func skipReason(file, key string) string {
	for _, s := range notReplayed[file] {
		if strings.Contains(key, s.match) {
			return s.why
		}
	}
	if os.Getenv("FLINT_SPDK_TRANSCRIPTS") != "" {
		for _, match := range timed[file] {
			if strings.Contains(key, match) {
				return "the answer follows SPDK's timers, and a fresh recording's timing is a busy machine's"
			}
		}
	}
	return ""
}

// otherTickRate reports a histogram recorded on a CPU whose time stamp
// counter ticks at another rate than the double's (that of the machine
// the committed transcripts were recorded on): SPDK's default histogram
// range follows the rate, so a fresh recording on another CPU cannot be
// compared. The committed recording always is.
func otherTickRate(method string, result json.RawMessage) bool {
	if method != "bdev_get_histogram" {
		return false
	}
	var h struct {
		TscRate uint64 `json:"tsc_rate"`
	}
	return json.Unmarshal(result, &h) == nil && h.TscRate != 0 && h.TscRate != tscRate
}

func readTranscript(t *testing.T, path string) []transcript.Line {
	lines, err := transcript.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

func roundTrip(t *testing.T, v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustJSON(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

var nguidRe = regexp.MustCompile(`^[0-9A-F]{32}$`)

// uuidMap pairs the uuids SPDK generated with the double's, one to one.
type uuidMap struct{ recorded, double map[string]string }

func newUUIDMap() *uuidMap {
	return &uuidMap{recorded: map[string]string{}, double: map[string]string{}}
}

// rewriteRequest replaces recorded uuids with the double's and the recorded
// image files with files of the same size in dir.
func (m *uuidMap) rewriteRequest(params json.RawMessage, dir string) json.RawMessage {
	if params == nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(params, &v); err != nil {
		return params
	}
	v = transcript.WalkStrings(v, func(x string) string {
		if d, ok := m.recorded[x]; ok {
			return d
		}
		if path, ok := transcript.Image(dir, x); ok {
			return path
		}
		return x
	})
	data, _ := json.Marshal(v)
	return data
}

// subset checks that every value the double gave appears in SPDK's answer
// with the same meaning: keys the double emits must match; arrays match
// element for element in any order.
func (m *uuidMap) subset(got, want any, path string) error {
	switch g := got.(type) {
	case map[string]any:
		w, ok := want.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: double gave an object, SPDK %v", path, want)
		}
		keys := make([]string, 0, len(g))
		for k := range g {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			// Tick counts and rates are the recording machine's clock.
			if k == "ticks" || k == "tick_rate" || k == "tsc_rate" || k == "cntlid" {
				continue
			}
			wv, ok := w[k]
			if !ok {
				return fmt.Errorf("%s.%s: SPDK has no such key", path, k)
			}
			if err := m.subset(g[k], wv, path+"."+k); err != nil {
				return err
			}
		}
		return nil
	case []any:
		w, ok := want.([]any)
		if !ok || len(w) != len(g) {
			return fmt.Errorf("%s: double gave %d elements, SPDK %v", path, len(g), want)
		}
		used := make([]bool, len(w))
		for i, gv := range g {
			found := false
			var firstErr error
			for j, wv := range w {
				if used[j] {
					continue
				}
				trial := m.clone()
				if err := trial.subset(gv, wv, fmt.Sprintf("%s[%d]", path, i)); err == nil {
					*m, used[j], found = *trial, true, true
					break
				} else if firstErr == nil {
					firstErr = err
				}
			}
			if !found {
				return firstErr
			}
		}
		return nil
	case string:
		w, ok := want.(string)
		if !ok {
			return fmt.Errorf("%s: double %q, SPDK %v", path, g, want)
		}
		if transcript.UUID.MatchString(g) && transcript.UUID.MatchString(w) && g != zeroUUID {
			return m.pair(w, g, path)
		}
		if nguidRe.MatchString(g) && nguidRe.MatchString(w) {
			return m.pair(uuidOfNGUID(w), uuidOfNGUID(g), path)
		}
		if g != w {
			return fmt.Errorf("%s: double %q, SPDK %q", path, g, w)
		}
		return nil
	default:
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("%s: double %v, SPDK %v", path, got, want)
		}
		return nil
	}
}

func (m *uuidMap) pair(recorded, double, path string) error {
	if d, ok := m.recorded[recorded]; ok && d != double {
		return fmt.Errorf("%s: SPDK's %s was the double's %s before, now %s", path, recorded, d, double)
	}
	if r, ok := m.double[double]; ok && r != recorded {
		return fmt.Errorf("%s: the double's %s was SPDK's %s before, now %s", path, double, r, recorded)
	}
	m.recorded[recorded], m.double[double] = double, recorded
	return nil
}

func (m *uuidMap) clone() *uuidMap {
	c := newUUIDMap()
	for k, v := range m.recorded {
		c.recorded[k] = v
	}
	for k, v := range m.double {
		c.double[k] = v
	}
	return c
}
