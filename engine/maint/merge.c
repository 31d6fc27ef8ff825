/* SPDX-License-Identifier: MIT */
/*
 * merge.c — merging segments, and the policy choosing what to merge.
 *
 * A merge reads its source segments through their dictionaries, in key
 * order: the unique field's terms are k-way merged and each live document
 * gets the next doc id (doc id = rank of the key in the new segment, as
 * in every segment tern writes); the old -> new doc id maps then carry the
 * secondary fields, whose terms are k-way merged too, with each term's
 * postings concatenated, remapped, cleared of deleted docs and sorted.
 * The new segment is written and fsynced, then ONE edit (edit.h)
 * replaces the sources by it in the catalog and in the state; the sources' files are unlinked once
 * no snapshot holds them.
 *
 * Policy (after Cassandra's size-tiered compaction): segments, in order
 * of live documents, are grouped in buckets of similar size (each within
 * 1.5x its bucket's mean; every segment of at most TIER_FLOOR docs in
 * one bucket); the smallest bucket holding tern_options.merge_factor
 * segments (4) merges up to MERGE_MAX of its smallest.  So the gets of an
 * index written in small transactions see few segments (four flushes
 * become one), each document is rewritten about log4(docs / flush) times,
 * and segments of unequal size wait for peers rather than being copied
 * again and again.  A segment with no live doc is dropped; one with more
 * than a third of its docs deleted is rewritten.  Repeated until nothing
 * qualifies.  docs/ARCHITECTURE.md, "Merges", gives the measurements.
 */
#include "engine/state/edit.h"
#include "engine/util/errwrap.h"
#include "engine/util/counters.h"
#include "engine/state/index.h"
#include "engine/util/vec.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum { MERGE_MAX = 32, TIER_FLOOR = 1000, MAX_ROUNDS = 64 };
#define DELETES_PCT_ALLOWED 33

#define NO_DOC UINT32_MAX

typedef struct msrc {
  const tern_slot *slot;
  tern_seg_cursor *c;
  tern_term_entry e;
  const tern_seg_field *f;
  uint32_t *docmap; /* old doc -> new doc or NO_DOC */
  int has;          /* e holds a term */
} msrc;

typedef struct mheap {
  size_t *v, n;
  msrc *src;
} mheap;

static int heap_less(const mheap *h, size_t a, size_t b) {
  const tern_term_entry *x = &h->src[a].e, *y = &h->src[b].e;
  int c = tern_key_cmp(x->term, x->len, y->term, y->len);
  return c < 0 || (c == 0 && a < b);
}

static void heap_push(mheap *h, size_t s) {
  size_t i = h->n++;
  h->v[i] = s;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!heap_less(h, h->v[i], h->v[p])) break;
    size_t t = h->v[i];
    h->v[i] = h->v[p];
    h->v[p] = t;
    i = p;
  }
}

static size_t heap_pop(mheap *h) {
  size_t top = h->v[0];
  h->v[0] = h->v[--h->n];
  for (size_t i = 0;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < h->n && heap_less(h, h->v[l], h->v[m])) m = l;
    if (r < h->n && heap_less(h, h->v[r], h->v[m])) m = r;
    if (m == i) break;
    size_t t = h->v[i];
    h->v[i] = h->v[m];
    h->v[m] = t;
    i = m;
  }
  return top;
}

/* Positions source i on its field's first term and queues it. */
static int src_start(mheap *h, size_t i) {
  msrc *s = &h->src[i];
  s->has = 0;
  if (!s->f) return TERN_OK;
  int rc = tern_seg_first_term(s->slot->ref->seg, s->f, s->c, &s->e);
  if (rc == TERN_NOTFOUND) return TERN_OK;
  TERN_TRY(rc);
  s->has = 1;
  heap_push(h, i);
  return TERN_OK;
}

static int src_advance(mheap *h, size_t i) {
  msrc *s = &h->src[i];
  int rc = tern_seg_next_term(s->slot->ref->seg, s->c, &s->e);
  if (rc == TERN_NOTFOUND) {
    s->has = 0;
    return TERN_OK;
  }
  TERN_TRY(rc);
  heap_push(h, i);
  return TERN_OK;
}

