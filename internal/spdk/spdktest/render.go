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

// renderBdev is a bdev as bdev_get_bdevs shows it. The double emits a subset
// of SPDK's keys, each with SPDK's meaning.
func (t *Target) renderBdev(b *bdev) map[string]any {
	m := map[string]any{
		"name": b.name, "aliases": b.aliases, "product_name": b.product,
		"block_size": b.blockSize, "num_blocks": b.numBlocks, "uuid": b.uuid,
		"claimed": b.claimType != "", "zoned": false, "assigned_rate_limits": b.qos,
	}
	if b.claimType != "" {
		m["claim_type"] = b.claimType
	}
	switch b.kind {
	case kindLvol:
		m["driver_specific"] = map[string]any{"lvol": renderLvol(b.lvol)}
	case kindRaid:
		m["driver_specific"] = map[string]any{"raid": b.raid.render()}
	case kindNvme:
		c := b.ctrlr
		ctrlrData := map[string]any{
			"cntlid": c.cntlid, "model_number": c.model, "serial_number": c.serial, "firmware_revision": "25.09",
		}
		if !c.pcie {
			ctrlrData["subnqn"] = c.subnqn
		}
		m["driver_specific"] = map[string]any{"nvme": []any{map[string]any{
			"trid": c.renderTrid(), "ctrlr_data": ctrlrData, "ns_data": map[string]any{"id": b.nsid},
		}}}
	}
	return m
}

func renderLvol(l *lvol) map[string]any {
	m := map[string]any{
		"lvol_store_uuid": l.lvs.uuid, "base_bdev": l.lvs.base.name, "thin_provision": l.thin,
		"num_allocated_clusters": l.allocated, "snapshot": l.snapshot, "clone": l.parent != nil, "esnap_clone": false,
	}
	if l.snapshot {
		var clones []string
		for _, c := range l.lvs.clonesOf(l) {
			clones = append(clones, c.name)
		}
		if len(clones) > 0 {
			m["clones"] = clones
		}
	}
	if l.parent != nil {
		m["base_snapshot"] = l.parent.name
	}
	return m
}
