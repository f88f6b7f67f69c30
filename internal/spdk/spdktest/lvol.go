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
	"slices"
	"strings"

	"github.com/flint-io/flint/internal/spdk/jsonrpc"
)

const (
	mib          = 1 << 20
	mdPageSize   = 4096
	maxNameLen   = 63 // SPDK_LVS_NAME_MAX and SPDK_LVOL_NAME_MAX, less the NUL
	defaultClust = 4 * mib
)

// lvstore is a blobstore on a disk. It stays on the disk while no bdev of
// that disk is registered, and loads again when one is.
type lvstore struct {
	uuid, name  string
	clusterSize uint64
	blockSize   uint32
	dataTotal   uint64
	lvols       []*lvol // creation order
	base        *bdev   // nil while not loaded
}

type lvol struct {
	uuid, name string
	lvs        *lvstore
	clusters   uint64 // size in whole clusters
	thin       bool
	allocated  uint64
	snapshot   bool
	parent     *lvol // the snapshot this lvol is a clone of
	bdev       *bdev // nil while not loaded
	// writes are the host writes whose data the lvol reads back, those
	// it shares with its snapshot included (writes.go).
	writes []uint64
}

func (l *lvol) alias() string { return l.lvs.name + "/" + l.name }

func (s *lvstore) free() uint64 {
	var used uint64
	for _, l := range s.lvols {
		used += l.allocated
	}
	return s.dataTotal - used
}

// clustersFor is how many whole clusters hold sizeMiB: SPDK rounds lvol
// sizes up.
func (s *lvstore) clustersFor(sizeMiB uint64) uint64 {
	return (sizeMiB*mib + s.clusterSize - 1) / s.clusterSize
}

func (s *lvstore) lvol(name string) *lvol {
	for _, l := range s.lvols {
		if l.name == name {
			return l
		}
	}
	return nil
}

func (s *lvstore) clonesOf(snap *lvol) []*lvol {
	var cs []*lvol
	for _, l := range s.lvols {
		if l.parent == snap {
			cs = append(cs, l)
		}
	}
	return cs
}

func (s *lvstore) remove(l *lvol) {
	for i, x := range s.lvols {
		if x == l {
			s.lvols = append(s.lvols[:i], s.lvols[i+1:]...)
			return
		}
	}
}

// dataClusters is what a blobstore of this cluster size leaves for data on
// a device: one metadata page per cluster, the super block and three
// bitmaps come off the top, in whole clusters.
func dataClusters(deviceBytes, clusterSize uint64) uint64 {
	total := deviceBytes / clusterSize
	bitmapPages := (total + mdPageSize*8 - 1) / (mdPageSize * 8)
	mdBytes := (1 + 3*bitmapPages + total) * mdPageSize
	md := (mdBytes + clusterSize - 1) / clusterSize
	if total <= md {
		return 0
	}
	return total - md
}

func (st *state) lvstoreByName(name string) *lvstore {
	for _, s := range st.lvstores {
		if s.name == name {
			return s
		}
	}
	return nil
}

func (st *state) lvstoreByUUID(uuid string) *lvstore {
	for _, s := range st.lvstores {
		if s.uuid == uuid {
			return s
		}
	}
	return nil
}

// lvolOf returns the lvol behind a bdev name, alias or uuid.
func (st *state) lvolOf(name string) *lvol {
	if b := st.bdev(name); b != nil && b.kind == kindLvol {
		return b.lvol
	}
	return nil
}

func (t *Target) loadLvstore(s *lvstore, base *bdev) {
	s.base = base
	base.claim(claimReadManyWriteOne, "lvol")
	t.st.lvstores = append(t.st.lvstores, s)
	for _, l := range s.lvols {
		t.registerLvol(l)
	}
}

