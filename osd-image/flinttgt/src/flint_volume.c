/*
 * Copyright 2026 The Flint Authors.
 * SPDX-License-Identifier: Apache-2.0
 *
 * flint_volume: a bdev over a Volume's raid1 that passes reads and writes
 * on and adds what the raid lacks (docs/proposals/volume-vbdev.md):
 *
 * - a reset stops here: nvmf resets the namespace's bdev when a host
 *   resets its controller, and a reset that reached the raid would drop a
 *   member whose writes are held;
 * - pause and resume: host I/O waits in SPDK, on the host's connection;
 * - write-intent maps: per member, the blocks written since it was marked,
 *   so that a member that left with its data intact catches up by a copy
 *   of those blocks only;
 * - the base can be closed and another attached while paused, so the raid
 *   can be made again under live host connections.
 *
 * Every function here runs on the app thread except the I/O path, which
 * runs on the threads of the channels; maps are shared between them and
 * changed with atomic word operations only.
 */

#include "flint_volume.h"

#include "spdk/bdev_module.h"
#include "spdk/env.h"
#include "spdk/log.h"
#include "spdk/queue.h"
#include "spdk/string.h"
#include "spdk/thread.h"

/* A copy moves at most this much per read and write, COPY_DEPTH runs at
 * a time. */
#define COPY_CHUNK_BYTES (256 * 1024)
#define COPY_DEPTH 16
/* A run of a copy bridges this many clean blocks between dirty ones. */
#define COPY_GAP_BLOCKS 8

struct map {
	char *member;
	uint64_t *words; /* one bit per block, set when the block was written */
	uint64_t nwords;
	uint64_t blocks; /* the flint_volume's when the map was made */
	/* Set by a write past blocks, once the volume grew: the map cannot
	 * say what the member lacks, and a copy is refused. */
	bool grown;
	bool copying;
	char *copying_to; /* the member_bdev of the copy that runs */
	uint64_t copied;
	int copy_rc;
	const char *copy_msg;
};

struct flint_volume {
	struct spdk_bdev bdev;
	struct spdk_bdev_desc *base_desc; /* NULL while no base is attached */
	/* The I/O types the namespace was offered at creation; a base
	 * attached later must support them all, FLUSH aside (flush_needed). */
	bool supports[SPDK_BDEV_NUM_IO_TYPES];
	struct map *maps[FLINT_VOLUME_MAX_MAPS];
	bool paused;
	bool busy; /* an operation that visits every channel is under way */
	/* A pause or resume is under way. Apart from busy: a pause waits for
	 * the writes held for a lost member, which only a mark and the
	 * member's detach let go. */
	bool quiescing;
	int copies; /* under way */
	bool stop_copies; /* a delete waits for them to stop */
	bool deleting;
	TAILQ_ENTRY(flint_volume) link;
};

struct channel {
	struct spdk_io_channel *base_ch;
	TAILQ_HEAD(, io_ctx) writes; /* in flight to the base */
};

struct io_ctx {
	TAILQ_ENTRY(io_ctx) link;
	bool tracked;
	struct spdk_bdev_io_wait_entry wait;
};

static int module_init(void);
static int io_ctx_size(void);

static struct spdk_bdev_module flint_volume_module = {
	.name = "flint_volume",
	.module_init = module_init,
	.get_ctx_size = io_ctx_size,
};

SPDK_BDEV_MODULE_REGISTER(flint_volume, &flint_volume_module)

static TAILQ_HEAD(, flint_volume) g_volumes = TAILQ_HEAD_INITIALIZER(g_volumes);

static int
module_init(void)
{
	return 0;
}

static int
io_ctx_size(void)
{
	return sizeof(struct io_ctx);
}

/* Maps */

static void
map_set(struct map *m, uint64_t offset, uint64_t count)
{
	uint64_t end = offset + count;

	if (end > m->blocks) {
		__atomic_store_n(&m->grown, true, __ATOMIC_RELEASE);
		end = m->blocks;
	}

	while (offset < end) {
		uint64_t bit = offset % 64;
		uint64_t n = spdk_min(64 - bit, end - offset);
		uint64_t mask = (n == 64) ? UINT64_MAX : (((1ULL << n) - 1) << bit);

		__atomic_fetch_or(&m->words[offset / 64], mask, __ATOMIC_RELEASE);
		offset += n;
	}
}

/* map_take takes the next run of dirty blocks from *offset on, of at most
 * max blocks: *offset becomes its first block, and it returns its length,
 * 0 when none is left. A run bridges gaps of up to COPY_GAP_BLOCKS clean
 * blocks: one I/O more costs more than copying them again, and a clean
 * block copied is harmless (it equals the member's, and a write to it
 * meanwhile marks it). Only the dirty blocks taken are cleared. */
static uint64_t
map_take(struct map *m, uint64_t *offset, uint64_t limit, uint64_t max)
{
	uint64_t first = *offset, end, stop;

	while (first < limit) {
		uint64_t w = __atomic_load_n(&m->words[first / 64], __ATOMIC_ACQUIRE) >> (first % 64);

		if (w == 0) {
			first = (first / 64 + 1) * 64;
			continue;
		}
		first += __builtin_ctzll(w);
		break;
	}
	if (first >= limit) {
		return 0;
	}
	end = first;
	stop = spdk_min(limit, first + max);
	for (uint64_t b = first; b < stop; b++) {
		uint64_t *word = &m->words[b / 64], bit = 1ULL << (b % 64);

		if (__atomic_load_n(word, __ATOMIC_ACQUIRE) & bit) {
			__atomic_fetch_and(word, ~bit, __ATOMIC_ACQ_REL);
			end = b + 1;
		} else if (b - end >= COPY_GAP_BLOCKS) {
			break;
		}
	}
	*offset = first;
	return end - first;
}

