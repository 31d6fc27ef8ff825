/* SPDX-License-Identifier: MIT */
/*
 * cursor_hits.c — a postings iterator's documents in key byte order
 * (tern_postings_each_by_key).
 *
 * Doc ids ascend source by source, and within a source doc order is key
 * order (segments number their keys' docs by rank, the buffer view too).
 * So the hits are drained once, split by source, and each source's keys
 * are resolved walking its primary-key field forward (tern_seg_doc: a hit
 * in the cursor's block needs no index or header, one in its restart run
 * is reached from the previous hit) — and the sources are merged by key,
 * a linear min over the few of them.
 */
#include "engine/util/errwrap.h"
#include "engine/state/index.h"

#include "codec/segment_scan.h"
#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

/* Hits whose entries are prefetched ahead of the one resolved. */
#define PREFETCH_AHEAD 2u

typedef struct hit_walk {
  const tern_slot *slot; /* NULL: the buffer */
  const uint64_t *docs;  /* of this source, ascending */
  size_t n, pos;
  tern_seg_cursor *sc;
  size_t fetched; /* hits before it asked for (prefetched) already */
  tern_slice key;
} hit_walk;

static int drain(tern_postings *p, uint64_t **out, size_t *n) {
  size_t cap = 1024, k = 0;
  uint64_t *d = malloc(cap * sizeof *d), doc;
  if (!d) return tern_fail(TERN_ENOMEM, "hits: out of memory");
  int rc;
  while ((rc = tern_postings_next(p, &doc)) == TERN_OK && doc != TERN_NO_MORE_DOCS) {
    if (k == cap) {
      uint64_t *g = realloc(d, 2 * cap * sizeof *g);
      if (!g) {
        rc = tern_fail(TERN_ENOMEM, "hits: out of memory");
        break;
      }
      d = g;
      cap *= 2;
    }
    d[k++] = doc;
  }
  if (rc != TERN_OK) {
    free(d);
    return rc;
  }
  *out = d;
  *n = k;
  return TERN_OK;
}

/* The key of the walker's current hit, and its value when asked. */
static int walk_resolve(hit_walk *w, const tern_snapshot *snap, int want, tern_slice *val) {
  uint32_t d = (uint32_t)w->docs[w->pos];
  *val = (tern_slice){NULL, 0};
  if (!w->slot) {
    const tern_mdoc *m = &snap->buf->docs[d];
    w->key = (tern_slice){m->key.p, m->key.len};
    return want ? tern_memseg_value(snap->buf, d, val) : TERN_OK;
  }
  const tern_seg *seg = w->slot->ref->seg;
  /* Even the very next entry: tern_seg_doc reaches it from the cursor's
   * entry with nothing to walk, where a step would decode a batch of
   * terms ahead (tern_seg_next_term) that the next hit drops. */
  TERN_TRY(tern_seg_doc(seg, d, w->sc, &w->key, want ? val : NULL));
  /* The next hit's entry is a few hundred bytes on: a miss to memory
   * (half of a hit's time) unless asked for now.  Each hit is asked for
   * once: those up to PREFETCH_AHEAD on that an earlier hit did not ask
   * for (usually just the last; one in the next block is asked for when
   * the cursor has reached it). */
  size_t k = w->fetched > w->pos + 1 ? w->fetched : w->pos + 1;
  for (; k < w->n && k <= w->pos + PREFETCH_AHEAD; k++)
    if (!tern_seg_prefetch_doc(seg, w->sc, (uint32_t)w->docs[k])) break;
  w->fetched = k;
  return TERN_OK;
}