func (t *Target) unloadLvstore(s *lvstore) {
	for _, l := range s.lvols {
		t.unregisterLvol(l)
	}
	s.base.release()
	s.base = nil
	for i, x := range t.st.lvstores {
		if x == s {
			t.st.lvstores = append(t.st.lvstores[:i], t.st.lvstores[i+1:]...)
			break
		}
	}
}

func (t *Target) registerLvol(l *lvol) {
	b := &bdev{
		name: l.uuid, uuid: l.uuid, aliases: []string{l.alias()}, product: "Logical Volume",
		blockSize: l.lvs.blockSize, numBlocks: l.clusters * l.lvs.clusterSize / uint64(l.lvs.blockSize),
		kind: kindLvol, lvol: l,
	}
	l.bdev = b
	t.register(b)
}

// unregisterLvol removes a loaded lvol's bdev; the lvol stays on disk.
func (t *Target) unregisterLvol(l *lvol) {
	if l.bdev != nil {
		b := l.bdev
		l.bdev = nil
		t.unregister(b)
	}
}

// renamed refreshes a loaded lvol's alias after its or its lvstore's name
// changed.
func (l *lvol) renamed() {
	if l.bdev != nil {
		l.bdev.aliases = []string{l.alias()}
	}
}

func (t *Target) lvolResized(l *lvol) {
	if l.bdev != nil {
		t.resize(l.bdev, l.clusters*l.lvs.clusterSize/uint64(l.lvs.blockSize))
	}
}

func bdevLvolCreateLvstore(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		BdevName    string `json:"bdev_name"`
		LvsName     string `json:"lvs_name"`
		ClusterSz   uint32 `json:"cluster_sz"`
		ClearMethod string `json:"clear_method"`
	}
	if err := decode(p, &req, errDecode(), "bdev_name", "lvs_name"); err != nil {
		return nil, err
	}
	if !validClearMethod(req.ClearMethod) {
		return nil, errf(jsonrpc.CodeInvalid, "Invalid clear_method parameter")
	}
	b := t.st.bdev(req.BdevName)
	if b == nil {
		return nil, errf(jsonrpc.CodeNoSuchDevice, "No such device")
	}
	if b.disk == nil {
		return nil, errf(CodeNotModeled, "the double keeps lvstores on malloc, aio, uring and PCIe bdevs only")
	}
	if b.claimType != "" {
		return nil, errf(jsonrpc.CodeNotPermitted, "Operation not permitted")
	}
	if req.LvsName == "" || len(req.LvsName) > maxNameLen {
		return nil, errf(jsonrpc.CodeInvalid, "Invalid argument")
	}
	if t.st.lvstoreByName(req.LvsName) != nil {
		return nil, errf(jsonrpc.CodeExists, "File exists")
	}
	cluster := uint64(req.ClusterSz)
	if cluster == 0 {
		cluster = defaultClust
	}
	if cluster < mdPageSize {
		return nil, errf(jsonrpc.CodeInvalid, "Invalid argument")
	}
	data := dataClusters(b.numBlocks*uint64(b.blockSize), cluster)
	if data == 0 {
		return nil, errf(jsonrpc.CodeInvalidParams, "Invalid argument")
	}
	s := &lvstore{uuid: newUUID(), name: req.LvsName, clusterSize: cluster, blockSize: b.blockSize, dataTotal: data}
	b.disk.lvs = s
	t.loadLvstore(s, b)
	return s.uuid, nil
}

// selectLvstore resolves an lvstore by name or uuid; giving both or
// neither is invalid.
func (t *Target) selectLvstore(name, uuid string) (*lvstore, error) {
	if (name == "") == (uuid == "") {
		return nil, errf(jsonrpc.CodeInvalid, "Invalid argument")
	}
	s := t.st.lvstoreByName(name)
	if uuid != "" {
		s = t.st.lvstoreByUUID(uuid)
	}
	if s == nil {
		return nil, errf(jsonrpc.CodeNoSuchDevice, "No such device")
	}
	return s, nil
}

