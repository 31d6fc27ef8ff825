/* SPDX-License-Identifier: MIT */
/*
 * memseg_runs.c — the layered buffer view (memseg.h): sorted immutable
 * runs, newest last, shared between the views of successive commits.
 *
 * A commit adds one run of the keys it put into or took out of the buffer
 * on top of the previous view's runs, so opening a snapshot after a commit
 * costs the commit's own keys plus amortized merging, not a copy and sort
 * of the whole buffer.  Point lookups search the runs newest first; the
 * flat rank-ordered array that cursors, the inverted index and flushes
 * need is merged once per view, on first need.
 */
#include "engine/buffer/memseg.h"
#include "engine/util/zalloc.h"

#include "codec/status.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* The run, its array of n docs and room for their bytes in one
 * allocation (a commit makes one run and its merges about one more: two
 * mallocs and two frees fewer each).  Only small bytes: larger ones (a
 * large document, a worker's merge) go to the arena's chunks as before
 * (the largest in huge pages), none wasted in an unused room. */
static tern_mdoc *run_inline_docs(tern_mrun *r) { return (tern_mdoc *)(void *)(r + 1); }
_Static_assert(sizeof(tern_mrun) % _Alignof(tern_mdoc) == 0, "docs after a run stay aligned");
_Static_assert(TERN_MRUN_MERGE_MAX < TERN_MRUN_INDEXED, "no commit indexes the run it merges");
enum { RUN_INLINE_BYTES_MAX = 16 << 10 };

static int run_alloc(size_t n, size_t bytes, tern_mrun **out) {
  *out = NULL; /* defined on failure too */
  if (n > (SIZE_MAX - sizeof(tern_mrun) - RUN_INLINE_BYTES_MAX) / sizeof(tern_mdoc) - 1)
    return tern_fail(TERN_ENOMEM, "buffer view: %zu documents", n);
  if (bytes > RUN_INLINE_BYTES_MAX) bytes = 0;
  size_t docs = (n ? n : 1) * sizeof(tern_mdoc);
  tern_mrun *r = malloc(sizeof *r + docs + bytes);
  if (!r) return tern_fail(TERN_ENOMEM, "buffer view: out of memory");
  memset(r, 0, sizeof *r);
  memset(r->sketch, 0xff, sizeof r->sketch); /* may hold anything */
  r->docs = run_inline_docs(r);
  atomic_init(&r->refs, 1);
  tern_arena_init_buf(&r->arena, (uint8_t *)r->docs + docs, bytes);
  tern_keymap_init(&r->index);
  *out = r;
  return TERN_OK;
}

/* The bytes run r holds (keys and records): an upper bound for a merge's. */
static size_t run_bytes(const tern_mrun *r) { return r->arena.bytes; }

void tern_mrun_put(tern_mrun *r) {
  if (!r || atomic_fetch_sub(&r->refs, 1) != 1) return;
  tern_arena_free(&r->arena);
  tern_keymap_free(&r->index);
  free(r->at_slot);
  tern_filter_free(r->filter);
  if (r->docs != run_inline_docs(r)) free(r->docs); /* a flat memseg's, moved in */
  free(r);
}

/* Appends a copy of d (key and record bytes) to r. */
static int run_push(tern_mrun *r, const tern_mdoc *d) {
  size_t dlen = d->doc ? d->key.aux : 0;
  uint8_t *p = tern_arena_alloc(&r->arena, d->key.len + dlen);
  if (!p) return tern_fail(TERN_ENOMEM, "buffer view: out of memory");
  if (d->doc == d->key.p + d->key.len) { /* record after key (a run's, a put's): one copy */
    memcpy(p, d->key.p, d->key.len + dlen);
  } else {
    memcpy(p, d->key.p, d->key.len);
    if (dlen) memcpy(p + d->key.len, d->doc, dlen);
  }
  r->docs[r->n++] = (tern_mdoc){{p, d->key.len, (uint32_t)dlen}, d->doc ? p + d->key.len : NULL};
  return TERN_OK;
}

int tern_mrun_new(size_t cap, size_t bytes, tern_mrun **out) {
  TERN_TRY(run_alloc(cap, bytes, out));
  memset((*out)->sketch, 0, sizeof (*out)->sketch); /* each push adds its key */
  return TERN_OK;
}

/* Adds the key to sketch (tern_mrun_sketch_may_hold). */
static void sketch_add(uint64_t sketch[4], uint64_t hash) {
  for (int i = 0; i < 3; i++) {
    unsigned bit = tern_mrun_sketch_bit(hash, i);
    sketch[bit >> 6] |= (uint64_t)1 << (bit & 63);
  }
}

int tern_mrun_push(tern_mrun *r, const tern_mdoc *d) {
  sketch_add(r->sketch, tern_filter_hash(d->key.p, d->key.len));
  return run_push(r, d);
}

/* The run's filter (memseg.h), of every key it holds; without memory,
 * none (the index decides alone). */
static void run_filter(tern_mrun *r) {
  size_t len = tern_filter_body_size(r->n, TERN_FILTER_BITS_PER_KEY);
  uint64_t *h = malloc(r->n * sizeof *h);
  uint8_t *body = len ? malloc(len) : NULL;
  int rc = h && body ? TERN_OK : TERN_ENOMEM;
  for (size_t i = 0; rc == TERN_OK && i < r->n; i++)
    h[i] = tern_filter_hash(r->docs[i].key.p, r->docs[i].key.len);
  if (rc == TERN_OK) rc = tern_filter_build(body, len, h, r->n, TERN_FILTER_BITS_PER_KEY);
  if (rc == TERN_OK) rc = tern_filter_load(&r->filter, body, len, "buffer run filter");
  if (rc == TERN_OK) r->fview = tern_filter_view_of(r->filter);
  else tern_clear_error();
  free(h);
  free(body);
}

/* The index's documents by slot (tern_mref); without memory, none (a get
 * then reads docs[]). */
static void run_docs_by_slot(tern_mrun *r) {
  const tern_keymap *ix = &r->index;
  r->at_slot = malloc(ix->cap * sizeof *r->at_slot);
  if (!r->at_slot) return;
  for (size_t at = 0; at < ix->cap; at++) {
    uint32_t op = (uint32_t)ix->slot[at];
    if (!op) continue;
    const tern_mdoc *d = &r->docs[op - 1];
    assert(!d->doc || d->doc == d->key.p + d->key.len); /* run_push: record after key */
    r->at_slot[at] = (tern_mref){d->key.p, d->key.len, d->doc ? d->key.aux : TERN_MREF_LOST};
  }
}

/* Gives a complete run of TERN_MRUN_INDEXED docs or more its hash index
 * (runs are immutable once complete).  Without memory for it the run is
 * binary-searched instead. */
static void run_index(tern_mrun *r) {
  if (r->n < TERN_MRUN_INDEXED || r->index.cap) return;
  if (tern_keymap_build(&r->index, r->docs, r->n) != TERN_OK) tern_keymap_init(&r->index);
  if (r->index.cap) run_docs_by_slot(r);
  run_filter(r);
}

static int doc_cmp(const tern_mdoc *a, const tern_mdoc *b) {
  return tern_key_cmp(a->key.p, a->key.len, b->key.p, b->key.len);
}

/* Merges older run a and newer run b (b wins on equal keys); bottom: the
 * result is the oldest run, so lost keys need no marks. */
static int run_merge(const tern_mrun *a, const tern_mrun *b, int bottom, tern_mrun **out) {
  tern_mrun *r;
  TERN_TRY(run_alloc(a->n + b->n, run_bytes(a) + run_bytes(b), &r));
  size_t i = 0, j = 0;
  int rc = TERN_OK;
  while (rc == TERN_OK && (i < a->n || j < b->n)) {
    const tern_mdoc *d;
    if (j == b->n) {
      d = &a->docs[i++];
    } else if (i == a->n) {
      d = &b->docs[j++];
    } else {
      int c = doc_cmp(&a->docs[i], &b->docs[j]);
      d = c < 0 ? &a->docs[i++] : &b->docs[j++];
      if (c == 0) i++;
    }
    if (d->doc || !bottom) rc = run_push(r, d);
  }
  if (rc != TERN_OK) {
    tern_mrun_put(r);
    return rc;
  }
  for (int w = 0; w < 4; w++) /* the keys of both (shadowed ones too: may hold) */
    r->sketch[w] = a->sketch[w] | b->sketch[w];
  *out = r;
  return TERN_OK;
}

/* Merges the newest runs while one is not more than twice the next newer
 * and the merge holds at most merge_max documents (tern_memseg_layer):
 * larger merges are the background worker's (tern_mruns_merge), so that
 * no commit pays O(n).  runs[0, *carried) are the previous view's, not
 * referenced here (not put when merged); *carried shrinks to those left. */
static int runs_balance(tern_mrun **runs, size_t *nruns, size_t *carried, size_t merge_max) {
  while (*nruns >= 2 && runs[*nruns - 2]->n <= 2 * runs[*nruns - 1]->n &&
         runs[*nruns - 2]->n + runs[*nruns - 1]->n <= merge_max) {
    size_t a = *nruns - 2, b = *nruns - 1;
    tern_mrun *m = NULL;
    TERN_TRY(run_merge(runs[a], runs[b], *nruns == 2, &m));
    if (a >= *carried) tern_mrun_put(runs[a]);
    if (b >= *carried) tern_mrun_put(runs[b]);
    if (a < *carried) *carried = a;
    runs[a] = m;
    (*nruns)--;
  }
  return TERN_OK;
}

/* m, a new layered memseg, as the view over its nruns runs (references
 * owned); one run is its own flat array. */
static void view_of(tern_memseg *m, size_t nruns, size_t n, uint64_t stored) {
  tern_mrun **runs = m->runs;
  m->nruns = nruns;
  m->n = n;
  m->stored_bytes = stored;
  if (nruns == 1) {
    m->docs = runs[0]->docs;
    m->docs_alias = 1;
  }
  atomic_store(&m->flat, nruns <= 1);
}

/* Runs a view may hold one by one past its base before the next commit
 * makes a new base of them. */
enum { BASE_SLACK = 4 };

/* How many of runs[0, carried) no commit merges while the view lasts:
 * those below a run that, with every run above it, holds more than
 * merge_max documents (runs_balance merges only the newest runs, into at
 * most merge_max).  A hint: a merge that drops shadowed keys may shrink
 * the runs above, and the base then covers fewer of a later view's. */
static size_t runs_fixed(tern_mrun *const *runs, size_t carried, size_t merge_max) {
  size_t docs = 0;
  for (size_t i = carried; i-- > 0;) {
    docs += runs[i]->n;
    if (docs > merge_max) return i + 1;
  }
  return 0;
}

/* How view m holds runs[0, carried), those of the view prev it was layered
 * on: through prev's base as far as it covers them, the rest one by one;
 * or, once more than BASE_SLACK runs no commit merges lie past that base,
 * through a new base of those. */
static void hold_carried(tern_memseg *m, const tern_memseg *prev, size_t carried,
                         size_t merge_max) {
  size_t nb = prev && prev->base ? (prev->nbase < carried ? prev->nbase : carried) : 0;
  tern_runbase *b = nb ? prev->base : NULL;
  size_t fixed = runs_fixed(m->runs, carried, merge_max);
  tern_runbase *nbase =
      fixed > nb + BASE_SLACK ? tern_runbase_new(m->runs, fixed, b, nb) : NULL;
  if (nbase) {
    b = nbase;
    nb = fixed;
  } else if (b) {
    atomic_fetch_add(&b->refs, 1);
  }
  m->base = b;
  m->nbase = nb;
  for (size_t i = nb; i < carried; i++)
    atomic_fetch_add(&m->runs[i]->refs, 1);
}

int tern_memseg_layer(const tern_memseg *prev, tern_mrun *run, size_t n, uint64_t stored_bytes,
                      size_t merge_max, tern_memseg **out) {
  size_t np = prev ? prev->nruns : 0;
  tern_memseg *m;
  int rc = tern_memseg_new_layered(np + 1, &m);
  if (rc != TERN_OK) {
    tern_mrun_put(run);
    return rc;
  }
  tern_mrun **runs = m->runs;
  if (np) memcpy(runs, prev->runs, np * sizeof *runs);
  size_t nruns = np, carried = np;
  if (run) runs[nruns++] = run;
  rc = runs_balance(runs, &nruns, &carried, merge_max);
  /* The one run not shared with prev's view yet: the new run, or what
   * balancing merged it into. */
  if (rc == TERN_OK && run) run_index(runs[nruns - 1]);
  if (rc == TERN_OK && nruns == 1 && runs[0]->n != n)
    rc = tern_fail(TERN_ECORRUPT, "buffer view: %zu documents, %zu expected", runs[0]->n, n);
  if (rc != TERN_OK) {
    for (size_t i = carried; i < nruns; i++)
      tern_mrun_put(runs[i]);
    tern_memseg_free(m); /* nruns 0: puts nothing more */
    return rc;
  }
  hold_carried(m, prev, carried, merge_max);
  view_of(m, nruns, n, stored_bytes);
  *out = m;
  return TERN_OK;
}

int tern_memseg_layered(tern_memseg *flat, tern_memseg **out) {
  tern_mrun *r = tern_zalloc(sizeof *r);
  if (!r) return tern_fail(TERN_ENOMEM, "buffer view: out of memory");
  atomic_init(&r->refs, 1);
  memset(r->sketch, 0xff, sizeof r->sketch); /* may hold anything: its filter decides, if any */
  r->n = flat->n;
  r->docs = flat->docs;
  r->arena = flat->arena; /* moved: flat keeps nothing */
  tern_arena_init(&flat->arena);
  flat->docs = NULL;
  flat->n = 0;
  uint64_t stored = flat->stored_bytes;
  tern_memseg_free(flat);
  return tern_memseg_layer(NULL, r, r->n, stored, TERN_MRUN_MERGE_MAX, out);
}

static ptrdiff_t run_find(const tern_mrun *r, const void *key, size_t klen, uint64_t hash) {
  if (r->index.cap) return (ptrdiff_t)tern_keymap_find(&r->index, r->docs, key, klen, hash);
  return tern_mdocs_find(r->docs, r->n, key, klen);
}

/* Whether run r may hold the key: its filter's answer, or without one
 * its sketch's. */
static inline int run_may_hold(const tern_mrun *r, const tern_filter_key *fk) {
  if (r->fview.blocks) return tern_filter_view_may_contain(r->fview, fk);
  return tern_mrun_sketch_may_hold(r->sketch, fk->hash);
}

/* Starts fetching what a find of the key reads first in each run tested
 * one by one, [lo, nruns): its filter's line (small, cached: a key the
 * run lacks ends there), else its index's slot (a cache miss: fetched
 * together); and, below lo, the key's slices and the lines of the base's
 * filters. */
static void runs_prefetch(const tern_memseg *m, size_t lo, uint64_t hash,
                          const tern_filter_key *fk, const tern_base_cands *c) {
  for (size_t r = m->nruns; r-- > lo;) {
    const tern_mrun *run = m->runs[r];
    if (fk && run->fview.blocks)
      tern_filter_view_prefetch(run->fview, hash);
    else
      tern_keymap_prefetch(&run->index, hash);
  }
  if (!lo) return;
  tern_base_cands_prefetch(c);
  for (size_t i = 0; i < TERN_RUNBASE_FILTERED && m->base->filtered[i] < lo; i++)
    tern_filter_view_prefetch(m->runs[m->base->filtered[i]]->fview, hash);
}

/* Where a find of the key starts: the runs [lo, nruns) it tests one by
 * one (returned), those below through the base's slices (c), and their
 * first lines fetched.  fk NULL: every run, none ruled out. */
static size_t runs_start(const tern_memseg *m, uint64_t hash, const tern_filter_key *fk,
                         tern_base_cands *c) {
  size_t lo = fk && m->base && m->base->words ? m->nbase : 0;
  if (lo) tern_base_cands_init(c, m->base, lo, fk->hash);
  runs_prefetch(m, lo, hash, fk, c);
  return lo;
}

/* The next run of view m, newest first, that may hold the key, or -1:
 * runs [lo, *r) one by one, then those the base's slices name (lo > 0). */
static ptrdiff_t runs_next(const tern_memseg *m, size_t lo, size_t *r, tern_base_cands *c,
                           const tern_filter_key *fk) {
  while (*r > lo) {
    size_t i = --*r;
    if (!fk || run_may_hold(m->runs[i], fk)) return (ptrdiff_t)i;
  }
  for (ptrdiff_t i; lo && (i = tern_base_cands_next(c)) >= 0;)
    if (run_may_hold(m->runs[i], fk)) return i; /* a filter of an indexed run says more */
  return -1;
}

ptrdiff_t tern_memseg_runs_find(const tern_memseg *m, const void *key, size_t klen, uint64_t hash,
                                const tern_filter_key *fk) {
  tern_base_cands c;
  size_t lo = runs_start(m, hash, fk, &c), r = m->nruns;
  for (ptrdiff_t at; (at = runs_next(m, lo, &r, &c, fk)) >= 0;) {
    const tern_mrun *run = m->runs[at];
    ptrdiff_t i = run_find(run, key, klen, hash);
    if (i < 0) continue;
    if (!run->docs[i].doc) return -1;
    return (ptrdiff_t)(TERN_MEMSEG_HANDLE | ((size_t)at << 32) | (size_t)i);
  }
  return -1;
}

/* The key's tern_mref in an indexed run with refs, or NULL: the slots
 * probed as tern_keymap_find probes them, the key compared from the ref. */
static const tern_mref *run_find_ref(const tern_mrun *r, const void *key, size_t klen,
                                     uint32_t h) {
  const tern_keymap *ix = &r->index;
  size_t at = tern_keymap_home(h, ix->cap);
  for (; tern_keymap_match(ix, h, &at); at = tern_keymap_next(at, ix->cap)) {
    const tern_mref *f = &r->at_slot[at];
    if (f->klen == klen && !memcmp(f->key, key, klen)) return f;
  }
  return NULL;
}

/* The key in run r: 1 with its record, -1 lost here, 0 not in r. */
static int run_get_record(const tern_mrun *r, const void *key, size_t klen, uint64_t hash,
                          const uint8_t **rec, size_t *rlen) {
  if (r->at_slot) {
    /* the home slot's ref fetched while the slot itself is read: one round */
    __builtin_prefetch(&r->at_slot[tern_keymap_home((uint32_t)hash, r->index.cap)]);
    const tern_mref *f = run_find_ref(r, key, klen, (uint32_t)hash);
    if (!f) return 0;
    if (f->dlen == TERN_MREF_LOST) return -1;
    *rec = f->key + f->klen;
    *rlen = f->dlen;
    return 1;
  }
  ptrdiff_t i = run_find(r, key, klen, hash);
  if (i < 0) return 0;
  const tern_mdoc *d = &r->docs[i];
  if (!d->doc) return -1;
  *rec = d->doc;
  *rlen = d->key.aux;
  return 1;
}

int tern_memseg_get_record(const tern_memseg *m, const void *key, size_t klen,
                           const tern_filter_key *fk, const uint8_t **rec, size_t *rlen) {
  if (!m->n) return 0;
  if (!m->nruns) {
    ptrdiff_t i = tern_mdocs_find(m->docs, m->n, key, klen);
    if (i < 0) return 0;
    *rec = m->docs[i].doc;
    *rlen = m->docs[i].key.aux;
    return 1;
  }
  tern_base_cands c;
  size_t lo = runs_start(m, fk->hash, fk, &c), r = m->nruns;
  for (ptrdiff_t at; (at = runs_next(m, lo, &r, &c, fk)) >= 0;) {
    int got = run_get_record(m->runs[at], key, klen, fk->hash, rec, rlen);
    if (got) return got > 0;
  }
  return 0;
}

/* ------------------------------------------------------------ k-way merge */

/* Runs [from, to) of a view merged in key order, each key once, from the
 * newest run holding it (a deletion mark included): a binary heap of the
 * runs' next documents, ordered by key and then newest run first.  A
 * document costs O(log k) compares where a scan of every run's next one
 * cost 2k: the worker merges groups of a dozen runs and more. */
typedef struct runs_merge {
  tern_mrun *const *runs;
  size_t *pos;    /* by run number: its next document */
  uint32_t *heap; /* run numbers; heap[0] holds the next key */
  size_t n;
} runs_merge;

static const tern_mdoc *merge_head(const runs_merge *h, uint32_t r) {
  return &h->runs[r]->docs[h->pos[r]];
}

/* Whether run a's next document comes before run b's. */
static int merge_before(const runs_merge *h, uint32_t a, uint32_t b) {
  int c = doc_cmp(merge_head(h, a), merge_head(h, b));
  return c < 0 || (c == 0 && a > b); /* newer runs are later in the view */
}

static void merge_sift_down(runs_merge *h, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, best = i;
    if (l < h->n && merge_before(h, h->heap[l], h->heap[best])) best = l;
    if (l + 1 < h->n && merge_before(h, h->heap[l + 1], h->heap[best])) best = l + 1;
    if (best == i) return;
    uint32_t t = h->heap[i];
    h->heap[i] = h->heap[best];
    h->heap[best] = t;
    i = best;
  }
}

