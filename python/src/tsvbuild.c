/* SPDX-License-Identifier: MIT */
/*
 * tsvbuild.c — the second half of tern.dask's C path for TSV sources:
 *
 *  _tsv_build(blobs, path, dup_error, **options): the records of one key
 *    range (the bytes objects _tsv_split made for it, tsvrec.h) sorted by
 *    key and written as one segment at `path` with tern_builder_*.  Two
 *    records with the same key are an error: dup_error(key) is raised (the
 *    documented rule without a version column).  Returns the builder's
 *    info dict and "seconds", the (sort, add, finish) times ({"documents":
 *    0} and nothing written when no record).
 *
 * Sorting: each record becomes a 16-byte entry, the 8 key bytes after the
 * partition's common prefix (big-endian, zero-padded) and the record's
 * address; an LSD radix sort on those bytes (skipping the ones every entry
 * shares), then runs of equal prefixes sorted by their whole keys.  All of
 * it, and the building, without the GIL.
 */
#include "pytern.h"

#ifdef PT_HAVE_TSV

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tsvrec.h"

typedef struct ent {
  uint64_t pfx;
  const uint8_t *rec;
} ent;

typedef struct blobs {
  pt_bytes *b;
  Py_ssize_t n;
} blobs;

static const uint8_t *rec_key(const uint8_t *rec, size_t *klen) {
  *klen = tsvrec_get32(rec);
  return rec + TSVREC_HEAD;
}

/* The size of the record at p (at most `room` bytes), 0 when it does not
 * fit: a damaged blob. */
static size_t rec_size(const uint8_t *p, size_t room) {
  if (room < TSVREC_HEAD) return 0;
  uint64_t n = TSVREC_HEAD + (uint64_t)tsvrec_get32(p) + tsvrec_get32(p + 4);
  uint32_t nterms = tsvrec_get32(p + 8);
  for (uint32_t i = 0; i < nterms; i++) {
    if (n + TSVREC_TERM_HEAD > room) return 0;
    n += TSVREC_TERM_HEAD + (uint64_t)tsvrec_get32(p + n) + tsvrec_get32(p + n + 4);
  }
  return n <= room ? (size_t)n : 0;
}

/* Counts the records (n) and checks every blob's framing. */
static int count_records(const blobs *bl, size_t *n) {
  *n = 0;
  for (Py_ssize_t i = 0; i < bl->n; i++) {
    const uint8_t *p = (const uint8_t *)bl->b[i].data;
    size_t len = (size_t)bl->b[i].len;
    for (size_t at = 0; at < len; (*n)++) {
      size_t sz = rec_size(p + at, len - at);
      if (!sz) return -1;
      at += sz;
    }
  }
  return 0;
}

static size_t common_prefix(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
  size_t n = alen < blen ? alen : blen, i = 0;
  while (i < n && a[i] == b[i]) i++;
  return i;
}

static uint64_t prefix_at(const uint8_t *key, size_t klen, size_t d) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; i++) v = v << 8 | (d + i < klen ? key[d + i] : 0);
  return v;
}

/* The entries of every record, their prefixes after the keys' common
 * prefix. */
static void fill_entries(const blobs *bl, ent *e, size_t n) {
  size_t k = 0, d = SIZE_MAX, flen = 0;
  const uint8_t *first = NULL;
  for (Py_ssize_t i = 0; i < bl->n; i++) {
    const uint8_t *p = (const uint8_t *)bl->b[i].data;
    size_t len = (size_t)bl->b[i].len;
    for (size_t at = 0; at < len; at += rec_size(p + at, len - at)) {
      e[k++].rec = p + at;
      size_t klen;
      const uint8_t *key = rec_key(p + at, &klen);
      if (!first) {
        first = key;
        flen = d = klen;
      } else {
        size_t c = common_prefix(first, flen, key, klen);
        if (c < d) d = c;
      }
    }
  }
  assert(k == n);
  for (size_t i = 0; i < n; i++) {
    size_t klen;
    const uint8_t *key = rec_key(e[i].rec, &klen);
    e[i].pfx = prefix_at(key, klen, d);
  }
}