// lvstoresOf lists every loaded lvstore when params were omitted, else the
// one they name.
func (t *Target) lvstoresOf(params json.RawMessage, name, uuid string) ([]*lvstore, error) {
	if params == nil {
		return t.st.lvstores, nil
	}
	s, err := t.selectLvstore(name, uuid)
	if err != nil {
		return nil, err
	}
	return []*lvstore{s}, nil
}

func bdevLvolGetLvstores(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		LvsName string `json:"lvs_name"`
		UUID    string `json:"uuid"`
	}
	if err := decode(p, &req, errDecode()); err != nil {
		return nil, err
	}
	stores, err := t.lvstoresOf(p, req.LvsName, req.UUID)
	if err != nil {
		return nil, err
	}
	out := []any{}
	for _, s := range stores {
		out = append(out, map[string]any{
			"uuid": s.uuid, "name": s.name, "base_bdev": s.base.name,
			"total_data_clusters": s.dataTotal, "free_clusters": s.free(),
			"block_size": s.blockSize, "cluster_size": s.clusterSize,
		})
	}
	return out, nil
}

func bdevLvolDeleteLvstore(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		LvsName string `json:"lvs_name"`
		UUID    string `json:"uuid"`
	}
	if err := decode(p, &req, errDecode()); err != nil {
		return nil, err
	}
	s, err := t.selectLvstore(req.LvsName, req.UUID)
	if err != nil {
		return nil, err
	}
	base := s.base
	t.unloadLvstore(s)
	base.disk.lvs = nil
	return true, nil
}

func bdevLvolCreate(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		LvolName      string `json:"lvol_name"`
		SizeInMiB     uint64 `json:"size_in_mib"`
		ThinProvision bool   `json:"thin_provision"`
		LvsName       string `json:"lvs_name"`
		UUID          string `json:"uuid"`
		ClearMethod   string `json:"clear_method"`
	}
	if err := decode(p, &req, errDecode(), "lvol_name", "size_in_mib"); err != nil {
		return nil, err
	}
	if !validClearMethod(req.ClearMethod) {
		return nil, errf(jsonrpc.CodeInvalid, "Invalid clear_method parameter")
	}
	s, err := t.selectLvstore(req.LvsName, req.UUID)
	if err != nil {
		return nil, err
	}
	if req.LvolName == "" || len(req.LvolName) > maxNameLen {
		return nil, errf(jsonrpc.CodeInvalid, "Invalid argument")
	}
	if s.lvol(req.LvolName) != nil {
		return nil, errf(jsonrpc.CodeExists, "File exists")
	}
	clusters := s.clustersFor(req.SizeInMiB)
	l := &lvol{uuid: newUUID(), name: req.LvolName, lvs: s, clusters: clusters, thin: req.ThinProvision}
	if !l.thin {
		if clusters > s.free() {
			return nil, errf(jsonrpc.CodeInvalidParams, "No space left on device")
		}
		l.allocated = clusters
	}
	s.lvols = append(s.lvols, l)
	t.registerLvol(l)
	return l.uuid, nil
}

func bdevLvolResize(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		Name      string `json:"name"`
		SizeInMiB uint64 `json:"size_in_mib"`
	}
	if err := decode(p, &req, errDecode(), "name", "size_in_mib"); err != nil {
		return nil, err
	}
	l := t.st.lvolOf(req.Name)
	if l == nil {
		return nil, errf(jsonrpc.CodeNoSuchDevice, "No such device")
	}
	if l.snapshot {
		return nil, errf(jsonrpc.CodeInvalidParams, "Operation not permitted")
	}
	clusters := l.lvs.clustersFor(req.SizeInMiB)
	if !l.thin && clusters > l.allocated {
		if clusters-l.allocated > l.lvs.free() {
			return nil, errf(jsonrpc.CodeInvalidParams, "No space left on device")
		}
		l.allocated = clusters
	}
	l.allocated = min(l.allocated, clusters)
	l.clusters = clusters
	t.lvolResized(l)
	return true, nil
}