static int runs_merge_init(runs_merge *h, tern_mrun *const *runs, size_t from, size_t to) {
  assert(from <= to && to <= UINT32_MAX);
  h->runs = runs;
  h->n = 0;
  h->pos = calloc(to ? to : 1, sizeof *h->pos);
  h->heap = malloc((to - from ? to - from : 1) * sizeof *h->heap);
  if (!h->pos || !h->heap) {
    free(h->pos);
    free(h->heap);
    return tern_fail(TERN_ENOMEM, "buffer view: out of memory");
  }
  for (size_t r = from; r < to; r++)
    if (runs[r]->n) h->heap[h->n++] = (uint32_t)r;
  for (size_t i = h->n / 2; i-- > 0;)
    merge_sift_down(h, i);
  return TERN_OK;
}

static void runs_merge_free(runs_merge *h) {
  free(h->pos);
  free(h->heap);
}

/* Moves the heap's top run past its next document. */
static void merge_advance(runs_merge *h) {
  uint32_t r = h->heap[0];
  if (++h->pos[r] == h->runs[r]->n) h->heap[0] = h->heap[--h->n];
  if (h->n) merge_sift_down(h, 0);
}

/* The next key's newest document, or NULL after the last; older runs'
 * documents of the same key are passed over. */
static const tern_mdoc *runs_merge_next(runs_merge *h) {
  if (!h->n) return NULL;
  const tern_mdoc *best = merge_head(h, h->heap[0]);
  merge_advance(h);
  while (h->n && doc_cmp(merge_head(h, h->heap[0]), best) == 0)
    merge_advance(h);
  return best;
}