static int merge_unique(tern_segw *w, mheap *h, size_t n, const tern_options *o, uint32_t *ndocs) {
  TERN_TRY(tern_segw_field(w, "", 0, TERN_FIELD_UNIQUE, o->pulsing_threshold));
  h->n = 0;
  for (size_t i = 0; i < n; i++) {
    h->src[i].f = h->src[i].slot->ref->unique;
    TERN_TRY(src_start(h, i));
  }
  uint32_t next = 0;
  while (h->n) {
    size_t i = heap_pop(h);
    msrc *s = &h->src[i];
    uint64_t doc = s->e.ordinal; /* engine segments: doc id = key rank */
    if (doc >= s->slot->ref->max_doc)
      return tern_fail(TERN_ECORRUPT, "segment %s: key ordinal %" PRIu64 " past max_doc",
                       s->slot->ref->name, doc);
    if (tern_slot_is_live(s->slot, (uint32_t)doc)) {
      tern_slice v;
      TERN_TRY(tern_seg_value(s->slot->ref->seg, &s->e, s->c, &v));
      TERN_TRY(tern_segw_term(w, s->e.term, s->e.len, &next, 1, v.data, v.len));
      s->docmap[doc] = next++;
    }
    TERN_TRY(src_advance(h, i));
  }
  *ndocs = next;
  return TERN_OK;
}

/* Appends the remapped live docs of source i's current term. */
static int gather_docs(msrc *s, tern_u32vec *docs) {
  tern_postings_iter it;
  TERN_TRY(tern_seg_postings(s->slot->ref->seg, &s->e, &it));
  uint32_t d;
  int rc;
  while ((rc = tern_postings_iter_next(&it, &d)) == TERN_OK && d != TERN_DOC_END) {
    if (d >= s->slot->ref->max_doc) {
      rc = tern_fail(TERN_ECORRUPT, "segment %s: doc %u past max_doc", s->slot->ref->name, d);
      break;
    }
    if (s->docmap[d] != NO_DOC && (rc = tern_u32vec_push(docs, s->docmap[d])) != TERN_OK) break;
  }
  tern_postings_iter_release(&it);
  return rc;
}

static int merge_field(tern_segw *w, mheap *h, size_t n, const uint8_t *name, size_t nlen,
                       const tern_options *o) {
  h->n = 0;
  for (size_t i = 0; i < n; i++) {
    h->src[i].f = tern_seg_find_field(h->src[i].slot->ref->seg, name, nlen);
    if (h->src[i].f && (h->src[i].f == h->src[i].slot->ref->unique)) h->src[i].f = NULL;
    TERN_TRY(src_start(h, i));
  }
  uint8_t term[TERN_KEY_MAX];
  int started = 0, rc = TERN_OK;
  tern_u32vec docs = {0};
  size_t *same = malloc((n ? n : 1) * sizeof *same);
  if (!same) return tern_fail(TERN_ENOMEM, "merge: out of memory");
  while (rc == TERN_OK && h->n) {
    size_t ns = 0, i = heap_pop(h);
    size_t tlen = h->src[i].e.len;
    memcpy(term, h->src[i].e.term, tlen);
    same[ns++] = i;
    while (h->n) {
      const tern_term_entry *e = &h->src[h->v[0]].e;
      if (e->len != tlen || memcmp(e->term, term, tlen)) break;
      same[ns++] = heap_pop(h);
    }
    docs.n = 0;
    for (size_t k = 0; rc == TERN_OK && k < ns; k++)
      rc = gather_docs(&h->src[same[k]], &docs);
    if (rc == TERN_OK && ns > 1) rc = tern_sort_u32(docs.v, docs.n);
    if (rc == TERN_OK && docs.n) {
      if (!started) rc = tern_segw_field(w, name, nlen, 0, tern_options_threshold(o, name, nlen));
      started = 1;
      if (rc == TERN_OK) rc = tern_segw_term(w, term, tlen, docs.v, (uint32_t)docs.n, NULL, 0);
    }
    for (size_t k = 0; rc == TERN_OK && k < ns; k++)
      rc = src_advance(h, same[k]);
  }
  free(same);
  free(docs.v);
  return rc;
}