static int walks_open(const tern_snapshot *snap, const uint64_t *docs, size_t n, hit_walk *w,
                      size_t *nw) {
  size_t k = 0;
  for (size_t i = 0; i < n;) {
    uint32_t ord = (uint32_t)(docs[i] >> 32);
    size_t j = i;
    while (j < n && (uint32_t)(docs[j] >> 32) == ord)
      j++;
    hit_walk *h = &w[k++];
    memset(h, 0, sizeof *h);
    h->slot = ord < snap->st->nslots ? &snap->st->slots[ord] : NULL;
    h->docs = docs + i;
    h->n = j - i;
    if (h->slot) {
      h->sc = malloc(sizeof *h->sc);
      if (!h->sc) {
        *nw = k - 1;
        return tern_fail(TERN_ENOMEM, "hits: out of memory");
      }
      tern_seg_cursor_init(h->sc);
    }
    i = j;
  }
  *nw = k;
  return TERN_OK;
}

static void walks_close(hit_walk *w, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (w[i].sc) {
      tern_seg_cursor_release(w[i].sc);
      free(w[i].sc);
    }
}

/* The walk of one iterator's hits, kept in it between calls so that a walk
 * a callback stopped resumes where it stopped. */
struct tern_by_key {
  uint64_t *docs;
  size_t n;
  hit_walk *w;
  size_t nw;
  tern_slice *vals; /* of each walker's current hit */
  int heads_want;   /* want_values the walkers' current hits were resolved with; -1: not */
};

void tern_by_key_free(struct tern_by_key *b) {
  if (!b) return;
  if (b->w) walks_close(b->w, b->nw);
  free(b->w);
  free(b->vals);
  free(b->docs);
  free(b);
}

/* Drains p and splits its hits by source, once. */
static int by_key_start(tern_postings *p, const tern_snapshot *snap, struct tern_by_key **out) {
  struct tern_by_key *b = calloc(1, sizeof *b);
  if (!b) return tern_fail(TERN_ENOMEM, "hits: out of memory");
  b->heads_want = -1;
  int rc = drain(p, &b->docs, &b->n);
  if (rc == TERN_OK) {
    b->w = calloc(snap->st->nslots + 1, sizeof *b->w);
    b->vals = calloc(snap->st->nslots + 1, sizeof *b->vals);
    rc = b->w && b->vals ? walks_open(snap, b->docs, b->n, b->w, &b->nw)
                         : tern_fail(TERN_ENOMEM, "hits: out of memory");
  }
  if (rc != TERN_OK) {
    tern_by_key_free(b);
    return rc;
  }
  *out = b;
  return TERN_OK;
}

static int merge_walks(struct tern_by_key *b, const tern_snapshot *snap, int want,
                       tern_doc_fn fn, void *payload) {
  hit_walk *w = b->w;
  size_t nw = b->nw;
  if (b->heads_want != want) {
    for (size_t i = 0; i < nw; i++)
      if (w[i].pos < w[i].n) TERN_TRY(walk_resolve(&w[i], snap, want, &b->vals[i]));
    b->heads_want = want;
  }
  for (;;) {
    size_t best = nw;
    for (size_t i = 0; i < nw; i++)
      if (w[i].pos < w[i].n &&
          (best == nw || tern_key_cmp(w[i].key.data, w[i].key.len, w[best].key.data,
                                      w[best].key.len) < 0))
        best = i;
    if (best == nw) return TERN_OK;
    int cb = fn(payload, w[best].key, b->vals[best]);
    if (++w[best].pos < w[best].n) {
      int rc = walk_resolve(&w[best], snap, want, &b->vals[best]);
      if (rc != TERN_OK) {
        b->heads_want = -1; /* resolved again by the next call */
        return rc;
      }
    }
    if (cb != 0) return tern_fail_stopped(cb);
  }
}

int tern_postings_each_by_key(tern_postings *p, int want_values, tern_doc_fn fn, void *payload) {
  tern_clear_error();
  if (!p || !fn) return tern_fail(TERN_EINVAL, "tern_postings_each_by_key: bad arguments");
  const tern_snapshot *snap = tern_postings_snapshot(p);
  struct tern_by_key **b = tern_postings_by_key(p);
  if (!*b) TERN_TRY(by_key_start(p, snap, b));
  return merge_walks(*b, snap, want_values != 0, fn, payload);
}