static uint64_t
map_dirty_blocks(struct map *m)
{
	uint64_t blocks = 0;

	for (uint64_t i = 0; i < m->nwords; i++) {
		blocks += __builtin_popcountll(__atomic_load_n(&m->words[i], __ATOMIC_ACQUIRE));
	}
	return blocks;
}

static void
map_free(struct map *m)
{
	if (m != NULL) {
		free(m->member);
		free(m->copying_to);
		free(m->words);
		free(m);
	}
}

static int
map_slot(struct flint_volume *vol, const char *member)
{
	for (int i = 0; i < FLINT_VOLUME_MAX_MAPS; i++) {
		if (vol->maps[i] != NULL && strcmp(vol->maps[i]->member, member) == 0) {
			return i;
		}
	}
	return -1;
}

/* mark_io records a write's blocks in every map. */
static void
mark_io(struct flint_volume *vol, struct spdk_bdev_io *io)
{
	for (int i = 0; i < FLINT_VOLUME_MAX_MAPS; i++) {
		struct map *m = __atomic_load_n(&vol->maps[i], __ATOMIC_ACQUIRE);

		if (m != NULL) {
			map_set(m, io->u.bdev.offset_blocks, io->u.bdev.num_blocks);
		}
	}
}

/* I/O path */

static bool
changes_data(enum spdk_bdev_io_type type)
{
	return type == SPDK_BDEV_IO_TYPE_WRITE || type == SPDK_BDEV_IO_TYPE_WRITE_ZEROES ||
	       type == SPDK_BDEV_IO_TYPE_UNMAP;
}

static void
untrack(struct channel *ch, struct spdk_bdev_io *io)
{
	struct io_ctx *ctx = (struct io_ctx *)io->driver_ctx;

	if (ctx->tracked) {
		TAILQ_REMOVE(&ch->writes, ctx, link);
		ctx->tracked = false;
	}
}

static void
base_io_done(struct spdk_bdev_io *base_io, bool success, void *arg)
{
	struct spdk_bdev_io *io = arg;
	struct flint_volume *vol = io->bdev->ctxt;
	struct channel *ch = spdk_io_channel_get_ctx(spdk_bdev_io_get_io_channel(io));

	if (changes_data(io->type)) {
		/* Marked again now that the base holds it: a copy that took
		 * these blocks while the write was in flight may have read
		 * them before it, and copies them again next round. */
		mark_io(vol, io);
		untrack(ch, io);
	}
	spdk_bdev_io_complete_base_io_status(io, base_io);
	spdk_bdev_free_io(base_io);
}

static void pass_on(struct spdk_io_channel *_ch, struct spdk_bdev_io *io);

/* flush_needed says whether the base has a volatile cache to flush. A
 * raid1 offers FLUSH only while every member does, and its members
 * change under the volume: re-assembled from a remote replica (an NVMe
 * bdev, which flushes) it gains the local lvol (which has no cache, and
 * no FLUSH) by a rebuild. The volume offers FLUSH throughout, as nvmf
 * tells hosts it has a volatile write cache anyway, and completes one the
 * base does not take at once: every write it completed is on the media. */
static bool
flush_needed(struct flint_volume *vol, struct spdk_bdev_io *io)
{
	return io->type != SPDK_BDEV_IO_TYPE_FLUSH ||
	       spdk_bdev_io_type_supported(spdk_bdev_desc_get_bdev(vol->base_desc), SPDK_BDEV_IO_TYPE_FLUSH);
}

static void
resubmit(void *arg)
{
	struct spdk_bdev_io *io = arg;

	pass_on(spdk_bdev_io_get_io_channel(io), io);
}

static void
pass_on(struct spdk_io_channel *_ch, struct spdk_bdev_io *io)
{
	struct flint_volume *vol = io->bdev->ctxt;
	struct channel *ch = spdk_io_channel_get_ctx(_ch);
	struct io_ctx *ctx = (struct io_ctx *)io->driver_ctx;
	int rc;

	if (ch->base_ch == NULL) {
		/* No base: the raid was deleted without a pause. A write that
		 * waited for memory may be tracked already. */
		SPDK_ERRLOG("flint_volume %s has no base: I/O failed\n", vol->bdev.name);
		untrack(ch, io);
		spdk_bdev_io_complete(io, SPDK_BDEV_IO_STATUS_FAILED);
		return;
	}
	if (!flush_needed(vol, io)) {
		spdk_bdev_io_complete(io, SPDK_BDEV_IO_STATUS_SUCCESS);
		return;
	}
	if (changes_data(io->type) && !ctx->tracked) {
		TAILQ_INSERT_TAIL(&ch->writes, ctx, link);
		ctx->tracked = true;
		mark_io(vol, io);
	}
	switch (io->type) {
	case SPDK_BDEV_IO_TYPE_READ:
		rc = spdk_bdev_readv_blocks(vol->base_desc, ch->base_ch, io->u.bdev.iovs,
					    io->u.bdev.iovcnt, io->u.bdev.offset_blocks,
					    io->u.bdev.num_blocks, base_io_done, io);
		break;
	case SPDK_BDEV_IO_TYPE_WRITE:
		rc = spdk_bdev_writev_blocks(vol->base_desc, ch->base_ch, io->u.bdev.iovs,
					     io->u.bdev.iovcnt, io->u.bdev.offset_blocks,
					     io->u.bdev.num_blocks, base_io_done, io);
		break;
	case SPDK_BDEV_IO_TYPE_WRITE_ZEROES:
		rc = spdk_bdev_write_zeroes_blocks(vol->base_desc, ch->base_ch,
						   io->u.bdev.offset_blocks, io->u.bdev.num_blocks,
						   base_io_done, io);
		break;
	case SPDK_BDEV_IO_TYPE_UNMAP:
		rc = spdk_bdev_unmap_blocks(vol->base_desc, ch->base_ch, io->u.bdev.offset_blocks,
					    io->u.bdev.num_blocks, base_io_done, io);
		break;
	case SPDK_BDEV_IO_TYPE_FLUSH:
		rc = spdk_bdev_flush_blocks(vol->base_desc, ch->base_ch, io->u.bdev.offset_blocks,
					    io->u.bdev.num_blocks, base_io_done, io);
		break;
	default:
		rc = -ENOTSUP;
	}
	if (rc == -ENOMEM) {
		ctx->wait.bdev = spdk_bdev_desc_get_bdev(vol->base_desc);
		ctx->wait.cb_fn = resubmit;
		ctx->wait.cb_arg = io;
		rc = spdk_bdev_queue_io_wait(ctx->wait.bdev, ch->base_ch, &ctx->wait);
	}
	if (rc != 0) {
		untrack(ch, io);
		spdk_bdev_io_complete(io, SPDK_BDEV_IO_STATUS_FAILED);
	}
}