static int cmp_keys(const void *a, const void *b) {
  size_t al, bl;
  const uint8_t *ak = rec_key(((const ent *)a)->rec, &al), *bk = rec_key(((const ent *)b)->rec, &bl);
  int c = memcmp(ak, bk, al < bl ? al : bl);
  return c ? c : (al > bl) - (al < bl);
}

/* LSD radix sort on pfx, one byte a pass (a pass every entry agrees on is
 * skipped), then runs of equal pfx by their whole keys. */
static int sort_entries(ent *e, size_t n) {
  ent *tmp = malloc((n ? n : 1) * sizeof *tmp), *src = e, *dst = tmp;
  if (!tmp) return -ENOMEM;
  for (int shift = 0; shift < 64; shift += 8) {
    size_t cnt[256] = {0};
    for (size_t i = 0; i < n; i++) cnt[(src[i].pfx >> shift) & 0xff]++;
    if (n && cnt[(src[0].pfx >> shift) & 0xff] == n) continue;
    size_t sum = 0;
    for (int b = 0; b < 256; b++) {
      size_t c = cnt[b];
      cnt[b] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; i++) dst[cnt[(src[i].pfx >> shift) & 0xff]++] = src[i];
    ent *t = src;
    src = dst;
    dst = t;
  }
  if (src != e) memcpy(e, src, n * sizeof *e);
  free(tmp);
  for (size_t i = 0, j; i < n; i = j) {
    for (j = i + 1; j < n && e[j].pfx == e[i].pfx; j++) {
    }
    if (j - i > 1) qsort(e + i, j - i, sizeof *e, cmp_keys);
  }
  return 0;
}

#define PREFETCH 12

/* Adds the sorted records (no key twice) to the builder. */
static int add_all(tern_builder *b, const ent *e, size_t n) {
  tern_term *terms = NULL;
  size_t cap = 0;
  int st = TERN_OK;
  for (size_t i = 0; i < n && st == TERN_OK; i++) {
    /* The records are visited in key order, scattered over the blobs: a
     * cache miss each unless fetched ahead. */
    if (i + PREFETCH < n) __builtin_prefetch(e[i + PREFETCH].rec);
    const uint8_t *p = e[i].rec;
    uint32_t klen = tsvrec_get32(p), vlen = tsvrec_get32(p + 4), nt = tsvrec_get32(p + 8);
    const uint8_t *key = p + TSVREC_HEAD, *val = key + klen, *t = val + vlen;
    if (nt > cap) {
      tern_term *g = realloc(terms, nt * sizeof *g);
      if (!g) {
        st = TERN_ENOMEM;
        break;
      }
      terms = g;
      cap = nt;
    }
    for (uint32_t j = 0; j < nt; j++) {
      uint32_t flen = tsvrec_get32(t), tlen = tsvrec_get32(t + 4);
      terms[j].field = (const char *)t + TSVREC_TERM_HEAD;
      terms[j].term = t + TSVREC_TERM_HEAD + flen;
      terms[j].len = tlen;
      t += TSVREC_TERM_HEAD + flen + tlen;
    }
    st = tern_builder_add(b, key, klen, val, vlen, terms, nt);
  }
  free(terms);
  return st;
}

typedef struct build_job {
  const blobs *bl;
  const char *path;
  const tern_options *opts;
  size_t n, dup;
  ent *e;
  tern_build_info info;
  int damaged;
  double t_sort, t_add, t_finish; /* seconds of each phase (the log shows them) */
} build_job;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Without the GIL.  Returns a tern status (TERN_OK with j->dup < n: a
 * duplicate key, nothing built). */
static int run_build(build_job *j) {
  if (count_records(j->bl, &j->n)) {
    j->damaged = 1;
    return TERN_EINVAL;
  }
  j->dup = SIZE_MAX;
  j->info.documents = 0;
  if (j->n == 0) return TERN_OK;
  double t0 = now();
  j->e = malloc(j->n * sizeof *j->e);
  if (!j->e) return TERN_ENOMEM;
  fill_entries(j->bl, j->e, j->n);
  if (sort_entries(j->e, j->n)) return TERN_ENOMEM;
  for (size_t i = 1; i < j->n; i++) /* different prefixes: different keys, no record read */
    if (j->e[i - 1].pfx == j->e[i].pfx && cmp_keys(&j->e[i - 1], &j->e[i]) == 0) {
      j->dup = i;
      return TERN_OK;
    }
  double t1 = now();
  j->t_sort = t1 - t0;
  tern_builder *b;
  int st = tern_builder_open(&b, j->path, j->opts);
  if (st) return st;
  st = add_all(b, j->e, j->n);
  if (st) {
    tern_builder_abort(b);
    return st;
  }
  double t2 = now();
  j->t_add = t2 - t1;
  st = tern_builder_finish(b, &j->info);
  j->t_finish = now() - t2;
  return st;
}

