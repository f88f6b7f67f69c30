/*
 * Copyright 2026 The Flint Authors.
 * SPDX-License-Identifier: Apache-2.0
 *
 * flint_tgt: SPDK's NVMe-oF target application with Flint's flint_volume
 * bdev module linked in. It takes nvmf_tgt's arguments and answers its
 * RPCs; the module registers itself and its RPCs when linked.
 */

#include "spdk/stdinc.h"
#include "spdk/event.h"

static void
usage(void)
{
}

static int
parse_arg(int ch, char *arg)
{
	return -EINVAL;
}

static void
started(void *arg)
{
}

int
main(int argc, char **argv)
{
	struct spdk_app_opts opts = {};
	int rc;

	spdk_app_opts_init(&opts, sizeof(opts));
	/* nvmf_tgt's name: the same shared memory and trace file names. */
	opts.name = "nvmf";
	rc = spdk_app_parse_args(argc, argv, &opts, "", NULL, parse_arg, usage);
	if (rc != SPDK_APP_PARSE_ARGS_SUCCESS) {
		return rc;
	}
	rc = spdk_app_start(&opts, started, NULL);
	spdk_app_fini();
	return rc;
}