static void
read_buf_ready(struct spdk_io_channel *ch, struct spdk_bdev_io *io, bool success)
{
	if (!success) {
		spdk_bdev_io_complete(io, SPDK_BDEV_IO_STATUS_FAILED);
		return;
	}
	pass_on(ch, io);
}

static void
submit(struct spdk_io_channel *ch, struct spdk_bdev_io *io)
{
	/* The bdev layer reuses driver_ctx without clearing it. */
	((struct io_ctx *)io->driver_ctx)->tracked = false;
	switch (io->type) {
	case SPDK_BDEV_IO_TYPE_RESET:
		/* Never passed on: the raid under a reset drops a member whose
		 * writes are held (docs/volumes.md). Our own I/O completes as
		 * the base completes it. */
		SPDK_NOTICELOG("flint_volume %s: a reset stops here, the raid keeps its members\n",
			       io->bdev->name);
		spdk_bdev_io_complete(io, SPDK_BDEV_IO_STATUS_SUCCESS);
		return;
	case SPDK_BDEV_IO_TYPE_READ:
		spdk_bdev_io_get_buf(io, read_buf_ready, io->u.bdev.num_blocks * io->bdev->blocklen);
		return;
	default:
		pass_on(ch, io);
	}
}

static bool
io_type_supported(void *arg, enum spdk_bdev_io_type type)
{
	struct flint_volume *vol = arg;

	return type == SPDK_BDEV_IO_TYPE_RESET || vol->supports[type];
}

/* Channels */

static int
channel_create(void *io_device, void *buf)
{
	struct flint_volume *vol = io_device;
	struct channel *ch = buf;

	TAILQ_INIT(&ch->writes);
	ch->base_ch = NULL;
	if (vol->base_desc != NULL) {
		ch->base_ch = spdk_bdev_get_io_channel(vol->base_desc);
		if (ch->base_ch == NULL) {
			return -ENOMEM;
		}
	}
	return 0;
}

static void
channel_destroy(void *io_device, void *buf)
{
	struct channel *ch = buf;

	if (ch->base_ch != NULL) {
		spdk_put_io_channel(ch->base_ch);
	}
}

static struct spdk_io_channel *
get_io_channel(void *arg)
{
	return spdk_get_io_channel(arg);
}

static int
dump_info_json(void *arg, struct spdk_json_write_ctx *w)
{
	struct flint_volume *vol = arg;

	spdk_json_write_named_object_begin(w, "flint_volume");
	if (vol->base_desc != NULL) {
		spdk_json_write_named_string(w, "base_bdev",
					     spdk_bdev_get_name(spdk_bdev_desc_get_bdev(vol->base_desc)));
	} else {
		spdk_json_write_named_null(w, "base_bdev");
	}
	spdk_json_write_named_bool(w, "paused", vol->paused);
	spdk_json_write_named_array_begin(w, "maps");
	for (int i = 0; i < FLINT_VOLUME_MAX_MAPS; i++) {
		if (vol->maps[i] == NULL) {
			continue;
		}
		spdk_json_write_object_begin(w);
		spdk_json_write_named_string(w, "member", vol->maps[i]->member);
		spdk_json_write_named_uint64(w, "dirty_blocks", map_dirty_blocks(vol->maps[i]));
		spdk_json_write_named_bool(w, "grown", vol->maps[i]->grown);
		spdk_json_write_object_end(w);
	}
	spdk_json_write_array_end(w);
	spdk_json_write_object_end(w);
	return 0;
}

static void
release_base(struct flint_volume *vol)
{
	if (vol->base_desc != NULL) {
		spdk_bdev_module_release_bdev(spdk_bdev_desc_get_bdev(vol->base_desc));
		spdk_bdev_close(vol->base_desc);
		vol->base_desc = NULL;
	}
}

static void
io_device_gone(void *io_device)
{
	struct flint_volume *vol = io_device;

	for (int i = 0; i < FLINT_VOLUME_MAX_MAPS; i++) {
		map_free(vol->maps[i]);
	}
	free(vol->bdev.name);
	free(vol);
}

static int
destruct(void *arg)
{
	struct flint_volume *vol = arg;

	TAILQ_REMOVE(&g_volumes, vol, link);
	release_base(vol);
	spdk_io_device_unregister(vol, io_device_gone);
	return 0;
}

