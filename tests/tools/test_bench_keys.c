/* SPDX-License-Identifier: MIT */
/*
 * test_bench_keys.c — the benchmark's key generators and helpers
 * (tools/bench/keys_common.c, bench_common.c), compiled into this test:
 * every shape's format, uniqueness and order checked against an
 * independent reference (a qsort+memcmp copy), absent keys checked absent,
 * samples checked distinct, and the option parsers and median.
 */
#include "tests/common/testutil.h"

#include "tools/bench/bench_common.c"
#include "tools/bench/keys_common.c"

/* A key as the reference sees it: NUL-free keys are compared by strcmp
 * (the generated shapes never hold NUL), an independent order. */
typedef struct ref_key {
  char *s;
} ref_key;
static int cmp_ref(const void *a, const void *b) {
  return strcmp(((const ref_key *)a)->s, ((const ref_key *)b)->s);
}

/* The keys copied as C strings and sorted by qsort: the reference. */
static ref_key *reference_sorted(const bench_keys *k) {
  ref_key *r = malloc((k->n + 1) * sizeof *r);
  assert_non_null(r);
  for (size_t i = 0; i < k->n; i++) {
    size_t len = bench_key_len(k, i);
    assert_true(len >= 1 && len <= BENCH_KEY_MAX);
    assert_null(memchr(bench_key_at(k, i), 0, len));
    r[i].s = malloc(len + 1);
    memcpy(r[i].s, bench_key_at(k, i), len);
    r[i].s[len] = 0;
  }
  qsort(r, k->n, sizeof *r, cmp_ref);
  return r;
}
static void reference_free(ref_key *r, size_t n) {
  for (size_t i = 0; i < n; i++) free(r[i].s);
  free(r);
}

/* Unique, and order[] lists exactly the reference order. */
static void check_unique_and_ordered(const bench_keys *k) {
  ref_key *ref = reference_sorted(k);
  for (size_t j = 0; j < k->n; j++) {
    if (j > 0) assert_true(strcmp(ref[j - 1].s, ref[j].s) < 0);
    uint32_t x = k->order[j];
    assert_int_equal(strlen(ref[j].s), bench_key_len(k, x));
    assert_memory_equal(ref[j].s, bench_key_at(k, x), bench_key_len(k, x));
  }
  assert_true(bench_keys_check_sorted_unique(k));
  reference_free(ref, k->n);
}

static int is_base36(uint8_t c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z'); }
static int is_hex(uint8_t c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

static uint64_t hex_value(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++)
    v = v << 4 | (uint64_t)(p[i] <= '9' ? p[i] - '0' : p[i] - 'a' + 10);
  return v;
}

static uint64_t dec_value(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++)
    v = v * 10 + (uint64_t)(p[i] - '0');
  return v;
}

static void check_shape(const bench_keys *k) {
  for (size_t i = 0; i < k->n; i++) {
    const uint8_t *p = bench_key_at(k, i);
    size_t len = bench_key_len(k, i);
    size_t w = bench_key_width(k->shape);
    if (w) assert_int_equal(len, w);
    switch (k->shape) {
    case BENCH_KEYS_RANDOM:
      for (size_t c = 0; c < 16; c++)
        assert_true(is_base36(p[c]));
      break;
    case BENCH_KEYS_UUID4:
      for (size_t c = 0; c < 36; c++) {
        if (c == 8 || c == 13 || c == 18 || c == 23)
          assert_int_equal(p[c], '-');
        else
          assert_true(is_hex(p[c]));
      }
      assert_int_equal(p[14], '4');
      assert_non_null(strchr("89ab", p[19]));
      break;
    case BENCH_KEYS_SEQUENTIAL:
      for (size_t c = 0; c < 16; c++)
        assert_true(p[c] >= '0' && p[c] <= '9');
      break;
    case BENCH_KEYS_TIMEPREFIXED:
      for (size_t c = 0; c < 16; c++)
        assert_true(is_hex(p[c]));
      for (size_t c = 16; c < 24; c++)
        assert_true(is_base36(p[c]));
      assert_true(hex_value(p, 16) >= TIMEPREFIX_START_MS);
      break;
    case BENCH_KEYS_DECIMAL:
      assert_true(len >= 4 && len <= 12 && p[0] != '0');
      for (size_t c = 0; c < len; c++) assert_true(p[c] >= '0' && p[c] <= '9');
      break;
    case BENCH_KEYS_PATHS:
      assert_true(len >= 30 && len <= BENCH_KEY_MAX && memcmp(p, "http", 4) == 0);
      break;
    case BENCH_KEYS_PACKAGES: assert_true(len >= 4 && len <= 80); break;
    case BENCH_KEYS_EMAILS:
      assert_true(len >= 8 && len <= 50 && memchr(p, '@', len) != NULL);
      break;
    case BENCH_KEYS_VARLEN:
      assert_true(len >= 4 && len <= BENCH_KEY_MAX);
      for (size_t c = 0; c < len; c++) assert_true(is_base36(p[c]));
      break;
    default: break;
    }
  }
}

