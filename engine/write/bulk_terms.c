/* SPDX-License-Identifier: MIT */
/*
 * bulk_terms.c — a bulk commit's secondary terms, inverted one field at a
 * time (bulkwrite.h).
 *
 * The write buffer's inversion (memseg.c) holds every field's (term, doc)
 * tuples at once, plus a copy of the document array; for an import that
 * is the peak of its memory (a 150 MB TSV with three terms a line peaked
 * at 2.6 times the input, 1.96 without the terms).  Here the documents
 * are read where the transaction holds them, and only one field's tuples
 * live at a time: one pass counts the tuples of each field, then one pass
 * per field (in name order, as the segment writer wants them) collects,
 * sorts and writes that field.  Each pass decodes the records again: a
 * few tens of nanoseconds a document, against the sort's cost.
 */
#include "engine/write/bulkwrite.h"

#include "codec/segment.h"
#include "codec/status.h"
#include "engine/format/catalog_schema.h"
#include "engine/util/sort.h"

#include <stdlib.h>
#include <string.h>

typedef struct field_count {
  const uint8_t *name;
  size_t len;
  size_t n; /* (term, doc) tuples */
} field_count;

typedef struct fields {
  field_count *f;
  size_t n, cap, last;
} fields;

static field_count *field_of(fields *fs, const uint8_t *name, size_t len) {
  if (fs->last < fs->n && fs->f[fs->last].len == len && !memcmp(fs->f[fs->last].name, name, len))
    return &fs->f[fs->last];
  for (size_t i = 0; i < fs->n; i++)
    if (fs->f[i].len == len && !memcmp(fs->f[i].name, name, len)) return &fs->f[fs->last = i];
  if (fs->n == fs->cap) {
    size_t cap = fs->cap ? 2 * fs->cap : 8;
    field_count *f = realloc(fs->f, cap * sizeof *f);
    if (!f) return NULL;
    fs->f = f;
    fs->cap = cap;
  }
  fs->f[fs->n] = (field_count){name, len, 0};
  return &fs->f[fs->last = fs->n++];
}

/* The documents in the order the transaction holds them (its memory in
 * address order: each pass streams through it instead of missing the
 * cache on every document, as key order would), with the doc id the
 * segment gives each (live documents numbered in key order). */
typedef struct docs_view {
  const tern_mdoc *ops;
  size_t nops;
  uint32_t *id; /* per op; UINT32_MAX: not written (replaced, deleted) */
} docs_view;

static int view_init(docs_view *v, const tern_mdoc *ops, const uint32_t *order, size_t n) {
  v->ops = ops;
  v->nops = 0;
  for (size_t i = 0; i < n; i++)
    if (order[i] + (size_t)1 > v->nops) v->nops = order[i] + (size_t)1;
  v->id = malloc((v->nops ? v->nops : 1) * sizeof *v->id);
  if (!v->id) return tern_fail(TERN_ENOMEM, "bulk commit: out of memory");
  memset(v->id, 0xff, v->nops * sizeof *v->id);
  uint32_t doc = 0;
  for (size_t i = 0; i < n; i++)
    if (ops[order[i]].doc) v->id[order[i]] = doc++;
  return TERN_OK;
}

/* Calls back each term of each live document with its doc id.
 * `checked`: the records were checked whole by an earlier pass. */
typedef int (*term_fn)(void *ctx, const tern_rec_term *t, uint32_t doc);
static int each_term(const docs_view *v, int checked, term_fn fn, void *ctx) {
  for (size_t i = 0; i < v->nops; i++) {
    const tern_mdoc *d = &v->ops[i];
    uint32_t doc = v->id[i];
    if (doc == UINT32_MAX) continue;
    tern_rec_doc rd;
    TERN_TRY(checked ? tern_rec_doc_decode_checked(&rd, d->doc, d->key.aux)
                     : tern_rec_doc_decode(&rd, d->doc, d->key.aux));
    tern_rec_terms it;
    tern_rec_term t;
    int rc;
    tern_rec_terms_init(&it, &rd);
    while ((rc = tern_rec_terms_next(&it, &t)) == 1) TERN_TRY(fn(ctx, &t, doc));
    TERN_TRY(rc);
  }
  return TERN_OK;
}

