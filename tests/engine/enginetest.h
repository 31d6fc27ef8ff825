/* SPDX-License-Identifier: MIT */
/*
 * enginetest.h — what the engine tests share: keys made from small ids
 * (binary bytes, NUL included, lengths 5 to 1005), random documents, and a
 * reference model of an index (id -> value and terms) to compare against.
 */
#ifndef TERN_ENGINETEST_H
#define TERN_ENGINETEST_H

#include "tests/common/testutil.h"
#include "tern.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* These tests check logic, not the durability of fsync (a killed process
 * loses nothing the kernel holds), so they run in tmpfs when TMPDIR is
 * unset: fsync there costs nothing and thousands of commits take seconds. */
static inline void et_prefer_tmpfs(void) {
  if (!getenv("TMPDIR") && access("/dev/shm", W_OK) == 0) setenv("TMPDIR", "/dev/shm", 0);
}

/* Options with the defaults but merge_factor `factor` (0: no background
 * merges), for the tests whose segments must stay as they wrote them or
 * that count on a merge at a given number. */
static inline tern_options et_options_merging(uint32_t factor) {
  tern_options o;
  tern_options_init(&o);
  o.merge_factor = factor;
  return o;
}

/* How many segments idx's last commit holds. */
static inline size_t et_segment_count(tern_index *idx) {
  tern_stats *s;
  if (tern_stats_get(&s, idx) != TERN_OK) fail_msg("tern_stats_get: %s", tern_errmsg());
  size_t n = s->nsegments;
  tern_stats_free(s);
  return n;
}

#define ET_KEY_MAX 1024

/* Key of id: a first byte from {0x00, 'k', 0xff}, the id big-endian, then a
 * tail derived from id and salt; every 50th key is over 1000 bytes. */
static inline size_t et_key(uint32_t id, uint64_t salt, uint8_t *out) {
  static const uint8_t first[3] = {0x00, 'k', 0xff};
  tu_rng r = {salt ^ ((uint64_t)id * 0x9E3779B97F4A7C15ull) ^ 0x5bd1e995u};
  size_t tail = id % 50 == 7 ? 1000 : (size_t)tu_below(&r, 12);
  out[0] = first[id % 3];
  out[1] = (uint8_t)(id >> 24);
  out[2] = (uint8_t)(id >> 16);
  out[3] = (uint8_t)(id >> 8);
  out[4] = (uint8_t)id;
  tu_fill(&r, out + 5, tail);
  return 5 + tail;
}

static inline uint32_t et_key_id(const void *key, size_t len) {
  const uint8_t *k = key;
  assert_true(len >= 5);
  return (uint32_t)k[1] << 24 | (uint32_t)k[2] << 16 | (uint32_t)k[3] << 8 | k[4];
}

/* ---------------------------------------------------------------- model */

#define ET_FIELDS 3
static const char *const et_field_names[ET_FIELDS] = {"a", "b", "color"};

typedef struct et_term {
  uint8_t field; /* index in et_field_names */
  uint8_t len;
  uint8_t bytes[4];
} et_term;

typedef struct et_doc {
  int present;
  size_t vlen;
  uint8_t *val;
  size_t nterms;
  et_term terms[6];
} et_doc;

typedef struct et_model {
  size_t n; /* key ids 0..n-1 */
  et_doc *docs;
} et_model;

static inline void et_model_init(et_model *m, size_t n) {
  m->n = n;
  m->docs = calloc(n, sizeof *m->docs);
  assert_non_null(m->docs);
}

static inline void et_doc_clear(et_doc *d) {
  free(d->val);
  memset(d, 0, sizeof *d);
}

static inline void et_doc_copy(et_doc *dst, const et_doc *src) {
  et_doc_clear(dst);
  *dst = *src;
  dst->val = NULL;
  if (src->present && src->vlen) {
    dst->val = malloc(src->vlen);
    assert_non_null(dst->val);
    memcpy(dst->val, src->val, src->vlen);
  }
}

