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

// Command spdk-record records SPDK's JSON-RPC transcripts afresh: it runs
// the steps of each transcript (its processes' starts, kills and
// restarts, and every request, in the order they were issued) against
// real SPDK processes of an SPDK build tree, and writes what this SPDK
// answered. The double's replay test (internal/spdk/spdktest) then runs
// on the fresh recording, so a change of SPDK or of the double that makes
// them disagree fails with the step that differs (make test-transcripts).
//
// A transcript is its own script: a step's request is sent again as it
// was, with the uuids this run's SPDK generated in place of the recorded
// ones and the recorded /tmp/<name>.img files made afresh (sparse, 256
// MiB) in a directory of this run. Requests to one target are issued in
// the order of their JSON-RPC ids; a request recorded after others with
// higher ids (a perform_tests whose I/O ran while other steps did) is
// issued right after its predecessor answered, and its line is written
// where it was. A step named "+N" waits until N seconds after the last
// step without one, "poll N" until N seconds after poll 0.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/flint-io/flint/internal/spdk/spdklab"
	"github.com/flint-io/flint/internal/spdk/transcript"
)

func main() {
	spdkDir := flag.String("spdk-dir", os.Getenv("FLINT_SPDK_DIR"), "an SPDK build tree: build/bin/nvmf_tgt and build/examples/bdevperf (make spdk prints one)")
	script := flag.String("script", filepath.Join("internal", "spdk", "spdktest", "testdata", "transcripts"), "the transcripts whose steps are run")
	out := flag.String("out", "", "where the fresh transcripts are written (may be -script itself)")
	flag.Parse()
	if *spdkDir == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "spdk-record: give -spdk-dir (or FLINT_SPDK_DIR) and -out")
		os.Exit(2)
	}
	if err := run(*spdkDir, *script, *out); err != nil {
		fmt.Fprintf(os.Stderr, "spdk-record: %v\n", err)
		os.Exit(1)
	}
}

// run records every transcript of script afresh into out.
func run(spdkDir, script, out string) error {
	files, err := filepath.Glob(filepath.Join(script, "*.jsonl"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no transcripts (*.jsonl) in %s", script)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, file := range files {
		began := time.Now()
		lines, err := transcript.Read(file)
		if err != nil {
			return err
		}
		fresh, err := record(spdkDir, lines)
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(file), err)
		}
		if err := transcript.Write(filepath.Join(out, filepath.Base(file)), fresh); err != nil {
			return err
		}
		fmt.Printf("%s: %d steps recorded in %s\n", filepath.Base(file), len(fresh), time.Since(began).Round(time.Millisecond))
	}
	return nil
}

