/* SPDX-License-Identifier: MIT */
/*
 * test_cli_build.c — `tern build`, `tern split`, `tern export` and `tern
 * verify` of a built segment, end to end through the binary ($TERN_BIN).
 *
 * A build of unsorted TSV, with a memory budget small enough to spill
 * several sorted runs, is read back with the codec's reader and compared
 * with a sorted reference; the same TSV imported into an index and
 * exported gives the same segment contents (export -> build round trip);
 * split's parts are counted with `tern scan --count`; bad input (an OUT
 * that exists, duplicate keys, a malformed line, a damaged segment) each
 * gives its one-line error and exit status, and leaves no OUT.
 */
#include "tests/common/cli_run.h"
#include "tests/common/testutil.h"

#include "codec/segment.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *g_bin;

typedef tu_cli_result result;

#define RUN_IN(in, ...) tu_cli_run(g_bin, in, (const char *const[]){__VA_ARGS__, NULL})
#define RUN(...) RUN_IN(NULL, __VA_ARGS__)

static void expect_code(const result *r, int code) {
  if (r->code != code)
    fail_msg("exit %d, want %d\n--- stdout:\n%.2000s\n--- stderr:\n%.2000s", r->code, code, r->out,
             r->err);
}

static void expect_err_has(const result *r, const char *want) {
  if (!strstr(r->err, want)) fail_msg("stderr:\n%s\nwant it to hold: %s", r->err, want);
}

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* ---------------------------------------------------------------- input */

typedef struct doc {
  char key[24];
  char val[24];
  int color; /* term color:cN, -1 none */
  int size;  /* term size:sN, -1 none */
} doc;

static int doc_cmp(const void *a, const void *b) {
  return strcmp(((const doc *)a)->key, ((const doc *)b)->key);
}

/* n documents with distinct keys of 6 to 16 bytes, in a random order, some
 * with terms; written as TSV to path. */
static doc *make_input(const char *path, size_t n, uint64_t seed) {
  tu_rng r;
  tu_rng_init(&r, seed);
  doc *v = calloc(n, sizeof *v);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  for (size_t i = 0; i < n; i++) {
    /* distinct: the index i in the middle, random bytes around */
    snprintf(v[i].key, sizeof v[i].key, "%c%c%08zx%.*s", 'a' + (int)tu_below(&r, 26),
             'a' + (int)tu_below(&r, 26), i * 2654435761u % 0xffffffffu, (int)tu_below(&r, 6),
             "zzzzzz");
    snprintf(v[i].val, sizeof v[i].val, "v%zu", (size_t)tu_below(&r, 1000000));
    v[i].color = tu_below(&r, 3) ? (int)tu_below(&r, 7) : -1;
    v[i].size = tu_below(&r, 5) == 0 ? (int)tu_below(&r, 1000) : -1;
    fprintf(f, "%s\t%s", v[i].key, v[i].val);
    if (v[i].color >= 0) fprintf(f, "\tcolor:c%d", v[i].color);
    if (v[i].size >= 0) fprintf(f, "\tsize:s%d", v[i].size);
    fputc('\n', f);
  }
  fclose(f);
  qsort(v, n, sizeof *v, doc_cmp);
  for (size_t i = 1; i < n; i++)
    assert_true(strcmp(v[i - 1].key, v[i].key) < 0);
  return v;
}

/* ---------------------------------------------------------------- segments */

/* The built segment in dir, as text: every key and value in order, then
 * every field's terms with their doc ids. */
