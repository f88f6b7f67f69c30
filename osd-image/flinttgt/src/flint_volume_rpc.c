/*
 * Copyright 2026 The Flint Authors.
 * SPDX-License-Identifier: Apache-2.0
 *
 * The JSON-RPC methods of flint_volume (docs/spdk.md). Each is idempotent
 * by name: a retry after a lost answer does what the first call did.
 * Errors answer -errno as the code, as SPDK's own methods do, with what
 * was wrong and what to do.
 */

#include "flint_volume.h"

#include "spdk/json.h"
#include "spdk/jsonrpc.h"
#include "spdk/rpc.h"
#include "spdk/string.h"
#include "spdk/util.h"

struct params {
	char *name;
	char *base_bdev;
	char *member;
	char *member_bdev;
	struct spdk_uuid uuid;
	uint64_t max_mib_per_sec;
	uint64_t max_ranges;
};

#define NAME {"name", offsetof(struct params, name), spdk_json_decode_string}
#define MEMBER {"member", offsetof(struct params, member), spdk_json_decode_string}

static const struct spdk_json_object_decoder create_decoders[] = {
	NAME,
	{"base_bdev", offsetof(struct params, base_bdev), spdk_json_decode_string},
	{"uuid", offsetof(struct params, uuid), spdk_json_decode_uuid, true},
};
static const struct spdk_json_object_decoder name_decoders[] = {NAME};
static const struct spdk_json_object_decoder attach_decoders[] = {
	NAME,
	{"base_bdev", offsetof(struct params, base_bdev), spdk_json_decode_string},
};
static const struct spdk_json_object_decoder member_decoders[] = {NAME, MEMBER};
static const struct spdk_json_object_decoder dirty_decoders[] = {
	NAME, MEMBER,
	{"max_ranges", offsetof(struct params, max_ranges), spdk_json_decode_uint64, true},
};
static const struct spdk_json_object_decoder copy_decoders[] = {
	NAME, MEMBER,
	{"member_bdev", offsetof(struct params, member_bdev), spdk_json_decode_string},
	{"max_mib_per_sec", offsetof(struct params, max_mib_per_sec), spdk_json_decode_uint64, true},
};

static void
params_free(struct params *p)
{
	free(p->name);
	free(p->base_bdev);
	free(p->member);
	free(p->member_bdev);
	free(p);
}

/* decode returns the request's parameters, or NULL once it has answered
 * the request with what was wrong. */
static struct params *
decode(struct spdk_jsonrpc_request *request, const struct spdk_json_val *json,
       const struct spdk_json_object_decoder *decoders, size_t count)
{
	struct params *p = calloc(1, sizeof(*p));

	if (p == NULL) {
		spdk_jsonrpc_send_error_response(request, -ENOMEM, spdk_strerror(ENOMEM));
		return NULL;
	}
	if (json == NULL || spdk_json_decode_object(json, decoders, count, p) != 0) {
		spdk_jsonrpc_send_error_response(request, SPDK_JSONRPC_ERROR_INVALID_PARAMS,
						 "Invalid parameters");
		params_free(p);
		return NULL;
	}
	return p;
}

static void
fail(struct spdk_jsonrpc_request *request, int rc, const char *msg)
{
	spdk_jsonrpc_send_error_response_fmt(request, rc, "%s: %s", msg, spdk_strerror(-rc));
}

/* find returns the named flint_volume, or NULL once it has answered. */
static struct flint_volume *
find(struct spdk_jsonrpc_request *request, const struct params *p)
{
	struct flint_volume *vol = flint_volume_find(p->name);

	if (vol == NULL) {
		fail(request, -ENODEV, "no flint_volume of that name");
	}
	return vol;
}

static void
answer(void *ctx, int rc, const char *msg)
{
	struct spdk_jsonrpc_request *request = ctx;

	if (rc != 0) {
		fail(request, rc, msg);
		return;
	}
	spdk_jsonrpc_send_bool_response(request, true);
}

