/*
 * Copyright 2026 The Flint Authors.
 * SPDX-License-Identifier: Apache-2.0
 *
 * flint_volume: the bdev a Volume's namespace sits on, over its raid1.
 * docs/proposals/volume-vbdev.md says why it exists; docs/spdk.md lists
 * its RPCs.
 */

#ifndef FLINT_VOLUME_H
#define FLINT_VOLUME_H

#include "spdk/stdinc.h"
#include "spdk/bdev.h"
#include "spdk/uuid.h"

/* At most this many members of one Volume have a write-intent map. */
#define FLINT_VOLUME_MAX_MAPS 8

struct flint_volume;

/* Done callbacks of the asynchronous operations: rc is 0 or -errno, and
 * msg (when rc is not 0) says what was wrong. */
typedef void (*flint_volume_done)(void *ctx, int rc, const char *msg);

int flint_volume_create(const char *name, const char *base_name, const struct spdk_uuid *uuid,
			const char **msg);
void flint_volume_delete(const char *name, flint_volume_done done, void *ctx);

struct flint_volume *flint_volume_find(const char *name);
/* The base bdev's name; NULL while the flint_volume has none. */
const char *flint_volume_base_name(const struct flint_volume *vol);

void flint_volume_pause(struct flint_volume *vol, flint_volume_done done, void *ctx);
void flint_volume_resume(struct flint_volume *vol, flint_volume_done done, void *ctx);
void flint_volume_attach(struct flint_volume *vol, const char *base_name,
			 flint_volume_done done, void *ctx);

void flint_volume_mark(struct flint_volume *vol, const char *member,
		       flint_volume_done done, void *ctx);
void flint_volume_forget(struct flint_volume *vol, const char *member,
			 flint_volume_done done, void *ctx);

/* What a member's map holds, and its copy's progress. */
struct flint_volume_map_state {
	uint64_t dirty_blocks;
	bool grown;            /* written past its size: incomplete */
	bool copying;          /* a copy runs */
	uint64_t copied_blocks; /* by the copy that runs, or the last one */
	int copy_rc;           /* the last copy's: 0, or -errno */
	const char *copy_msg;  /* what failed, when copy_rc is not 0 */
};

/* Reads member's map; fn (when not NULL) gets each run of dirty blocks,
 * in order, until it returns false. Returns -ENOENT when member has no
 * map. */
int flint_volume_map(struct flint_volume *vol, const char *member, struct flint_volume_map_state *st,
		     bool (*fn)(void *ctx, uint64_t offset, uint64_t count), void *ctx);

/* Starts copying member's dirty blocks from the base to member_bdev, once
 * over the map, in the background; flint_volume_map tells how it goes. A
 * copy of the member to the same bdev that runs already is success. */
int flint_volume_copy(struct flint_volume *vol, const char *member, const char *member_bdev,
		      uint64_t max_bytes_per_sec, const char **msg);

#endif
