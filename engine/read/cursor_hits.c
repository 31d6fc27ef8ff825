/* SPDX-License-Identifier: MIT */
/*
 * cursor_hits.c — a postings iterator's documents in key byte order
 * (tern_postings_each_by_key).
 *
 * Doc ids ascend source by source, and within a source doc order is key
 * order (segments number their keys' docs by rank, the buffer view too).
 * So the hits are drained once, split by source (a decoded postings block
 * at a time: tern_postings_drain), and each segment's keys are resolved
 * walking its primary-key field forward, a terms block's hits at a time
 * (tern_seg_hits_fill: the entries between walked by their lengths, only
 * the characters that survive into a hit's key decoded, its value taken
 * only when asked for) — and the sources are merged by key, a linear min
 * over the few of them; one source is handed out batch by batch.
 */
#include "engine/util/errwrap.h"
#include "engine/state/index.h"

#include "codec/segment_hits.h"
#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

typedef struct hit_walk {
  const tern_slot *slot; /* NULL: the buffer */
  const uint32_t *docs;  /* of this source, ascending */
  size_t n, pos;         /* pos: the docs resolved (segment) or handed out (buffer) */
  tern_seg_cursor *sc;   /* segment: the walk's block */
  tern_seg_hits *hits;   /* segment: the keys of the batch held */
  uint32_t at;           /* segment: the batch's next hit to hand out */
  tern_slice key;        /* the current hit's, when the walk has one */
} hit_walk;

/* Whether w has a hit left (its key in w->key), a batch resolved when the
 * last is handed out: 1, 0 when done, <0 error. */
static int walk_head(hit_walk *w, const tern_snapshot *snap) {
  if (!w->slot) {
    if (w->pos == w->n) return 0;
    const tern_mdoc *m = &snap->buf->docs[w->docs[w->pos]];
    w->key = (tern_slice){m->key.p, m->key.len};
    return 1;
  }
  if (w->at == w->hits->n) {
    if (w->pos == w->n) return 0;
    size_t done;
    w->at = 0;
    TERN_TRY(tern_seg_hits_fill(w->slot->ref->seg, w->sc, w->hits, w->docs + w->pos,
                                w->n - w->pos, &done));
    w->pos += done;
  }
  w->key = tern_seg_hits_key(w->hits, w->at);
  return 1;
}

/* The current hit's value. */
static int walk_value(hit_walk *w, const tern_snapshot *snap, tern_slice *val) {
  if (!w->slot) return tern_memseg_value(snap->buf, w->docs[w->pos], val);
  return tern_seg_hits_value(w->slot->ref->seg, w->sc, w->hits, w->at, val);
}

static inline void walk_step(hit_walk *w) {
  if (w->slot)
    w->at++;
  else
    w->pos++;
}

static int walks_open(const tern_snapshot *snap, const uint32_t *docs, const tern_hit_run *runs,
                      size_t nruns, hit_walk *w, size_t *nw) {
  *nw = 0;
  for (size_t i = 0; i < nruns; i++) {
    hit_walk *h = &w[i];
    memset(h, 0, sizeof *h);
    h->slot = runs[i].ord < snap->st->nslots ? &snap->st->slots[runs[i].ord] : NULL;
    h->docs = docs + runs[i].start;
    h->n = runs[i].n;
    *nw = i + 1;
    if (h->slot) {
      h->sc = malloc(sizeof *h->sc);
      h->hits = malloc(sizeof *h->hits);
      if (!h->sc || !h->hits) return tern_fail(TERN_ENOMEM, "hits: out of memory");
      tern_seg_cursor_init(h->sc);
      tern_seg_hits_init(h->hits);
    }
  }
  return TERN_OK;
}

static void walks_close(hit_walk *w, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (w[i].sc) tern_seg_cursor_release(w[i].sc);
    free(w[i].sc);
    free(w[i].hits);
  }
}

/* The walk of one iterator's hits, kept in it between calls so that a walk
 * a callback stopped resumes where it stopped. */
struct tern_by_key {
  uint32_t *docs;
  size_t n;
  tern_hit_run *runs;
  hit_walk *w;
  size_t nw;
};

