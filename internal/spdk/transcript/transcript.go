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

// Package transcript reads and writes recorded SPDK JSON-RPC transcripts
// (internal/spdk/spdktest/testdata/transcripts): one JSON object a line,
// either a request with SPDK's response or an event (a process started,
// killed or restarted). The recorder (hack/spdk-record) writes them, the
// double's replay test reads them; both rewrite what varies between runs
// the same way.
package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Line is one step of a transcript.
type Line struct {
	Step   string `json:"step"`
	Target string `json:"target"`
	// Event says what happened to Target's process instead of a request.
	Event    string          `json:"event,omitempty"`
	Request  json.RawMessage `json:"request,omitempty"`
	Response json.RawMessage `json:"response,omitempty"`
}

// Read reads the transcript at path.
func Read(path string) ([]Line, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var lines []Line
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var l Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("transcript %s:%d: %w", path, n, err)
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read transcript %s: %w", path, err)
	}
	return lines, nil
}

// Write writes lines as the transcript at path.
func Write(path string, lines []Line) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// Happening is what an event line says happened to its target's process.
type Happening int

const (
	// Noted is a note: nothing happened to the process.
	Noted Happening = iota
	// Started is a start: of the command the event names, or of the one
	// the target ran before; a running process is killed first.
	Started
	// Killed is a SIGKILL.
	Killed
	// Terminated is a SIGTERM, a clean shutdown.
	Terminated
	// Exited is the process ending by itself.
	Exited
)

// What says what an event line l records. The recordings word their
// events freely; these are the words they use.
func What(l Line) Happening {
	switch {
	case l.Event == "":
		return Noted
	case strings.Contains(l.Event, "SIGKILL") || strings.Contains(l.Step, "kill -9"):
		if strings.Contains(l.Event, "start a fresh") {
			return Started
		}
		return Killed
	case strings.Contains(l.Event, "SIGTERM") || strings.Contains(l.Step, "SIGTERM"):
		return Terminated
	case strings.HasPrefix(l.Step, "host exited"):
		return Exited
	case l.Step == "start" || strings.HasPrefix(l.Step, "restart") || strings.HasPrefix(l.Event, "start ") ||
		strings.Contains(l.Event, "start a new") || strings.Contains(l.Event, "start new"):
		return Started
	}
	return Noted
}

var (
	// UUID matches the uuids SPDK generates, which differ between runs.
	UUID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	// imagePath matches an aio bdev's file as a transcript names it.
	imagePath = regexp.MustCompile(`^/tmp/([a-z0-9]+)\.img$`)
)

// ImageSize is the size of every aio bdev's file in the transcripts.
const ImageSize = 256 << 20

// Image is the file a run uses in dir for the recorded path p
// (/tmp/<name>.img), made sparse of ImageSize on first use; ok is false
// when p names no image.
func Image(dir, p string) (path string, ok bool) {
	m := imagePath.FindStringSubmatch(p)
	if m == nil {
		return "", false
	}
	path = filepath.Join(dir, m[1]+".img")
	if _, err := os.Stat(path); err != nil {
		if f, err := os.Create(path); err == nil {
			_ = f.Truncate(ImageSize)
			_ = f.Close()
		}
	}
	return path, true
}

// Recorded is the path a transcript names for the image file path of dir.
func Recorded(dir, path string) (string, bool) {
	rel, err := filepath.Rel(dir, path)
	if err != nil || filepath.Dir(rel) != "." || filepath.Ext(rel) != ".img" {
		return "", false
	}
	return "/tmp/" + rel, true
}

// WalkStrings replaces every string in a decoded JSON value v by fn's.
func WalkStrings(v any, fn func(string) string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = WalkStrings(e, fn)
		}
	case []any:
		for i, e := range x {
			x[i] = WalkStrings(e, fn)
		}
	case string:
		return fn(x)
	}
	return v
}
