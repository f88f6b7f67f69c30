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

package launch

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
)

// ClaimDevice opens the block device at path exclusively (O_EXCL), for
// SPDK: the descriptor is kept across exec, so SPDK holds the claim for as
// long as it runs. The kernel claims the device, not the path, so a second
// OSD on the same device (two Pools, or two paths to one device) is
// refused before its SPDK examines, and may write to, the first one's live
// lvstore; so is a device with a mounted filesystem. It returns the
// descriptor (-1 for a path that is no block device: a file, which only
// development uses), or the finding when another holds the device.
func ClaimDevice(path string) (int, *Finding, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return -1, nil, fmt.Errorf("read the device %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return -1, nil, nil
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_EXCL, 0) // no O_CLOEXEC: SPDK inherits it
	if errors.Is(err, unix.EBUSY) {
		return -1, &Finding{Reason: agentv1.PreflightDeviceInUse, Fatal: true, Message: fmt.Sprintf(
			"the block device %s (%d:%d) is held exclusively by another: the SPDK of another OSD on this node (two Pools, or two paths, name this device), or a mounted filesystem; give each OSD a device of its own (lsblk shows mounts; kubectl get osds -o wide shows which OSD runs on this node)",
			path, unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev)))}, nil
	}
	if err != nil {
		return -1, nil, fmt.Errorf("claim the device %s: %w", path, err)
	}
	return fd, nil, nil
}
