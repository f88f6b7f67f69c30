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

package types

// BdevLvolCreateLvstoreRequest creates an lvstore on a bdev.
type BdevLvolCreateLvstoreRequest struct {
	BdevName string `json:"bdev_name"`
	LvsName  string `json:"lvs_name"`
	// ClusterSz is the cluster size in bytes; SPDK's default is 4 MiB.
	ClusterSz   uint32 `json:"cluster_sz,omitempty"`
	ClearMethod string `json:"clear_method,omitempty"`
}

// LvstoreSelector picks one lvstore by name or uuid (set exactly one); both
// empty lists every lvstore.
type LvstoreSelector struct {
	LvsName string `json:"lvs_name,omitempty"`
	UUID    string `json:"uuid,omitempty"`
}

// Lvstore is one logical volume store.
type Lvstore struct {
	UUID              string `json:"uuid"`
	Name              string `json:"name"`
	BaseBdev          string `json:"base_bdev"`
	TotalDataClusters uint64 `json:"total_data_clusters"`
	FreeClusters      uint64 `json:"free_clusters"`
	BlockSize         uint32 `json:"block_size"`
	ClusterSize       uint64 `json:"cluster_size"`
}

// TotalBytes is the lvstore's data capacity.
func (l Lvstore) TotalBytes() uint64 { return l.TotalDataClusters * l.ClusterSize }

// FreeBytes is the lvstore's unallocated capacity.
func (l Lvstore) FreeBytes() uint64 { return l.FreeClusters * l.ClusterSize }

// BdevLvolCreateRequest creates an lvol in the lvstore named by LvsName or
// UUID. SPDK rounds the size up to whole clusters.
type BdevLvolCreateRequest struct {
	LvolName      string `json:"lvol_name"`
	SizeInMiB     uint64 `json:"size_in_mib"`
	ThinProvision bool   `json:"thin_provision,omitempty"`
	LvsName       string `json:"lvs_name,omitempty"`
	UUID          string `json:"uuid,omitempty"`
	ClearMethod   string `json:"clear_method,omitempty"`
}

// BdevLvolResizeRequest resizes an lvol (Name is lvs/lvol or its uuid).
type BdevLvolResizeRequest struct {
	Name      string `json:"name"`
	SizeInMiB uint64 `json:"size_in_mib"`
}

// BdevLvolSnapshotRequest snapshots an lvol; the lvol becomes a thin clone
// of the snapshot.
type BdevLvolSnapshotRequest struct {
	LvolName     string `json:"lvol_name"`
	SnapshotName string `json:"snapshot_name"`
}

// BdevLvolCloneRequest makes a thin writable clone of a snapshot.
type BdevLvolCloneRequest struct {
	SnapshotName string `json:"snapshot_name"`
	CloneName    string `json:"clone_name"`
}

// BdevLvolGetLvolsRequest lists lvols, of one lvstore when LvsName or
// LvsUUID is set.
type BdevLvolGetLvolsRequest struct {
	LvsName string `json:"lvs_name,omitempty"`
	LvsUUID string `json:"lvs_uuid,omitempty"`
}

// Lvol is one logical volume. Its size is in the bdev of the same uuid.
type Lvol struct {
	Alias                string `json:"alias"`
	UUID                 string `json:"uuid"`
	Name                 string `json:"name"`
	IsThinProvisioned    bool   `json:"is_thin_provisioned"`
	IsSnapshot           bool   `json:"is_snapshot"`
	IsClone              bool   `json:"is_clone"`
	IsDegraded           bool   `json:"is_degraded"`
	NumAllocatedClusters uint64 `json:"num_allocated_clusters"`
	Lvs                  struct {
		Name string `json:"name"`
		UUID string `json:"uuid"`
	} `json:"lvs"`
}