static char *dump_segment(const char *dir) {
  size_t cap = 1 << 20, len = 0;
  char *s = malloc(cap);
  tern_seg *seg;
  assert_int_equal(tern_seg_open(&seg, dir, "s000000000001", TERN_IO_PREAD), TERN_OK);
  tern_seg_cursor c;
  tern_seg_cursor_init(&c);
  for (size_t fi = 0; fi < tern_seg_nfields(seg); fi++) {
    const tern_seg_field *f = tern_seg_field_at(seg, fi);
    tern_field_info info;
    tern_seg_field_info(f, &info);
    tern_term_entry e;
    for (int rc = tern_seg_first_term(seg, f, &c, &e); rc == TERN_OK;
         rc = tern_seg_next_term(seg, &c, &e)) {
      if (len + 8192 > cap) s = realloc(s, cap *= 2);
      len +=
          (size_t)sprintf(s + len, "%.*s/%.*s:", (int)info.name_len, info.name, (int)e.len, e.term);
      if (f == tern_seg_unique_field(seg)) {
        tern_slice v;
        assert_int_equal(tern_seg_value(seg, &e, &c, &v), TERN_OK);
        len += (size_t)sprintf(s + len, "%.*s", (int)v.len, (const char *)v.data);
      }
      tern_postings_iter it;
      assert_int_equal(tern_seg_postings(seg, &e, &it), TERN_OK);
      uint32_t d;
      while (tern_postings_iter_next(&it, &d) == TERN_OK && d != TERN_DOC_END) {
        if (len + 64 > cap) s = realloc(s, cap *= 2);
        len += (size_t)sprintf(s + len, " %u", d);
      }
      tern_postings_iter_release(&it);
      s[len++] = '\n';
    }
  }
  s[len] = '\0';
  tern_seg_cursor_release(&c);
  tern_seg_close(seg);
  return s;
}

/* The same text made from the reference. */
static char *dump_reference(const doc *v, size_t n) {
  size_t cap = 1 << 20, len = 0;
  char *s = malloc(cap);
#define ROOM                                                                                       \
  if (len + 8192 > cap) s = realloc(s, cap *= 2)
  for (size_t i = 0; i < n; i++) {
    ROOM;
    len += (size_t)sprintf(s + len, "/%s:%s %zu\n", v[i].key, v[i].val, i);
  }
  for (int c = 0; c < 7; c++) {
    int any = 0;
    for (size_t i = 0; i < n; i++)
      if (v[i].color == c) {
        ROOM;
        if (!any) len += (size_t)sprintf(s + len, "color/c%d:", c);
        any = 1;
        len += (size_t)sprintf(s + len, " %zu", i);
      }
    if (any) s[len++] = '\n';
  }
  /* size terms in byte order of "sN" */
  char names[1000][8];
  int order[1000];
  for (int k = 0; k < 1000; k++) {
    sprintf(names[k], "s%d", k);
    order[k] = k;
  }
  for (int a = 1; a < 1000; a++) /* insertion sort by name */
    for (int b = a; b > 0 && strcmp(names[order[b - 1]], names[order[b]]) > 0; b--) {
      int t = order[b];
      order[b] = order[b - 1];
      order[b - 1] = t;
    }
  for (int k = 0; k < 1000; k++) {
    int z = order[k], any = 0;
    for (size_t i = 0; i < n; i++)
      if (v[i].size == z) {
        ROOM;
        if (!any) len += (size_t)sprintf(s + len, "size/s%d:", z);
        any = 1;
        len += (size_t)sprintf(s + len, " %zu", i);
      }
    if (any) s[len++] = '\n';
  }
#undef ROOM
  s[len] = '\0';
  return s;
}

static void expect_same(const char *got, const char *want) {
  if (strcmp(got, want)) {
    size_t i = 0;
    while (got[i] && got[i] == want[i])
      i++;
    size_t from = i > 200 ? i - 200 : 0;
    fail_msg("segment differs at byte %zu:\n--- got:\n%.400s\n--- want:\n%.400s", i, got + from,
             want + from);
  }
}

/* ---------------------------------------------------------------- tests */