static int get_blobs(PyObject *seq, blobs *bl) {
  bl->n = PySequence_Fast_GET_SIZE(seq);
  bl->b = PyMem_Calloc((size_t)bl->n + 1, sizeof *bl->b);
  if (!bl->b) return PyErr_NoMemory(), -1;
  for (Py_ssize_t i = 0; i < bl->n; i++)
    if (pt_bytes_get(PySequence_Fast_GET_ITEM(seq, i), &bl->b[i], "blob") < 0) {
      bl->n = i;
      return -1;
    }
  return 0;
}

static PyObject *build_result(build_job *j, int st, PyObject *dup_error, PyObject *path) {
  if (st && j->damaged)
    return pt_raise_msg(TERN_EINVAL, "_tsv_build: a record blob is damaged (not made by "
                                     "_tsv_split)");
  if (st) return pt_raise(st);
  if (j->dup != SIZE_MAX) {
    size_t klen;
    const uint8_t *key = rec_key(j->e[j->dup].rec, &klen);
    PyObject *exc = PyObject_CallFunction(dup_error, "y#", (const char *)key, (Py_ssize_t)klen);
    if (exc) {
      PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
      Py_DECREF(exc);
    }
    return NULL;
  }
  if (j->info.documents == 0) return Py_BuildValue("{sK}", "documents", 0ULL);
  return Py_BuildValue("{sKsy#sy#sKsssOs(ddd)}", "documents", (unsigned long long)j->info.documents,
                       "first_key", (const char *)j->info.first_key,
                       (Py_ssize_t)j->info.first_len, "last_key",
                       (const char *)j->info.last_key, (Py_ssize_t)j->info.last_len, "bytes",
                       (unsigned long long)j->info.bytes, "name", j->info.name, "path", path,
                       "seconds", j->t_sort, j->t_add, j->t_finish);
}

PyObject *pt_tsv_build(PyObject *m, PyObject *args, PyObject *kw) {
  (void)m;
  static char *kwlist[] = {"blobs", "path", "dup_error", "pulsing_threshold",
                           "inline_value_max", "bloom_bits_per_key", "fields", NULL};
  PyObject *bseq, *path, *fspath = NULL, *dup_error, *pt = NULL, *ivm = NULL, *bb = NULL,
           *fields = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|$OOOO", kwlist, &bseq, &path, &dup_error, &pt,
                                   &ivm, &bb, &fields))
    return NULL;
  if (!PyUnicode_FSConverter(path, &fspath)) return NULL;
  PyObject *seq = PySequence_Fast(bseq, "blobs must be a sequence of bytes");
  PyObject *names = PyList_New(0), *r = NULL;
  blobs bl = {NULL, 0};
  tern_options o;
  tern_field_option *fo = NULL;
  if (!seq || !names || get_blobs(seq, &bl) < 0 ||
      pt_options_get(pt, ivm, bb, NULL, NULL, fields, &o, &fo, names) < 0)
    goto out;
  build_job j = {&bl, PyBytes_AS_STRING(fspath), &o, 0, SIZE_MAX, NULL, {0}, 0, 0, 0, 0};
  int st;
  Py_BEGIN_ALLOW_THREADS
  st = run_build(&j);
  Py_END_ALLOW_THREADS
  r = build_result(&j, st, dup_error, path);
  free(j.e);
out:
  for (Py_ssize_t i = 0; i < bl.n; i++) pt_bytes_release(&bl.b[i]);
  PyMem_Free(bl.b);
  PyMem_Free(fo);
  Py_XDECREF(names);
  Py_XDECREF(seq);
  Py_DECREF(fspath);
  return r;
}

#endif /* PT_HAVE_TSV */
