/* SPDX-License-Identifier: MIT */
/*
 * state_cfilter.c — one filter over the keys of a state's slots probed in
 * turn (issue 21 item 6): an absent key on many overlapping segments
 * costs one filter per segment, one cache line each; when this filter says
 * "no", the get skips all of them for one line.
 *
 * Why it is never wrong: it holds the hash of every unique key of every
 * slot it covers (live or deleted: a superset is fine), and a segment's
 * keys never change, so "certainly absent" from it is true of each
 * covered slot.  It is used by a state only when it covers every slot that
 * state probes in turn (by segment id); a state made after a merge or a
 * flush (a slot it does not cover) goes without it.
 *
 * Cost: the keys of the covered segments read once, in key order, from
 * their terms blocks, and hashed — so it is built only where a state is
 * made from the catalog (tern_open, a reload after another process's
 * commit) and by the background worker of a writing process once its
 * flushes and merges are done (engine/maint/combined.c: installed as an
 * edit that changes nothing else), never on the commit path, only for at
 * least TERN_CFILTER_MIN slots (TERN_CFILTER_MIN_WORKER for the worker,
 * which pays the build in the background: an incremental index's 3 or 4
 * overlapping segments then cost an absent key one line, not 3 or 4), at most TERN_CFILTER_MAX_KEYS keys, and only when their terms
 * files are mapped and in the page cache (no reads at open).  Memory:
 * TERN_FILTER_BITS_PER_KEY bits per key (1.25 MiB per million), plus
 * 8 bytes a key while it is built.  Any failure while building (memory, a
 * damaged block) leaves the state without it: still right, the gets then
 * meet the damage themselves.
 */
#include "engine/state/index.h"

#include "codec/filter.h"
#include "codec/segment.h"
#include "codec/status.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

struct tern_cfilter {
  unsigned refs; /* under idx->mu, as the states holding it */
  tern_filter *f;
  tern_filter_view view;
  size_t ncovered;
  uint8_t (*segids)[TERN_SEGID_SIZE]; /* the covered segments, sorted */
};

/* The slots st probes in turn: its overlap list, or all of them. */
static size_t in_turn(const tern_state *st, const uint32_t **ids) {
  *ids = st->ndisjoint ? st->overlap : NULL;
  return st->ndisjoint ? st->noverlap : st->nslots;
}

static int segid_cmp(const void *a, const void *b) { return memcmp(a, b, TERN_SEGID_SIZE); }

static int covers(const tern_cfilter *cf, const uint8_t *segid) {
  return bsearch(segid, cf->segids, cf->ncovered, TERN_SEGID_SIZE, segid_cmp) != NULL;
}

/* 1 when cf covers every slot st probes in turn. */
static int covers_state(const tern_cfilter *cf, const tern_state *st) {
  const uint32_t *ids;
  size_t n = in_turn(st, &ids);
  for (size_t k = 0; k < n; k++)
    if (!covers(cf, st->slots[ids ? ids[k] : k].segid)) return 0;
  return 1;
}

static void cfilter_free(tern_cfilter *cf) {
  tern_filter_free(cf->f);
  free(cf->segids);
  free(cf);
}

void tern_state_cfilter_put(tern_state *st) {
  tern_cfilter *cf = st->cf;
  st->cf = NULL;
  st->cf_view = (tern_filter_view){0};
  assert(!cf || cf->refs > 0);
  if (cf && --cf->refs == 0) cfilter_free(cf);
}

int tern_state_cfilter_inherit(tern_state *st, const tern_state *from) {
  if (st->cf || !from || !from->cf || !covers_state(from->cf, st)) return 0;
  assert(from->cf->refs > 0);
  st->cf = from->cf;
  st->cf_view = from->cf_view;
  st->cf->refs++;
  return 1;
}

/* Appends the hash of every unique key of seg to h[*n..cap). */
static int hash_keys(const tern_seg *seg, uint64_t *h, size_t *n, size_t cap) {
  const tern_seg_field *f = tern_seg_unique_field(seg);
  if (!f) return TERN_EINVAL;
  tern_seg_cursor c;
  tern_seg_cursor_init(&c);
  tern_term_entry e;
  int rc = tern_seg_first_term(seg, f, &c, &e);
  for (; rc == TERN_OK; rc = tern_seg_next_term(seg, &c, &e)) {
    if (*n == cap) {
      rc = TERN_ECORRUPT; /* more keys than max_doc: no filter */
      break;
    }
    h[(*n)++] = tern_filter_hash(e.term, e.len);
  }
  tern_seg_cursor_release(&c);
  return rc == TERN_NOTFOUND ? TERN_OK : rc;
}