static void test_build_spills_and_matches_reference(void **state) {
  (void)state;
  uint64_t seed = tu_seed();
  printf("seed %llu\n", (unsigned long long)seed);
  char *dir = tu_tmpdir("cli-build");
  char *tsv = tu_path(dir, "in.tsv"), *out = tu_path(dir, "out"), *ix = tu_path(dir, "ix"),
       *exp = tu_path(dir, "exported");
  size_t n = 400000;
  doc *v = make_input(tsv, n, seed);
  /* --memory 32M: a 16 MiB sort budget, so ~20 MB of records spill runs */
  result r = RUN("build", "--memory", "32M", out, tsv);
  expect_code(&r, 0);
  expect_err_has(&r, "400000 documents built");
  tu_cli_free(&r);
  char *want = dump_reference(v, n), *got = dump_segment(out);
  expect_same(got, want);
  free(got);
  r = RUN("verify", out);
  expect_code(&r, 0);
  assert_non_null(strstr(r.out, "ok, built segment of 400000 documents"));
  tu_cli_free(&r);
  /* standard input, no spill: the same segment */
  char *out2 = tu_path(dir, "out2");
  r = RUN_IN(tsv, "build", "-q", out2, "-");
  expect_code(&r, 0);
  assert_int_equal(r.errlen, 0);
  tu_cli_free(&r);
  got = dump_segment(out2);
  expect_same(got, want);
  free(got);
  /* import, export: the same documents and terms (export -> build round trip) */
  r = RUN("import", "-q", ix, tsv);
  expect_code(&r, 0);
  tu_cli_free(&r);
  r = RUN("export", ix, exp);
  expect_code(&r, 0);
  assert_non_null(strstr(r.out, "ok, 400000 documents"));
  tu_cli_free(&r);
  got = dump_segment(exp);
  expect_same(got, want);
  free(got);
  free(want);
  /* a range: as many documents as scan counts */
  char *part = tu_path(dir, "part");
  r = RUN("export", ix, part, "--from", "c", "--to", "k");
  expect_code(&r, 0);
  size_t in_range = 0;
  for (size_t i = 0; i < n; i++)
    in_range += strcmp(v[i].key, "c") >= 0 && strcmp(v[i].key, "k") < 0;
  char line[64];
  snprintf(line, sizeof line, "ok, %zu documents", in_range);
  assert_non_null(strstr(r.out, line));
  tu_cli_free(&r);
  char *pre = tu_path(dir, "prefix");
  r = RUN("export", ix, pre, "--prefix", "q");
  expect_code(&r, 0);
  size_t with_q = 0;
  for (size_t i = 0; i < n; i++)
    with_q += v[i].key[0] == 'q';
  snprintf(line, sizeof line, "ok, %zu documents", with_q);
  assert_non_null(strstr(r.out, line));
  tu_cli_free(&r);
  free(pre);
  free(part);
  free(out2);
  free(v);
  free(tsv);
  free(out);
  free(ix);
  free(exp);
  tu_rmtree(dir);
  free(dir);
}

static void test_split_parts(void **state) {
  (void)state;
  uint64_t seed = tu_seed();
  char *dir = tu_tmpdir("cli-split");
  char *tsv = tu_path(dir, "in.tsv"), *ix = tu_path(dir, "ix");
  size_t n = 200000;
  doc *v = make_input(tsv, n, seed);
  result r = RUN("import", "-q", ix, tsv);
  expect_code(&r, 0);
  tu_cli_free(&r);
  r = RUN("split", ix, "5");
  expect_code(&r, 0);
  char *keys[4];
  char *p = r.out;
  for (int i = 0; i < 4; i++) {
    char *nl = strchr(p, '\n');
    assert_non_null(nl);
    *nl = '\0';
    keys[i] = p;
    p = nl + 1;
    if (i) assert_true(strcmp(keys[i - 1], keys[i]) < 0);
  }
  assert_int_equal(*p, '\0');
  for (int i = 0; i < 5; i++) {
    size_t cnt = 0;
    for (size_t k = 0; k < n; k++)
      cnt += (i == 0 || strcmp(v[k].key, keys[i - 1]) >= 0) &&
             (i == 4 || strcmp(v[k].key, keys[i]) < 0);
    if (cnt < n / 5 * 9 / 10 || cnt > n / 5 * 11 / 10) fail_msg("part %d: %zu keys", i, cnt);
  }
  tu_cli_free(&r);
  r = RUN("split", ix, "0");
  expect_code(&r, 2);
  tu_cli_free(&r);
  r = RUN("split", ix);
  expect_code(&r, 2);
  tu_cli_free(&r);
  free(v);
  free(tsv);
  free(ix);
  tu_rmtree(dir);
  free(dir);
}