/* Names of the secondary fields of all sources, sorted, unique. */
static int field_names(msrc *src, size_t n, tern_keyref **out, size_t *nout) {
  size_t total = 0;
  for (size_t i = 0; i < n; i++)
    total += tern_seg_nfields(src[i].slot->ref->seg);
  tern_keyref *names = malloc((total ? total : 1) * sizeof *names);
  uint32_t *perm = malloc((total ? total : 1) * sizeof *perm);
  if (!names || !perm) {
    free(names);
    free(perm);
    return tern_fail(TERN_ENOMEM, "merge: out of memory");
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const tern_seg *s = src[i].slot->ref->seg;
    for (size_t f = 0; f < tern_seg_nfields(s); f++) {
      tern_field_info fi;
      tern_seg_field_info(tern_seg_field_at(s, f), &fi);
      if (fi.flags & TERN_FIELD_UNIQUE) continue;
      names[k++] = (tern_keyref){fi.name, (uint32_t)fi.name_len, 0};
    }
  }
  int rc = tern_sort_by_key(perm, names, sizeof *names, k, NULL);
  size_t m = 0;
  tern_keyref *sorted = malloc((k ? k : 1) * sizeof *sorted);
  if (rc == TERN_OK && !sorted) rc = tern_fail(TERN_ENOMEM, "merge: out of memory");
  for (size_t i = 0; rc == TERN_OK && i < k; i++) {
    const tern_keyref *x = &names[perm[i]];
    if (m && sorted[m - 1].len == x->len && !memcmp(sorted[m - 1].p, x->p, x->len)) continue;
    sorted[m++] = *x;
  }
  free(names);
  free(perm);
  if (rc != TERN_OK) {
    free(sorted);
    return rc;
  }
  *out = sorted;
  *nout = m;
  return TERN_OK;
}

/* Writes the merge of slots as segment `name`; docmaps[i] receives input
 * i's old -> new doc map (the caller frees them). */
static int merge_write(tern_index *idx, const tern_slot *const *slots, size_t n, const char *name,
                       uint32_t *ndocs, uint8_t *segid, uint32_t **docmaps) {
  const tern_options *o = &idx->opts;
  msrc *src = calloc(n, sizeof *src);
  size_t *hv = malloc(n * sizeof *hv);
  int rc = src && hv ? TERN_OK : tern_fail(TERN_ENOMEM, "merge: out of memory");
  for (size_t i = 0; rc == TERN_OK && i < n; i++) {
    src[i].slot = slots[i];
    src[i].c = malloc(sizeof *src[i].c);
    src[i].docmap = malloc((size_t)slots[i]->ref->max_doc * sizeof(uint32_t));
    if (!src[i].c || !src[i].docmap) {
      free(src[i].c);
      src[i].c = NULL;
      rc = tern_fail(TERN_ENOMEM, "merge: out of memory");
      break;
    }
    tern_seg_cursor_init(src[i].c);
    memset(src[i].docmap, 0xff, (size_t)slots[i]->ref->max_doc * sizeof(uint32_t));
  }
  tern_segw_options so;
  tern_segw_options_init(&so);
  so.inline_value_max = o->inline_value_max;
  so.bloom_bits_per_key = o->bloom_bits_per_key;
  tern_segw *w = NULL;
  if (rc == TERN_OK) rc = tern_segw_open(&w, idx->dir, name, &so);
  if (rc == TERN_OK) memcpy(segid, tern_segw_id(w), TERN_SEGID_SIZE);
  mheap h = {hv, 0, src};
  if (rc == TERN_OK) rc = merge_unique(w, &h, n, o, ndocs);
  tern_keyref *names = NULL;
  size_t nnames = 0;
  if (rc == TERN_OK && *ndocs) rc = field_names(src, n, &names, &nnames);
  for (size_t f = 0; rc == TERN_OK && f < nnames; f++)
    rc = merge_field(w, &h, n, names[f].p, names[f].len, o);
  free(names);
  if (rc == TERN_OK && *ndocs)
    rc = tern_segw_finish(w, *ndocs);
  else
    tern_segw_abort(w);
  for (size_t i = 0; src && i < n; i++) {
    if (src[i].c) tern_seg_cursor_release(src[i].c);
    free(src[i].c);
    docmaps[i] = src[i].docmap;
  }
  free(src);
  free(hv);
  return rc;
}