static void
rpc_create(struct spdk_jsonrpc_request *request, const struct spdk_json_val *json)
{
	struct params *p = decode(request, json, create_decoders, SPDK_COUNTOF(create_decoders));
	struct flint_volume *vol;
	const char *msg = NULL;
	int rc;

	if (p == NULL) {
		return;
	}
	vol = flint_volume_find(p->name);
	if (vol != NULL) {
		/* The same call again is done; another is refused. */
		struct spdk_bdev *bdev = spdk_bdev_get_by_name(p->name);
		const char *base = flint_volume_base_name(vol);

		if (base == NULL || strcmp(base, p->base_bdev) != 0) {
			fail(request, -EEXIST, "a flint_volume of that name exists over another base_bdev, or none");
		} else if (!spdk_uuid_is_null(&p->uuid) &&
			   spdk_uuid_compare(&p->uuid, spdk_bdev_get_uuid(bdev)) != 0) {
			fail(request, -EEXIST, "a flint_volume of that name exists with another uuid");
		} else {
			spdk_jsonrpc_send_bool_response(request, true);
		}
		params_free(p);
		return;
	}
	rc = flint_volume_create(p->name, p->base_bdev, &p->uuid, &msg);
	if (rc != 0) {
		fail(request, rc, msg);
	} else {
		spdk_jsonrpc_send_bool_response(request, true);
	}
	params_free(p);
}
SPDK_RPC_REGISTER("flint_volume_create", rpc_create, SPDK_RPC_RUNTIME)

static void
rpc_delete(struct spdk_jsonrpc_request *request, const struct spdk_json_val *json)
{
	struct params *p = decode(request, json, name_decoders, SPDK_COUNTOF(name_decoders));

	if (p == NULL) {
		return;
	}
	if (flint_volume_find(p->name) == NULL) {
		/* Gone already: what the call asked for. */
		spdk_jsonrpc_send_bool_response(request, true);
	} else {
		flint_volume_delete(p->name, answer, request);
	}
	params_free(p);
}
SPDK_RPC_REGISTER("flint_volume_delete", rpc_delete, SPDK_RPC_RUNTIME)

static void
rpc_pause(struct spdk_jsonrpc_request *request, const struct spdk_json_val *json)
{
	struct params *p = decode(request, json, name_decoders, SPDK_COUNTOF(name_decoders));
	struct flint_volume *vol = p == NULL ? NULL : find(request, p);

	if (vol != NULL) {
		flint_volume_pause(vol, answer, request);
	}
	if (p != NULL) {
		params_free(p);
	}
}
SPDK_RPC_REGISTER("flint_volume_pause", rpc_pause, SPDK_RPC_RUNTIME)

static void
rpc_resume(struct spdk_jsonrpc_request *request, const struct spdk_json_val *json)
{
	struct params *p = decode(request, json, name_decoders, SPDK_COUNTOF(name_decoders));
	struct flint_volume *vol = p == NULL ? NULL : find(request, p);

	if (vol != NULL) {
		flint_volume_resume(vol, answer, request);
	}
	if (p != NULL) {
		params_free(p);
	}
}
SPDK_RPC_REGISTER("flint_volume_resume", rpc_resume, SPDK_RPC_RUNTIME)

static void
rpc_attach(struct spdk_jsonrpc_request *request, const struct spdk_json_val *json)
{
	struct params *p = decode(request, json, attach_decoders, SPDK_COUNTOF(attach_decoders));
	struct flint_volume *vol = p == NULL ? NULL : find(request, p);

	if (vol != NULL) {
		flint_volume_attach(vol, p->base_bdev, answer, request);
	}
	if (p != NULL) {
		params_free(p);
	}
}
SPDK_RPC_REGISTER("flint_volume_attach", rpc_attach, SPDK_RPC_RUNTIME)