void tern_by_key_free(struct tern_by_key *b) {
  if (!b) return;
  if (b->w) walks_close(b->w, b->nw);
  free(b->w);
  free(b->runs);
  free(b->docs);
  free(b);
}

/* Drains p and splits its hits by source, once. */
static int by_key_start(tern_postings *p, const tern_snapshot *snap, struct tern_by_key **out) {
  struct tern_by_key *b = calloc(1, sizeof *b);
  if (!b) return tern_fail(TERN_ENOMEM, "hits: out of memory");
  size_t nruns = 0;
  int rc = tern_postings_drain(p, &b->docs, &b->n, &b->runs, &nruns);
  if (rc == TERN_OK) {
    b->w = calloc(nruns + 1, sizeof *b->w);
    rc = b->w ? walks_open(snap, b->docs, b->runs, nruns, b->w, &b->nw)
              : tern_fail(TERN_ENOMEM, "hits: out of memory");
  }
  if (rc != TERN_OK) {
    tern_by_key_free(b);
    return rc;
  }
  *out = b;
  return TERN_OK;
}

/* One source: its batches handed out as they are, no key compared. */
static int walk_alone(hit_walk *w, const tern_snapshot *snap, int want, tern_doc_fn fn,
                      void *payload) {
  int rc;
  while ((rc = walk_head(w, snap)) == 1) {
    if (!w->slot || want) { /* a hit at a time: its value to take */
      tern_slice val = {NULL, 0};
      if (want) TERN_TRY(walk_value(w, snap, &val));
      int cb = fn(payload, w->key, val);
      walk_step(w);
      if (cb != 0) return tern_fail_stopped(cb);
      continue;
    }
    /* Keys only: the batch's hits in a loop of their own. */
    const tern_seg_hits *h = w->hits;
    for (uint32_t j = w->at, n = h->n; j < n; j++) {
      int cb = fn(payload, tern_seg_hits_key(h, j), (tern_slice){NULL, 0});
      if (cb != 0) {
        w->at = j + 1;
        return tern_fail_stopped(cb);
      }
    }
    w->at = h->n;
  }
  return rc;
}

static int merge_walks(struct tern_by_key *b, const tern_snapshot *snap, int want,
                       tern_doc_fn fn, void *payload) {
  hit_walk *w = b->w;
  size_t nw = b->nw;
  if (nw == 1) return walk_alone(w, snap, want, fn, payload);
  uint8_t live[64], *more = nw <= sizeof live ? live : malloc(nw);
  if (!more) return tern_fail(TERN_ENOMEM, "hits: out of memory");
  int rc = TERN_OK;
  for (size_t i = 0; i < nw && rc >= 0; i++)
    rc = walk_head(&w[i], snap);
  for (size_t i = 0; i < nw && rc >= 0; i++)
    more[i] = w[i].slot ? w[i].at < w[i].hits->n : w[i].pos < w[i].n;
  while (rc >= 0) {
    size_t best = nw;
    for (size_t i = 0; i < nw; i++)
      if (more[i] && (best == nw || tern_key_cmp(w[i].key.data, w[i].key.len, w[best].key.data,
                                                 w[best].key.len) < 0))
        best = i;
    if (best == nw) {
      rc = TERN_OK;
      break;
    }
    tern_slice val = {NULL, 0};
    if (want && (rc = walk_value(&w[best], snap, &val)) != TERN_OK) break;
    int cb = fn(payload, w[best].key, val);
    walk_step(&w[best]);
    rc = walk_head(&w[best], snap);
    if (rc >= 0) more[best] = (uint8_t)rc;
    if (rc >= 0 && cb != 0) rc = tern_fail_stopped(cb);
  }
  if (more != live) free(more);
  return rc;
}

int tern_postings_each_by_key(tern_postings *p, int want_values, tern_doc_fn fn, void *payload) {
  tern_clear_error();
  if (!p || !fn) return tern_fail(TERN_EINVAL, "tern_postings_each_by_key: bad arguments");
  const tern_snapshot *snap = tern_postings_snapshot(p);
  struct tern_by_key **b = tern_postings_by_key(p);
  if (!*b) TERN_TRY(by_key_start(p, snap, b));
  return merge_walks(*b, snap, want_values != 0, fn, payload);
}
