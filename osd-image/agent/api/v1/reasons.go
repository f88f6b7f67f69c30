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

package agentv1

import (
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrorDomain is the domain of the ErrorInfo the agent attaches to the
// refusals its caller acts on.
const ErrorDomain = "agent.flint.io"

// Reasons in the ErrorInfo of FAILED_PRECONDITION answers.
const (
	// ReasonLeaseLapsed: the OSD's lease lapsed, so it lets no host reach
	// a target; renew the lease first.
	ReasonLeaseLapsed = "LeaseLapsed"
	// ReasonTargetFenced: the target was fenced when the lease lapsed;
	// re-drive it with confirmed set, after reading the Volume from the
	// apiserver.
	ReasonTargetFenced = "TargetFenced"
)

// ErrorWithReason is a status error of code carrying reason.
func ErrorWithReason(code codes.Code, reason, msg string) error {
	st, err := status.New(code, msg).WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain})
	if err != nil {
		return status.Error(code, msg)
	}
	return st.Err()
}

// ReasonOf is the reason an agent attached to err, "" without one.
func ReasonOf(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == ErrorDomain {
			return info.GetReason()
		}
	}
	return ""
}
