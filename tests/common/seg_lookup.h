/* SPDX-License-Identifier: MIT */
/*
 * seg_lookup.h — a primary key looked up in one segment alone, the way the
 * engine looks it up (codec/segment.h: the gate, then tern_seg_pk_find),
 * for the tests that probe a segment without an index around it.  Test
 * support only: the library has one primary-key lookup, and these are its
 * two steps put together.
 */
#ifndef TERN_TEST_SEG_LOOKUP_H
#define TERN_TEST_SEG_LOOKUP_H

#include "codec/segment.h"

#include <stddef.h>
#include <stdint.h>

/* The gate then tern_seg_pk_find: TERN_OK with the entry in c/e and the
 * doc in *doc; TERN_NOTFOUND when absent (or kept out by the gate); the
 * error of either step. */
int tu_seg_pk_entry(const tern_seg *s, const void *key, size_t len, tern_seg_cursor *c,
                    tern_term_entry *e, uint32_t *doc);
/* tu_seg_pk_entry, then the value (doc and value may be NULL). */
int tu_seg_pk_get(const tern_seg *s, const void *key, size_t len, tern_seg_cursor *c, uint32_t *doc,
                  tern_slice *value);
/* 1 when `term` may be in field f: a valid key within the field's
 * [min, max] and, for the unique field, not denied by its filter (a
 * skipped or damaged filter page: 1, the lookup decides).  No I/O. */
int tu_seg_may_contain(const tern_seg *s, const tern_seg_field *f, const void *term, size_t len);

#endif