/* The live docs of all runs in key order (newest wins). */
static int flatten(tern_memseg *m) {
  runs_merge h;
  TERN_TRY(runs_merge_init(&h, m->runs, 0, m->nruns));
  tern_mdoc *out = malloc((m->n ? m->n : 1) * sizeof *out);
  int rc = out ? TERN_OK : tern_fail(TERN_ENOMEM, "buffer view: out of memory");
  size_t k = 0;
  for (const tern_mdoc *d; rc == TERN_OK && (d = runs_merge_next(&h));) {
    if (!d->doc) continue;
    if (k == m->n) rc = tern_fail(TERN_ECORRUPT, "buffer view: more than %zu documents", m->n);
    else out[k++] = *d;
  }
  if (rc == TERN_OK && k != m->n)
    rc = tern_fail(TERN_ECORRUPT, "buffer view: %zu documents, %zu expected", k, m->n);
  runs_merge_free(&h);
  if (rc != TERN_OK) {
    free(out);
    return rc;
  }
  m->docs = out;
  return TERN_OK;
}

int tern_memseg_flat(const tern_memseg *cm) {
  tern_memseg *m = (tern_memseg *)cm; /* the flat array is a cache of the runs */
  if (atomic_load_explicit(&m->flat, memory_order_acquire)) return TERN_OK;
  pthread_mutex_lock(&m->mu);
  int rc = atomic_load_explicit(&m->flat, memory_order_relaxed) ? TERN_OK : flatten(m);
  if (rc == TERN_OK) atomic_store_explicit(&m->flat, 1, memory_order_release);
  pthread_mutex_unlock(&m->mu);
  return rc;
}