static inline void et_model_copy(et_model *dst, const et_model *src) {
  if (dst->n != src->n) {
    for (size_t i = 0; i < dst->n; i++)
      et_doc_clear(&dst->docs[i]);
    free(dst->docs);
    et_model_init(dst, src->n);
  }
  for (size_t i = 0; i < src->n; i++)
    et_doc_copy(&dst->docs[i], &src->docs[i]);
}

static inline void et_model_free(et_model *m) {
  for (size_t i = 0; m->docs && i < m->n; i++)
    et_doc_clear(&m->docs[i]);
  free(m->docs);
  m->docs = NULL;
  m->n = 0;
}

static inline size_t et_model_count(const et_model *m) {
  size_t c = 0;
  for (size_t i = 0; i < m->n; i++)
    c += m->docs[i].present != 0;
  return c;
}

/* The term vocabulary: field a: "t0".."t4"; b: 1-2 bytes over {0,1,'z'};
 * color: "comm". */
#define ET_VOCAB (5 + 3 + 9 + 1)
static inline et_term et_vocab(size_t i) {
  static const uint8_t alpha[3] = {0x00, 0x01, 'z'};
  et_term t = {0};
  if (i < 5) {
    t.field = 0;
    t.len = 2;
    t.bytes[0] = 't';
    t.bytes[1] = (uint8_t)('0' + i);
  } else if (i < 8) {
    t.field = 1;
    t.len = 1;
    t.bytes[0] = alpha[i - 5];
  } else if (i < 17) {
    t.field = 1;
    t.len = 2;
    t.bytes[0] = alpha[(i - 8) / 3];
    t.bytes[1] = alpha[(i - 8) % 3];
  } else {
    t.field = 2;
    t.len = 4;
    memcpy(t.bytes, "comm", 4);
  }
  return t;
}

static inline int et_doc_has(const et_doc *d, const et_term *t) {
  for (size_t i = 0; i < d->nterms; i++)
    if (d->terms[i].field == t->field && d->terms[i].len == t->len &&
        !memcmp(d->terms[i].bytes, t->bytes, t->len))
      return 1;
  return 0;
}

/* A random document; big values sometimes (beyond any inline limit). */
static inline void et_doc_random(tu_rng *r, et_doc *d) {
  et_doc_clear(d);
  d->present = 1;
  uint64_t p = tu_below(r, 100);
  d->vlen = p < 10   ? 0
            : p < 70 ? 1 + tu_below(r, 40)
            : p < 97 ? 41 + tu_below(r, 300)
                     : 1000 + tu_below(r, 9000);
  if (d->vlen) {
    d->val = malloc(d->vlen);
    assert_non_null(d->val);
    tu_fill(r, d->val, d->vlen);
  }
  d->nterms = (size_t)tu_below(r, 5);
  for (size_t i = 0; i < d->nterms; i++)
    d->terms[i] = et_vocab((size_t)tu_below(r, ET_VOCAB));
}

/* tern_terms of a model doc (field names static, bytes in d). */
static inline size_t et_doc_terms(const et_doc *d, tern_term *out) {
  for (size_t i = 0; i < d->nterms; i++) {
    out[i].field = et_field_names[d->terms[i].field];
    out[i].term = d->terms[i].bytes;
    out[i].len = d->terms[i].len;
  }
  return d->nterms;
}

static inline tern_term et_tern_term(const et_term *t) {
  tern_term x = {et_field_names[t->field], t->bytes, t->len};
  return x;
}

#define ET_OK(expr)                                                                                \
  do {                                                                                             \
    int et_rc_ = (expr);                                                                           \
    if (et_rc_ != TERN_OK) {                                                                       \
      fprintf(stderr, "%s:%d: %s = %d (%s): %s\n", __FILE__, __LINE__, #expr, et_rc_,              \
              tern_strerror(et_rc_), tern_errmsg());                                               \
      fail();                                                                                      \
    }                                                                                              \
  } while (0)

#endif
