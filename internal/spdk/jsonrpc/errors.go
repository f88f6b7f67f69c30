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
	"errors"
	"fmt"
	"strings"
)

// SPDK answers most failures with a negative errno and its strerror text,
// and some with a JSON-RPC code whose message carries the errno's text. The
// codes Flint meets (see internal/spdk/spdktest/testdata/transcripts/README.md).
const (
	CodeNotPermitted   = -1     // -EPERM
	CodeNoEntry        = -2     // -ENOENT
	CodeIOError        = -5     // -EIO: a fabric attach that was refused or could not connect
	CodeNoMemory       = -12    // -ENOMEM
	CodeBusy           = -16    // -EBUSY: flint_volume, while another operation on it runs
	CodeExists         = -17    // -EEXIST
	CodeNoSuchDevice   = -19    // -ENODEV
	CodeInvalid        = -22    // -EINVAL
	CodeNoSpace        = -28    // -ENOSPC
	CodeAlready        = -114   // -EALREADY: a controller of that name already exists
	CodeNoKey          = -126   // -ENOKEY: no keyring key of that name
	CodeParseError     = -32700 // JSON-RPC parse error (SPDK also uses it for some decode failures)
	CodeMethodNotFound = -32601 // JSON-RPC method not found
	CodeInvalidParams  = -32602 // JSON-RPC invalid params
	CodeInternalError  = -32603 // JSON-RPC internal error
	CodeNVMeNotExist   = 22     // bdev_nvme_get_controllers answers +EINVAL for an unknown name
)

// Sentinel errors that an *Error matches with errors.Is. They classify SPDK's
// answers by meaning, whichever code SPDK chose to carry it.
var (
	// ErrExists: the object already exists.
	ErrExists = errors.New("already exists")
	// ErrNotFound: the object, or something it refers to, does not exist.
	ErrNotFound = errors.New("not found")
	// ErrNoSpace: the lvstore has too few free clusters.
	ErrNoSpace = errors.New("no space left")
	// ErrInvalid: SPDK refused the parameters.
	ErrInvalid = errors.New("invalid argument")
	// ErrNotPermitted: the operation is not allowed in the object's state,
	// for example a bdev claimed by another module.
	ErrNotPermitted = errors.New("operation not permitted")
	// ErrDisconnected: the connection to SPDK broke before the answer came;
	// the call may or may not have taken effect.
	ErrDisconnected = errors.New("connection to SPDK lost")
)

// Error is an error answer from SPDK. It keeps the method, code and message,
// and matches the sentinel errors above with errors.Is.
type Error struct {
	Method  string
	Code    int
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("spdk %s: %s (code %d)", e.Method, e.Message, e.Code)
}

// Is classifies the answer. The message decides where SPDK reuses one
// JSON-RPC code for several errnos (-32602 carries "File exists", "No
// space left on device" and "Operation not permitted").
func (e *Error) Is(target error) bool {
	msg := strings.ToLower(e.Message)
	switch target {
	case ErrExists:
		return e.Code == CodeExists || e.Code == CodeAlready ||
			strings.Contains(msg, "file exists") || strings.Contains(msg, "already exists")
	case ErrNotFound:
		return e.Code == CodeNoSuchDevice || e.Code == CodeNoEntry || e.Code == CodeNoKey ||
			(e.Code == CodeNVMeNotExist && strings.Contains(msg, "does not exist")) ||
			strings.Contains(msg, "not found")
	case ErrNoSpace:
		return e.Code == CodeNoSpace || strings.Contains(msg, "no space left")
	case ErrNotPermitted:
		return e.Code == CodeNotPermitted || strings.Contains(msg, "operation not permitted")
	case ErrInvalid:
		if e.Is(ErrExists) || e.Is(ErrNoSpace) || e.Is(ErrNotPermitted) {
			return false
		}
		return e.Code == CodeInvalid || e.Code == CodeInvalidParams || e.Code == CodeParseError ||
			strings.Contains(msg, "invalid") || strings.Contains(msg, "spdk_json_decode_object failed")
	}
	return false
}

// CodeOf returns the SPDK code of err, or 0 when err is no SPDK answer.
func CodeOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}