/* The keys' bound, when st probes at least min_slots in turn and is
 * worth a filter (else 0). */
static size_t eligible_keys(const tern_state *st, size_t min_slots) {
  const uint32_t *ids;
  size_t n = in_turn(st, &ids), keys = 0;
  if (n < min_slots) return 0;
  for (size_t k = 0; k < n; k++) {
    const tern_segref *r = st->slots[ids ? ids[k] : k].ref;
    keys += r->max_doc;
    if (keys > TERN_CFILTER_MAX_KEYS || !tern_seg_terms_resident(r->seg, UINT64_MAX)) return 0;
  }
  return keys;
}

/* The filter over the hashes h[0..n) and the segments st probes in turn. */
static int cfilter_make(const tern_state *st, const uint64_t *h, size_t n, tern_cfilter **out) {
  const uint32_t *ids;
  size_t nc = in_turn(st, &ids);
  size_t len = tern_filter_body_size(n, TERN_FILTER_BITS_PER_KEY);
  tern_cfilter *cf = calloc(1, sizeof *cf);
  uint8_t *body = len ? malloc(len) : NULL;
  int rc = cf && body ? TERN_OK : TERN_ENOMEM;
  if (rc == TERN_OK) rc = (cf->segids = malloc(nc * TERN_SEGID_SIZE)) ? TERN_OK : TERN_ENOMEM;
  if (rc == TERN_OK) rc = tern_filter_build(body, len, h, n, TERN_FILTER_BITS_PER_KEY);
  if (rc == TERN_OK) rc = tern_filter_load(&cf->f, body, len, "combined filter");
  free(body);
  if (rc != TERN_OK) {
    if (cf) cfilter_free(cf);
    return rc;
  }
  for (size_t k = 0; k < nc; k++)
    memcpy(cf->segids[k], st->slots[ids ? ids[k] : k].segid, TERN_SEGID_SIZE);
  qsort(cf->segids, nc, TERN_SEGID_SIZE, segid_cmp);
  cf->ncovered = nc;
  cf->view = tern_filter_view_of(cf->f);
  cf->refs = 1;
  *out = cf;
  return TERN_OK;
}

/* The filter over st's slots probed in turn when at least min_slots. */
static int make_filter(const tern_state *st, size_t min_slots, tern_cfilter **out) {
  *out = NULL;
  size_t cap = eligible_keys(st, min_slots);
  if (!cap) return TERN_OK;
  uint64_t *h = malloc(cap * sizeof *h);
  const uint32_t *ids;
  size_t nc = in_turn(st, &ids), n = 0;
  int rc = h ? TERN_OK : TERN_ENOMEM;
  for (size_t k = 0; rc == TERN_OK && k < nc; k++)
    rc = hash_keys(st->slots[ids ? ids[k] : k].ref->seg, h, &n, cap);
  if (rc == TERN_OK) rc = cfilter_make(st, h, n, out);
  free(h);
  return rc;
}

void tern_state_cfilter_build(tern_state *st) {
  if (st->cf) return;
  tern_cfilter *cf = NULL;
  if (make_filter(st, TERN_CFILTER_MIN, &cf) != TERN_OK) {
    tern_clear_error(); /* without it: still right (above) */
    return;
  }
  st->cf = cf;
  if (cf) st->cf_view = cf->view;
}

int tern_cfilter_make(const tern_state *st, tern_cfilter **out) {
  return make_filter(st, TERN_CFILTER_MIN_WORKER, out);
}

int tern_state_cfilter_wanted(const tern_state *st) {
  const uint32_t *ids;
  return !st->cf && in_turn(st, &ids) >= TERN_CFILTER_MIN_WORKER;
}

int tern_state_cfilter_adopt(tern_state *st, tern_cfilter **cf) {
  if (st->cf || !*cf || !covers_state(*cf, st)) return 0;
  assert((*cf)->refs == 1);
  st->cf = *cf;
  st->cf_view = st->cf->view;
  *cf = NULL;
  return 1;
}

void tern_cfilter_discard(tern_cfilter *cf) {
  assert(!cf || cf->refs == 1);
  if (cf) cfilter_free(cf);
}
