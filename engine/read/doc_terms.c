/* SPDX-License-Identifier: MIT */
/*
 * doc_terms.c — documents with all their terms (tern_docs_each,
 * tern_doc_terms): what a lossless dump writes.
 *
 * A segment keeps no terms per document, only postings per term.  The
 * buffer's documents keep their records, terms included.  So a segment's
 * documents' terms are recovered by inverting its postings, a window of
 * consecutive doc ids at a time: every term of every field (but the primary
 * key) is visited once per window, its postings advanced to the window's
 * first doc and read to its end, each hit recorded as (doc, field, term),
 * and the records bucketed by doc (a counting sort, stable: fields in
 * field order, terms in byte order).  Memory: the window's hits and their
 * terms' bytes.  Cost: a pass over the segment's terms dictionary per
 * window plus the window's postings.
 *
 * The documents come in key order: the snapshot's sources (segments and
 * the buffer) are merged by a linear min, as the key cursor does
 * (cursor.c); within a segment, doc order is key order, so each segment's
 * window only moves forward.
 */
#include "engine/read/key_range.h"
#include "engine/state/index.h"

#include "codec/postings.h"
#include "codec/status.h"
#include "engine/util/errwrap.h"

#include <stdlib.h>
#include <string.h>

/* Doc ids of one window of a dump (tests make it small: several windows
 * per segment). */
static uint32_t window_docs = 65536u;
void tern_docs_window_set(uint32_t docs) { window_docs = docs ? docs : 65536u; }

typedef struct hit {
  uint32_t doc;   /* in the window */
  uint32_t field; /* index into the source's field names */
  size_t off;     /* term bytes in the source's term buffer */
  uint32_t len;
} hit;

typedef struct dt_src {
  tern_src s;
  uint32_t window; /* doc ids per window */
  uint32_t lo, hi; /* the window held: [lo, hi); lo == hi: none */
  char **fields;   /* NUL-terminated names, by segment field index */
  size_t nfields;
  hit *hits; /* bucketed by doc */
  size_t nhits, caphits;
  size_t *start;  /* per doc of the window: its first hit; window + 1 */
  uint8_t *bytes; /* terms of the window */
  size_t nbytes, capbytes;
} dt_src;

static void dt_src_free(dt_src *d) {
  tern_src_release(&d->s);
  for (size_t i = 0; i < d->nfields; i++)
    free(d->fields[i]);
  free(d->fields);
  free(d->hits);
  free(d->start);
  free(d->bytes);
}

static int dt_src_init(dt_src *d, const tern_slot *slot, const tern_memseg *buf, uint32_t window) {
  memset(d, 0, sizeof *d);
  d->window = window;
  TERN_TRY(tern_src_init(&d->s, slot, buf));
  if (!slot) return TERN_OK;
  const tern_seg *seg = slot->ref->seg;
  size_t n = tern_seg_nfields(seg);
  d->fields = calloc(n ? n : 1, sizeof *d->fields);
  if (!d->fields) return tern_fail(TERN_ENOMEM, "dump: out of memory");
  d->nfields = n;
  for (size_t i = 0; i < n; i++) {
    tern_field_info fi;
    tern_seg_field_info(tern_seg_field_at(seg, i), &fi);
    if (!(d->fields[i] = malloc(fi.name_len + 1)))
      return tern_fail(TERN_ENOMEM, "dump: out of memory");
    memcpy(d->fields[i], fi.name, fi.name_len);
    d->fields[i][fi.name_len] = '\0';
  }
  return TERN_OK;
}

static int add_hit(dt_src *d, uint32_t doc, uint32_t field, size_t off, uint32_t len) {
  if (d->nhits == d->caphits) {
    size_t cap = d->caphits ? 2 * d->caphits : 1024;
    hit *h = realloc(d->hits, cap * sizeof *h);
    if (!h) return tern_fail(TERN_ENOMEM, "dump: out of memory");
    d->hits = h;
    d->caphits = cap;
  }
  d->hits[d->nhits++] = (hit){doc, field, off, len};
  return TERN_OK;
}