static void test_shapes_unique_and_well_formed(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 1);
  size_t n = 20000 * tu_scale() + (size_t)tu_below(&r, 1000);
  for (int s = 0; s < BENCH_KEYS_NSHAPES; s++) {
    bench_keys k;
    assert_int_equal(bench_keys_generate(&k, (bench_key_shape)s, n, tu_next(&r)), 0);
    assert_int_equal(k.n, n);
    check_shape(&k);
    check_unique_and_ordered(&k);
    bench_keys_free(&k);
  }
}

static void test_shape_specifics(void **state) {
  (void)state;
  bench_keys k;
  /* sequential: the even numbers 0, 2, 4, ... in input order */
  assert_int_equal(bench_keys_generate(&k, BENCH_KEYS_SEQUENTIAL, 1000, 7), 0);
  for (size_t i = 0; i < k.n; i++)
    assert_int_equal(dec_value(bench_key_at(&k, i), 16), 2 * i);
  bench_keys_free(&k);
  /* timeprefixed: timestamps never decrease in input order (a redrawn
   * duplicate would be the only exception; allow one in a thousand) */
  assert_int_equal(bench_keys_generate(&k, BENCH_KEYS_TIMEPREFIXED, 10000, 7), 0);
  size_t back = 0;
  for (size_t i = 1; i < k.n; i++)
    back += hex_value(bench_key_at(&k, i), 16) < hex_value(bench_key_at(&k, i - 1), 16);
  assert_true(back <= k.n / 1000);
  uint64_t span = hex_value(bench_key_at(&k, k.n - 1), 16) - TIMEPREFIX_START_MS;
  assert_true(span > 0 && span <= 2 * k.n);
  bench_keys_free(&k);
}

static void test_same_seed_same_keys(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 2);
  uint64_t seed = tu_next(&r);
  for (int s = 0; s < BENCH_KEYS_NSHAPES; s++) {
    bench_keys a, b, c;
    assert_int_equal(bench_keys_generate(&a, (bench_key_shape)s, 3000, seed), 0);
    assert_int_equal(bench_keys_generate(&b, (bench_key_shape)s, 3000, seed), 0);
    assert_int_equal(bench_keys_generate(&c, (bench_key_shape)s, 3000, seed + 1), 0);
    assert_int_equal(a.off[a.n], b.off[b.n]);
    assert_memory_equal(a.off, b.off, (a.n + 1) * sizeof *a.off);
    assert_memory_equal(a.data, b.data, a.off[a.n]);
    if (s != BENCH_KEYS_SEQUENTIAL)
      assert_true(a.off[a.n] != c.off[c.n] || memcmp(a.data, c.data, a.off[a.n]) != 0);
    bench_keys_free(&a);
    bench_keys_free(&b);
    bench_keys_free(&c);
  }
}

static void test_absent_keys_are_absent(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 3);
  for (int s = 0; s < BENCH_KEYS_NSHAPES; s++) {
    size_t n = 5000 + (size_t)tu_below(&r, 5000);
    size_t sizes[] = {1, n / 3, n, 2 * n}; /* 2n: more absent keys than present */
    bench_keys p;
    assert_int_equal(bench_keys_generate(&p, (bench_key_shape)s, n, tu_next(&r)), 0);
    ref_key *ref = reference_sorted(&p);
    for (size_t t = 0; t < 4; t++) {
      bench_keys a;
      assert_int_equal(bench_keys_absent(&a, &p, sizes[t], tu_next(&r)), 0);
      assert_int_equal(a.n, sizes[t]);
      check_shape(&a);
      check_unique_and_ordered(&a);
      for (size_t i = 0; i < a.n; i++) {
        char want[BENCH_KEY_MAX + 1];
        memcpy(want, bench_key_at(&a, i), bench_key_len(&a, i));
        want[bench_key_len(&a, i)] = 0;
        ref_key q = {want};
        assert_null(bsearch(&q, ref, p.n, sizeof *ref, cmp_ref));
        assert_false(bench_keys_contains(&p, bench_key_at(&a, i), bench_key_len(&a, i)));
        if (s == BENCH_KEYS_SEQUENTIAL) {
          uint64_t v = dec_value(bench_key_at(&a, i), 16);
          assert_int_equal(v % 2, 1);
          if (a.n <= p.n) assert_true(v < 2 * p.n); /* inside the present range */
        }
      }
      bench_keys_free(&a);
    }
    /* and every present key is found */
    for (size_t i = 0; i < p.n; i++)
      assert_true(bench_keys_contains(&p, bench_key_at(&p, i), bench_key_len(&p, i)));
    reference_free(ref, p.n);
    bench_keys_free(&p);
  }
}

