/* SPDX-License-Identifier: MIT */
/*
 * test_export_roundtrip.c — export → build → ingest into another index
 * gives the same index.
 *
 * A source index of random documents (binary keys, values up to 10 KB,
 * secondary terms) spread over bulk segments, flushed commits and the
 * write buffer, with deletes, rewrites and a deleted range, is cut into
 * parts by tern_split_keys; each part is exported into its own builder and
 * all are ingested into a fresh index in one call (and, separately, the
 * whole range as one segment).  The target's full scan (keys and values,
 * both ways) and its search hits (every vocabulary term and random
 * conjunctions, keys and values in key order) must equal the source's,
 * and both must equal the reference the test kept.
 */
#include "tests/engine/enginetest.h"

enum { N = 6000 };

typedef struct kvlist {
  size_t n, cap;
  tern_slice *k, *v;
} kvlist;

static void kv_push(kvlist *l, tern_slice k, tern_slice v) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 256;
    l->k = realloc(l->k, l->cap * sizeof *l->k);
    l->v = realloc(l->v, l->cap * sizeof *l->v);
    assert_true(l->k && l->v);
  }
  void *kc = malloc(k.len ? k.len : 1), *vc = malloc(v.len ? v.len : 1);
  assert_true(kc && vc);
  if (k.len) memcpy(kc, k.data, k.len);
  if (v.len) memcpy(vc, v.data, v.len);
  l->k[l->n] = (tern_slice){kc, k.len};
  l->v[l->n++] = (tern_slice){vc, v.len};
}

static void kv_free(kvlist *l) {
  for (size_t i = 0; i < l->n; i++) {
    free((void *)l->k[i].data);
    free((void *)l->v[i].data);
  }
  free(l->k);
  free(l->v);
  memset(l, 0, sizeof *l);
}

static void kv_equal(const kvlist *a, const kvlist *b) {
  assert_int_equal(a->n, b->n);
  for (size_t i = 0; i < a->n; i++) {
    assert_int_equal(a->k[i].len, b->k[i].len);
    assert_memory_equal(a->k[i].data, b->k[i].data, a->k[i].len);
    assert_int_equal(a->v[i].len, b->v[i].len);
    if (a->v[i].len) assert_memory_equal(a->v[i].data, b->v[i].data, a->v[i].len);
  }
}

/* The whole scan forward; backward it must give the same, reversed. */
static void scan(tern_snapshot *s, kvlist *out) {
  tern_cursor *c;
  ET_OK(tern_cursor_open(&c, s, NULL));
  int rc;
  while ((rc = tern_cursor_next(c)) == TERN_OK) {
    tern_slice k, v;
    ET_OK(tern_cursor_key(c, &k));
    ET_OK(tern_cursor_value(c, &v));
    kv_push(out, k, v);
  }
  assert_int_equal(rc, TERN_NOTFOUND);
  size_t i = out->n;
  while ((rc = tern_cursor_prev(c)) == TERN_OK) {
    tern_slice k;
    ET_OK(tern_cursor_key(c, &k));
    assert_true(i > 0);
    i--;
    assert_int_equal(k.len, out->k[i].len);
    assert_memory_equal(k.data, out->k[i].data, k.len);
  }
  assert_int_equal(i, 0);
  tern_cursor_close(c);
}

static int hit_cb(void *payload, tern_slice key, tern_slice val) {
  kv_push(payload, key, val);
  return 0;
}

static void hits(tern_snapshot *s, const tern_term *t, size_t nt, kvlist *out) {
  tern_postings *p;
  ET_OK(tern_postings_open(&p, s, t, nt));
  ET_OK(tern_postings_each_by_key(p, 1, hit_cb, out));
  tern_postings_close(p);
}

/* The reference's live docs in key order. */
static uint64_t g_salt;
static int cmp_id(const void *x, const void *y) {
  uint8_t a[ET_KEY_MAX], b[ET_KEY_MAX];
  size_t al = et_key(*(const uint32_t *)x, g_salt, a), bl = et_key(*(const uint32_t *)y, g_salt, b);
  size_t n = al < bl ? al : bl;
  int c = memcmp(a, b, n);
  return c ? c : (al > bl) - (al < bl);
}