/* Copies a term into the window's bytes; *off where. */
static int keep_term(dt_src *d, const uint8_t *t, size_t len, size_t *off) {
  if (d->nbytes + len > d->capbytes) {
    size_t cap = d->capbytes ? d->capbytes : 4096;
    while (cap < d->nbytes + len)
      cap *= 2;
    uint8_t *b = realloc(d->bytes, cap);
    if (!b) return tern_fail(TERN_ENOMEM, "dump: out of memory");
    d->bytes = b;
    d->capbytes = cap;
  }
  memcpy(d->bytes + d->nbytes, t, len);
  *off = d->nbytes;
  d->nbytes += len;
  return TERN_OK;
}

/* The hits of one term's postings in [lo, hi). */
static int term_hits(dt_src *d, const tern_seg *seg, const tern_term_entry *e, uint32_t field) {
  tern_postings_iter it;
  TERN_TRY(tern_seg_postings(seg, e, &it));
  uint32_t doc;
  int rc = tern_postings_iter_advance(&it, d->lo, &doc);
  size_t off = 0;
  int kept = 0;
  while (rc == TERN_OK && doc != TERN_DOC_END && doc < d->hi) {
    if (!kept) rc = keep_term(d, e->term, e->len, &off);
    kept = 1;
    if (rc == TERN_OK) rc = add_hit(d, doc - d->lo, field, off, (uint32_t)e->len);
    if (rc == TERN_OK) rc = tern_postings_iter_next(&it, &doc);
  }
  tern_postings_iter_release(&it);
  return rc;
}

/* Buckets the hits by doc, stable. */
static int bucket(dt_src *d) {
  uint32_t n = d->hi - d->lo;
  size_t *start = calloc((size_t)n + 1, sizeof *start);
  hit *sorted = malloc((d->nhits ? d->nhits : 1) * sizeof *sorted);
  if (!start || !sorted) {
    free(start);
    free(sorted);
    return tern_fail(TERN_ENOMEM, "dump: out of memory");
  }
  for (size_t i = 0; i < d->nhits; i++)
    start[d->hits[i].doc + 1]++;
  for (uint32_t i = 0; i < n; i++)
    start[i + 1] += start[i];
  size_t *pos = malloc(((size_t)n + 1) * sizeof *pos);
  if (!pos) {
    free(start);
    free(sorted);
    return tern_fail(TERN_ENOMEM, "dump: out of memory");
  }
  memcpy(pos, start, ((size_t)n + 1) * sizeof *pos);
  for (size_t i = 0; i < d->nhits; i++)
    sorted[pos[d->hits[i].doc]++] = d->hits[i];
  free(pos);
  free(d->hits);
  free(d->start);
  d->hits = sorted;
  d->caphits = d->nhits ? d->nhits : 1;
  d->start = start;
  return TERN_OK;
}

/* Inverts the postings of docs [doc, doc + window) of the segment. */
static int load_window(dt_src *d, uint32_t doc) {
  const tern_slot *sl = d->s.slot;
  const tern_seg *seg = sl->ref->seg;
  uint32_t max = sl->ref->max_doc;
  d->lo = doc;
  d->hi = max - doc > d->window ? doc + d->window : max;
  d->nhits = d->nbytes = 0;
  tern_seg_cursor *c = malloc(sizeof *c);
  if (!c) return tern_fail(TERN_ENOMEM, "dump: out of memory");
  tern_seg_cursor_init(c);
  int rc = TERN_OK;
  for (size_t i = 0; rc == TERN_OK && i < d->nfields; i++) {
    const tern_seg_field *f = tern_seg_field_at(seg, i);
    if (f == sl->ref->unique) continue;
    tern_term_entry e;
    for (rc = tern_seg_first_term(seg, f, c, &e); rc == TERN_OK;
         rc = tern_seg_next_term(seg, c, &e)) {
      rc = term_hits(d, seg, &e, (uint32_t)i);
      if (rc != TERN_OK) break;
    }
    if (rc == TERN_NOTFOUND) rc = TERN_OK;
  }
  tern_seg_cursor_release(c);
  free(c);
  if (rc == TERN_OK) rc = bucket(d);
  if (rc != TERN_OK) d->lo = d->hi = 0;
  return rc;
}

/* The doc id of the entry a segment source stands on (as cursor_source.c
 * finds it: segments number their keys' docs by ordinal). */
static uint32_t seg_doc(const tern_src *s) {
  const tern_term_entry *e = &s->e;
  return (uint32_t)(e->meta.pulsed ? e->docs[0] : e->ordinal);
}