static void test_sample(void **state) {
  (void)state;
  bench_rng r;
  bench_rng_init(&r, tu_seed());
  size_t pools[] = {1, 2, 17, 1000};
  for (size_t t = 0; t < 4; t++) {
    size_t pool = pools[t];
    size_t ns[] = {0, 1, pool / 2, pool, pool * 3};
    for (size_t u = 0; u < 5; u++) {
      size_t n = ns[u];
      uint32_t *out = malloc((n + 1) * sizeof *out);
      uint8_t *seen = calloc(pool, 1);
      assert_int_equal(bench_sample(&r, pool, n, out), 0);
      for (size_t i = 0; i < n; i++) {
        assert_true(out[i] < pool);
        if (n <= pool) assert_int_equal(seen[out[i]]++, 0); /* distinct */
      }
      free(out);
      free(seen);
    }
  }
  uint32_t one;
  assert_int_not_equal(bench_sample(&r, 0, 1, &one), 0);
}

/* The stream holds the sampled keys byte for byte, in sample order (with
 * repeats), and is refilled in place; none (n = 0) is empty. */
static void test_key_stream(void **state) {
  (void)state;
  bench_rng r;
  bench_rng_init(&r, tu_seed());
  bench_keys k;
  assert_int_equal(bench_keys_generate(&k, BENCH_KEYS_VARLEN, 500, bench_rng_below(&r, 1u << 30)), 0);
  bench_key_stream st = {0};
  size_t ns[] = {0, 1, 499, 2000};
  for (size_t t = 0; t < 4; t++) {
    size_t n = ns[t];
    uint32_t *idx = malloc((n + 1) * sizeof *idx);
    assert_int_equal(bench_sample(&r, k.n, n, idx), 0);
    assert_int_equal(bench_key_stream_fill(&st, &k, idx, n), 0);
    assert_int_equal(st.n, n);
    assert_ptr_equal(st.idx, idx);
    for (size_t i = 0; i < n; i++) {
      assert_int_equal(bench_stream_len(&st, i), bench_key_len(&k, idx[i]));
      assert_memory_equal(bench_stream_key(&st, i), bench_key_at(&k, idx[i]), bench_key_len(&k, idx[i]));
      if (i) assert_ptr_equal(bench_stream_key(&st, i), bench_stream_key(&st, i - 1) + bench_stream_len(&st, i - 1));
    }
    bench_key_stream_free(&st);
    assert_int_equal(st.n, 0);
    assert_null(st.data);
    free(idx);
  }
  bench_keys_free(&k);
}

static void test_rng_below_in_range(void **state) {
  (void)state;
  bench_rng r;
  bench_rng_init(&r, tu_seed());
  uint64_t hits[7] = {0};
  for (int i = 0; i < 70000; i++)
    hits[bench_rng_below(&r, 7)]++;
  for (int v = 0; v < 7; v++)
    assert_true(hits[v] > 9000 && hits[v] < 11000);
  for (int i = 0; i < 1000; i++) {
    double u = bench_rng_unit(&r);
    assert_true(u >= 0 && u < 1);
  }
}

static void test_parsers_and_summary(void **state) {
  (void)state;
  uint64_t v;
  assert_int_equal(bench_parse_u64("10M", &v), 0);
  assert_int_equal(v, 10000000);
  assert_int_equal(bench_parse_u64("250k", &v), 0);
  assert_int_equal(v, 250000);
  assert_int_equal(bench_parse_u64("7", &v), 0);
  assert_int_equal(v, 7);
  assert_int_not_equal(bench_parse_u64("", &v), 0);
  assert_int_not_equal(bench_parse_u64("-1", &v), 0);
  assert_int_not_equal(bench_parse_u64("12x", &v), 0);
  assert_int_not_equal(bench_parse_u64("99999999999999999999", &v), 0);
  uint64_t *list;
  size_t n;
  assert_int_equal(bench_parse_u64_list("100,1k,10000", &list, &n), 0);
  assert_int_equal(n, 3);
  assert_int_equal(list[1], 1000);
  free(list);
  assert_int_not_equal(bench_parse_u64_list("1,,x", &list, &n), 0);
  double *d;
  assert_int_equal(bench_parse_double_list("1.0,1.2", &d, &n), 0);
  assert_int_equal(n, 2);
  assert_true(d[1] > 1.19 && d[1] < 1.21);
  free(d);
  double a[] = {5, 1, 3, 2};
  bench_summary s = bench_summarize(a, 4);
  assert_true(s.median == 2.5 && s.min == 1 && s.max == 5);
  double b[] = {9, 4, 6};
  s = bench_summarize(b, 3);
  assert_true(s.median == 6 && s.min == 4 && s.max == 9);
  bench_key_shape shape;
  assert_int_equal(bench_key_shape_parse("uuid4", &shape), 0);
  assert_int_equal(shape, BENCH_KEYS_UUID4);
  assert_int_not_equal(bench_key_shape_parse("uuid7", &shape), 0);
}