static int count_term(void *ctx, const tern_rec_term *t, uint32_t doc) {
  (void)doc;
  field_count *f = field_of(ctx, t->field, t->flen);
  if (!f) return tern_fail(TERN_ENOMEM, "bulk commit: out of memory");
  f->n++;
  return TERN_OK;
}

typedef struct collect {
  const field_count *field;
  tern_keyref *t;
  size_t n;
} collect;

static int collect_term(void *ctx, const tern_rec_term *t, uint32_t doc) {
  collect *c = ctx;
  if (t->flen != c->field->len || memcmp(t->field, c->field->name, t->flen)) return TERN_OK;
  if (c->n == c->field->n) return tern_fail(TERN_ECORRUPT, "bulk commit: terms changed");
  c->t[c->n++] = (tern_keyref){t->term, (uint32_t)t->tlen, doc};
  return TERN_OK;
}

/* Sorts the field's tuples by term, then each term's docs, and writes
 * each term with its documents. */
static int write_field(tern_segw *w, const tern_options *o, const field_count *f,
                       const docs_view *v) {
  collect c = {f, malloc((f->n ? f->n : 1) * sizeof *c.t), 0};
  uint32_t *perm = malloc((f->n ? f->n : 1) * sizeof *perm);
  uint32_t *docs = malloc((f->n ? f->n : 1) * sizeof *docs);
  int rc = c.t && perm && docs ? TERN_OK : tern_fail(TERN_ENOMEM, "bulk commit: out of memory");
  if (rc == TERN_OK) rc = each_term(v, 1, collect_term, &c);
  if (rc == TERN_OK && c.n != f->n) rc = tern_fail(TERN_ECORRUPT, "bulk commit: terms changed");
  if (rc == TERN_OK) rc = tern_sort_by_key(perm, c.t, sizeof *c.t, c.n, NULL);
  if (rc == TERN_OK) rc = tern_segw_field(w, f->name, f->len, 0, tern_options_threshold(o, f->name, f->len));
  for (size_t i = 0; rc == TERN_OK && i < c.n;) {
    const tern_keyref *k = &c.t[perm[i]];
    uint32_t nd = 0, m = 0;
    size_t j = i;
    int sorted = 1;
    for (; j < c.n; j++) {
      const tern_keyref *kj = &c.t[perm[j]];
      if (kj->len != k->len || memcmp(kj->p, k->p, k->len)) break;
      sorted &= nd == 0 || docs[nd - 1] <= kj->aux;
      docs[nd++] = kj->aux;
    }
    if (!sorted) rc = tern_sort_u32(docs, nd);
    for (uint32_t q = 0; q < nd; q++) /* a doc may repeat a term */
      if (m == 0 || docs[m - 1] != docs[q]) docs[m++] = docs[q];
    if (rc == TERN_OK) rc = tern_segw_term(w, k->p, k->len, docs, m, NULL, 0);
    i = j;
  }
  free(c.t);
  free(perm);
  free(docs);
  return rc;
}

static int cmp_field(const void *a, const void *b) {
  const field_count *x = a, *y = b;
  return tern_key_cmp(x->name, x->len, y->name, y->len);
}

int tern_bulk_write_terms(tern_segw *w, const tern_options *o, const tern_mdoc *ops,
                          const uint32_t *order, size_t n) {
  fields fs = {0};
  docs_view v;
  int rc = view_init(&v, ops, order, n);
  if (rc != TERN_OK) return rc;
  rc = each_term(&v, 0, count_term, &fs); /* checks every record once */
  if (rc == TERN_OK && fs.n) qsort(fs.f, fs.n, sizeof *fs.f, cmp_field);
  for (size_t i = 0; rc == TERN_OK && i < fs.n; i++)
    rc = write_field(w, o, &fs.f[i], &v);
  free(fs.f);
  free(v.id);
  return rc;
}
