/* SPDX-License-Identifier: MIT */
#include "tests/common/seg_lookup.h"

int tu_seg_pk_entry(const tern_seg *s, const void *key, size_t len, tern_seg_cursor *c,
                    tern_term_entry *e, uint32_t *doc) {
  tern_seg_probe p;
  int rc = tern_seg_probe_init(&p, key, len);
  if (rc != TERN_OK) return rc;
  tern_seg_gate g;
  tern_seg_gate_of(s, &g);
  int filter = tern_seg_gate_pass(&g, &p);
  if (filter <= 0) return filter < 0 ? filter : TERN_NOTFOUND;
  return tern_seg_pk_find(s, &p, filter, c, e, doc);
}

int tu_seg_pk_get(const tern_seg *s, const void *key, size_t len, tern_seg_cursor *c, uint32_t *doc,
                  tern_slice *value) {
  tern_term_entry e;
  uint32_t d;
  int rc = tu_seg_pk_entry(s, key, len, c, &e, &d);
  if (rc != TERN_OK) return rc;
  if (doc) *doc = d;
  return value ? tern_seg_value(s, &e, c, value) : TERN_OK;
}

int tu_seg_may_contain(const tern_seg *s, const tern_seg_field *f, const void *term, size_t len) {
  if (!term || len < 1 || len > TERN_KEY_MAX) return 0;
  tern_field_info fi;
  tern_seg_field_info(f, &fi);
  if (!fi.min_term || tern_seg_term_cmp(term, len, fi.min_term, fi.min_len) < 0 ||
      tern_seg_term_cmp(term, len, fi.max_term, fi.max_len) > 0)
    return 0;
  if (f != tern_seg_unique_field(s)) return 1;
  tern_seg_probe p;
  if (tern_seg_probe_init(&p, term, len) != TERN_OK) return 0;
  tern_seg_gate g;
  tern_seg_gate_of(s, &g);
  return tern_seg_gate_pass(&g, &p) != 0;
}