static const struct spdk_bdev_fn_table fn_table = {
	.destruct = destruct,
	.submit_request = submit,
	.io_type_supported = io_type_supported,
	.get_io_channel = get_io_channel,
	.dump_info_json = dump_info_json,
};

/* Operations that visit every channel: one at a time per volume. */

struct visit {
	struct flint_volume *vol;
	struct map *map;
	flint_volume_done done;
	void *ctx;
};

static struct visit *
visit_begin(struct flint_volume *vol, flint_volume_done done, void *ctx)
{
	struct visit *v;

	if (vol->busy || vol->deleting) {
		done(ctx, -EBUSY, "another operation on this flint_volume is under way; retry");
		return NULL;
	}
	v = calloc(1, sizeof(*v));
	if (v == NULL) {
		done(ctx, -ENOMEM, "out of memory");
		return NULL;
	}
	v->vol = vol;
	v->done = done;
	v->ctx = ctx;
	vol->busy = true;
	return v;
}

static void
visit_end(struct spdk_io_channel_iter *i, int status)
{
	struct visit *v = spdk_io_channel_iter_get_ctx(i);

	v->vol->busy = false;
	v->done(v->ctx, status, status == 0 ? NULL : "a channel of the flint_volume failed");
	free(v);
}

/* Base: closed when the base goes away, attached by RPC. */

static void
put_base_channel(struct spdk_io_channel_iter *i)
{
	struct channel *ch = spdk_io_channel_get_ctx(spdk_io_channel_iter_get_channel(i));

	if (ch->base_ch != NULL) {
		spdk_put_io_channel(ch->base_ch);
		ch->base_ch = NULL;
	}
	spdk_for_each_channel_continue(i, 0);
}

static void
base_channels_put(struct spdk_io_channel_iter *i, int status)
{
	struct flint_volume *vol = spdk_io_channel_iter_get_io_device(i);

	release_base(vol);
	SPDK_NOTICELOG("flint_volume %s: its base was removed; %s\n", vol->bdev.name,
		       vol->paused ? "paused, it waits for another" : "its I/O fails until another is attached");
}

static void
base_event(enum spdk_bdev_event_type type, struct spdk_bdev *bdev, void *arg)
{
	struct flint_volume *vol = arg;

	if (type == SPDK_BDEV_EVENT_RESIZE) {
		/* The raid grew with its members (a Volume expanded): so does
		 * the namespace. Maps keep their size; a write past it marks
		 * the map grown. */
		int rc = spdk_bdev_notify_blockcnt_change(&vol->bdev, bdev->blockcnt);

		if (rc != 0) {
			SPDK_ERRLOG("flint_volume %s: cannot follow its base to %" PRIu64 " blocks: %s\n",
				    vol->bdev.name, bdev->blockcnt, spdk_strerror(-rc));
		}
		return;
	}
	if (type != SPDK_BDEV_EVENT_REMOVE) {
		return;
	}
	/* The raid is being deleted: let go of it on every channel, then
	 * close it, so that its deletion completes. */
	spdk_for_each_channel(vol, put_base_channel, NULL, base_channels_put);
}

static int
open_base(struct flint_volume *vol, const char *base_name, const char **msg)
{
	struct spdk_bdev *base;
	int rc;

	rc = spdk_bdev_open_ext(base_name, true, base_event, vol, &vol->base_desc);
	if (rc != 0) {
		*msg = rc == -ENODEV ? "no bdev of that base_bdev name" : "the base_bdev cannot be opened";
		vol->base_desc = NULL;
		return rc;
	}
	base = spdk_bdev_desc_get_bdev(vol->base_desc);
	if (base->md_len != 0 && !base->md_interleave) {
		*msg = "the base_bdev has separate metadata, which flint_volume does not pass on";
		rc = -EINVAL;
	} else if (vol->bdev.blocklen != 0 &&
		   (base->blocklen != vol->bdev.blocklen || base->blockcnt != vol->bdev.blockcnt)) {
		*msg = "the base_bdev's block size or count differs from the flint_volume's";
		rc = -EINVAL;
	} else {
		for (int t = 0; t < SPDK_BDEV_NUM_IO_TYPES; t++) {
			if (t != SPDK_BDEV_IO_TYPE_FLUSH && vol->supports[t] &&
			    !spdk_bdev_io_type_supported(base, t)) {
				*msg = "the base_bdev does not support an I/O type the flint_volume offers";
				rc = -EINVAL;
			}
		}
	}
	if (rc == 0) {
		rc = spdk_bdev_module_claim_bdev(base, vol->base_desc, &flint_volume_module);
		if (rc != 0) {
			*msg = "the base_bdev is claimed by another module";
		}
	}
	if (rc != 0) {
		spdk_bdev_close(vol->base_desc);
		vol->base_desc = NULL;
	}
	return rc;
}

