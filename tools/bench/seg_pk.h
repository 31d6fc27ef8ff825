/* SPDX-License-Identifier: MIT */
/*
 * seg_pk.h — a primary key looked up in one segment through the codec
 * alone, as the engine looks it up (codec/segment.h): the probe, the gate
 * (range, then filter), tern_seg_pk_find (index, block, doc id), then the
 * value.  The codec benchmarks time this against tern_get and mdb_get.
 */
#ifndef TERN_BENCH_SEG_PK_H
#define TERN_BENCH_SEG_PK_H

#include "codec/segment.h"

/* TERN_OK with the doc and (value non-NULL) the value; TERN_NOTFOUND. */
static inline int bench_seg_pk_get(const tern_seg *s, const void *key, size_t len,
                                   tern_seg_cursor *c, uint32_t *doc, tern_slice *value) {
  tern_seg_probe p;
  tern_seg_gate g;
  tern_term_entry e;
  int rc = tern_seg_probe_init(&p, key, len);
  if (rc != TERN_OK) return rc;
  tern_seg_gate_of(s, &g);
  int filter = tern_seg_gate_pass(&g, &p);
  if (filter <= 0) return filter < 0 ? filter : TERN_NOTFOUND;
  rc = tern_seg_pk_find(s, &p, filter, c, &e, doc);
  if (rc != TERN_OK || !value) return rc;
  return tern_seg_value(s, &e, c, value);
}

#endif