static void test_evict_and_sizes(void **state) {
  (void)state;
  char *dir = tu_tmpdir("bench-keys");
  char *sub = tu_path(dir, "sub");
  assert_int_equal(bench_mkdirs(sub), 0);
  char *f1 = tu_path(dir, "a"), *f2 = tu_path(sub, "b");
  uint8_t buf[10000];
  memset(buf, 'x', sizeof buf);
  tu_write_file(f1, buf, 5000);
  tu_write_file(f2, buf, sizeof buf);
  assert_int_equal(bench_dir_bytes(dir), 15000);
  assert_int_equal(bench_file_bytes(f2), 10000);
  assert_int_equal(bench_warm_dir(dir), 0);
  uint64_t resident = 99;
  assert_int_equal(bench_evict_dir(dir, BENCH_EVICT_FADVISE, &resident), 0);
  /* On a memory file system pages cannot leave the cache. */
  if (!bench_is_memory_fs(dir)) assert_int_equal(resident, 0);
  assert_int_equal(bench_rmtree(sub), 0);
  assert_int_equal(bench_dir_bytes(dir), 5000);
  free(f1);
  free(f2);
  free(sub);
  free(dir);
}

/* A file of keys: empty and repeated lines dropped (first occurrence kept,
 * in input order), every key found, absent keys near neighbours not in it. */
static void test_file_keys(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 4);
  char *dir = tu_tmpdir("bench-keys-file");
  char *path = tu_path(dir, "keys.txt");
  size_t n = 500 + (size_t)tu_below(&r, 500), at = 0, distinct = 0;
  char *text = malloc(n * 16 + 1);
  char **seen = calloc(n, sizeof *seen);
  for (size_t i = 0; i < n; i++) {
    char line[16];
    int len = snprintf(line, sizeof line, "k%llu", (unsigned long long)tu_below(&r, n));
    if (i % 50 == 7) len = 0; /* an empty line */
    memcpy(text + at, line, (size_t)len);
    at += (size_t)len;
    text[at++] = '\n';
    if (len == 0) continue;
    int dup = 0;
    for (size_t j = 0; j < distinct && !dup; j++) dup = strcmp(seen[j], line) == 0;
    if (!dup) seen[distinct++] = strdup(line);
  }
  tu_write_file(path, text, at);
  char spec_text[4200];
  snprintf(spec_text, sizeof spec_text, "file:%s", path);
  bench_key_spec spec;
  assert_int_equal(bench_key_spec_parse(spec_text, &spec), 0);
  assert_int_equal(spec.shape, BENCH_KEYS_FILE);
  bench_keys k, a;
  assert_int_equal(bench_keys_load(&k, &spec, 0, 1), 0);
  assert_int_equal(k.n, distinct);
  for (size_t i = 0; i < distinct; i++) {
    assert_int_equal(bench_key_len(&k, i), strlen(seen[i]));
    assert_memory_equal(bench_key_at(&k, i), seen[i], strlen(seen[i]));
  }
  check_unique_and_ordered(&k);
  assert_int_equal(bench_keys_absent(&a, &k, distinct, 9), 0);
  check_unique_and_ordered(&a);
  for (size_t i = 0; i < a.n; i++)
    assert_false(bench_keys_contains(&k, bench_key_at(&a, i), bench_key_len(&a, i)));
  bench_keys_free(&a);
  bench_keys_free(&k);
  bench_key_spec none = {BENCH_KEYS_FILE, "/nonexistent/keys"};
  assert_int_equal(bench_keys_load(&k, &none, 0, 1), -ENOENT);
  for (size_t i = 0; i < distinct; i++) free(seen[i]);
  free(seen);
  free(text);
  tu_rmtree(dir);
  free(path);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shapes_unique_and_well_formed),
      cmocka_unit_test(test_shape_specifics),
      cmocka_unit_test(test_same_seed_same_keys),
      cmocka_unit_test(test_absent_keys_are_absent),
      cmocka_unit_test(test_file_keys),
      cmocka_unit_test(test_sample),
      cmocka_unit_test(test_key_stream),
      cmocka_unit_test(test_rng_below_in_range),
      cmocka_unit_test(test_parsers_and_summary),
      cmocka_unit_test(test_evict_and_sizes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
