/* SPDX-License-Identifier: MIT */
/*
 * postings.c — documents having terms, over every source of a snapshot.
 *
 * Doc ids are (source ordinal << 32 | doc in source), with the snapshot's
 * segments as sources 0..n-1 (oldest first) and the buffer view as source
 * n, so ids are fixed for the snapshot's life and ascend source by source.
 * One term is a chain of per-source iterators filtered by each segment's
 * live docs; several terms are intersected by leapfrogging: the cheapest
 * leads and the others advance to its doc, any overshoot becoming the new
 * target.
 */
#include "engine/state/index.h"

#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

typedef struct src_iter {
  uint32_t ord;
  const tern_slot *slot; /* NULL: the buffer view */
  tern_postings_iter it; /* segment postings */
  const uint32_t *mdocs; /* buffer postings */
  uint32_t mn, mpos;
  uint32_t df;
} src_iter;

typedef struct term_iter {
  src_iter *src;
  size_t n, cur;
  int started;
  uint64_t doc;
} term_iter;

struct tern_postings {
  tern_snapshot *snap;
  term_iter *terms;
  size_t n;
  int empty, started;
  uint64_t doc;
  tern_seg_cursor *cursor; /* for tern_postings_doc */
  struct tern_by_key *by_key; /* tern_postings_each_by_key's walk, resumed (cursor_hits.c) */
};

static int term_check(const tern_term *t) {
  size_t fl = t->field ? strnlen(t->field, TERN_FIELD_MAX + 1) : 0;
  if (fl == 0 || fl > TERN_FIELD_MAX || !t->term || t->len == 0 || t->len > TERN_KEY_MAX)
    return tern_fail(TERN_EINVAL, "postings: bad field or term");
  return TERN_OK;
}

/* The next free source of ti, cleared. */
static src_iter *add_source(term_iter *ti) {
  src_iter *s = &ti->src[ti->n];
  memset(s, 0, sizeof *s);
  return s;
}

/* The sources having term t, in ordinal order. */
static int term_open(tern_snapshot *snap, const tern_term *t, tern_seg_cursor *c, term_iter *ti) {
  const tern_state *st = snap->st;
  size_t fl = strlen(t->field);
  ti->src = calloc(st->nslots + 1, sizeof *ti->src);
  if (!ti->src) return tern_fail(TERN_ENOMEM, "postings: out of memory");
  for (size_t i = 0; i < st->nslots; i++) {
    const tern_slot *sl = &st->slots[i];
    const tern_seg_field *f = tern_seg_find_field(sl->ref->seg, t->field, fl);
    if (!f) continue;
    tern_term_entry e;
    int rc = tern_seg_seek_exact(sl->ref->seg, f, t->term, t->len, c, &e);
    if (rc == TERN_NOTFOUND) continue;
    TERN_TRY(rc);
    src_iter *s = add_source(ti);
    TERN_TRY(tern_seg_postings(sl->ref->seg, &e, &s->it));
    s->ord = (uint32_t)i;
    s->slot = sl;
    s->df = e.meta.df;
    ti->n++;
  }
  if (snap->buf->n) {
    const tern_minv *inv;
    TERN_TRY(tern_memseg_inv(snap->buf, &inv));
    const tern_mfield *mf = tern_minv_field(inv, t->field, fl);
    const tern_mterm *mt = mf ? tern_minv_term(mf, t->term, t->len) : NULL;
    if (mt) {
      src_iter *s = add_source(ti);
      s->ord = (uint32_t)st->nslots;
      s->mdocs = mt->docs;
      s->mn = s->df = mt->term.aux;
      ti->n++;
    }
  }
  return TERN_OK;
}

static uint64_t term_cost(const term_iter *ti) {
  uint64_t c = 0;
  for (size_t i = ti->cur; i < ti->n; i++)
    c += ti->src[i].df;
  return c;
}

