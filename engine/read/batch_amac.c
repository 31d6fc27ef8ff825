/* SPDX-License-Identifier: MIT */
/*
 * batch_amac.c — a warm tern_get_batch that overlaps its cache misses.
 *
 * A warm lookup is a chain of dependent cache misses: the filter's line,
 * the block's header and restart keys, the run holding the key, its value.
 * Looked up one after the other, a batch waits for each miss in turn.
 * Here TERN_AMAC_LANES lookups are in flight at once (asynchronous
 * memory-access chaining, Kocberber et al., VLDB 2015): each is a
 * tern_seg_lookup (codec/segment_lookup_steps.h) whose every step starts
 * fetching what its next step reads and returns; the lanes are stepped
 * round-robin, and a lane whose lookup ends takes the next key.  By the
 * time a lane is stepped again its lines have arrived.
 *
 * The answers are tern_snapshot_find's: the write buffer first, then each
 * segment newest first takes the keys not answered yet (a key is live in
 * one segment at most, so the order of the segments only saves work); a
 * key found there but deleted goes on to the older ones.  A segment of the
 * state's range map takes only the keys the map sends it (each key to the
 * one range that can hold it, tern_state_map_entry): over many
 * range-disjoint segments a key is tried in one of them, not in each.  A lookup the
 * steps cannot finish without I/O (a page not checked yet, a doc id in
 * NAME.doc) is finished by tern_slot_find.  The values are kept until
 * every key is answered, then fn is called in input order: pointed to
 * where they lie in a mapping (a primary key's inline value as whole bytes
 * of its block, or in NAME.val: copied once, by fn), else copied into one
 * buffer (an inline value at a bit offset, or one tern_slot_find gave).
 */
#include "engine/read/batch_amac.h"
#include "engine/util/errwrap.h"

#include "codec/segment_lookup_steps.h"
#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

/* Lookups in flight: measured (docs/benchmarks/HISTORY.md). */
#ifndef TERN_AMAC_LANES
#define TERN_AMAC_LANES 8u
#endif

/* Callbacks ahead of the one running whose values are being fetched. */
#define DELIVER_AHEAD 16u

/* A key's answer: its value at val, or, when val is NULL, at `off` in
 * the batch's copies (which may move as they grow). */
typedef struct amac_res {
  const uint8_t *val;
  uint32_t off, len, found;
} amac_res;

typedef struct amac {
  const tern_slice *keys;
  size_t n;
  /* The keys a slot's pass takes: list[0..nlist) (the map's keys for a
   * slot of the range map), or, list NULL, every key 0..n-1. */
  const uint32_t *list;
  size_t nlist;
  amac_res *res;
  uint8_t *copies; /* inline values copied out of their blocks: one buffer, */
  size_t ncopies, copies_cap; /* reused by glibc (an arena's fresh pages would fault) */
  tern_seg_cursor *c; /* for the lookups the steps hand back; NULL until one does */
  uint32_t key[TERN_AMAC_LANES];
  tern_seg_lookup lane[TERN_AMAC_LANES];
} amac;

/* Room for len more bytes of copies: their offset. */
static int copy_room(amac *a, size_t len, size_t *off) {
  if (a->copies_cap - a->ncopies < len) {
    size_t cap = a->copies_cap ? a->copies_cap : 4096;
    while (cap - a->ncopies < len) cap *= 2;
    uint8_t *p = realloc(a->copies, cap);
    if (!p) return tern_fail(TERN_ENOMEM, "batch: out of memory");
    a->copies = p;
    a->copies_cap = cap;
  }
  *off = a->ncopies;
  a->ncopies += len;
  return TERN_OK;
}

int tern_batch_amac_usable(const tern_snapshot *s) {
  for (size_t i = 0; i < s->st->nslots; i++)
    if (!tern_seg_lookup_usable(s->st->slots[i].ref->seg)) return 0;
  return 1;
}

static int keep_value(amac *a, size_t k, const void *v, size_t len) {
  size_t off = 0; /* set by copy_room; gcc -O3 cannot see it */
  TERN_TRY(copy_room(a, len, &off));
  if (len) memcpy(a->copies + off, v, len);
  a->res[k] = (amac_res){NULL, (uint32_t)off, (uint32_t)len, 1};
  return TERN_OK;
}

