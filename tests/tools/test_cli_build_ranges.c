/* SPDX-License-Identifier: MIT */
/*
 * test_cli_build_ranges.c — `tern build --from/--to/--split-at` and `tern
 * split FILE N`, end to end through the binary ($TERN_BIN).
 *
 * Random keys (some needing escapes) in a random order are built with
 * random half-open bounds and random cut keys (some equal to input keys,
 * some not, some making parts the input gives no key); every part's
 * segment is read back with the codec's reader and compared with the
 * sorted reference filtered to that part's range: every kept key lands in
 * exactly one part, and none outside the bounds.  The parts ingested into
 * one index give the filtered count.  Bad bounds and cut files each give
 * their one-line error, exit 2, and leave neither OUT nor OUT.tmp.  `tern
 * split FILE N` is checked for cuts that ascend and parts within ±10% of
 * equal, on a file read whole (reservoir) and on one sampled in chunks.
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

#define RUN(...) tu_cli_run(g_bin, NULL, (const char *const[]){__VA_ARGS__, NULL})

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

/* ---------------------------------------------------------------- keys */

typedef struct key {
  uint8_t b[16];
  size_t len;
} key;

static int key_cmp(const key *a, const key *b) {
  size_t n = a->len < b->len ? a->len : b->len;
  int c = n ? memcmp(a->b, b->b, n) : 0;
  return c ? c : (a->len > b->len) - (a->len < b->len);
}

static int key_qcmp(const void *a, const void *b) { return key_cmp(a, b); }

/* 1 to 6 bytes from a small alphabet (so that random cut keys fall
 * between, on and beside input keys), some bytes needing escapes. */
static key random_key(tu_rng *r) {
  static const uint8_t alphabet[] = {'a', 'b', 'c', 'd', 'e', 0x01, '\t', 0xfe};
  key k;
  k.len = 1 + tu_below(r, 6);
  for (size_t i = 0; i < k.len; i++)
    k.b[i] = alphabet[tu_below(r, sizeof alphabet)];
  return k;
}

/* The escaped form (as the CLI reads keys). */
static void put_escaped(FILE *f, const key *k) {
  for (size_t i = 0; i < k->len; i++) {
    uint8_t c = k->b[i];
    if (c == '\\')
      fputs("\\\\", f);
    else if (c < 0x20 || c >= 0x7f)
      fprintf(f, "\\x%02x", c);
    else
      fputc(c, f);
  }
}

static char *escaped(const key *k) {
  char *s;
  size_t len;
  FILE *f = open_memstream(&s, &len);
  put_escaped(f, k);
  fclose(f);
  return s;
}

/* n distinct keys, sorted; written as TSV in a random order to path. */
static key *make_keys(const char *path, tu_rng *r, size_t want, size_t *n) {
  key *v = calloc(want, sizeof *v);
  for (size_t i = 0; i < want; i++)
    v[i] = random_key(r);
  qsort(v, want, sizeof *v, key_qcmp);
  size_t m = 0;
  for (size_t i = 0; i < want; i++)
    if (m == 0 || key_cmp(&v[m - 1], &v[i])) v[m++] = v[i];
  size_t *order = malloc(m * sizeof *order);
  for (size_t i = 0; i < m; i++)
    order[i] = i;
  for (size_t i = m; i > 1; i--) {
    size_t j = tu_below(r, i), t = order[i - 1];
    order[i - 1] = order[j];
    order[j] = t;
  }
  FILE *f = fopen(path, "w");
  for (size_t i = 0; i < m; i++) {
    put_escaped(f, &v[order[i]]);
    fprintf(f, "\tv%zu\n", order[i]);
  }
  fclose(f);
  free(order);
  *n = m;
  return v;
}

/* The keys of the built segment in dir, in order (none for an empty part). */
static key *segment_keys(const char *dir, size_t *n) {
  size_t cap = 1024;
  key *v = malloc(cap * sizeof *v);
  *n = 0;
  char *tim = tu_path(dir, "s000000000001.tim");
  int present = exists(tim);
  free(tim);
  if (!present) return v;
  tern_seg *seg;
  assert_int_equal(tern_seg_open(&seg, dir, "s000000000001", TERN_IO_PREAD), TERN_OK);
  tern_seg_cursor c;
  tern_seg_cursor_init(&c);
  tern_term_entry e;
  for (int rc = tern_seg_first_term(seg, tern_seg_unique_field(seg), &c, &e); rc == TERN_OK;
       rc = tern_seg_next_term(seg, &c, &e)) {
    if (*n == cap) v = realloc(v, (cap *= 2) * sizeof *v);
    assert_true(e.len <= sizeof v[*n].b);
    memcpy(v[*n].b, e.term, e.len);
    v[(*n)++].len = e.len;
  }
  tern_seg_cursor_release(&c);
  tern_seg_close(seg);
  return v;
}