/* Next doc of one source (TERN_DOC_END when done), live or not. */
static int src_next(src_iter *s, uint32_t *d) {
  if (s->slot) return tern_postings_iter_next(&s->it, d);
  *d = s->mpos < s->mn ? s->mdocs[s->mpos++] : TERN_DOC_END;
  return TERN_OK;
}

static int src_advance(src_iter *s, uint32_t target, uint32_t *d) {
  if (s->slot) return tern_postings_iter_advance(&s->it, target, d);
  size_t lo = s->mpos, hi = s->mn;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->mdocs[mid] < target)
      lo = mid + 1;
    else
      hi = mid;
  }
  s->mpos = (uint32_t)lo;
  return src_next(s, d);
}

/* Moves to the next live doc from d (a doc just read from source cur). */
static int term_settle(term_iter *ti, uint32_t d) {
  for (;;) {
    if (d == TERN_DOC_END) {
      if (++ti->cur >= ti->n) {
        ti->doc = TERN_NO_MORE_DOCS;
        return TERN_OK;
      }
      TERN_TRY(src_next(&ti->src[ti->cur], &d));
      continue;
    }
    src_iter *s = &ti->src[ti->cur];
    if (!s->slot || tern_slot_is_live(s->slot, d)) {
      ti->doc = (uint64_t)s->ord << 32 | d;
      return TERN_OK;
    }
    TERN_TRY(src_next(s, &d));
  }
}

static int term_next(term_iter *ti) {
  ti->started = 1;
  if (ti->cur >= ti->n) {
    ti->doc = TERN_NO_MORE_DOCS;
    return TERN_OK;
  }
  uint32_t d;
  TERN_TRY(src_next(&ti->src[ti->cur], &d));
  return term_settle(ti, d);
}

static int term_advance(term_iter *ti, uint64_t target) {
  if (ti->started && ti->doc >= target) return TERN_OK;
  ti->started = 1;
  uint32_t tord = (uint32_t)(target >> 32), tdoc = (uint32_t)target;
  while (ti->cur < ti->n && ti->src[ti->cur].ord < tord)
    ti->cur++;
  if (ti->cur >= ti->n) {
    ti->doc = TERN_NO_MORE_DOCS;
    return TERN_OK;
  }
  src_iter *s = &ti->src[ti->cur];
  uint32_t d;
  if (s->ord == tord)
    TERN_TRY(src_advance(s, tdoc, &d));
  else
    TERN_TRY(src_next(s, &d));
  return term_settle(ti, d);
}

static void term_close(term_iter *ti) {
  for (size_t i = 0; i < ti->n; i++)
    if (ti->src[i].slot) tern_postings_iter_release(&ti->src[i].it);
  free(ti->src);
}

static int cmp_cost(const void *a, const void *b) {
  uint64_t x = term_cost(a), y = term_cost(b);
  return (x > y) - (x < y);
}

static void postings_free(tern_postings *p) {
  for (size_t i = 0; p->terms && i < p->n; i++)
    term_close(&p->terms[i]);
  free(p->terms);
  if (p->cursor) tern_seg_cursor_release(p->cursor);
  free(p->cursor);
  tern_by_key_free(p->by_key);
  atomic_fetch_sub(&p->snap->iters, 1);
  free(p);
}

int tern_postings_open(tern_postings **out, tern_snapshot *snap, const tern_term *terms, size_t n) {
  tern_clear_error();
  if (out) *out = NULL;
  if (!out || !snap || !terms || n == 0)
    return tern_fail(TERN_EINVAL, "tern_postings_open: bad arguments");
  for (size_t i = 0; i < n; i++)
    TERN_TRY(term_check(&terms[i]));
  tern_postings *p = calloc(1, sizeof *p);
  if (!p) return tern_fail(TERN_ENOMEM, "postings: out of memory");
  p->snap = snap;
  atomic_fetch_add(&snap->iters, 1); /* tern_snapshot_close refuses while it is open */
  p->terms = calloc(n, sizeof *p->terms);
  p->cursor = malloc(sizeof *p->cursor);
  int rc = p->terms && p->cursor ? TERN_OK : tern_fail(TERN_ENOMEM, "postings: out of memory");
  if (rc == TERN_OK) tern_seg_cursor_init(p->cursor);
  for (size_t i = 0; rc == TERN_OK && i < n; i++) {
    rc = term_open(snap, &terms[i], p->cursor, &p->terms[i]);
    p->n = i + 1;
  }
  if (rc != TERN_OK) {
    postings_free(p);
    return rc;
  }
  qsort(p->terms, p->n, sizeof *p->terms, cmp_cost);
  p->empty = term_cost(&p->terms[0]) == 0;
  *out = p;
  return TERN_OK;
}