int
flint_volume_create(const char *name, const char *base_name, const struct spdk_uuid *uuid,
		    const char **msg)
{
	static const enum spdk_bdev_io_type offered[] = {
		SPDK_BDEV_IO_TYPE_READ, SPDK_BDEV_IO_TYPE_WRITE, SPDK_BDEV_IO_TYPE_UNMAP,
		SPDK_BDEV_IO_TYPE_WRITE_ZEROES,
	};
	struct flint_volume *vol;
	struct spdk_bdev *base;
	int rc;

	if (spdk_bdev_get_by_name(name) != NULL) {
		*msg = "a bdev of that name exists";
		return -EEXIST;
	}
	vol = calloc(1, sizeof(*vol));
	if (vol == NULL) {
		*msg = "out of memory";
		return -ENOMEM;
	}
	rc = open_base(vol, base_name, msg);
	if (rc != 0) {
		free(vol);
		return rc;
	}
	base = spdk_bdev_desc_get_bdev(vol->base_desc);
	for (size_t t = 0; t < SPDK_COUNTOF(offered); t++) {
		vol->supports[offered[t]] = spdk_bdev_io_type_supported(base, offered[t]);
	}
	vol->supports[SPDK_BDEV_IO_TYPE_FLUSH] = true; /* whatever the base: flush_needed */
	vol->bdev.name = strdup(name);
	vol->bdev.product_name = "Flint volume";
	vol->bdev.write_cache = base->write_cache;
	vol->bdev.required_alignment = base->required_alignment;
	vol->bdev.optimal_io_boundary = base->optimal_io_boundary;
	vol->bdev.blocklen = base->blocklen;
	vol->bdev.blockcnt = base->blockcnt;
	vol->bdev.md_interleave = base->md_interleave;
	vol->bdev.md_len = base->md_len;
	if (uuid != NULL && !spdk_uuid_is_null(uuid)) {
		spdk_uuid_copy(&vol->bdev.uuid, uuid);
	}
	vol->bdev.ctxt = vol;
	vol->bdev.fn_table = &fn_table;
	vol->bdev.module = &flint_volume_module;
	if (vol->bdev.name == NULL) {
		release_base(vol);
		free(vol);
		*msg = "out of memory";
		return -ENOMEM;
	}
	spdk_io_device_register(vol, channel_create, channel_destroy, sizeof(struct channel), name);
	TAILQ_INSERT_TAIL(&g_volumes, vol, link);
	rc = spdk_bdev_register(&vol->bdev);
	if (rc != 0) {
		TAILQ_REMOVE(&g_volumes, vol, link);
		release_base(vol);
		spdk_io_device_unregister(vol, io_device_gone);
		*msg = "the bdev layer refused to register it";
	}
	return rc;
}

struct flint_volume *
flint_volume_find(const char *name)
{
	struct flint_volume *vol;

	TAILQ_FOREACH(vol, &g_volumes, link) {
		if (strcmp(vol->bdev.name, name) == 0) {
			return vol;
		}
	}
	return NULL;
}

const char *
flint_volume_base_name(const struct flint_volume *vol)
{
	if (vol->base_desc == NULL) {
		return NULL;
	}
	return spdk_bdev_get_name(spdk_bdev_desc_get_bdev(vol->base_desc));
}

struct op {
	flint_volume_done done;
	void *ctx;
	struct flint_volume *vol;
};

/* op_new is the context of an operation that answers done(ctx, ...). */
static struct op *
op_new(struct flint_volume *vol, flint_volume_done done, void *ctx)
{
	struct op *op = calloc(1, sizeof(*op));

	if (op == NULL) {
		done(ctx, -ENOMEM, "out of memory");
		return NULL;
	}
	op->done = done;
	op->ctx = ctx;
	op->vol = vol;
	return op;
}

static void
unregistered(void *arg, int rc)
{
	struct op *op = arg;

	op->done(op->ctx, rc, rc == 0 ? NULL : "the bdev layer could not unregister it");
	free(op);
}

void
flint_volume_delete(const char *name, flint_volume_done done, void *ctx)
{
	struct flint_volume *vol = flint_volume_find(name);
	struct op *op;

	if (vol == NULL) {
		done(ctx, -ENODEV, "no flint_volume of that name");
		return;
	}
	if (vol->busy || vol->quiescing || vol->deleting) {
		done(ctx, -EBUSY, "another operation on this flint_volume is under way; retry");
		return;
	}
	if (vol->copies > 0) {
		/* Stopped at their next run: the retry deletes it. */
		vol->stop_copies = true;
		done(ctx, -EBUSY, "a copy from this flint_volume is stopping; retry");
		return;
	}
	if (vol->paused) {
		done(ctx, -EBUSY, "the flint_volume is paused; resume it first");
		return;
	}
	op = op_new(vol, done, ctx);
	if (op == NULL) {
		return;
	}
	vol->deleting = true;
	spdk_bdev_unregister(&vol->bdev, unregistered, op);
}

/* Pause and resume */

static void
quiesced(void *arg, int rc)
{
	struct op *op = arg;

	op->vol->quiescing = false;
	if (rc == 0) {
		op->vol->paused = !op->vol->paused;
	}
	op->done(op->ctx, rc, rc == 0 ? NULL : "the bdev layer could not quiesce or unquiesce it");
	free(op);
}

static void
pause_or_resume(struct flint_volume *vol, bool pause, flint_volume_done done, void *ctx)
{
	struct op *op;
	int rc;

	if (vol->quiescing) {
		done(ctx, -EBUSY, "a pause or resume of this flint_volume is under way; retry");
		return;
	}
	if (vol->paused == pause) {
		done(ctx, 0, NULL);
		return;
	}
	if (vol->deleting) {
		done(ctx, -EBUSY, "the flint_volume is being deleted");
		return;
	}
	op = op_new(vol, done, ctx);
	if (op == NULL) {
		return;
	}
	vol->quiescing = true;
	if (pause) {
		rc = spdk_bdev_quiesce(&vol->bdev, &flint_volume_module, quiesced, op);
	} else {
		rc = spdk_bdev_unquiesce(&vol->bdev, &flint_volume_module, quiesced, op);
	}
	if (rc != 0) {
		vol->quiescing = false;
		free(op);
		done(ctx, rc, "the bdev layer refused to quiesce or unquiesce it");
	}
}

void
flint_volume_pause(struct flint_volume *vol, flint_volume_done done, void *ctx)
{
	pause_or_resume(vol, true, done, ctx);
}

