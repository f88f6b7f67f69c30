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
	"math"

	"github.com/flint-io/flint/internal/spdk/jsonrpc"
	"github.com/flint-io/flint/internal/spdk/types"
)

// bdevSetQosLimit merges the limits given into the bdev's: a limit left
// out keeps its value, 0 removes it. They live in SPDK's memory only: a
// restarted SPDK has none.
//
// A bdev with limits and no I/O channel answers -EAGAIN to any change:
// SPDK's own open of the bdev for the call starts QoS there, which is
// still in progress when the change is asked for. The double has no
// channels; it takes an unclaimed bdev for one without any (what Flint
// meets: a raid not exported yet) and a claimed one for one with them
// (exported, or under an lvstore or an exported raid), which misjudges
// a member of a raid nobody opened. (SPDK's -EAGAIN while another change
// is in flight cannot happen here: the double answers one call at a
// time.)
func bdevSetQosLimit(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		Name           string  `json:"name"`
		RwIOsPerSec    *uint64 `json:"rw_ios_per_sec"`
		RwMbytesPerSec *uint64 `json:"rw_mbytes_per_sec"`
		RMbytesPerSec  *uint64 `json:"r_mbytes_per_sec"`
		WMbytesPerSec  *uint64 `json:"w_mbytes_per_sec"`
	}
	if err := decode(p, &req, errDecode(), "name"); err != nil {
		return nil, err
	}
	b := t.st.bdev(req.Name)
	if b == nil {
		return nil, errf(jsonrpc.CodeNoSuchDevice, "No such device")
	}
	// UINT64_MAX is SPDK's "not given".
	given := func(v *uint64) bool { return v != nil && *v != math.MaxUint64 }
	if !given(req.RwIOsPerSec) && !given(req.RwMbytesPerSec) && !given(req.RMbytesPerSec) && !given(req.WMbytesPerSec) {
		return nil, errf(jsonrpc.CodeInvalid, "No rate limits specified")
	}
	if b.claimType == "" && b.qos != (types.QosLimits{}) {
		return nil, errf(jsonrpc.CodeInvalidParams, "Failed to configure rate limit: Resource temporarily unavailable")
	}
	if given(req.RwIOsPerSec) {
		b.qos.RwIOsPerSec = (*req.RwIOsPerSec + types.QosIOsStep - 1) / types.QosIOsStep * types.QosIOsStep
	}
	for _, l := range []struct{ from, to *uint64 }{
		{req.RwMbytesPerSec, &b.qos.RwMbytesPerSec}, {req.RMbytesPerSec, &b.qos.RMbytesPerSec}, {req.WMbytesPerSec, &b.qos.WMbytesPerSec},
	} {
		if given(l.from) {
			*l.to = *l.from
		}
	}
	return true, nil
}