/* ------------------------------------------------------------ install */

/*
 * A merge reads its inputs as one state had them (st), writes the new
 * segment outside install_mu while commits go on, and installs it as one
 * edit under install_mu.  Commits in between may have deleted
 * input docs (a delete, or a put replacing the key): each input whose
 * live-docs generation moved has those docs, found by comparing the two
 * generations and mapped through the merge's doc map, deleted in the new
 * segment's first live docs.  Nothing else can change an input: merges
 * and flushes run one at a time.
 */
typedef struct merge_ctx {
  tern_index *idx;
  const tern_state *cur; /* the newest state at the install */
  const tern_slot *const *slots; /* as st had them */
  size_t n;
  uint64_t number;
  uint32_t ndocs;
  uint8_t segid[TERN_SEGID_SIZE];
  uint32_t **docmaps;
  tern_livedocs *ld; /* deletions carried over, NULL: none */
} merge_ctx;

static const tern_slot *slot_now(const tern_state *cur, uint64_t number) {
  for (size_t i = 0; i < cur->nslots; i++)
    if (cur->slots[i].ref->number == number) return &cur->slots[i];
  return NULL;
}

/* The new docs of input docs deleted since the merge read them. */
static int carried_docs(const merge_ctx *m, size_t i, tern_u32vec *out) {
  const tern_slot *was = m->slots[i], *now = slot_now(m->cur, was->ref->number);
  if (!now) { /* dropped meanwhile (a deleted range held it all): every doc goes */
    for (uint32_t d = 0; d < was->ref->max_doc; d++)
      if (m->docmaps[i][d] != NO_DOC) TERN_TRY(tern_u32vec_push(out, m->docmaps[i][d]));
    return TERN_OK;
  }
  if (now->gen == was->gen || !now->live) return TERN_OK;
  tern_ld_iter it;
  tern_livedocs_iter_deleted(&it, now->live->ld);
  for (uint32_t d; (d = tern_ld_iter_next(&it)) != TERN_LD_END;) {
    if (!tern_slot_is_live(was, d) || d >= was->ref->max_doc) continue;
    uint32_t nd = m->docmaps[i][d];
    if (nd != NO_DOC) TERN_TRY(tern_u32vec_push(out, nd));
  }
  return TERN_OK;
}

static int carried_deletions(merge_ctx *m) {
  tern_u32vec dels = {0};
  int rc = TERN_OK;
  for (size_t i = 0; rc == TERN_OK && m->ndocs && i < m->n; i++)
    rc = carried_docs(m, i, &dels);
  tern_livedocs *none = NULL;
  if (rc == TERN_OK && dels.n) rc = tern_livedocs_new(&none, m->ndocs);
  if (rc == TERN_OK && dels.n) rc = tern_livedocs_apply(&m->ld, none, dels.v, dels.n);
  tern_livedocs_free(none);
  free(dels.v);
  return rc;
}

/* The merged segment (reader ref: consumed; NULL when no doc was live)
 * in the catalog, its inputs out, as an edit.  REQUIRES: install_mu held. */
static int install_merge(merge_ctx *m, tern_segref *ref) {
  tern_index *idx = m->idx;
  assert(tern_install_held(idx));
  tern_state *cur;
  int rc = tern_state_acquire(idx, 0, &cur);
  if (rc != TERN_OK) {
    if (ref) tern_segref_release(idx, ref);
    return rc;
  }
  m->cur = cur;
  tern_edit e;
  tern_edit_init(&e, cur);
  rc = carried_deletions(m);
  e.number_used = m->number; /* the number is used even when no segment resulted */
  for (size_t i = 0; rc == TERN_OK && i < m->n; i++)
    if (slot_now(cur, m->slots[i]->ref->number)) /* else dropped meanwhile */
      rc = tern_edit_drop_segment(&e, m->slots[i]->ref->number);
  if (m->ndocs) {
    tern_rec_segment r = {{0}, m->ndocs, 0, 0};
    memcpy(r.segid, m->segid, TERN_SEGID_SIZE);
    if (rc == TERN_OK) {
      rc = tern_edit_add_segment(idx, &e, m->number, &r, ref, m->ld);
      m->ld = NULL;
    } else {
      tern_segref_release(idx, ref);
    }
  }
  if (rc == TERN_OK) rc = tern_log_and_apply(idx, &e); /* a merge leaves the buffer as it was */
  if (rc == TERN_OK) TERN_COUNT(merges);
  tern_edit_free(idx, &e);
  tern_state_release(idx, cur);
  return rc;
}