/* Leapfrog from the lead's current doc until every term agrees. */
static int align(tern_postings *p) {
  uint64_t target = p->terms[0].doc;
  for (size_t i = 1; target != TERN_NO_MORE_DOCS && i < p->n;) {
    TERN_TRY(term_advance(&p->terms[i], target));
    uint64_t d = p->terms[i].doc;
    if (d == target) {
      i++;
      continue;
    }
    TERN_TRY(term_advance(&p->terms[0], d));
    target = p->terms[0].doc;
    i = 1;
  }
  p->doc = target;
  return TERN_OK;
}

int tern_postings_next(tern_postings *p, uint64_t *doc) {
  tern_clear_error();
  if (!p || !doc) return tern_fail(TERN_EINVAL, "tern_postings_next: NULL argument");
  if (p->empty || (p->started && p->doc == TERN_NO_MORE_DOCS)) {
    p->started = 1;
    *doc = p->doc = TERN_NO_MORE_DOCS;
    return TERN_OK;
  }
  p->started = 1;
  TERN_TRY(term_next(&p->terms[0]));
  TERN_TRY(align(p));
  *doc = p->doc;
  return TERN_OK;
}

int tern_postings_advance(tern_postings *p, uint64_t target, uint64_t *doc) {
  tern_clear_error();
  if (!p || !doc) return tern_fail(TERN_EINVAL, "tern_postings_advance: NULL argument");
  if (p->empty) {
    p->started = 1;
    *doc = p->doc = TERN_NO_MORE_DOCS;
    return TERN_OK;
  }
  if (p->started && p->doc >= target) {
    *doc = p->doc;
    return TERN_OK;
  }
  p->started = 1;
  TERN_TRY(term_advance(&p->terms[0], target));
  TERN_TRY(align(p));
  *doc = p->doc;
  return TERN_OK;
}

uint64_t tern_postings_cost(const tern_postings *p) {
  tern_clear_error();
  if (!p || p->empty || (p->started && p->doc == TERN_NO_MORE_DOCS)) return 0;
  uint64_t c = UINT64_MAX;
  for (size_t i = 0; i < p->n; i++) {
    uint64_t t = term_cost(&p->terms[i]);
    if (t < c) c = t;
  }
  return c;
}

int tern_postings_doc(tern_postings *p, tern_slice *key, tern_slice *val) {
  tern_clear_error();
  if (!p || !key || !val) return tern_fail(TERN_EINVAL, "tern_postings_doc: NULL argument");
  if (!p->started || p->doc == TERN_NO_MORE_DOCS)
    return tern_fail(TERN_EINVAL, "tern_postings_doc: not on a document");
  uint32_t ord = (uint32_t)(p->doc >> 32), d = (uint32_t)p->doc;
  const tern_state *st = p->snap->st;
  if (ord == st->nslots) {
    const tern_mdoc *m = &p->snap->buf->docs[d];
    key->data = m->key.p;
    key->len = m->key.len;
    return tern_memseg_value(p->snap->buf, d, val);
  }
  return tern_seg_doc(st->slots[ord].ref->seg, d, p->cursor, key, val);
}

int tern_postings_close(tern_postings *p) {
  tern_clear_error();
  if (p) postings_free(p);
  return TERN_OK;
}

/* ------------------------------------------------ drained by source */

typedef struct drain_out {
  uint32_t *d;
  size_t n, cap;
  tern_hit_run *r; /* room for every source */
  size_t nr;
} drain_out;