typedef struct terms_out {
  tern_term *t;
  size_t n, cap;
  char *names; /* buffer source: NUL-terminated copies of the fields */
  size_t nnames, capnames;
} terms_out;

static int out_room(terms_out *o, size_t n) {
  if (n <= o->cap) return TERN_OK;
  size_t cap = o->cap ? o->cap : 16;
  while (cap < n)
    cap *= 2;
  tern_term *t = realloc(o->t, cap * sizeof *t);
  if (!t) return tern_fail(TERN_ENOMEM, "dump: out of memory");
  o->t = t;
  o->cap = cap;
  return TERN_OK;
}

/* The terms of the segment document the source stands on. */
static int seg_terms(dt_src *d, terms_out *o) {
  uint32_t doc = seg_doc(&d->s);
  if (doc >= d->s.slot->ref->max_doc)
    return tern_fail(TERN_ECORRUPT, "segment %s: key with doc %u of %u", d->s.slot->ref->name, doc,
                     d->s.slot->ref->max_doc);
  if (d->lo == d->hi || doc < d->lo || doc >= d->hi) TERN_TRY(load_window(d, doc));
  size_t a = d->start[doc - d->lo], b = d->start[doc - d->lo + 1];
  TERN_TRY(out_room(o, b - a));
  o->n = b - a;
  for (size_t i = a; i < b; i++) {
    const hit *h = &d->hits[i];
    o->t[i - a] = (tern_term){d->fields[h->field], d->bytes + h->off, h->len};
  }
  return TERN_OK;
}

/* Fields in byte order, a field's terms in byte order: a segment's order. */
static int term_order(const void *a, const void *b) {
  const tern_term *x = a, *y = b;
  int c = strcmp(x->field, y->field);
  return c ? c : tern_key_cmp(x->term, x->len, y->term, y->len);
}

/* o's terms in a segment's order, each (field, term) pair once: a record
 * keeps its terms as put, repeats included, and a dump must not depend on
 * whether a document was flushed yet. */
static void canonical_terms(terms_out *o) {
  if (o->n < 2) return;
  qsort(o->t, o->n, sizeof *o->t, term_order);
  size_t kept = 1;
  for (size_t i = 1; i < o->n; i++)
    if (term_order(&o->t[kept - 1], &o->t[i]) != 0) o->t[kept++] = o->t[i];
  o->n = kept;
}

/* The terms of the buffer document the source stands on, from its record. */
static int buf_terms(dt_src *d, terms_out *o) {
  const tern_mdoc *m = &d->s.buf->docs[d->s.pos];
  tern_rec_doc rd;
  TERN_TRY(tern_rec_doc_decode(&rd, m->doc, m->key.aux));
  tern_rec_terms it;
  tern_rec_term t;
  int more;
  size_t need = 0, n = 0;
  tern_rec_terms_init(&it, &rd);
  while ((more = tern_rec_terms_next(&it, &t)) == 1)
    need += t.flen + 1, n++;
  TERN_TRY(more);
  TERN_TRY(out_room(o, n));
  if (need > o->capnames) {
    char *p = realloc(o->names, need);
    if (!p) return tern_fail(TERN_ENOMEM, "dump: out of memory");
    o->names = p;
    o->capnames = need;
  }
  size_t at = 0;
  o->n = 0;
  tern_rec_terms_init(&it, &rd);
  while (tern_rec_terms_next(&it, &t) == 1) {
    memcpy(o->names + at, t.field, t.flen);
    o->names[at + t.flen] = '\0';
    o->t[o->n++] = (tern_term){o->names + at, t.term, t.tlen};
    at += t.flen + 1;
  }
  canonical_terms(o);
  return TERN_OK;
}

typedef struct walk {
  dt_src *src; /* segments oldest first, then the buffer */
  size_t n;
  tern_key_range range;
} walk;