static void reference(const et_model *m, const et_term *t, size_t nt, kvlist *out) {
  uint32_t *ids = malloc(m->n * sizeof *ids);
  size_t n = 0;
  for (uint32_t id = 0; id < m->n; id++) {
    if (!m->docs[id].present) continue;
    size_t j = 0;
    while (j < nt && et_doc_has(&m->docs[id], &t[j]))
      j++;
    if (j == nt) ids[n++] = id;
  }
  qsort(ids, n, sizeof *ids, cmp_id);
  for (size_t i = 0; i < n; i++) {
    uint8_t k[ET_KEY_MAX];
    size_t kl = et_key(ids[i], g_salt, k);
    const et_doc *d = &m->docs[ids[i]];
    kv_push(out, (tern_slice){k, kl}, (tern_slice){d->val, d->vlen});
  }
  free(ids);
}

/* The source: every doc put once over bulk, flushed and buffered commits,
 * then rewrites, deletes and a deleted range, mirrored in m. */
static tern_index *make_source(tu_rng *r, const char *dir, et_model *m) {
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = 64 << 10;
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, &o));
  uint8_t key[ET_KEY_MAX];
  for (int round = 0; round < 4; round++) {
    tern_txn *t;
    ET_OK(tern_txn_begin(&t, idx, round == 0 ? TERN_TXN_BULK : 0));
    for (uint32_t id = (uint32_t)round; id < N; id += 4) {
      et_doc_random(r, &m->docs[id]);
      tern_term tt[8];
      size_t nt = et_doc_terms(&m->docs[id], tt);
      ET_OK(tern_put(t, key, et_key(id, g_salt, key), m->docs[id].val, m->docs[id].vlen, tt, nt));
    }
    ET_OK(tern_commit(t));
  }
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, 0));
  for (uint32_t id = 0; id < N; id += 1 + (uint32_t)tu_below(r, 30)) {
    size_t kl = et_key(id, g_salt, key);
    if (tu_below(r, 2)) {
      ET_OK(tern_delete(t, key, kl));
      et_doc_clear(&m->docs[id]);
    } else {
      et_doc_random(r, &m->docs[id]);
      tern_term tt[8];
      size_t nt = et_doc_terms(&m->docs[id], tt);
      ET_OK(tern_put(t, key, kl, m->docs[id].val, m->docs[id].vlen, tt, nt));
    }
  }
  /* keys 'k' + id big-endian: ids [1000, 1300) whose first byte is 'k' */
  uint8_t fk[5] = {'k', 0, 0, 1000 >> 8, 1000 & 255}, tk[5] = {'k', 0, 0, 1300 >> 8, 1300 & 255};
  tern_slice from = {fk, 5}, to = {tk, 5};
  ET_OK(tern_delete_range(t, &from, &to));
  for (uint32_t id = 1000; id < 1300; id++)
    if (id % 3 == 1) et_doc_clear(&m->docs[id]);
  ET_OK(tern_commit(t));
  return idx;
}

static void compare(tu_rng *r, tern_snapshot *a, tern_snapshot *b, const et_model *m) {
  kvlist la = {0}, lb = {0}, lr = {0};
  scan(a, &la);
  scan(b, &lb);
  reference(m, NULL, 0, &lr);
  kv_equal(&la, &lr);
  kv_equal(&lb, &lr);
  kv_free(&la);
  kv_free(&lb);
  kv_free(&lr);
  for (size_t q = 0; q < ET_VOCAB + 8; q++) {
    et_term t[3];
    size_t nt = q < ET_VOCAB ? 1 : 2 + (size_t)tu_below(r, 2);
    for (size_t i = 0; i < nt; i++)
      t[i] = q < ET_VOCAB ? et_vocab(q) : et_vocab((size_t)tu_below(r, ET_VOCAB));
    tern_term tt[3];
    for (size_t i = 0; i < nt; i++)
      tt[i] = et_tern_term(&t[i]);
    hits(a, tt, nt, &la);
    hits(b, tt, nt, &lb);
    reference(m, t, nt, &lr);
    kv_equal(&la, &lr);
    kv_equal(&lb, &lr);
    kv_free(&la);
    kv_free(&lb);
    kv_free(&lr);
  }
  uint64_t ca, cb;
  ET_OK(tern_snapshot_count(a, &ca));
  ET_OK(tern_snapshot_count(b, &cb));
  assert_int_equal(ca, cb);
  assert_int_equal(ca, et_model_count(m));
}