/* ---------------------------------------------------------------- tests */

typedef struct bounds {
  key from, to;
  int has_from, has_to;
  key cuts[12];
  size_t ncuts;
} bounds;

/* Random bounds (each absent, an input key or another key) and cuts
 * strictly inside them. */
static void random_bounds(tu_rng *r, const key *v, size_t n, bounds *b) {
  memset(b, 0, sizeof *b);
  for (int tries = 0; tries < 100; tries++) {
    b->has_from = tu_below(r, 3) != 0;
    b->has_to = tu_below(r, 3) != 0;
    b->from = tu_below(r, 2) ? v[tu_below(r, n)] : random_key(r);
    b->to = tu_below(r, 2) ? v[tu_below(r, n)] : random_key(r);
    if (!b->has_from || !b->has_to || key_cmp(&b->from, &b->to) < 0) break;
  }
  if (b->has_from && b->has_to && key_cmp(&b->from, &b->to) >= 0) b->has_to = 0;
  key c[12];
  size_t want = tu_below(r, 12), m = 0;
  for (size_t i = 0; i < want; i++)
    c[i] = tu_below(r, 2) ? v[tu_below(r, n)] : random_key(r);
  qsort(c, want, sizeof *c, key_qcmp);
  for (size_t i = 0; i < want; i++) {
    if (m && !key_cmp(&c[i], &b->cuts[m - 1])) continue;
    if (b->has_from && key_cmp(&c[i], &b->from) <= 0) continue;
    if (b->has_to && key_cmp(&c[i], &b->to) >= 0) continue;
    b->cuts[m++] = c[i];
  }
  b->ncuts = m;
}

/* Whether k belongs in part p of b. */
static int in_part(const bounds *b, size_t p, const key *k) {
  const key *lo = p ? &b->cuts[p - 1] : b->has_from ? &b->from : NULL;
  const key *hi = p < b->ncuts ? &b->cuts[p] : b->has_to ? &b->to : NULL;
  return (!lo || key_cmp(k, lo) >= 0) && (!hi || key_cmp(k, hi) < 0);
}

static void write_cuts(const char *path, const bounds *b) {
  FILE *f = fopen(path, "w");
  for (size_t i = 0; i < b->ncuts; i++) {
    put_escaped(f, &b->cuts[i]);
    fputc('\n', f);
  }
  fclose(f);
}

/* Runs build with b's options into out. */
static result build_with(const char *out, const char *tsv, const char *cuts, const bounds *b) {
  const char *args[12];
  size_t n = 0;
  char *from = b->has_from ? escaped(&b->from) : NULL, *to = b->has_to ? escaped(&b->to) : NULL;
  args[n++] = "build";
  args[n++] = out;
  args[n++] = tsv;
  if (from) args[n++] = "--from", args[n++] = from;
  if (to) args[n++] = "--to", args[n++] = to;
  if (cuts) args[n++] = "--split-at", args[n++] = cuts;
  args[n] = NULL;
  result r = tu_cli_run(g_bin, NULL, args);
  free(from);
  free(to);
  return r;
}

/* Part p's directory under out. */
static char *part_dir(const char *out, size_t p, size_t nparts) {
  char last[32], num[32], name[64];
  snprintf(last, sizeof last, "%zu", nparts - 1);
  snprintf(num, sizeof num, "%zu", p);
  size_t pad = strlen(last) - strlen(num);
  memset(name, '0', pad);
  strcpy(name + pad, num);
  return tu_path(out, name);
}

/* Every part holds exactly the reference's keys of its range; returns the
 * number of keys kept. */