func bdevLvolSnapshot(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		LvolName     string `json:"lvol_name"`
		SnapshotName string `json:"snapshot_name"`
	}
	if err := decode(p, &req, errDecode(), "lvol_name", "snapshot_name"); err != nil {
		return nil, err
	}
	origin := t.st.lvolOf(req.LvolName)
	if origin == nil {
		return nil, errf(jsonrpc.CodeNoSuchDevice, "No such device")
	}
	s := origin.lvs
	if err := checkNewName(req.SnapshotName, s.lvol(req.SnapshotName) != nil); err != nil {
		return nil, err
	}
	// The snapshot takes the origin's clusters, and so the data the
	// origin held at that instant; the origin becomes a thin clone of it.
	snap := &lvol{
		uuid: newUUID(), name: req.SnapshotName, lvs: s, clusters: origin.clusters,
		thin: origin.thin, allocated: origin.allocated, snapshot: true, parent: origin.parent,
		writes: slices.Clone(origin.writes),
	}
	origin.parent, origin.thin, origin.allocated = snap, true, 0
	s.lvols = append(s.lvols, snap)
	t.registerLvol(snap)
	return snap.uuid, nil
}

func bdevLvolClone(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		SnapshotName string `json:"snapshot_name"`
		CloneName    string `json:"clone_name"`
	}
	if err := decode(p, &req, errDecode(), "snapshot_name", "clone_name"); err != nil {
		return nil, err
	}
	snap := t.st.lvolOf(req.SnapshotName)
	if snap == nil {
		return nil, errf(jsonrpc.CodeNoSuchDevice, "No such device")
	}
	if err := checkNewName(req.CloneName, snap.lvs.lvol(req.CloneName) != nil); err != nil {
		return nil, err
	}
	if !snap.snapshot {
		return nil, errf(jsonrpc.CodeInvalidParams, "Invalid argument")
	}
	c := &lvol{uuid: newUUID(), name: req.CloneName, lvs: snap.lvs, clusters: snap.clusters, thin: true, parent: snap, writes: slices.Clone(snap.writes)}
	snap.lvs.lvols = append(snap.lvs.lvols, c)
	t.registerLvol(c)
	return c.uuid, nil
}

func bdevLvolDelete(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		Name string `json:"name"`
	}
	if err := decode(p, &req, errDecode(), "name"); err != nil {
		return nil, err
	}
	l := t.st.lvolOf(req.Name)
	if l == nil {
		return nil, errf(jsonrpc.CodeNoSuchDevice, "No such device")
	}
	s := l.lvs
	if l.snapshot {
		clones := s.clonesOf(l)
		if len(clones) > 1 {
			return nil, errf(jsonrpc.CodeInternalError, "Operation not permitted")
		}
		// A snapshot with one clone is merged into it: its clusters move.
		if len(clones) == 1 {
			c := clones[0]
			c.parent = l.parent
			c.allocated = min(c.allocated+l.allocated, c.clusters)
			l.allocated = 0
		}
	}
	t.unregisterLvol(l)
	s.remove(l)
	return true, nil
}

func bdevLvolRename(t *Target, p json.RawMessage) (any, error) {
	oldName, newName, err := decodeRename(p)
	if err != nil {
		return nil, err
	}
	l := t.st.lvolOf(oldName)
	if l == nil {
		return nil, errf(jsonrpc.CodeNoSuchDevice, "No such device")
	}
	if err := checkNewName(newName, l.lvs.lvol(newName) != nil); err != nil {
		return nil, err
	}
	l.name = newName
	l.renamed()
	return true, nil
}

