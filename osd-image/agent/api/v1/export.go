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
	"errors"

	"github.com/flint-io/flint/internal/fabric"
)

// Validate checks an export an agent reports before the operator records
// it: hosts and targets build connect strings from it. An OSD's endpoint
// has no NQN; a volume's or a replica's has one.
func (e *Export) Validate() error {
	if e == nil {
		return errors.New("no endpoint")
	}
	if err := fabric.ValidateEndpoint(e.GetTransport(), e.GetAddress(), int64(e.GetPort())); err != nil {
		return err
	}
	if e.GetNqn() != "" {
		return fabric.ValidateNQN(e.GetNqn())
	}
	return nil
}