static size_t check_parts(const char *out, int split, const bounds *b, const key *v, size_t n) {
  size_t nparts = b->ncuts + 1, total = 0;
  for (size_t p = 0; p < nparts; p++) {
    char *dir = split ? part_dir(out, p, nparts) : strdup(out);
    assert_true(exists(dir));
    size_t got_n;
    key *got = segment_keys(dir, &got_n);
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
      if (!in_part(b, p, &v[i])) continue;
      if (j >= got_n || key_cmp(&got[j], &v[i]))
        fail_msg("part %zu: key %zu of %zu differs from the reference (%zu keys built)", p, j,
                 got_n, got_n);
      j++;
    }
    assert_int_equal(j, got_n);
    total += got_n;
    free(got);
    free(dir);
  }
  return total;
}

static void test_ranges_match_reference(void **state) {
  (void)state;
  uint64_t seed = tu_seed();
  printf("seed %llu\n", (unsigned long long)seed);
  tu_rng r;
  tu_rng_init(&r, seed ^ 0x5157);
  char *dir = tu_tmpdir("cli-ranges");
  char *tsv = tu_path(dir, "in.tsv"), *cuts = tu_path(dir, "cuts");
  size_t n;
  key *v = make_keys(tsv, &r, 30000, &n);
  for (int round = 0; round < 6 * (int)tu_scale(); round++) {
    bounds b;
    random_bounds(&r, v, n, &b);
    if (round == 0) b.has_from = b.has_to = 0; /* cuts alone */
    write_cuts(cuts, &b);
    char name[32];
    snprintf(name, sizeof name, "out%d", round);
    char *out = tu_path(dir, name);
    int split = b.ncuts || round % 2; /* --split-at with no cut: still OUT/0 */
    result res = build_with(out, tsv, split ? cuts : NULL, &b);
    expect_code(&res, 0);
    tu_cli_free(&res);
    size_t kept = check_parts(out, split, &b, v, n), want = 0;
    for (size_t i = 0; i < n; i++)
      want += (!b.has_from || key_cmp(&v[i], &b.from) >= 0) &&
              (!b.has_to || key_cmp(&v[i], &b.to) < 0);
    assert_int_equal(kept, want); /* each kept key in exactly one part */
    snprintf(name, sizeof name, "ix%d", round);
    char *ix = tu_path(dir, name);
    res = RUN("import", "-q", ix, "/dev/null");
    expect_code(&res, 0);
    tu_cli_free(&res);
    /* every part ingested at once (empty parts included): the kept count */
    const char *args[40];
    size_t na = 0;
    args[na++] = "ingest";
    args[na++] = ix;
    char *parts[13];
    for (size_t p = 0; p <= b.ncuts; p++)
      args[na++] = parts[p] = split ? part_dir(out, p, b.ncuts + 1) : strdup(out);
    args[na] = NULL;
    res = tu_cli_run(g_bin, NULL, args);
    expect_code(&res, 0);
    tu_cli_free(&res);
    for (size_t p = 0; p <= b.ncuts; p++)
      free(parts[p]);
    res = RUN("scan", "--count", ix);
    expect_code(&res, 0);
    assert_int_equal(strtoull(res.out, NULL, 10), want);
    tu_cli_free(&res);
    free(ix);
    free(out);
  }
  free(v);
  free(tsv);
  free(cuts);
  tu_rmtree(dir);
  free(dir);
}