/* Checks the whole-file checksums of every input before anything is
 * written (as Lucene's checkIntegrity before a merge), once per reader:
 * segments are immutable.  A damaged input is not rewritten with fresh
 * checksums; *bad names it. */
static int verify_inputs(const tern_slot *const *slots, size_t n, uint64_t *bad) {
  for (size_t i = 0; i < n; i++) {
    tern_segref *r = slots[i]->ref;
    if (r->verified) continue;
    int rc = tern_seg_verify(r->seg);
    if (rc == TERN_ECORRUPT) *bad = r->number;
    if (rc != TERN_OK)
      return tern_fail_wrap(rc, "merge refused: input segment %s does not verify", r->name);
    r->verified = 1; /* the merging thread only: no reader looks at it */
  }
  return TERN_OK;
}

/* Merges slots (of state st) into one new segment, or drops them when
 * none of their docs is live; *bad names an input that failed verification. */
static int merge_slots(tern_index *idx, const tern_state *st, const tern_slot *const *slots,
                       size_t n, uint64_t *bad) {
  TERN_TRY(verify_inputs(slots, n, bad));
  uint32_t **docmaps = calloc(n, sizeof *docmaps);
  if (!docmaps) return tern_fail(TERN_ENOMEM, "merge: out of memory");
  tern_install_lock(idx);
  merge_ctx m = {idx, NULL, slots, n, tern_new_segment_number(idx, &st->rec), 0, {0}, docmaps, NULL};
  tern_install_unlock(idx);
  char name[TERN_SEGNAME_MAX];
  tern_segment_name(name, m.number);
  uint64_t live = 0;
  for (size_t i = 0; i < n; i++)
    live += slots[i]->ref->max_doc - slots[i]->deleted;
  /* Outside the lock: commits go on while the segment is written. */
  int rc = live ? merge_write(idx, slots, n, name, &m.ndocs, m.segid, docmaps) : TERN_OK;
  tern_segref *ref = NULL;
  tern_rec_segment r = {{0}, m.ndocs, 0, 0};
  memcpy(r.segid, m.segid, TERN_SEGID_SIZE);
  if (rc == TERN_OK && m.ndocs) rc = tern_segref_preopen(idx, m.number, &r, &ref);
  tern_install_lock(idx);
  if (rc == TERN_OK) {
    rc = install_merge(&m, ref); /* ref consumed */
    ref = NULL;
  }
  if (rc != TERN_OK) tern_discard_new_segment(idx, name);
  tern_install_unlock(idx);
  if (ref) tern_segref_release(idx, ref);
  for (size_t i = 0; i < n; i++)
    free(docmaps[i]);
  free(docmaps);
  tern_livedocs_free(m.ld);
  return rc;
}

/* ------------------------------------------------------------ policy */

static uint64_t live_docs(const tern_slot *s) { return s->ref->max_doc - s->deleted; }

/* 1 when a segment of `live` docs joins the bucket of n segments holding
 * `sum` docs (taken in increasing size: it is at least their mean). */
static int joins_bucket(uint64_t live, uint64_t sum, size_t n) {
  if (live <= TIER_FLOOR) return 1; /* the floor's bucket: every small one */
  return 2 * live * n <= 3 * sum; /* live <= 1.5 mean, no overflow: docs < 2^32 */
}

static int cmp_live(const void *a, const void *b) {
  const tern_slot *x = *(const tern_slot *const *)a, *y = *(const tern_slot *const *)b;
  uint64_t lx = live_docs(x), ly = live_docs(y);
  if (lx != ly) return (lx > ly) - (lx < ly);
  return (x->ref->number > y->ref->number) - (x->ref->number < y->ref->number);
}