void
flint_volume_resume(struct flint_volume *vol, flint_volume_done done, void *ctx)
{
	pause_or_resume(vol, false, done, ctx);
}

static void
get_base_channel(struct spdk_io_channel_iter *i)
{
	struct flint_volume *vol = spdk_io_channel_iter_get_io_device(i);
	struct channel *ch = spdk_io_channel_get_ctx(spdk_io_channel_iter_get_channel(i));

	ch->base_ch = spdk_bdev_get_io_channel(vol->base_desc);
	spdk_for_each_channel_continue(i, ch->base_ch == NULL ? -ENOMEM : 0);
}

void
flint_volume_attach(struct flint_volume *vol, const char *base_name, flint_volume_done done,
		    void *ctx)
{
	const char *msg = NULL;
	struct visit *v;
	int rc;

	if (vol->base_desc != NULL) {
		if (strcmp(spdk_bdev_get_name(spdk_bdev_desc_get_bdev(vol->base_desc)), base_name) == 0) {
			done(ctx, 0, NULL);
		} else {
			done(ctx, -EEXIST, "the flint_volume has another base; delete that one first");
		}
		return;
	}
	if (!vol->paused) {
		done(ctx, -EINVAL, "attach a base only while the flint_volume is paused");
		return;
	}
	v = visit_begin(vol, done, ctx);
	if (v == NULL) {
		return;
	}
	rc = open_base(vol, base_name, &msg);
	if (rc != 0) {
		vol->busy = false;
		free(v);
		done(ctx, rc, msg);
		return;
	}
	spdk_for_each_channel(vol, get_base_channel, v, visit_end);
}

/* Maps */

static void
mark_in_flight(struct spdk_io_channel_iter *i)
{
	struct visit *v = spdk_io_channel_iter_get_ctx(i);
	struct channel *ch = spdk_io_channel_get_ctx(spdk_io_channel_iter_get_channel(i));
	struct io_ctx *ctx;

	TAILQ_FOREACH(ctx, &ch->writes, link) {
		struct spdk_bdev_io *io = spdk_bdev_io_from_ctx(ctx);

		map_set(v->map, io->u.bdev.offset_blocks, io->u.bdev.num_blocks);
	}
	spdk_for_each_channel_continue(i, 0);
}

void
flint_volume_mark(struct flint_volume *vol, const char *member, flint_volume_done done, void *ctx)
{
	struct visit *v;
	struct map *m;
	int slot = -1;

	if (map_slot(vol, member) >= 0) {
		done(ctx, 0, NULL);
		return;
	}
	for (int i = 0; i < FLINT_VOLUME_MAX_MAPS && slot < 0; i++) {
		if (vol->maps[i] == NULL) {
			slot = i;
		}
	}
	if (slot < 0) {
		done(ctx, -ENOSPC, "every map of this flint_volume is in use; forget one first");
		return;
	}
	v = visit_begin(vol, done, ctx);
	if (v == NULL) {
		return;
	}
	m = calloc(1, sizeof(*m));
	if (m != NULL) {
		m->blocks = vol->bdev.blockcnt;
		m->nwords = (m->blocks + 63) / 64;
		m->words = calloc(m->nwords, sizeof(uint64_t));
		m->member = strdup(member);
	}
	if (m == NULL || m->words == NULL || m->member == NULL) {
		map_free(m);
		vol->busy = false;
		free(v);
		done(ctx, -ENOMEM, "out of memory for the map");
		return;
	}
	v->map = m;
	/* Published first, so that every write a channel admits after the
	 * visit below marks it; the visit marks those already in flight. */
	__atomic_store_n(&vol->maps[slot], m, __ATOMIC_RELEASE);
	spdk_for_each_channel(vol, mark_in_flight, v, visit_end);
}

static void
let_go(struct spdk_io_channel_iter *i)
{
	spdk_for_each_channel_continue(i, 0);
}

static void
forgotten(struct spdk_io_channel_iter *i, int status)
{
	struct visit *v = spdk_io_channel_iter_get_ctx(i);

	/* Every channel has run since the map was unpublished: none holds it. */
	map_free(v->map);
	visit_end(i, status);
}

void
flint_volume_forget(struct flint_volume *vol, const char *member, flint_volume_done done,
		    void *ctx)
{
	int slot = map_slot(vol, member);
	struct visit *v;

	if (slot < 0) {
		done(ctx, 0, NULL);
		return;
	}
	if (vol->maps[slot]->copying) {
		done(ctx, -EBUSY, "a copy of this member is under way; retry when it ends");
		return;
	}
	v = visit_begin(vol, done, ctx);
	if (v == NULL) {
		return;
	}
	v->map = vol->maps[slot];
	__atomic_store_n(&vol->maps[slot], NULL, __ATOMIC_RELEASE);
	spdk_for_each_channel(vol, let_go, v, forgotten);
}

int
flint_volume_map(struct flint_volume *vol, const char *member, struct flint_volume_map_state *st,
		 bool (*fn)(void *ctx, uint64_t offset, uint64_t count), void *ctx)
{
	int slot = map_slot(vol, member);
	uint64_t count, start = UINT64_MAX, b = 0;
	bool more = fn != NULL;
	struct map *m;

	if (slot < 0) {
		return -ENOENT;
	}
	m = vol->maps[slot];
	count = m->blocks;
	memset(st, 0, sizeof(*st));
	st->grown = __atomic_load_n(&m->grown, __ATOMIC_ACQUIRE);
	st->copying = m->copying;
	st->copied_blocks = m->copied;
	st->copy_rc = m->copy_rc;
	st->copy_msg = m->copy_msg;
	st->dirty_blocks = map_dirty_blocks(m);
	/* Runs of set bits, read without clearing them, while fn wants them. */
	while (more && b <= count) {
		uint64_t w = b < count ? __atomic_load_n(&m->words[b / 64], __ATOMIC_ACQUIRE) : 0;
		bool set = (w >> (b % 64)) & 1;

		if (w == 0 && b % 64 == 0 && start == UINT64_MAX && b < count) {
			b += 64;
			continue;
		}
		if (set && start == UINT64_MAX) {
			start = b;
		} else if (!set && start != UINT64_MAX) {
			more = fn(ctx, start, b - start);
			start = UINT64_MAX;
		}
		b++;
	}
	return 0;
}

