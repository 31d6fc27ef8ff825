/* SPDX-License-Identifier: MIT */
/*
 * segment_fixture.h — random segments with their reference model, shared
 * by the segment tests (test_segment*.c).  A fixture is a list of fields,
 * each a sorted array of unique terms with their doc ids and values: the
 * independent reference every read is compared with.
 */
#ifndef TERN_TEST_SEGMENT_FIXTURE_H
#define TERN_TEST_SEGMENT_FIXTURE_H

#include "codec/segment.h"
#include "tests/common/seg_lookup.h"
#include "tests/common/testutil.h"
#include "tern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fx_term {
  uint8_t *t;
  uint32_t len;
  uint32_t df;
  uint32_t *docs;
  uint8_t *val;
  uint32_t vlen;
} fx_term;

typedef struct fx_field {
  char name[32];
  uint32_t flags, threshold;
  fx_term *terms;
  uint32_t n;
} fx_field;

typedef struct fx_seg {
  fx_field fields[8];
  size_t nfields;
  uint32_t max_doc;
  tern_segw_options o;
} fx_seg;

enum fx_shape {
  FX_BASE36,  /* 16 chars of [0-9a-z], the benchmark's keys */
  FX_BINARY,  /* 1..40 random bytes, NUL included */
  FX_LONG,    /* 1..1024 bytes over a small alphabet with long shared prefixes */
  FX_MIXED,   /* 1..24 printable bytes */
  FX_TINY,    /* 1..30 bytes over {a, b} */
  FX_ALLBYTES /* 1..6 bytes of any value: alphabets of up to 256 symbols */
};

static inline int fx_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  int c = n ? memcmp(a, b, n) : 0;
  if (c) return c;
  return alen < blen ? -1 : alen > blen;
}

static int fx_term_cmp(const void *x, const void *y) {
  const fx_term *a = x, *b = y;
  return fx_cmp(a->t, a->len, b->t, b->len);
}

static inline void fx_make_term(tu_rng *r, enum fx_shape shape, uint8_t *t, uint32_t *len) {
  static const char b36[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  uint32_t n = 0;
  switch (shape) {
  case FX_BASE36:
    n = 16;
    for (uint32_t i = 0; i < n; i++) t[i] = (uint8_t)b36[tu_below(r, 36)];
    break;
  case FX_BINARY:
    n = 1 + (uint32_t)tu_below(r, 40);
    tu_fill(r, t, n);
    if (tu_below(r, 4) == 0) t[tu_below(r, n)] = 0;
    break;
  case FX_LONG:
    n = 1 + (uint32_t)tu_below(r, TERN_KEY_MAX);
    if (tu_below(r, 3) == 0) n = TERN_KEY_MAX;
    for (uint32_t i = 0; i < n; i++)
      t[i] = (uint8_t)(i < n - 6 && tu_below(r, 50) ? 'p' : 'a' + tu_below(r, 4));
    break;
  case FX_MIXED:
    n = 1 + (uint32_t)tu_below(r, 24);
    for (uint32_t i = 0; i < n; i++) t[i] = (uint8_t)(32 + tu_below(r, 95));
    break;
  case FX_TINY:
    n = 1 + (uint32_t)tu_below(r, 30);
    for (uint32_t i = 0; i < n; i++) t[i] = (uint8_t)('a' + tu_below(r, 2));
    break;
  case FX_ALLBYTES:
    n = 1 + (uint32_t)tu_below(r, 6);
    tu_fill(r, t, n);
    break;
  }
  *len = n;
}

/* n random sorted unique terms (fewer when duplicates were drawn). */
static inline void fx_gen_terms(tu_rng *r, fx_field *f, enum fx_shape shape, uint32_t n) {
  fx_term *v = calloc(n ? n : 1, sizeof *v);
  assert_non_null(v);
  uint8_t buf[TERN_KEY_MAX];
  for (uint32_t i = 0; i < n; i++) {
    fx_make_term(r, shape, buf, &v[i].len);
    v[i].t = malloc(v[i].len);
    assert_non_null(v[i].t);
    memcpy(v[i].t, buf, v[i].len);
  }
  qsort(v, n, sizeof *v, fx_term_cmp);
  uint32_t m = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (m && fx_term_cmp(&v[m - 1], &v[i]) == 0) {
      free(v[i].t);
      continue;
    }
    v[m++] = v[i];
  }
  f->terms = v;
  f->n = m;
}

/* df ascending doc ids spread over [0, max_doc). */
static inline uint32_t *fx_docs(tu_rng *r, uint32_t df, uint32_t max_doc) {
  uint32_t *d = malloc(df * sizeof *d);
  assert_non_null(d);
  uint32_t step = max_doc / df;
  assert_true(step >= 1);
  for (uint32_t k = 0; k < df; k++) d[k] = k * step + (uint32_t)tu_below(r, step);
  return d;
}