/* Picks one merge of st for a merge factor of `factor` (0: none but the
 * drops and rewrites); *n = 0 when nothing qualifies.  Segments that
 * failed verification as merge input are left out (not retried). */
static int pick_merge(const tern_state *st, size_t factor, const tern_slot **sel, size_t *n) {
  *n = 0;
  const tern_slot **all = malloc((st->nslots ? st->nslots : 1) * sizeof *all);
  if (!all) return tern_fail(TERN_ENOMEM, "merge policy: out of memory");
  size_t na = 0;
  for (size_t i = 0; i < st->nslots; i++)
    if (!tern_health_is_bad(st, st->slots[i].ref->number)) all[na++] = &st->slots[i];
  for (size_t i = 0; i < na; i++) /* empty segments: dropped together */
    if (live_docs(all[i]) == 0) sel[(*n)++] = all[i];
  for (size_t i = 0; !*n && i < na; i++)
    if (all[i]->deleted * 100 > (uint64_t)all[i]->ref->max_doc * DELETES_PCT_ALLOWED)
      sel[(*n)++] = all[i];
  if (*n) {
    free(all);
    return TERN_OK;
  }
  qsort(all, na, sizeof *all, cmp_live);
  for (size_t i = 0; factor && i < na;) {
    uint64_t sum = live_docs(all[i]);
    size_t j = i + 1;
    for (; j < na && joins_bucket(live_docs(all[j]), sum, j - i); j++)
      sum += live_docs(all[j]);
    if (j - i >= factor) {
      for (size_t k = i; k < j && *n < MERGE_MAX; k++)
        sel[(*n)++] = all[k];
      break;
    }
    i = j;
  }
  free(all);
  return TERN_OK;
}

int tern_merge_once(tern_index *idx, int *merged) {
  *merged = 0;
  tern_state *st;
  TERN_TRY(tern_state_acquire(idx, 0, &st));
  const tern_slot **sel = malloc((st->nslots ? st->nslots : 1) * sizeof *sel);
  size_t n = 0;
  int rc = sel ? pick_merge(st, idx->opts.merge_factor, sel, &n)
               : tern_fail(TERN_ENOMEM, "out of memory");
  uint64_t bad = 0;
  if (rc == TERN_OK && n) rc = merge_slots(idx, st, sel, n, &bad);
  *merged = rc == TERN_OK && n;
  free(sel);
  tern_state_release(idx, st);
  if (bad) tern_health_note(idx, rc, bad);
  return rc;
}

int tern_merge_policy_run(tern_index *idx) {
  int merged = 1;
  for (int round = 0; merged && round < MAX_ROUNDS; round++)
    TERN_TRY(tern_merge_once(idx, &merged));
  return TERN_OK;
}

int tern_merge_verify_all(tern_index *idx) {
  tern_state *st;
  TERN_TRY(tern_state_acquire(idx, 0, &st));
  int rc = TERN_OK;
  const tern_slot **sel = malloc((st->nslots ? st->nslots : 1) * sizeof *sel);
  if (!sel) rc = tern_fail(TERN_ENOMEM, "out of memory");
  for (size_t i = 0; rc == TERN_OK && i < st->nslots; i++)
    sel[i] = &st->slots[i];
  uint64_t bad = 0;
  if (rc == TERN_OK) rc = verify_inputs(sel, st->nslots, &bad);
  free(sel);
  tern_state_release(idx, st);
  return rc;
}

int tern_merge_everything(tern_index *idx) {
  tern_state *st;
  TERN_TRY(tern_state_acquire(idx, 0, &st));
  int rc = TERN_OK;
  int needed = st->nslots > 1 || (st->nslots == 1 && st->slots[0].deleted);
  if (needed) {
    const tern_slot **sel = malloc(st->nslots * sizeof *sel);
    if (!sel) rc = tern_fail(TERN_ENOMEM, "out of memory");
    for (size_t i = 0; rc == TERN_OK && i < st->nslots; i++)
      sel[i] = &st->slots[i];
    uint64_t bad = 0;
    if (rc == TERN_OK) rc = merge_slots(idx, st, sel, st->nslots, &bad);
    free(sel);
    if (bad) tern_health_note(idx, rc, bad);
  }
  tern_state_release(idx, st);
  return rc;
}