static int walk_run(walk *w, tern_doc_terms_fn fn, void *payload) {
  for (size_t i = 0; i < w->n; i++)
    TERN_TRY(tern_src_seek_ge(&w->src[i].s, w->range.lo, w->range.lolen, 0));
  terms_out o = {0};
  int rc = TERN_OK;
  while (rc == TERN_OK) {
    size_t best = w->n;
    for (size_t i = 0; i < w->n; i++) {
      const tern_src *s = &w->src[i].s;
      if (s->valid && (best == w->n ||
                       tern_key_cmp(s->key, s->klen, w->src[best].s.key, w->src[best].s.klen) <= 0))
        best = i; /* ties: the newer source */
    }
    if (best == w->n) break;
    tern_src *s = &w->src[best].s;
    if (!tern_key_range_below_hi(&w->range, s->key, s->klen)) break;
    tern_slice val;
    rc = tern_src_value(s, &val);
    if (rc == TERN_OK) rc = s->slot ? seg_terms(&w->src[best], &o) : buf_terms(&w->src[best], &o);
    if (rc != TERN_OK) break;
    int cb = fn(payload, (tern_slice){s->key, s->klen}, val, o.t, o.n);
    if (cb != 0) {
      rc = tern_fail_stopped(cb);
      break;
    }
    /* Every source showing this key moves on (one live document per key). */
    uint8_t key[TERN_KEY_MAX];
    size_t klen = s->klen;
    memcpy(key, s->key, klen);
    for (size_t i = 0; rc == TERN_OK && i < w->n; i++) {
      tern_src *t = &w->src[i].s;
      if (t->valid && tern_key_cmp(t->key, t->klen, key, klen) == 0) rc = tern_src_step(t, 1);
    }
  }
  free(o.t);
  free(o.names);
  return rc;
}

static int docs_each(tern_snapshot *snap, const tern_bounds *bounds, uint32_t window,
                     tern_doc_terms_fn fn, void *payload) {
  const tern_state *st = snap->st;
  walk *w = calloc(1, sizeof *w);
  if (!w) return tern_fail(TERN_ENOMEM, "dump: out of memory");
  w->src = calloc(st->nslots + 1, sizeof *w->src);
  int rc = w->src ? TERN_OK : tern_fail(TERN_ENOMEM, "dump: out of memory");
  for (size_t i = 0; rc == TERN_OK && i <= st->nslots; i++) {
    rc = dt_src_init(&w->src[i], i < st->nslots ? &st->slots[i] : NULL, snap->buf, window);
    w->n = i + 1; /* freed below, initialised or not */
  }
  tern_key_range_set(&w->range, bounds);
  if (rc == TERN_OK) rc = walk_run(w, fn, payload);
  for (size_t i = 0; w->src && i < w->n; i++)
    dt_src_free(&w->src[i]);
  free(w->src);
  free(w);
  return rc;
}

static int bound_ok(const tern_slice *s) { return (s->data || !s->len) && s->len <= TERN_KEY_MAX; }

int tern_docs_each(tern_snapshot *snap, const tern_bounds *bounds, tern_doc_terms_fn fn,
                   void *payload) {
  tern_clear_error();
  if (!snap || !fn ||
      (bounds &&
       (!bound_ok(&bounds->from) || !bound_ok(&bounds->to) || !bound_ok(&bounds->prefix))))
    return tern_fail(TERN_EINVAL, "tern_docs_each: bad arguments");
  return docs_each(snap, bounds, window_docs, fn, payload);
}

typedef struct one_doc {
  tern_doc_terms_fn fn;
  void *payload;
  int found;
} one_doc;

static int one_doc_cb(void *payload, tern_slice key, tern_slice val, const tern_term *terms,
                      size_t nterms) {
  one_doc *o = payload;
  o->found = 1;
  int cb = o->fn(o->payload, key, val, terms, nterms);
  return cb;
}

int tern_doc_terms(tern_snapshot *snap, const void *key, size_t klen, tern_doc_terms_fn fn,
                   void *payload) {
  tern_clear_error();
  if (!snap || !fn || !key || klen == 0 || klen > TERN_KEY_MAX)
    return tern_fail(TERN_EINVAL, "tern_doc_terms: bad arguments");
  uint8_t to[TERN_KEY_MAX + 1]; /* key + "\0": the next key up */
  memcpy(to, key, klen);
  to[klen] = 0;
  tern_bounds b = {{key, klen}, {to, klen + 1}, {NULL, 0}};
  one_doc o = {fn, payload, 0};
  TERN_TRY(docs_each(snap, &b, 1, one_doc_cb, &o));
  return o.found ? TERN_OK : TERN_NOTFOUND;
}