type request struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	ID      int             `json:"id"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// answer is a request's outcome, written to its line when it is reached.
type answer struct {
	request, response json.RawMessage
	err               error
}

// session is one transcript's run: its processes, the uuids this run's
// SPDK gave in place of the recorded ones, and the requests in flight.
type session struct {
	spdkDir, dir string
	procs        map[string]*spdklab.Process
	argv         map[string][]string
	uuids        map[string]string
	inFlight     map[int]chan answer
	// anchor is when the last step without "+N" in its name ended.
	anchor time.Time
	// pollZero is when each series of polls began.
	pollZero map[string]time.Time
}

var (
	offsetRe   = regexp.MustCompile(`\+(\d+)(:|\s|$)`)
	pollRe     = regexp.MustCompile(`^(.*)\bpoll (\d+)$`)
	exitCodeRe = regexp.MustCompile(`rc=-?\d+`)
)

func record(spdkDir string, lines []transcript.Line) ([]transcript.Line, error) {
	dir, err := os.MkdirTemp("", "spdk-record-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	s := &session{spdkDir: spdkDir, dir: dir, procs: map[string]*spdklab.Process{}, argv: map[string][]string{},
		uuids: map[string]string{}, inFlight: map[int]chan answer{}, anchor: time.Now(), pollZero: map[string]time.Time{}}
	defer s.stopAll()

	early, err := issuedEarly(lines)
	if err != nil {
		return nil, err
	}
	fresh := make([]transcript.Line, 0, len(lines))
	for i, l := range lines {
		if l.Event != "" {
			happened, err := s.event(l)
			if err != nil {
				return nil, fmt.Errorf("step %q (%s): %w", l.Step, l.Target, err)
			}
			fresh = append(fresh, happened)
			s.anchor = time.Now()
			continue
		}
		if err := s.ensureStarted(l.Target); err != nil {
			return nil, fmt.Errorf("step %q (%s): %w", l.Step, l.Target, err)
		}
		ch, issued := s.inFlight[i]
		if !issued {
			s.pace(l.Step)
			ch = s.issue(l)
		}
		a := <-ch
		if a.err != nil {
			return nil, fmt.Errorf("step %q (%s): %w", l.Step, l.Target, a.err)
		}
		s.pair(l.Response, a.response)
		fresh = append(fresh, transcript.Line{Step: l.Step, Target: l.Target, Request: a.request, Response: a.response})
		if !offsetRe.MatchString(l.Step) {
			s.anchor = time.Now()
		}
		for _, j := range early[i] {
			s.inFlight[j] = s.issue(lines[j])
		}
	}
	return fresh, nil
}

// issuedEarly finds the requests that were issued before steps recorded
// ahead of them: for each line, the lines to issue once it has answered.
// Each process's client numbered its requests in the order it issued
// them (one counter for the target, across its restarts), and a line is
// recorded when its answer came: a request recorded after one of the same
// target with a higher id was issued right after the request of the
// nearest lower id answered.
func issuedEarly(lines []transcript.Line) (map[int][]int, error) {
	ids := make([]int, len(lines))
	for i, l := range lines {
		if l.Event != "" {
			continue
		}
		var req request
		if err := json.Unmarshal(l.Request, &req); err != nil {
			return nil, fmt.Errorf("step %q: %w", l.Step, err)
		}
		ids[i] = req.ID
	}
	early := map[int][]int{}
	for i, l := range lines {
		if l.Event != "" {
			continue
		}
		late, pred := false, -1
		for j := range lines {
			if j == i || lines[j].Event != "" || lines[j].Target != l.Target {
				continue
			}
			if j < i && ids[j] > ids[i] {
				late = true
			}
			if ids[j] < ids[i] && (pred < 0 || ids[j] > ids[pred]) {
				pred = j
			}
		}
		if !late {
			continue
		}
		if pred < 0 || pred > i {
			return nil, fmt.Errorf("step %q (%s, id %d) answered before requests issued after it, and no request answered before it was issued first: its issue order is unknown", l.Step, l.Target, ids[i])
		}
		early[pred] = append(early[pred], i)
	}
	return early, nil
}

func (s *session) event(l transcript.Line) (transcript.Line, error) {
	p := s.procs[l.Target]
	switch transcript.What(l) {
	case transcript.Killed:
		if p != nil {
			p.Kill()
		}
	case transcript.Terminated:
		if p != nil {
			p.Terminate(30 * time.Second)
		}
	case transcript.Exited:
		if p == nil || !p.WaitExit(60*time.Second) {
			return l, errors.New("the process was recorded exiting by itself, and this SPDK's did not within 60s")
		}
		l.Event = exitCodeRe.ReplaceAllString(l.Event, fmt.Sprintf("rc=%d", p.ExitCode()))
	case transcript.Started:
		return l, s.start(l)
	}
	return l, nil
}

// start starts l.Target: the command the event names, or the one it ran
// before for a restart.
func (s *session) start(l transcript.Line) error {
	argv := s.argv[l.Target]
	for _, prog := range []struct{ name, path string }{
		{"nvmf_tgt", filepath.Join(s.spdkDir, "build", "bin", "nvmf_tgt")},
		{"bdevperf", filepath.Join(s.spdkDir, "build", "examples", "bdevperf")},
	} {
		_, args, found := strings.Cut(l.Event, prog.name+" ")
		if !found || !strings.HasPrefix(strings.TrimSpace(args), "-") {
			continue
		}
		args, _, _ = strings.Cut(args, " (")
		args, _, _ = strings.Cut(args, ";")
		socket := filepath.Join(s.dir, l.Target+".sock")
		argv = append(append([]string{prog.path}, strings.Fields(args)...), "-r", socket)
	}
	if argv == nil {
		return fmt.Errorf("the event %q names no command, and %s never started", l.Event, l.Target)
	}
	if p := s.procs[l.Target]; p != nil {
		p.Kill()
	}
	p, err := spdklab.StartCommand(argv, argv[len(argv)-1])
	if err != nil {
		return err
	}
	s.procs[l.Target], s.argv[l.Target] = p, argv
	return nil
}

// ensureStarted starts a target no event started: a transcript without
// events ran on one nvmf_tgt, started as every recording's was.
func (s *session) ensureStarted(target string) error {
	if s.argv[target] != nil {
		return nil
	}
	return s.start(transcript.Line{Target: target, Event: "nvmf_tgt --no-huge -s 2048 -m 0x1"})
}

func (s *session) stopAll() {
	for _, p := range s.procs {
		p.Kill()
	}
}

// pace waits as the step's name says: "+N" seconds after the anchor;
// "poll N" N seconds after poll 0 of its series (the recording kept only
// some polls of a second apart).
func (s *session) pace(step string) {
	if m := offsetRe.FindStringSubmatch(step); m != nil {
		n, _ := strconv.Atoi(m[1])
		time.Sleep(time.Until(s.anchor.Add(time.Duration(n) * time.Second)))
	} else if m := pollRe.FindStringSubmatch(step); m != nil {
		n, _ := strconv.Atoi(m[2])
		if n == 0 {
			s.pollZero[m[1]] = time.Now()
		} else if zero, ok := s.pollZero[m[1]]; ok {
			time.Sleep(time.Until(zero.Add(time.Duration(n) * time.Second)))
		}
	}
}

// issue sends l's request, rewritten for this run, and answers on the
// returned channel.
func (s *session) issue(l transcript.Line) chan answer {
	ch := make(chan answer, 1)
	req, sent, err := s.rewrite(l.Request)
	if err != nil {
		ch <- answer{err: err}
		return ch
	}
	socket := filepath.Join(s.dir, l.Target+".sock")
	timeout := time.Minute
	var params struct {
		TimeInSec int `json:"time_in_sec"`
	}
	if req.Method == "perform_tests" && json.Unmarshal(req.Params, &params) == nil {
		timeout += time.Duration(params.TimeInSec) * time.Second
	}
	go func() {
		resp, err := call(socket, sent, timeout)
		ch <- answer{request: s.recorded(sent), response: s.recorded(resp), err: err}
	}()
	return ch
}

// rewrite puts this run's uuids and image files into a recorded request.
func (s *session) rewrite(raw json.RawMessage) (request, []byte, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return request{}, nil, err
	}
	v = transcript.WalkStrings(v, func(str string) string {
		if fresh, ok := s.uuids[str]; ok {
			return fresh
		}
		if path, ok := transcript.Image(s.dir, str); ok {
			return path
		}
		return str
	})
	sent, err := json.Marshal(v)
	if err != nil {
		return request{}, nil, err
	}
	var req request
	return req, sent, json.Unmarshal(sent, &req)
}

// recorded is a request or response as the transcript keeps it: the image
// files under the names the replay knows (/tmp/<name>.img). Numbers stay
// as SPDK wrote them (UINT64_MAX has no float64).
func (s *session) recorded(sent []byte) json.RawMessage {
	var v any
	d := json.NewDecoder(bytes.NewReader(sent))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return sent
	}
	v = transcript.WalkStrings(v, func(str string) string {
		if recorded, ok := transcript.Recorded(s.dir, str); ok {
			return recorded
		}
		return str
	})
	data, _ := json.Marshal(v)
	return data
}

// pair learns which uuid of this run's answer stands for which recorded
// one, from values at the same place in both answers.
func (s *session) pair(recorded, fresh json.RawMessage) {
	var r, f any
	if json.Unmarshal(recorded, &r) != nil || json.Unmarshal(fresh, &f) != nil {
		return
	}
	var walk func(r, f any)
	walk = func(r, f any) {
		switch r := r.(type) {
		case string:
			if fs, ok := f.(string); ok && transcript.UUID.MatchString(r) && transcript.UUID.MatchString(fs) {
				if _, known := s.uuids[r]; !known {
					s.uuids[r] = fs
				}
			}
		case map[string]any:
			if fm, ok := f.(map[string]any); ok {
				for k, v := range r {
					walk(v, fm[k])
				}
			}
		case []any:
			fa, ok := f.([]any)
			if !ok {
				return
			}
			for i, v := range r {
				if j := sameElement(v, fa, i); j >= 0 {
					walk(v, fa[j])
				}
			}
		}
	}
	walk(r, f)
}

// sameElement is the index in fresh of the element standing for recorded,
// the i-th of its list: the one of the same name, else the i-th.
func sameElement(recorded any, fresh []any, i int) int {
	if m, ok := recorded.(map[string]any); ok {
		if name, ok := m["name"].(string); ok && !transcript.UUID.MatchString(name) {
			for j, f := range fresh {
				if fm, ok := f.(map[string]any); ok && fm["name"] == name {
					return j
				}
			}
			return -1
		}
	}
	if i < len(fresh) {
		return i
	}
	return -1
}

// call sends one JSON-RPC request on its own connection and returns the
// response object as SPDK wrote it.
func call(socket string, req []byte, timeout time.Duration) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write(req); err != nil {
		return nil, err
	}
	var resp json.RawMessage
	if err := json.NewDecoder(conn).Decode(&resp); err != nil {
		return nil, fmt.Errorf("no answer: %w", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, resp); err != nil {
		return nil, err
	}
	return compact.Bytes(), nil
}
