/* SPDX-License-Identifier: MIT */
/*
 * batch_amac.h — warm tern_get_batch with many lookups in flight
 * (engine/read/batch_amac.c).
 */
#ifndef TERN_ENGINE_READ_BATCH_AMAC_H
#define TERN_ENGINE_READ_BATCH_AMAC_H

#include "engine/state/index.h"

/* Whether every segment of the snapshot is mapped (the steps need it). */
int tern_batch_amac_usable(const tern_snapshot *s);
/* tern_get_batch's warm path: the same answers as tern_snapshot_find key
 * by key, found with TERN_AMAC_LANES lookups interleaved, then fn called
 * in input order.  Keys are checked by the caller. */
int tern_batch_amac(tern_snapshot *s, const tern_slice *keys, size_t n, tern_batch_fn fn,
                    void *payload);

#endif