static void test_bad_input(void **state) {
  (void)state;
  char *dir = tu_tmpdir("cli-build-bad");
  char *tsv = tu_path(dir, "in.tsv"), *out = tu_path(dir, "out"), *tmp = tu_path(dir, "out.tmp");
  /* a duplicate key, lines 1 and 3 */
  tu_write_file(tsv, "b\t1\na\t2\nb\t3\n", 12);
  result r = RUN("build", out, tsv);
  expect_code(&r, 2);
  expect_err_has(&r, "in.tsv:3: duplicate key 'b' (also on line 1)");
  assert_false(exists(out));
  assert_false(exists(tmp));
  tu_cli_free(&r);
  /* a malformed line */
  tu_write_file(tsv, "a\t1\nno-tab\n", 11);
  r = RUN("build", out, tsv);
  expect_code(&r, 2);
  expect_err_has(&r, "in.tsv:2:");
  assert_false(exists(out));
  tu_cli_free(&r);
  /* OUT exists and is not empty: untouched */
  tu_write_file(tsv, "a\t1\n", 4);
  assert_int_equal(mkdir(out, 0777), 0);
  char *keep = tu_path(out, "keep");
  tu_write_file(keep, "x", 1);
  r = RUN("build", out, tsv);
  expect_code(&r, 2);
  expect_err_has(&r, "exists and is not empty");
  expect_err_has(&r, out);
  assert_true(exists(keep));
  tu_cli_free(&r);
  unlink(keep);
  /* an empty OUT directory is fine */
  r = RUN("build", "-q", out, tsv);
  expect_code(&r, 0);
  tu_cli_free(&r);
  /* a missing input file; a bad --memory */
  char *missing = tu_path(dir, "missing.tsv"), *out3 = tu_path(dir, "out3");
  r = RUN("build", out3, missing);
  expect_code(&r, 2);
  expect_err_has(&r, "missing.tsv");
  assert_false(exists(out3));
  tu_cli_free(&r);
  r = RUN("build", "--memory", "1M", out3, tsv);
  expect_code(&r, 2);
  tu_cli_free(&r);
  /* a damaged built segment: verify exits 3 naming the file */
  char *tim = tu_path(out, "s000000000001.tim");
  size_t len;
  uint8_t *b = tu_read_file(tim, &len);
  b[len - 10] ^= 1;
  tu_write_file(tim, b, len);
  free(b);
  r = RUN("verify", out);
  expect_code(&r, 3);
  expect_err_has(&r, "s000000000001.tim");
  tu_cli_free(&r);
  /* export into an OUT that exists */
  char *ix = tu_path(dir, "ix");
  r = RUN("import", "-q", ix, tsv);
  expect_code(&r, 0);
  tu_cli_free(&r);
  r = RUN("export", ix, out);
  expect_code(&r, 2);
  expect_err_has(&r, "exists and is not empty");
  tu_cli_free(&r);
  free(ix);
  free(tim);
  free(missing);
  free(out3);
  free(keep);
  free(tsv);
  free(out);
  free(tmp);
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  g_bin = getenv("TERN_BIN");
  if (!g_bin || !*g_bin || access(g_bin, X_OK) != 0) {
    fprintf(stderr, "TERN_BIN is not set to the tern binary; run through ctest\n");
    return 77;
  }
  if (!getenv("TMPDIR") && access("/dev/shm", W_OK) == 0) setenv("TMPDIR", "/dev/shm", 0);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_build_spills_and_matches_reference),
      cmocka_unit_test(test_split_parts),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