/* Copy: the dirty blocks of a member's map, read from the base (the raid:
 * its in-sync members) and written to the member's bdev, COPY_DEPTH runs
 * at a time: dirty blocks of random writes come in runs of a block or
 * two, which one at a time over a fabric would take minutes. A block's
 * bit is cleared just before its read, so a write after that marks it
 * for the next copy. */

struct copy;

struct copy_slot {
	struct copy *c;
	void *buf;
	uint64_t offset, count; /* the run in flight; count 0 when free */
};

struct copy {
	struct flint_volume *vol;
	struct map *map;
	struct spdk_bdev_desc *member_desc;
	struct spdk_io_channel *base_ch, *member_ch;
	struct copy_slot slots[COPY_DEPTH];
	uint64_t chunk_blocks;
	uint64_t next;             /* the first block not yet looked at */
	uint64_t in_flight;        /* blocks */
	int runs;                  /* in flight */
	bool exhausted;            /* the map was gone over */
	bool member_gone;          /* the member's bdev is being removed */
	int rc;                    /* the first failure */
	const char *msg;
	uint64_t max_bytes_per_sec;
	uint64_t started;          /* ticks */
	struct spdk_poller *wait;
};

static void copy_fill(struct copy *c);

static void
member_event(enum spdk_bdev_event_type type, struct spdk_bdev *bdev, void *arg)
{
	struct copy *c = arg;

	/* Its controller is being detached: the runs in flight fail, no
	 * other starts, and the copy's end closes it. */
	if (type == SPDK_BDEV_EVENT_REMOVE) {
		c->member_gone = true;
	}
}

static void
copy_free(struct copy *c)
{
	if (c->base_ch != NULL) {
		spdk_put_io_channel(c->base_ch);
	}
	if (c->member_ch != NULL) {
		spdk_put_io_channel(c->member_ch);
	}
	if (c->member_desc != NULL) {
		spdk_bdev_close(c->member_desc);
	}
	for (int i = 0; i < COPY_DEPTH; i++) {
		spdk_dma_free(c->slots[i].buf);
	}
	free(c);
}

static void
copy_end(struct copy *c)
{
	c->map->copy_rc = c->rc;
	c->map->copy_msg = c->msg;
	c->map->copying = false;
	if (c->rc != 0) {
		SPDK_ERRLOG("flint_volume %s: the copy of member %s failed: %s\n", c->vol->bdev.name,
			    c->map->member, c->msg);
	}
	if (--c->vol->copies == 0) {
		c->vol->stop_copies = false;
	}
	spdk_bdev_module_release_bdev(spdk_bdev_desc_get_bdev(c->member_desc));
	copy_free(c);
}

/* copy_fail stops the copy at rc, unless it failed already. */
static void
copy_fail(struct copy *c, int rc, const char *msg)
{
	if (c->rc == 0) {
		c->rc = rc;
		c->msg = msg;
	}
}

/* slot_done frees slot; a run that was not copied is dirty still. */
static void
slot_done(struct copy_slot *slot, bool copied, const char *msg)
{
	struct copy *c = slot->c;

	if (copied) {
		c->map->copied += slot->count;
	} else {
		map_set(c->map, slot->offset, slot->count);
		copy_fail(c, -EIO, msg);
	}
	c->in_flight -= slot->count;
	c->runs--;
	slot->count = 0;
	copy_fill(c);
}

static void
member_written(struct spdk_bdev_io *io, bool success, void *arg)
{
	spdk_bdev_free_io(io);
	slot_done(arg, success, "a write to the member's bdev failed");
}

static void
base_read(struct spdk_bdev_io *io, bool success, void *arg)
{
	struct copy_slot *slot = arg;
	struct copy *c = slot->c;

	spdk_bdev_free_io(io);
	if (!success) {
		slot_done(slot, false, "a read from the base (the raid) failed");
		return;
	}
	if (spdk_bdev_write_blocks(c->member_desc, c->member_ch, slot->buf, slot->offset, slot->count,
				   member_written, slot) != 0) {
		slot_done(slot, false, "the member's bdev refused a write");
	}
}

static int
copy_resume(void *arg)
{
	struct copy *c = arg;

	spdk_poller_unregister(&c->wait);
	copy_fill(c);
	return SPDK_POLLER_BUSY;
}

/* held_to_rate says whether the next run must wait for the rate: it
 * starts no sooner than the bytes copied and in flight allow. */
static bool
held_to_rate(struct copy *c)
{
	uint64_t hz = spdk_get_ticks_hz(), now = spdk_get_ticks();
	uint64_t bytes = (c->map->copied + c->in_flight) * c->vol->bdev.blocklen;
	uint64_t due;

	if (c->max_bytes_per_sec == 0) {
		return false;
	}
	due = c->started + bytes / c->max_bytes_per_sec * hz +
	      bytes % c->max_bytes_per_sec * hz / c->max_bytes_per_sec;
	if (now >= due) {
		return false;
	}
	c->wait = SPDK_POLLER_REGISTER(copy_resume, c, (due - now) * SPDK_SEC_TO_USEC / hz);
	return true;
}