static void
rpc_mark(struct spdk_jsonrpc_request *request, const struct spdk_json_val *json)
{
	struct params *p = decode(request, json, member_decoders, SPDK_COUNTOF(member_decoders));
	struct flint_volume *vol = p == NULL ? NULL : find(request, p);

	if (vol != NULL) {
		flint_volume_mark(vol, p->member, answer, request);
	}
	if (p != NULL) {
		params_free(p);
	}
}
SPDK_RPC_REGISTER("flint_volume_mark", rpc_mark, SPDK_RPC_RUNTIME)

static void
rpc_forget(struct spdk_jsonrpc_request *request, const struct spdk_json_val *json)
{
	struct params *p = decode(request, json, member_decoders, SPDK_COUNTOF(member_decoders));
	struct flint_volume *vol = p == NULL ? NULL : find(request, p);

	if (vol != NULL) {
		flint_volume_forget(vol, p->member, answer, request);
	}
	if (p != NULL) {
		params_free(p);
	}
}
SPDK_RPC_REGISTER("flint_volume_forget", rpc_forget, SPDK_RPC_RUNTIME)

struct ranges {
	struct spdk_json_write_ctx *w;
	uint64_t left;
};

static bool
write_range(void *ctx, uint64_t offset, uint64_t count)
{
	struct ranges *r = ctx;

	if (r->left == 0) {
		return false;
	}
	r->left--;
	spdk_json_write_object_begin(r->w);
	spdk_json_write_named_uint64(r->w, "offset_blocks", offset);
	spdk_json_write_named_uint64(r->w, "num_blocks", count);
	spdk_json_write_object_end(r->w);
	return true;
}

static void
rpc_get_dirty(struct spdk_jsonrpc_request *request, const struct spdk_json_val *json)
{
	struct params *p = decode(request, json, dirty_decoders, SPDK_COUNTOF(dirty_decoders));
	struct flint_volume *vol = p == NULL ? NULL : find(request, p);
	struct flint_volume_map_state st;
	struct ranges r;

	if (vol == NULL) {
		goto out;
	}
	if (flint_volume_map(vol, p->member, &st, NULL, NULL) != 0) {
		fail(request, -ENOENT, "this member has no map: mark it first");
		goto out;
	}
	r.w = spdk_jsonrpc_begin_result(request);
	r.left = p->max_ranges != 0 ? p->max_ranges : 1024;
	spdk_json_write_object_begin(r.w);
	spdk_json_write_named_uint64(r.w, "dirty_blocks", st.dirty_blocks);
	spdk_json_write_named_bool(r.w, "grown", st.grown);
	spdk_json_write_named_bool(r.w, "copying", st.copying);
	spdk_json_write_named_uint64(r.w, "copied_blocks", st.copied_blocks);
	if (st.copy_rc != 0) {
		spdk_json_write_named_string_fmt(r.w, "copy_error", "%s: %s", st.copy_msg,
						 spdk_strerror(-st.copy_rc));
	}
	spdk_json_write_named_array_begin(r.w, "ranges");
	flint_volume_map(vol, p->member, &st, write_range, &r);
	spdk_json_write_array_end(r.w);
	spdk_json_write_object_end(r.w);
	spdk_jsonrpc_end_result(request, r.w);
out:
	if (p != NULL) {
		params_free(p);
	}
}
SPDK_RPC_REGISTER("flint_volume_get_dirty", rpc_get_dirty, SPDK_RPC_RUNTIME)

static void
rpc_copy(struct spdk_jsonrpc_request *request, const struct spdk_json_val *json)
{
	struct params *p = decode(request, json, copy_decoders, SPDK_COUNTOF(copy_decoders));
	struct flint_volume *vol = p == NULL ? NULL : find(request, p);
	const char *msg = NULL;
	int rc;

	if (vol != NULL) {
		rc = flint_volume_copy(vol, p->member, p->member_bdev, p->max_mib_per_sec * 1024 * 1024, &msg);
		if (rc != 0) {
			fail(request, rc, msg);
		} else {
			spdk_jsonrpc_send_bool_response(request, true);
		}
	}
	if (p != NULL) {
		params_free(p);
	}
}
SPDK_RPC_REGISTER("flint_volume_copy", rpc_copy, SPDK_RPC_RUNTIME)