/* Key k looked up in slot sl the ordinary way (I/O allowed). */
static int find_slow(amac *a, const tern_slot *sl, size_t k) {
  if (!a->c) {
    a->c = malloc(sizeof *a->c);
    if (!a->c) return tern_fail(TERN_ENOMEM, "batch: out of memory");
    tern_seg_cursor_init(a->c);
  }
  tern_term_entry e;
  uint32_t doc;
  tern_slice v;
  int rc = tern_slot_find(sl, a->keys[k].data, a->keys[k].len, a->c, &e, &doc);
  if (rc == TERN_NOTFOUND) return TERN_OK;
  if (rc != TERN_OK) return rc;
  TERN_TRY(tern_seg_value(sl->ref->seg, &e, a->c, &v));
  return keep_value(a, k, v.data, v.len);
}

/* Lane i's lookup of its key in slot sl ended with rc. */
static int lane_done(amac *a, const tern_slot *sl, unsigned i, int rc) {
  const tern_seg_lookup *l = &a->lane[i];
  size_t k = a->key[i];
  if (rc == TERN_NOTFOUND) return TERN_OK;
  if (rc == TERN_SEG_LOOKUP_SLOW) return find_slow(a, sl, k);
  if (rc != TERN_OK) return rc;
  if (!tern_slot_is_live(sl, tern_seg_lookup_doc(l))) return TERN_OK; /* an older slot may hold it */
  tern_slice v;
  if (tern_seg_lookup_value_inplace(l, &v)) { /* a primary key's: pointed to, copied once, by fn */
    a->res[k] = (amac_res){v.data, 0, (uint32_t)v.len, 1};
    return TERN_OK;
  }
  uint32_t len = tern_seg_lookup_vlen(l);
  size_t off = 0;
  if (tern_seg_lookup_inline(l)) TERN_TRY(copy_room(a, len, &off));
  rc = tern_seg_lookup_value(l, a->copies + off, &v);
  if (rc == TERN_SEG_LOOKUP_SLOW) return find_slow(a, sl, k);
  if (rc != TERN_OK) return rc;
  a->res[k] = tern_seg_lookup_inline(l) ? (amac_res){NULL, (uint32_t)off, len, 1}
                                        : (amac_res){v.data, 0, (uint32_t)v.len, 1};
  return TERN_OK;
}

/* Gives lane i the next key from *next not answered yet that slot sl's
 * range admits: 1, or 0 when none is left; < 0 on error. */
static inline __attribute__((always_inline)) int lane_fill(amac *a, const tern_slot *sl,
                                                           const tern_seg_filter_line *line,
                                                           unsigned i, size_t *next) {
  while (*next < a->nlist) {
    size_t j = (*next)++, k = a->list ? a->list[j] : j;
    /* The caller's keys may lie anywhere: the one a lane takes next, a
     * round of the lanes later, starts on its way now. */
    if (j + TERN_AMAC_LANES < a->nlist)
      __builtin_prefetch(a->keys[a->list ? a->list[j + TERN_AMAC_LANES] : j + TERN_AMAC_LANES].data);
    if (a->res[k].found) continue;
    int rc = tern_seg_lookup_start(&a->lane[i], &sl->gate, line, a->keys[k].data, a->keys[k].len);
    if (rc == TERN_NOTFOUND) continue;
    if (rc != TERN_SEG_LOOKUP_MORE) return rc;
    a->key[i] = (uint32_t)k;
    return 1;
  }
  return 0;
}

/* Every key not answered yet, looked up in slot sl with the lanes
 * interleaved. */
static int slot_pass(amac *a, const tern_slot *sl, const tern_seg_filter_line *line) {
  size_t next = 0;
  unsigned busy = 0, nl = 0; /* lanes [0, nl) were filled; busy of them still are */
  uint8_t active[TERN_AMAC_LANES];
  tern_seg_block_memo memo = {{0}, {0}, 0};
  for (; nl < TERN_AMAC_LANES; nl++) {
    int rc = lane_fill(a, sl, line, nl, &next);
    if (rc < 0) return rc;
    if (rc == 0) break;
    active[nl] = 1;
    busy++;
  }
  while (busy) {
    for (unsigned i = 0; i < nl; i++) {
      if (!active[i]) continue;
      int rc = tern_seg_lookup_step(&a->lane[i], &memo);
      if (rc == TERN_SEG_LOOKUP_MORE) continue;
      TERN_TRY(lane_done(a, sl, i, rc));
      rc = lane_fill(a, sl, line, i, &next);
      if (rc < 0) return rc;
      if (rc == 0) active[i] = 0, busy--;
    }
  }
  return TERN_OK;
}

