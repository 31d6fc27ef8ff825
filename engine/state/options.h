/* SPDX-License-Identifier: MIT */
/*
 * options.h — the options of an index beyond tern_options_init (tern.h):
 * checked when an index is created, and adopted from its catalog when
 * it is opened (options.c).
 */
#ifndef TERN_ENGINE_OPTIONS_H
#define TERN_ENGINE_OPTIONS_H

#include "engine/format/catalog_schema.h"
#include "engine/state/index.h"

/* The caller's options for a new index: TERN_EINVAL naming the bad one. */
int tern_options_check(const tern_options *o);
/* TERN_EINVAL unless factor is a merge_factor tern_open takes. */
int tern_options_check_merge_factor(uint32_t factor);
/* Copies options decoded from the catalog into idx->opts (owned field
 * names): TERN_ENOMEM, or TERN_ECORRUPT naming the catalog when a value
 * is out of range.  On failure too, what it copied is freed by
 * tern_options_release (the close of the half-open index). */
int tern_options_adopt(tern_index *idx, const tern_rec_options *r);
/* Frees the field names tern_options_adopt copied. */
void tern_options_release(tern_options *o);

#endif
