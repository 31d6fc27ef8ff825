/* SPDX-License-Identifier: MIT */
/*
 * split.c — boundary keys that cut a snapshot's live keys into parts of
 * about equal size (tern_split_keys, tern.h), without scanning the keys.
 *
 * Every segment's resident terms index knows each of its primary-key
 * blocks' separator and key count: one weighted point per block, (its
 * separator, its keys), scaled by the segment's live fraction (deletions
 * are taken as spread evenly over its keys).  The write buffer, in memory,
 * gives one point per key.  The points of all sources, sorted by key,
 * are a cumulative distribution of the keys; each boundary is the point
 * whose cumulative weight before it is closest to i/n of the total.  The
 * error of one boundary is about half a block of each segment whose
 * blocks straddle it (a few hundred keys a block), so parts of ~50 blocks
 * and more are within ±10%.  A key present in several sources (rewritten
 * later in a newer segment or the buffer, its old copy deleted) counts
 * once per live copy: the live fraction already discounts the dead ones.
 */
#include "codec/segment.h"
#include "codec/status.h"
#include "engine/state/index.h"
#include "engine/util/sort.h"
#include "engine/util/vec.h"

#include <stdlib.h>
#include <string.h>

typedef struct point {
  tern_keyref key; /* first member: sorted by tern_sort_by_key */
  double w;
} point;

typedef struct points {
  point *v;
  size_t n, cap;
} points;

static int push(points *p, const uint8_t *key, size_t len, double w) {
  point *v = tern_vec_room(p->v, p->n, &p->cap, sizeof *p->v);
  if (!v) return tern_fail(TERN_ENOMEM, "split: out of memory");
  p->v = v;
  p->v[p->n++] = (point){{key, (uint32_t)len, 0}, w};
  return TERN_OK;
}

static int sample_slot(points *p, const tern_slot *s) {
  const tern_seg_field *f = s->ref->unique;
  uint32_t max_doc = s->ref->max_doc;
  if (!f || max_doc == 0 || s->deleted >= max_doc) return TERN_OK;
  double live = (double)(max_doc - s->deleted) / max_doc;
  tern_field_info fi;
  tern_seg_field_info(f, &fi);
  uint64_t nb = tern_seg_field_nblocks(f);
  for (uint64_t b = 0; b < nb; b++) {
    const uint8_t *sep;
    size_t len;
    uint32_t entries;
    TERN_TRY(tern_seg_field_block(f, b, &sep, &len, &entries));
    if (b == 0) { /* the empty separator: the block starts at the field's first key */
      sep = fi.min_term;
      len = fi.min_len;
    }
    if (sep && len) TERN_TRY(push(p, sep, len, entries * live));
  }
  return TERN_OK;
}

static int sample_buffer(points *p, const tern_memseg *m) {
  if (!m) return TERN_OK;
  TERN_TRY(tern_memseg_flat(m));
  for (size_t i = 0; i < m->n; i++)
    TERN_TRY(push(p, m->docs[i].key.p, m->docs[i].key.len, 1.0));
  return TERN_OK;
}

/* Sorts the points and merges those of one key (summing their weights). */
static int sort_points(points *p) {
  uint32_t *perm = malloc((p->n ? p->n : 1) * sizeof *perm);
  point *sorted = malloc((p->n ? p->n : 1) * sizeof *sorted);
  int rc = perm && sorted ? tern_sort_by_key(perm, p->v, sizeof *p->v, p->n, NULL)
                          : tern_fail(TERN_ENOMEM, "split: out of memory");
  size_t m = 0;
  for (size_t i = 0; rc == TERN_OK && i < p->n; i++) {
    const point *q = &p->v[perm[i]];
    if (m && tern_key_cmp(sorted[m - 1].key.p, sorted[m - 1].key.len, q->key.p, q->key.len) == 0)
      sorted[m - 1].w += q->w;
    else
      sorted[m++] = *q;
  }
  free(perm);
  if (rc != TERN_OK) {
    free(sorted);
    return rc;
  }
  free(p->v);
  p->v = sorted;
  p->n = p->cap = m;
  return TERN_OK;
}

/* Point j (>= 1) whose weight before it is closest to target, at or after
 * `from`. */
static size_t nearest(const double *before, size_t n, size_t from, double target) {
  size_t j = from;
  while (j + 1 < n && before[j] < target)
    j++;
  if (j > from && before[j] >= target && target - before[j - 1] < before[j] - target) j--;
  return j;
}

static int pick(const points *p, size_t n, tern_slice *keys_out) {
  double *before = malloc((p->n + 1) * sizeof *before);
  if (!before) return tern_fail(TERN_ENOMEM, "split: out of memory");
  double total = 0;
  for (size_t j = 0; j < p->n; j++) {
    before[j] = total;
    total += p->v[j].w;
  }
  size_t next = 1, out = 0; /* point 0 is the smallest key: no boundary there */
  int rc = TERN_OK;
  for (size_t i = 1; i < n && next < p->n && rc == TERN_OK; i++) {
    size_t j = nearest(before, p->n, next, total * (double)i / (double)n);
    void *copy = malloc(p->v[j].key.len);
    if (!copy) {
      rc = tern_fail(TERN_ENOMEM, "split: out of memory");
      break;
    }
    memcpy(copy, p->v[j].key.p, p->v[j].key.len);
    keys_out[out++] = (tern_slice){copy, p->v[j].key.len};
    next = j + 1;
  }
  free(before);
  if (rc != TERN_OK)
    for (size_t i = 0; i < out; i++) {
      free((void *)keys_out[i].data);
      keys_out[i] = (tern_slice){NULL, 0};
    }
  return rc;
}

int tern_split_keys(tern_snapshot *snap, size_t n, tern_slice *keys_out) {
  tern_clear_error();
  if (!snap || (n > 1 && !keys_out))
    return tern_fail(TERN_EINVAL, "tern_split_keys: NULL argument");
  if (n < 1) return tern_fail(TERN_EINVAL, "tern_split_keys: n is 0 (1 part at least)");
  for (size_t i = 0; i + 1 < n; i++)
    keys_out[i] = (tern_slice){NULL, 0};
  if (n == 1) return TERN_OK;
  points p = {0};
  const tern_state *st = snap->st;
  int rc = TERN_OK;
  for (size_t i = 0; rc == TERN_OK && i < st->nslots; i++)
    rc = sample_slot(&p, &st->slots[i]);
  if (rc == TERN_OK) rc = sample_buffer(&p, snap->buf);
  if (rc == TERN_OK) rc = sort_points(&p);
  if (rc == TERN_OK) rc = pick(&p, n, keys_out);
  free(p.v);
  return rc;
}