/* The keys the range map sends to each of its slots, in by_slot: slot
 * i's keys are list[start[i] .. start[i + 1]) (other slots: none), each in
 * the input order; keys no range of the map can hold are in none. */
typedef struct map_lists {
  uint32_t *list, *start;
} map_lists;

static int map_route(const tern_state *st, const amac *a, map_lists *ml) {
  uint32_t *slot = malloc(a->n * sizeof *slot);
  ml->list = malloc(a->n * sizeof *ml->list);
  ml->start = calloc(st->nslots + 2, sizeof *ml->start);
  if (!slot || !ml->list || !ml->start) {
    free(slot);
    return tern_fail(TERN_ENOMEM, "batch: out of memory");
  }
  for (size_t k = 0; k < a->n; k++) { /* counting sort by slot; none: nslots */
    uint32_t sl = a->res[k].found ? UINT32_MAX
                                  : tern_state_map_slot(st, a->keys[k].data, a->keys[k].len);
    slot[k] = sl == UINT32_MAX ? (uint32_t)st->nslots : sl;
    ml->start[slot[k] + 1]++;
  }
  for (size_t i = 0; i < st->nslots + 1; i++)
    ml->start[i + 1] += ml->start[i];
  for (size_t k = 0; k < a->n; k++)
    ml->list[ml->start[slot[k]]++] = (uint32_t)k;
  for (size_t i = st->nslots + 1; i-- > 0;) /* back to each slot's first */
    ml->start[i + 1] = ml->start[i];
  ml->start[0] = 0;
  free(slot);
  return TERN_OK;
}

/* The write buffer's answers (an empty one has none), then each
 * segment's, newest first, its filter line asked before its gate. */
static int amac_resolve(amac *a, tern_snapshot *s) {
  static const uint8_t empty = 0;
  for (size_t k = 0; s->buf->n && k < a->n; k++) {
    ptrdiff_t i = tern_memseg_find(s->buf, a->keys[k].data, a->keys[k].len);
    if (i < 0) continue;
    tern_slice v;
    TERN_TRY(tern_memseg_value(s->buf, (size_t)i, &v));
    a->res[k] = (amac_res){v.len ? v.data : &empty, 0, (uint32_t)v.len, 1};
  }
  const tern_state *st = s->st;
  map_lists ml = {NULL, NULL};
  assert(!st->ndisjoint || st->in_map); /* built with the map */
  int rc = st->ndisjoint ? map_route(st, a, &ml) : TERN_OK;
  for (size_t si = st->nslots; rc == TERN_OK && si-- > 0;) {
    int mapped = st->ndisjoint && st->in_map[si];
    a->list = mapped ? ml.list + ml.start[si] : NULL;
    a->nlist = mapped ? ml.start[si + 1] - ml.start[si] : a->n;
    rc = slot_pass(a, &st->slots[si], st->lines ? &st->lines[si] : NULL);
  }
  free(ml.list);
  free(ml.start);
  return rc;
}

int tern_batch_amac(tern_snapshot *s, const tern_slice *keys, size_t n, tern_batch_fn fn,
                    void *payload) {
  amac *a = malloc(sizeof *a);
  amac_res *res = calloc(n, sizeof *res);
  if (!a || !res) {
    free(a);
    free(res);
    return tern_fail(TERN_ENOMEM, "batch: out of memory");
  }
  a->keys = keys;
  a->n = n;
  a->res = res;
  a->c = NULL;
  a->copies = NULL;
  a->ncopies = a->copies_cap = 0;
  int rc = amac_resolve(a, s);
  for (size_t k = 0; rc == TERN_OK && k < n; k++) {
    /* A value pointed to in its block was last touched a whole batch ago:
     * fetch it a few callbacks ahead, so that fn's first touch of it is
     * not a cache miss of its own. */
    if (k + DELIVER_AHEAD < n && res[k + DELIVER_AHEAD].val) __builtin_prefetch(res[k + DELIVER_AHEAD].val);
    const uint8_t *v = res[k].val ? res[k].val : a->copies ? a->copies + res[k].off : (const uint8_t *)"";
    int r = res[k].found ? fn(payload, k, TERN_OK, v, res[k].len)
                         : fn(payload, k, TERN_NOTFOUND, NULL, 0);
    if (r != 0) rc = tern_fail_stopped(r);
  }
  if (a->c) {
    tern_seg_cursor_release(a->c);
    free(a->c);
  }
  free(a->copies);
  free(a);
  free(res);
  return rc;
}