func bdevLvolGetLvols(t *Target, p json.RawMessage) (any, error) {
	var req struct {
		LvsName string `json:"lvs_name"`
		LvsUUID string `json:"lvs_uuid"`
	}
	if err := decode(p, &req, errDecode()); err != nil {
		return nil, err
	}
	stores, err := t.lvstoresOf(p, req.LvsName, req.LvsUUID)
	if err != nil {
		return nil, err
	}
	out := []any{}
	for _, s := range stores {
		for _, l := range s.lvols {
			out = append(out, map[string]any{
				"alias": l.alias(), "uuid": l.uuid, "name": l.name,
				"is_thin_provisioned": l.thin, "is_snapshot": l.snapshot, "is_clone": l.parent != nil,
				"is_esnap_clone": false, "is_degraded": false, "num_allocated_clusters": l.allocated,
				"lvs": map[string]any{"name": s.name, "uuid": s.uuid},
			})
		}
	}
	return out, nil
}

func bdevLvolRenameLvstore(t *Target, p json.RawMessage) (any, error) {
	oldName, newName, err := decodeRename(p)
	if err != nil {
		return nil, err
	}
	s := t.st.lvstoreByName(oldName)
	if s == nil {
		return nil, errf(jsonrpc.CodeNoSuchDevice, "No such device")
	}
	if err := checkNewName(newName, t.st.lvstoreByName(newName) != nil); err != nil {
		return nil, err
	}
	s.name = newName
	for _, l := range s.lvols {
		l.renamed()
	}
	return true, nil
}

func decodeRename(p json.RawMessage) (oldName, newName string, err error) {
	var req struct {
		OldName string `json:"old_name"`
		NewName string `json:"new_name"`
	}
	err = decode(p, &req, errDecode(), "old_name", "new_name")
	return req.OldName, req.NewName, err
}

// checkNewName answers a rename as SPDK does: a taken name first, then an
// empty or too long one.
func checkNewName(name string, taken bool) error {
	if taken {
		return errf(jsonrpc.CodeInvalidParams, "File exists")
	}
	if name == "" || len(name) > maxNameLen {
		return errf(jsonrpc.CodeInvalidParams, "Invalid argument")
	}
	return nil
}

// bdevLvolInflate makes an lvol thick and independent of any snapshot.
func bdevLvolInflate(t *Target, p json.RawMessage) (any, error) {
	l, err := lvolByNameParam(t, p)
	if err != nil {
		return nil, err
	}
	if l.clusters-l.allocated > l.lvs.free() {
		return nil, errf(jsonrpc.CodeInvalidParams, "No space left on device")
	}
	l.allocated, l.thin, l.parent = l.clusters, false, nil
	return true, nil
}

// bdevLvolDecoupleParent copies the parent snapshot's clusters into the
// lvol and attaches it to the grandparent; the lvol stays thin.
func bdevLvolDecoupleParent(t *Target, p json.RawMessage) (any, error) {
	l, err := lvolByNameParam(t, p)
	if err != nil {
		return nil, err
	}
	if l.parent == nil {
		return nil, errf(jsonrpc.CodeInvalidParams, "Invalid argument")
	}
	grow := min(l.parent.allocated, l.clusters-l.allocated)
	if grow > l.lvs.free() {
		return nil, errf(jsonrpc.CodeInvalidParams, "No space left on device")
	}
	l.allocated += grow
	l.parent = l.parent.parent
	return true, nil
}

func lvolByNameParam(t *Target, p json.RawMessage) (*lvol, error) {
	var req struct {
		Name string `json:"name"`
	}
	if err := decode(p, &req, errDecode(), "name"); err != nil {
		return nil, err
	}
	l := t.st.lvolOf(req.Name)
	if l == nil {
		return nil, errf(jsonrpc.CodeNoSuchDevice, "No such device")
	}
	return l, nil
}

func validClearMethod(m string) bool {
	switch strings.ToLower(m) {
	case "", "none", "unmap", "write_zeroes":
		return true
	}
	return false
}
