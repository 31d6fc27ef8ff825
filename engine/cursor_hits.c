/*
 * cursor_hits.c — a postings iterator's documents in key byte order
 * (tern_postings_each_by_key).
 *
 * Doc ids ascend source by source, and within a source doc order is key
 * order (segments number their keys' docs by rank, the buffer view too).
 * So the hits are drained once, split by source, and each source's keys
 * are resolved walking its primary-key field forward — the next hit a few
 * entries ahead is reached by stepping through them, a farther one by one
 * seek — and the sources are merged by key, a linear min over the few of
 * them.
 */
#include "engine/index.h"

#include "codec/segment_scan.h"
#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

/* A seek skips from the entry's restart decoding only the characters that
 * survive (tern_tb_iter_seek); stepping decodes every entry whole, so it
 * wins only for hits at most this many entries ahead. */
#define STEP_MAX 1u

/* Hits whose entries are prefetched ahead of the one resolved. */
#define PREFETCH_AHEAD 2u

typedef struct hit_walk {
  const tern_slot *slot; /* NULL: the buffer */
  const uint64_t *docs;  /* of this source, ascending */
  size_t n, pos;
  tern_seg_cursor *sc;
  tern_term_entry e;
  int positioned;
  uint32_t at; /* doc of the cursor's entry */
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
  if (w->positioned && d > w->at && d - w->at <= STEP_MAX) {
    while (w->at < d) {
      TERN_TRY(tern_seg_next_term(seg, w->sc, &w->e));
      w->at++;
    }
    w->key = (tern_slice){w->e.term, w->e.len};
    return want ? tern_seg_value(seg, &w->e, w->sc, val) : TERN_OK;
  }
  TERN_TRY(tern_seg_doc(seg, d, w->sc, &w->key, want ? val : NULL));
  w->positioned = 1; /* tern_seg_doc leaves the cursor on d's entry */
  w->at = d;
  /* The next hit's entry is a few hundred bytes on: a miss to memory
   * (half of a hit's time) unless asked for now. */
  for (size_t k = w->pos + 1; k < w->n && k <= w->pos + PREFETCH_AHEAD; k++)
    tern_seg_prefetch_doc(seg, w->sc, (uint32_t)w->docs[k]);
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

static int merge_walks(const tern_snapshot *snap, hit_walk *w, size_t nw, int want,
                       tern_doc_fn fn, void *payload) {
  tern_slice *vals = calloc(nw ? nw : 1, sizeof *vals);
  if (!vals) return tern_fail(TERN_ENOMEM, "hits: out of memory");
  int rc = TERN_OK;
  for (size_t i = 0; rc == TERN_OK && i < nw; i++)
    rc = walk_resolve(&w[i], snap, want, &vals[i]);
  while (rc == TERN_OK) {
    size_t best = nw;
    for (size_t i = 0; i < nw; i++)
      if (w[i].pos < w[i].n &&
          (best == nw || tern_key_cmp(w[i].key.data, w[i].key.len, w[best].key.data,
                                      w[best].key.len) < 0))
        best = i;
    if (best == nw) break;
    rc = fn(payload, w[best].key, vals[best]);
    if (rc == TERN_OK && ++w[best].pos < w[best].n) rc = walk_resolve(&w[best], snap, want, &vals[best]);
  }
  free(vals);
  return rc;
}

int tern_postings_each_by_key(tern_postings *p, int want_values, tern_doc_fn fn, void *payload) {
  if (!p || !fn) return tern_fail(TERN_EINVAL, "tern_postings_each_by_key: bad arguments");
  const tern_snapshot *snap = tern_postings_snapshot(p);
  uint64_t *docs = NULL;
  size_t n = 0;
  TERN_TRY(drain(p, &docs, &n));
  hit_walk *w = calloc(snap->st->nslots + 1, sizeof *w);
  size_t nw = 0;
  int rc = w ? walks_open(snap, docs, n, w, &nw) : tern_fail(TERN_ENOMEM, "hits: out of memory");
  if (rc == TERN_OK) rc = merge_walks(snap, w, nw, want_values, fn, payload);
  if (w) walks_close(w, nw);
  free(w);
  free(docs);
  return rc;
}