/* Exports src in `parts` parts cut by tern_split_keys, ingests them into
 * a fresh index under dir, and compares. */
static void round_trip(tu_rng *r, const char *dir, tern_index *src, const et_model *m, size_t parts,
                       unsigned dst_flags) {
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, src));
  tern_slice b[16];
  ET_OK(tern_split_keys(s, parts, b));
  size_t cuts = 0;
  while (cuts + 1 < parts && b[cuts].len)
    cuts++;
  char **paths = calloc(cuts + 1, sizeof *paths);
  uint64_t docs = 0;
  for (size_t i = 0; i <= cuts; i++) {
    char name[64];
    sprintf(name, "part%zu-of-%zu", i, parts);
    paths[i] = tu_path(dir, name);
    tern_builder *bl;
    ET_OK(tern_builder_open(&bl, paths[i], NULL));
    ET_OK(tern_export(s, i ? &b[i - 1] : NULL, i < cuts ? &b[i] : NULL, bl));
    tern_build_info info;
    ET_OK(tern_builder_finish(bl, &info));
    if (info.documents) ET_OK(tern_builder_verify(paths[i], NULL));
    docs += info.documents;
  }
  assert_int_equal(docs, et_model_count(m));
  printf("%zu parts asked: %zu segments, %llu documents\n", parts, cuts + 1,
         (unsigned long long)docs);
  char name[64];
  sprintf(name, "dst-%zu", parts);
  char *dst = tu_path(dir, name);
  tern_index *d;
  ET_OK(tern_open(&d, dst, TERN_CREATE | dst_flags, NULL));
  ET_OK(tern_ingest(d, (const char *const *)paths, cuts + 1, 0));
  tern_snapshot *ds;
  ET_OK(tern_snapshot_open(&ds, d));
  compare(r, s, ds, m);
  ET_OK(tern_snapshot_close(ds));
  ET_OK(tern_verify(d));
  /* and after a reopen and a compaction of the target */
  ET_OK(tern_close(d));
  ET_OK(tern_open(&d, dst, dst_flags, NULL));
  ET_OK(tern_compact(d));
  ET_OK(tern_snapshot_open(&ds, d));
  compare(r, s, ds, m);
  ET_OK(tern_snapshot_close(ds));
  ET_OK(tern_close(d));
  ET_OK(tern_snapshot_close(s));
  for (size_t i = 0; i + 1 < parts; i++)
    free((void *)b[i].data);
  for (size_t i = 0; i <= cuts; i++)
    free(paths[i]);
  free(paths);
  free(dst);
}

static void test_round_trip(void **state) {
  (void)state;
  uint64_t seed = tu_seed();
  printf("seed %llu\n", (unsigned long long)seed);
  tu_rng r;
  tu_rng_init(&r, seed);
  g_salt = tu_next(&r);
  char *dir = tu_tmpdir("export_roundtrip");
  char *srcdir = tu_path(dir, "src");
  et_model m;
  et_model_init(&m, N);
  tern_index *src = make_source(&r, srcdir, &m);
  round_trip(&r, dir, src, &m, 1, TERN_FOREGROUND);
  round_trip(&r, dir, src, &m, 5, 0);
  round_trip(&r, dir, src, &m, 16, TERN_FOREGROUND);
  ET_OK(tern_close(src));
  et_model_free(&m);
  tu_rmtree(dir);
  free(srcdir);
  free(dir);
}

int main(void) {
  et_prefer_tmpfs();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