/* Parts that get no key are empty directories, named in order. */
static void test_empty_parts(void **state) {
  (void)state;
  char *dir = tu_tmpdir("cli-ranges-empty");
  char *tsv = tu_path(dir, "in.tsv"), *cuts = tu_path(dir, "cuts"), *out = tu_path(dir, "out");
  tu_write_file(tsv, "m\t1\nb\t2\nn\t3\nc\t4\n", 16);
  /* 11 parts, names 00..10: b c | (d..) empty ... m n in part 10 */
  tu_write_file(cuts, "d\ne\nf\ng\nh\ni\nj\nk\nl\nm\n", 20);
  result r = RUN("build", out, tsv, "--split-at", cuts);
  expect_code(&r, 0);
  expect_err_has(&r, "4 documents built");
  expect_err_has(&r, "11 segments");
  tu_cli_free(&r);
  static const size_t want[11] = {2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  size_t got;
  for (size_t p = 0; p < 11; p++) {
    char *pd = part_dir(out, p, 11);
    assert_true(exists(pd));
    free(segment_keys(pd, &got));
    /* m is a cut: it opens the last part (half-open), n with it */
    assert_int_equal(got, p == 10 ? 2 : want[p]);
    free(pd);
  }
  char *p00 = tu_path(out, "00"), *p10 = tu_path(out, "10");
  assert_true(exists(p00) && exists(p10));
  free(p00);
  free(p10);
  /* no cut at all: one part, still OUT/0 */
  char *one = tu_path(dir, "one"), *empty = tu_path(dir, "empty");
  tu_write_file(empty, "", 0);
  r = RUN("build", one, tsv, "--split-at", empty);
  expect_code(&r, 0);
  expect_err_has(&r, ", 1 segment\n");
  tu_cli_free(&r);
  char *p0 = tu_path(one, "0");
  free(segment_keys(p0, &got));
  assert_int_equal(got, 4);
  free(p0);
  free(one);
  free(empty);
  /* the range holding no input key at all: one empty segment directory */
  char *none = tu_path(dir, "none");
  r = RUN("build", "-q", none, tsv, "--from", "x", "--to", "y");
  expect_code(&r, 0);
  tu_cli_free(&r);
  free(segment_keys(none, &got));
  assert_int_equal(got, 0);
  free(none);
  free(tsv);
  free(cuts);
  free(out);
  tu_rmtree(dir);
  free(dir);
}

/* A failing build of parts leaves neither OUT nor OUT.tmp. */
static void expect_refused(const char *out, result *r, int code, const char *msg) {
  expect_code(r, code);
  expect_err_has(r, msg);
  tu_cli_free(r);
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", out);
  if (exists(out) || exists(tmp)) fail_msg("%s or its .tmp left behind after: %s", out, msg);
}

static void test_bad_bounds(void **state) {
  (void)state;
  char *dir = tu_tmpdir("cli-ranges-bad");
  char *tsv = tu_path(dir, "in.tsv"), *cuts = tu_path(dir, "cuts"), *out = tu_path(dir, "out");
  tu_write_file(tsv, "a\t1\nb\t2\nc\t3\nd\t4\nd\t5\n", 20);
  result r = RUN("build", out, tsv, "--from", "c", "--to", "c");
  expect_refused(out, &r, 2, "--from 'c' is not below --to 'c': an empty range");
  tu_write_file(cuts, "b\nb\n", 4);
  r = RUN("build", out, tsv, "--split-at", cuts);
  expect_refused(out, &r, 2, ":2: split key 'b' is not above the key before it");
  tu_write_file(cuts, "c\nb\n", 4);
  r = RUN("build", out, tsv, "--split-at", cuts);
  expect_refused(out, &r, 2, ":2: split key 'b' is not above the key before it");
  tu_write_file(cuts, "b\n", 2);
  r = RUN("build", out, tsv, "--split-at", cuts, "--from", "b");
  expect_refused(out, &r, 2, ":1: split key 'b' is not above --from");
  r = RUN("build", out, tsv, "--split-at", cuts, "--to", "a");
  expect_refused(out, &r, 2, ":1: split key 'b' is not below --to");
  tu_write_file(cuts, "b\n\\q\n", 5);
  r = RUN("build", out, tsv, "--split-at", cuts);
  expect_refused(out, &r, 2, ":2: ");
  char *missing = tu_path(dir, "missing");
  r = RUN("build", out, tsv, "--split-at", missing);
  expect_refused(out, &r, 2, "missing: No such file or directory");
  r = RUN("build", out, tsv, "--from", "\\q");
  expect_refused(out, &r, 2, "key '\\q'");
  /* a failure after parts were finished (duplicate d, in the last part) */
  tu_write_file(cuts, "b\nc\n", 4);
  r = RUN("build", out, tsv, "--split-at", cuts);
  expect_refused(out, &r, 2, "duplicate key 'd'");
  /* OUT not empty, OUT.tmp present: refused, neither touched */
  tu_write_file(tsv, "a\t1\nb\t2\n", 8);
  assert_int_equal(mkdir(out, 0755), 0);
  char *inside = tu_path(out, "keep");
  tu_write_file(inside, "x", 1);
  r = RUN("build", out, tsv, "--split-at", cuts);
  expect_code(&r, 2);
  expect_err_has(&r, "exists and is not empty");
  tu_cli_free(&r);
  assert_true(exists(inside));
  char *tmp = tu_path(dir, "out2.tmp"), *out2 = tu_path(dir, "out2");
  assert_int_equal(mkdir(tmp, 0755), 0);
  r = RUN("build", out2, tsv, "--split-at", cuts);
  expect_code(&r, 2);
  expect_err_has(&r, "out2.tmp: exists");
  tu_cli_free(&r);
  assert_true(exists(tmp) && !exists(out2));
  assert_int_equal(mkdir(out2, 0755), 0); /* an empty OUT is left as it was */
  r = RUN("build", out2, tsv, "--split-at", cuts);
  expect_code(&r, 2);
  tu_cli_free(&r);
  assert_true(exists(tmp) && exists(out2));
  assert_int_equal(rmdir(out2), 0);
  /* an empty OUT directory is taken */
  assert_int_equal(rmdir(tmp), 0);
  assert_int_equal(mkdir(out2, 0755), 0);
  r = RUN("build", "-q", out2, tsv, "--split-at", cuts);
  expect_code(&r, 0);
  tu_cli_free(&r);
  char *p2 = tu_path(out2, "2");
  assert_true(exists(p2));
  free(p2);
  free(tmp);
  free(out2);
  free(inside);
  free(missing);
  free(tsv);
  free(cuts);
  free(out);
  tu_rmtree(dir);
  free(dir);
}

/* `tern split FILE N`: n keys of 16 hex digits, the parts the cuts make. */
static void check_split_file(const char *dir, const char *name, size_t n, size_t parts,
                             tu_rng *r) {
  char *tsv = tu_path(dir, name);
  FILE *f = fopen(tsv, "w");
  char (*keys)[17] = malloc(n * sizeof *keys);
  for (size_t i = 0; i < n; i++) {
    snprintf(keys[i], 17, "%016llx", (unsigned long long)tu_next(r));
    fprintf(f, "%s\tvalue-of-some-length-%zu\n", keys[i], i);
  }
  fclose(f);
  char nparts[16];
  snprintf(nparts, sizeof nparts, "%zu", parts);
  result res = RUN("split", tsv, nparts);
  expect_code(&res, 0);
  char *cut[64];
  size_t ncut = 0;
  for (char *line = strtok(res.out, "\n"); line; line = strtok(NULL, "\n"))
    cut[ncut++] = line;
  assert_int_equal(ncut, parts - 1);
  size_t count[64] = {0};
  for (size_t i = 0; i < n; i++) {
    size_t p = 0;
    while (p < ncut && strcmp(keys[i], cut[p]) >= 0)
      p++;
    count[p]++;
  }
  for (size_t p = 0; p < parts; p++) {
    if (p + 1 < ncut) assert_true(strcmp(cut[p], cut[p + 1]) < 0);
    double share = (double)count[p] * (double)parts / (double)n;
    if (share < 0.9 || share > 1.1)
      fail_msg("%s: part %zu holds %zu of %zu keys (%.2f of equal)", name, p, count[p], n, share);
  }
  tu_cli_free(&res);
  free(keys);
  free(tsv);
}

static void test_split_tsv(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, tu_seed() ^ 0x5917);
  char *dir = tu_tmpdir("cli-split-tsv");
  check_split_file(dir, "small.tsv", 20000, 8, &r); /* read whole */
  check_split_file(dir, "large.tsv", 1100000, 16, &r); /* over 32 MiB: sampled in chunks */
  /* too few distinct keys: fewer lines */
  char *tiny = tu_path(dir, "tiny.tsv");
  tu_write_file(tiny, "a\t1\nb\t2\n", 8);
  result res = RUN("split", tiny, "4");
  expect_code(&res, 0);
  assert_true(res.outlen <= 4);
  tu_cli_free(&res);
  tu_write_file(tiny, "a\t1\n\\q\t2\n", 9);
  res = RUN("split", tiny, "4");
  expect_code(&res, 2);
  expect_err_has(&res, "tiny.tsv:2: ");
  tu_cli_free(&res);
  free(tiny);
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
      cmocka_unit_test(test_ranges_match_reference),
      cmocka_unit_test(test_empty_parts),
      cmocka_unit_test(test_bad_bounds),
      cmocka_unit_test(test_split_tsv),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