int tern_mruns_merge(const tern_memseg *m, size_t from, size_t to, tern_mrun **out) {
  assert(from < to && to <= m->nruns);
  *out = NULL;
  size_t total = 0, bytes = 0;
  for (size_t r = from; r < to; r++) {
    total += m->runs[r]->n;
    bytes += run_bytes(m->runs[r]);
  }
  tern_mrun *run = NULL;
  runs_merge h;
  TERN_TRY(runs_merge_init(&h, m->runs, from, to));
  int rc = run_alloc(total, bytes, &run);
  int bottom = from == 0; /* lost keys need a mark only while older runs may hold them */
  for (const tern_mdoc *d; rc == TERN_OK && (d = runs_merge_next(&h));)
    if (d->doc || !bottom) rc = run_push(run, d);
  runs_merge_free(&h);
  if (rc != TERN_OK) {
    tern_mrun_put(run);
    return rc;
  }
  run_index(run); /* a large merged run is found by its hash index too */
  *out = run;
  return TERN_OK;
}

int tern_memseg_remerged(const tern_memseg *m, size_t from, size_t to, tern_mrun *merged,
                         tern_memseg **out) {
  assert(from < to && to <= m->nruns);
  size_t n = m->nruns - (to - from) + 1;
  tern_memseg *v;
  int rc = tern_memseg_new_layered(n, &v);
  if (rc != TERN_OK) {
    tern_mrun_put(merged);
    return rc;
  }
  tern_mrun **runs = v->runs;
  size_t k = 0;
  for (size_t i = 0; i < m->nruns; i++) {
    if (i >= from && i < to) {
      if (i == from) runs[k++] = merged;
      continue;
    }
    runs[k++] = m->runs[i];
    atomic_fetch_add(&m->runs[i]->refs, 1);
  }
  assert(k == n);
  view_of(v, n, m->n, m->stored_bytes);
  *out = v;
  return TERN_OK;
}

size_t tern_memseg_merge_window(const tern_memseg *m, size_t merge_max, size_t *from) {
  size_t to = m->nruns >= 2 ? m->nruns - 2 : 0;
  while (to > 2 && m->runs[to - 1]->n <= merge_max / 2)
    to--;
  if (to < 2) return 0;
  size_t f = to - 2, sum = m->runs[f]->n + m->runs[f + 1]->n;
  while (f > 0 && m->runs[f - 1]->n <= 2 * sum)
    sum += m->runs[--f]->n;
  *from = f;
  return to;
}
