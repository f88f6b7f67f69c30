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
	"strings"

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
	// ReasonMembersHeld: members of the target's raid lost their
	// connection and hold writes; stopping the target would wait for them
	// for ever. Record them out of sync and list them in out_of_sync_osds
	// (metadata "osds": their uids, comma-separated).
	ReasonMembersHeld = "MembersHeld"
	// ReasonWrongPod: the call was meant for another pod of the OSD
	// (PodUIDHeader); observe the OSD's pod again.
	ReasonWrongPod = "WrongPod"
)

// PodUIDHeader is the gRPC metadata that names, in a call, the pod it is
// meant for and, in the answer, the pod of the agent that served it. An
// agent refuses a call meant for another pod: a pod that outlives its
// deletion (force-deleted on a node that still runs) and its successor
// can listen at one address (the node's, with host networking), and the
// operator's record of which pods it reached (agentclient.Leases) must
// name the one that served.
const PodUIDHeader = "flint-pod-uid"

// MembersHeldError refuses to stop a target whose members osds hold
// writes.
func MembersHeldError(osds []string, msg string) error {
	return errorWithInfo(codes.FailedPrecondition, &errdetails.ErrorInfo{Reason: ReasonMembersHeld, Domain: ErrorDomain, Metadata: map[string]string{"osds": strings.Join(osds, ",")}}, msg)
}

// MembersHeldOf lists the OSDs a MembersHeld refusal names.
func MembersHeldOf(err error) []string {
	if info := infoOf(err); info != nil && info.GetReason() == ReasonMembersHeld && info.GetMetadata()["osds"] != "" {
		return strings.Split(info.GetMetadata()["osds"], ",")
	}
	return nil
}

// ErrorWithReason is a status error of code carrying reason.
func ErrorWithReason(code codes.Code, reason, msg string) error {
	return errorWithInfo(code, &errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain}, msg)
}

func errorWithInfo(code codes.Code, info *errdetails.ErrorInfo, msg string) error {
	st, err := status.New(code, msg).WithDetails(info)
	if err != nil {
		return status.Error(code, msg)
	}
	return st.Err()
}

// ReasonOf is the reason an agent attached to err, "" without one.
func ReasonOf(err error) string {
	return infoOf(err).GetReason()
}

func infoOf(err error) *errdetails.ErrorInfo {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == ErrorDomain {
			return info
		}
	}
	return nil
}