static int out_room(drain_out *o, size_t more) {
  if (o->cap - o->n >= more) return TERN_OK;
  size_t cap = o->cap ? o->cap : 1024;
  while (cap - o->n < more) cap *= 2;
  uint32_t *g = realloc(o->d, cap * sizeof *g);
  if (!g) return tern_fail(TERN_ENOMEM, "hits: out of memory");
  o->d = g;
  o->cap = cap;
  return TERN_OK;
}

/* The run of source ord, opened when the last is another's. */
static tern_hit_run *out_run(drain_out *o, uint32_t ord) {
  if (o->nr == 0 || o->r[o->nr - 1].ord != ord) o->r[o->nr++] = (tern_hit_run){ord, o->n, 0};
  return &o->r[o->nr - 1];
}

/* k docs of a segment source, its deleted ones left out. */
static int out_docs(drain_out *o, const tern_slot *slot, const uint32_t *d, size_t k) {
  TERN_TRY(out_room(o, k));
  uint32_t *to = o->d + o->n;
  if (!slot || !slot->live) {
    memcpy(to, d, k * sizeof *d);
    o->n += k;
    return TERN_OK;
  }
  size_t m = 0;
  for (size_t i = 0; i < k; i++) {
    to[m] = d[i];
    m += (size_t)tern_livedocs_is_live(slot->live->ld, d[i]);
  }
  o->n += m;
  return TERN_OK;
}

/* One source of a term whole, a decoded block at a time. */
static int drain_source(src_iter *s, drain_out *o) {
  tern_hit_run *run = out_run(o, s->ord);
  size_t from = o->n;
  if (!s->slot) {
    TERN_TRY(out_docs(o, NULL, s->mdocs + s->mpos, s->mn - s->mpos));
    s->mpos = s->mn;
  } else {
    for (;;) {
      const uint32_t *d;
      uint32_t k;
      TERN_TRY(tern_postings_iter_next_block(&s->it, &d, &k));
      if (k == 0) break;
      TERN_TRY(out_docs(o, s->slot, d, k));
    }
  }
  run->n += o->n - from;
  if (run->n == 0) o->nr--; /* every doc deleted */
  return TERN_OK;
}

/* Any iterator: tern_postings_next, each doc to its source's run. */
static int drain_next(tern_postings *p, drain_out *o) {
  uint64_t doc;
  int rc;
  while ((rc = tern_postings_next(p, &doc)) == TERN_OK && doc != TERN_NO_MORE_DOCS) {
    TERN_TRY(out_room(o, 1));
    out_run(o, (uint32_t)(doc >> 32))->n++;
    o->d[o->n++] = (uint32_t)doc;
  }
  return rc;
}

static int drain_into(tern_postings *p, drain_out *o) {
  if (p->n != 1 || p->started) return drain_next(p, o);
  term_iter *ti = &p->terms[0];
  for (; ti->cur < ti->n; ti->cur++)
    TERN_TRY(drain_source(&ti->src[ti->cur], o));
  ti->started = 1;
  ti->doc = TERN_NO_MORE_DOCS;
  p->started = 1;
  p->doc = TERN_NO_MORE_DOCS;
  return TERN_OK;
}

int tern_postings_drain(tern_postings *p, uint32_t **docs, size_t *n, tern_hit_run **runs,
                        size_t *nruns) {
  drain_out o = {0};
  o.r = malloc((p->snap->st->nslots + 1) * sizeof *o.r);
  int rc = o.r ? drain_into(p, &o) : tern_fail(TERN_ENOMEM, "hits: out of memory");
  if (rc != TERN_OK) {
    free(o.d);
    free(o.r);
    return rc;
  }
  *docs = o.d;
  *n = o.n;
  *runs = o.r;
  *nruns = o.nr;
  return TERN_OK;
}

tern_snapshot *tern_postings_snapshot(const tern_postings *p) { return p->snap; }

struct tern_by_key **tern_postings_by_key(tern_postings *p) { return &p->by_key; }