/* copy_fill starts runs in the free slots, and ends the copy once the map
 * was gone over, or it failed, and no run is in flight. */
static void
copy_fill(struct copy *c)
{
	for (int i = 0; i < COPY_DEPTH && c->wait == NULL; i++) {
		struct copy_slot *slot = &c->slots[i];

		if (slot->count != 0) {
			continue;
		}
		if (c->rc == 0 && c->vol->base_desc == NULL) {
			copy_fail(c, -ENODEV, "the flint_volume lost its base during the copy");
		}
		if (c->rc == 0 && c->vol->stop_copies) {
			copy_fail(c, -ECANCELED, "the flint_volume is being deleted");
		}
		if (c->rc == 0 && c->member_gone) {
			copy_fail(c, -ENODEV, "the member's bdev was removed during the copy");
		}
		if (c->rc != 0 || c->exhausted || held_to_rate(c)) {
			break;
		}
		slot->offset = c->next;
		slot->count = map_take(c->map, &slot->offset, c->map->blocks, c->chunk_blocks);
		if (slot->count == 0) {
			c->exhausted = true;
			break;
		}
		c->next = slot->offset + slot->count;
		c->in_flight += slot->count;
		c->runs++;
		if (spdk_bdev_read_blocks(c->vol->base_desc, c->base_ch, slot->buf, slot->offset,
					  slot->count, base_read, slot) != 0) {
			map_set(c->map, slot->offset, slot->count);
			copy_fail(c, -EIO, "the base (the raid) refused a read");
			c->in_flight -= slot->count;
			c->runs--;
			slot->count = 0;
			break;
		}
	}
	if (c->runs == 0 && c->wait == NULL && (c->exhausted || c->rc != 0)) {
		copy_end(c);
	}
}

int
flint_volume_copy(struct flint_volume *vol, const char *member, const char *member_bdev,
		  uint64_t max_bytes_per_sec, const char **msg)
{
	int slot = map_slot(vol, member);
	struct spdk_bdev *mb;
	struct copy *c;
	struct map *m;
	char *to;
	int rc;

	if (slot < 0) {
		*msg = "this member has no map: mark it first";
		return -ENOENT;
	}
	m = vol->maps[slot];
	if (m->copying) {
		if (strcmp(m->copying_to, member_bdev) == 0) {
			return 0;
		}
		*msg = "this member is being copied to another bdev";
		return -EBUSY;
	}
	if (__atomic_load_n(&m->grown, __ATOMIC_ACQUIRE)) {
		*msg = "the volume grew while the member was out, so its map is incomplete: rebuild the member whole";
		return -ERANGE;
	}
	if (vol->base_desc == NULL) {
		*msg = "the flint_volume has no base to copy from";
		return -ENODEV;
	}
	if (vol->deleting) {
		*msg = "the flint_volume is being deleted";
		return -EBUSY;
	}
	c = calloc(1, sizeof(*c));
	to = strdup(member_bdev);
	if (c == NULL || to == NULL) {
		free(c);
		free(to);
		*msg = "out of memory";
		return -ENOMEM;
	}
	c->vol = vol;
	c->map = m;
	c->max_bytes_per_sec = max_bytes_per_sec;
	c->chunk_blocks = spdk_max(1, COPY_CHUNK_BYTES / vol->bdev.blocklen);
	rc = spdk_bdev_open_ext(member_bdev, true, member_event, c, &c->member_desc);
	if (rc != 0) {
		free(c);
		free(to);
		*msg = rc == -ENODEV ? "no bdev of that member_bdev name" : "the member_bdev cannot be opened";
		return rc;
	}
	mb = spdk_bdev_desc_get_bdev(c->member_desc);
	if (mb == spdk_bdev_desc_get_bdev(vol->base_desc) || mb == &vol->bdev) {
		rc = -EINVAL;
		*msg = "the member_bdev is the flint_volume or its base";
	} else if (mb->blocklen != vol->bdev.blocklen || mb->blockcnt < m->blocks) {
		rc = -EINVAL;
		*msg = "the member_bdev's blocks are of another size, or fewer than the map's";
	} else if (spdk_bdev_module_claim_bdev(mb, c->member_desc, &flint_volume_module) != 0) {
		rc = -EPERM;
		*msg = "the member_bdev is claimed (is it in the raid already?)";
	}
	if (rc != 0) {
		free(to);
		copy_free(c);
		return rc;
	}
	for (int i = 0; i < COPY_DEPTH; i++) {
		c->slots[i].c = c;
		c->slots[i].buf = spdk_dma_zmalloc(c->chunk_blocks * vol->bdev.blocklen, 0x1000, NULL);
		if (c->slots[i].buf == NULL) {
			rc = -ENOMEM;
		}
	}
	c->base_ch = spdk_bdev_get_io_channel(vol->base_desc);
	c->member_ch = spdk_bdev_get_io_channel(c->member_desc);
	if (rc != 0 || c->base_ch == NULL || c->member_ch == NULL) {
		*msg = "out of memory for the copy";
		spdk_bdev_module_release_bdev(mb);
		free(to);
		copy_free(c);
		return -ENOMEM;
	}
	/* Not busy: a member that drops meanwhile must be marked at once. */
	free(m->copying_to);
	m->copying_to = to;
	m->copying = true;
	m->copied = 0;
	m->copy_rc = 0;
	m->copy_msg = NULL;
	vol->copies++;
	c->started = spdk_get_ticks();
	copy_fill(c);
	return 0;
}