/* A secondary field: doc frequencies mostly small, some up to max_df. */
static inline void fx_secondary(tu_rng *r, fx_field *f, const char *name, enum fx_shape shape,
                                uint32_t n, uint32_t threshold, uint32_t max_df,
                                uint32_t max_doc) {
  memset(f, 0, sizeof *f);
  snprintf(f->name, sizeof f->name, "%s", name);
  f->threshold = threshold;
  fx_gen_terms(r, f, shape, n);
  for (uint32_t i = 0; i < f->n; i++) {
    uint32_t df = 1 + (uint32_t)tu_below(r, 3);
    uint64_t pick = tu_below(r, 100);
    if (pick < 10) df = 1 + (uint32_t)tu_below(r, 100);
    if (pick < 2) df = 1 + (uint32_t)tu_below(r, max_df);
    if (df > max_df) df = max_df;
    f->terms[i].df = df;
    f->terms[i].docs = fx_docs(r, df, max_doc);
  }
}

/* The unique field: doc ids = ordinals (doc_ordered) or a permutation;
 * values of 0 to ~3 x inline_max bytes. */
static inline void fx_unique(tu_rng *r, fx_field *f, const char *name, enum fx_shape shape,
                             uint32_t n, uint32_t threshold, int doc_ordered, uint32_t inline_max,
                             int values) {
  memset(f, 0, sizeof *f);
  snprintf(f->name, sizeof f->name, "%s", name);
  f->flags = TERN_FIELD_UNIQUE;
  f->threshold = threshold;
  fx_gen_terms(r, f, shape, n);
  uint32_t *perm = malloc((f->n ? f->n : 1) * sizeof *perm);
  for (uint32_t i = 0; i < f->n; i++) perm[i] = i;
  if (!doc_ordered)
    for (uint32_t i = f->n; i > 1; i--) {
      uint32_t j = (uint32_t)tu_below(r, i), t = perm[i - 1];
      perm[i - 1] = perm[j];
      perm[j] = t;
    }
  for (uint32_t i = 0; i < f->n; i++) {
    fx_term *t = &f->terms[i];
    t->df = 1;
    t->docs = malloc(sizeof *t->docs);
    t->docs[0] = perm[i];
    if (values) {
      uint64_t pick = tu_below(r, 10);
      t->vlen = pick < 6 ? (uint32_t)tu_below(r, inline_max + 1)
                         : pick < 9 ? (uint32_t)tu_below(r, 3 * inline_max + 2) : 0;
      t->val = malloc(t->vlen + 1);
      tu_fill(r, t->val, t->vlen);
    }
  }
  free(perm);
}

static inline void fx_free(fx_seg *x) {
  for (size_t i = 0; i < x->nfields; i++) {
    fx_field *f = &x->fields[i];
    for (uint32_t k = 0; k < f->n; k++) {
      free(f->terms[k].t);
      free(f->terms[k].docs);
      free(f->terms[k].val);
    }
    free(f->terms);
  }
  x->nfields = 0;
}

/* "dir/name.ext" of a segment file (ext: tern_seg_ext[f], ".tim" ...), malloc'd. */
static inline char *fx_file(const char *dir, const char *name, const char *ext) {
  char fn[64];
  snprintf(fn, sizeof fn, "%s%s", name, ext);
  return tu_path(dir, fn);
}

static inline int fx_write(const fx_seg *x, const char *dir, const char *name) {
  tern_segw *w;
  int rc = tern_segw_open(&w, dir, name, &x->o);
  if (rc) return rc;
  for (size_t i = 0; i < x->nfields && rc == TERN_OK; i++) {
    const fx_field *f = &x->fields[i];
    rc = tern_segw_field(w, f->name, strlen(f->name), f->flags, f->threshold);
    for (uint32_t k = 0; k < f->n && rc == TERN_OK; k++) {
      const fx_term *t = &f->terms[k];
      rc = tern_segw_term(w, t->t, t->len, t->docs, t->df, t->val, t->vlen);
    }
  }
  if (rc != TERN_OK) {
    tern_segw_abort(w);
    return rc;
  }
  return tern_segw_finish(w, x->max_doc);
}

/* Index of the first reference term >= key (lower bound). */
static inline uint32_t fx_lower_bound(const fx_field *f, const uint8_t *key, size_t len) {
  uint32_t lo = 0, hi = f->n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (fx_cmp(f->terms[mid].t, f->terms[mid].len, key, len) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* A key near a random present term: usually absent. */
static inline uint32_t fx_near_key(tu_rng *r, const fx_field *f, uint8_t *key) {
  const fx_term *src = &f->terms[tu_below(r, f->n)];
  uint32_t klen = src->len;
  memcpy(key, src->t, klen);
  switch (tu_below(r, 5)) {
  case 0: key[tu_below(r, klen)] ^= (uint8_t)(1 + tu_below(r, 255)); break;
  case 1:
    if (klen > 1) klen--;
    break;
  case 2:
    if (klen < TERN_KEY_MAX) key[klen++] = (uint8_t)tu_below(r, 256);
    break;
  case 3: key[klen - 1]++; break;
  default: key[tu_below(r, klen)] = (uint8_t)tu_below(r, 256); break;
  }
  return klen;
}

#endif
