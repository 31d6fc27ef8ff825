/* SPDX-License-Identifier: MIT */
/*
 * test_bench.c — runs the built tern-bench (TERN_BENCH_BIN, set by ctest)
 * at a small scale and checks what it wrote, not how fast anything was:
 * the CSV header, one row per store x phase x N x run, every lookup
 * verified with zero errors, the build table, the Markdown report and,
 * when gnuplot is installed, the PNG.  Also the dispatcher's --help and its
 * refusal of bad arguments.
 *
 * Scale: 1,000,000 docs (the "1M-doc mode"), 100 and 1,000 cold
 * lookups, 1,000 warm ones, one run; TERN_BENCH_TEST_DOCS overrides the
 * document count.
 */
#include "tests/common/testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The 1M-doc mode: about 16 s under AddressSanitizer on the
 * reference machine while other builds ran, so no smaller size is needed. */
#define DEFAULT_DOCS "1000000"

static const char *bench_bin(void) {
  const char *b = getenv("TERN_BENCH_BIN");
  return b && *b && strcmp(b, "none") != 0 ? b : NULL;
}

#define SKIP_WITHOUT_BINARY()                                                                      \
  do {                                                                                             \
    if (!bench_bin()) {                                                                            \
      fprintf(stderr, "skipped: TERN_BENCH_BIN is unset or \"none\" (tern-bench not built)\n");    \
      skip();                                                                                      \
    }                                                                                              \
  } while (0)

/* Runs argv with stdout+stderr into `log`; returns the exit status (or
 * 128+signal). */
static int run(char *const argv[], const char *log) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) _exit(126);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    execv(argv[0], argv);
    _exit(127);
  }
  int status = 0;
  assert_true(waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void dump(const char *path) {
  size_t len;
  uint8_t *text = tu_read_file(path, &len);
  fprintf(stderr, "---- %s\n%.*s\n----\n", path, (int)len, (const char *)text);
  free(text);
}

/* Runs argv with stdout+stderr into `log` and asserts it exited 0 and
 * printed `expect` (dumping the log when not); its output, NUL-terminated
 * (free it). */
static char *run_text(char *const argv[], const char *log, const char *expect) {
  int rc = run(argv, log);
  size_t len;
  char *text = (char *)tu_read_file(log, &len);
  text[len] = '\0'; /* tu_read_file leaves room for it */
  if (rc != 0 || !strstr(text, expect)) dump(log);
  assert_int_equal(rc, 0);
  assert_non_null(strstr(text, expect));
  return text;
}

/* A CSV file split into lines and fields (no quoting: tern-bench writes
 * none). */
typedef struct csv {
  char *text;
  char **lines;
  size_t nlines;
} csv;

static void csv_load(csv *c, const char *path) {
  size_t len;
  c->text = (char *)tu_read_file(path, &len);
  c->text = realloc(c->text, len + 1);
  c->text[len] = '\0';
  c->lines = calloc(len + 2, sizeof *c->lines);
  c->nlines = 0;
  for (char *save = NULL, *l = strtok_r(c->text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
    c->lines[c->nlines++] = l;
}

static void csv_free(csv *c) {
  free(c->text);
  free(c->lines);
}

/* Splits `line` (modified) at commas into at most max fields. */
static size_t split(char *line, char **f, size_t max) {
  size_t n = 0;
  for (char *p = line; n < max;) {
    f[n++] = p;
    char *comma = strchr(p, ',');
    if (!comma) break;
    *comma = '\0';
    p = comma + 1;
  }
  return n;
}

static int column(char **hdr, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(hdr[i], name)) return (int)i;
  fail_msg("results.csv: no column '%s'", name);
  return -1;
}

static const char *const k_stores[] = {"tern-pulse1", "tern-pulse0", "tern-pulse1-pread",
                                       "lmdb-nordahead",
                                       "lmdb-readahead"};
static const char *const k_phases[] = {"cold-present", "cold-absent", "warm-present",
                                       "warm-absent"};

static int index_of(const char *const *names, size_t n, const char *s) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(names[i], s)) return (int)i;
  fail_msg("unexpected name '%s'", s);
  return -1;
}

static void test_help_lists_subcommands(void **state) {
  (void)state;
  SKIP_WITHOUT_BINARY();
  char *dir = tu_tmpdir("bench-help");
  char *log = tu_path(dir, "help.log");
  char *argv[] = {(char *)bench_bin(), "--help", NULL};
  assert_int_equal(run(argv, log), 0);
  size_t len;
  char *text = (char *)tu_read_file(log, &len);
  text = realloc(text, len + 1);
  text[len] = '\0';
  const char *expect[] = {"pk",          "codec",      "livedocs",      "--docs",
                          "--lookups",   "--segments", "--drop-caches", "--lmdb-readahead",
                          "--thresholds"};
  for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++)
    if (!strstr(text, expect[i])) fail_msg("--help does not mention %s", expect[i]);
  free(text);
  char *bad1[] = {(char *)bench_bin(), "no-such-subcommand", NULL};
  assert_int_equal(run(bad1, log), 2);
  char *bad2[] = {(char *)bench_bin(), "pk", "--docs", "many", NULL};
  assert_int_equal(run(bad2, log), 2);
  char *bad3[] = {(char *)bench_bin(), "pk", "--keys", "uuid7", NULL};
  assert_int_equal(run(bad3, log), 2);
  char *bad4[] = {(char *)bench_bin(), "codec", "--thresholds", "1,99", NULL};
  assert_int_equal(run(bad4, log), 2);
  free(log);
  free(dir);
}

static void check_results_csv(const char *path, unsigned long long docs) {
  csv c;
  csv_load(&c, path);
  assert_true(c.nlines >= 1);
  char *hdr[32];
  size_t nh = split(c.lines[0], hdr, 32);
  const char *required[] = {"store",
                            "keys",
                            "phase",
                            "n",
                            "run",
                            "total_ms",
                            "us_per_lookup",
                            "reads_per_lookup",
                            "majflt_per_lookup",
                            "read_bytes_per_lookup",
                            "verified",
                            "errors"};
  for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
    assert_true(i < nh);
    assert_string_equal(hdr[i], required[i]); /* the documented leading columns, in order */
  }
  int cs = column(hdr, nh, "store"), cp = column(hdr, nh, "phase"), cn = column(hdr, nh, "n");
  int cr = column(hdr, nh, "run"), cv = column(hdr, nh, "verified"), ce = column(hdr, nh, "errors");
  int ck = column(hdr, nh, "keys"), crd = column(hdr, nh, "reads_per_lookup");
  int cus = column(hdr, nh, "us_per_lookup");
  /* Expected: 4 stores x (2 cold phases x N in {100, 1000} + 2 warm phases) x 1 run. */
  int seen[5][4][2] = {{{0}}};
  size_t rows = 0;
  for (size_t i = 1; i < c.nlines; i++, rows++) {
    char *f[32];
    assert_int_equal(split(c.lines[i], f, 32), nh);
    int s = index_of(k_stores, 5, f[cs]), p = index_of(k_phases, 4, f[cp]);
    unsigned long long n = strtoull(f[cn], NULL, 10);
    assert_string_equal(f[ck], "random");
    assert_string_equal(f[cr], "1");
    int slot;
    if (p < 2) {
      assert_true(n == 100 || n == 1000);
      slot = n == 1000;
    } else {
      assert_int_equal(n, 1000);
      slot = 0;
    }
    seen[s][p][slot]++;
    assert_int_equal(strtoull(f[cv], NULL, 10), n); /* every lookup verified */
    assert_string_equal(f[ce], "0");
    assert_true(strtod(f[cus], NULL) > 0);
    if (s < 3) { /* tern: codec reads are counted; a cold present lookup reads */
      assert_string_not_equal(f[crd], "NA");
      if (p == 0) assert_true(strtod(f[crd], NULL) > 0);
    } else {
      assert_string_equal(f[crd], "NA");
    }
  }
  assert_int_equal(rows, 5 * (2 * 2 + 2));
  for (int s = 0; s < 5; s++)
    for (int p = 0; p < 4; p++)
      for (int k = 0; k < (p < 2 ? 2 : 1); k++)
        assert_int_equal(seen[s][p][k], 1);
  csv_free(&c);
  (void)docs;
}

static void check_build_csv(const char *path, unsigned long long docs) {
  csv c;
  csv_load(&c, path);
  assert_int_equal(c.nlines, 1 + 5);
  char *hdr[32];
  size_t nh = split(c.lines[0], hdr, 32);
  int cs = column(hdr, nh, "store"), cd = column(hdr, nh, "docs");
  int cg = column(hdr, nh, "segments"), cb = column(hdr, nh, "bytes");
  for (size_t i = 1; i < c.nlines; i++) {
    char *f[32];
    assert_int_equal(split(c.lines[i], f, 32), nh);
    assert_int_equal(index_of(k_stores, 5, f[cs]), (int)i - 1);
    assert_int_equal(strtoull(f[cd], NULL, 10), docs);
    assert_true(strtoull(f[cg], NULL, 10) >= 1);
    assert_true(strtoull(f[cb], NULL, 10) > 0);
  }
  csv_free(&c);
}

static int have_gnuplot(void) { return system("command -v gnuplot >/dev/null 2>&1") == 0; }

static void test_pk_small_run(void **state) {
  (void)state;
  SKIP_WITHOUT_BINARY();
  const char *docs = getenv("TERN_BENCH_TEST_DOCS");
  if (!docs || !*docs) docs = DEFAULT_DOCS;
  char *dir = tu_tmpdir("bench-pk");
  char *out = tu_path(dir, "out"), *log = tu_path(dir, "pk.log");
  char *argv[] = {(char *)bench_bin(),
                  "pk",
                  "--docs",
                  (char *)docs,
                  "--lookups",
                  "100,1000",
                  "--runs",
                  "1",
                  "--warm",
                  "1000",
                  "--dir",
                  dir,
                  "--out",
                  out,
                  NULL};
  int rc = run(argv, log);
  if (rc != 0) dump(log);
  assert_int_equal(rc, 0);
  char *results = tu_path(out, "results.csv"), *build = tu_path(out, "build.csv");
  char *md = tu_path(out, "results.md"), *png = tu_path(out, "cold-lookups.png");
  check_results_csv(results, strtoull(docs, NULL, 10));
  check_build_csv(build, strtoull(docs, NULL, 10));
  /* the one-random-read reference: one row per N and run */
  char *baseline = tu_path(out, "baseline.csv");
  csv c;
  csv_load(&c, baseline);
  assert_int_equal(c.nlines, 1 + 2);
  assert_non_null(strstr(c.lines[0], "us_per_read"));
  csv_free(&c);
  free(baseline);
  size_t len;
  uint8_t *text = tu_read_file(md, &len);
  text = realloc(text, len + 1);
  text[len] = '\0';
  assert_non_null(strstr((char *)text, "## Build and size"));
  assert_non_null(strstr((char *)text, "POSIX_FADV_DONTNEED"));
  free(text);
  if (have_gnuplot()) {
    uint8_t *img = tu_read_file(png, &len);
    assert_true(len > 8 && memcmp(img, "\x89PNG", 4) == 0);
    free(img);
  } else {
    fprintf(stderr, "note: gnuplot not installed; PNG not checked\n");
  }
  free(results);
  free(build);
  free(md);
  free(png);
  free(out);
  free(log);
  free(dir);
}

static void test_codec_small_run(void **state) {
  (void)state;
  SKIP_WITHOUT_BINARY();
  char *dir = tu_tmpdir("bench-codec");
  char *out = tu_path(dir, "out"), *log = tu_path(dir, "codec.log");
  char *argv[] = {(char *)bench_bin(),
                  "codec",
                  "--docs",
                  "50000",
                  "--runs",
                  "1",
                  "--warm",
                  "2000",
                  "--cold",
                  "100",
                  "--zipf-docs",
                  "50000",
                  "--zipf-terms",
                  "5000",
                  "--zipf-s",
                  "1.0",
                  "--thresholds",
                  "0,1,4",
                  "--zipf-lookups",
                  "200",
                  "--dir",
                  dir,
                  "--out",
                  out,
                  NULL};
  int rc = run(argv, log);
  if (rc != 0) dump(log);
  assert_int_equal(rc, 0);
  char *pk = tu_path(out, "codec-pk.csv"), *zipf = tu_path(out, "codec-zipf.csv");
  csv c;
  csv_load(&c, pk);
  /* tern-pulse1/0 x mmap/pread x 4 phases + LMDB x 4 phases, one run */
  assert_int_equal(c.nlines, 1 + 2 * 2 * 4 + 4);
  for (size_t i = 1; i < c.nlines; i++) {
    char *f[16] = {0};
    assert_int_equal(split(c.lines[i], f, 16), 11);
    assert_string_equal(f[10], "0"); /* errors */
  }
  csv_free(&c);
  csv_load(&c, zipf);
  assert_int_equal(c.nlines, 1 + 3);
  for (size_t i = 1; i < c.nlines; i++) {
    char *f[16] = {0};
    assert_int_equal(split(c.lines[i], f, 16), 15);
    assert_string_equal(f[14], "0");         /* errors */
    assert_true(strtod(f[11], NULL) >= 1.0); /* a cold term lookup reads at least once */
  }
  csv_free(&c);
  free(pk);
  free(zipf);
  free(out);
  free(log);
  free(dir);
}

/* seek on variable-length shapes with values: every answer is verified
 * by the tool (exit 1 on a wrong one). */
static void test_seek_shapes(void **state) {
  (void)state;
  SKIP_WITHOUT_BINARY();
  char *dir = tu_tmpdir("bench-seek");
  char *log = tu_path(dir, "seek.log");
  const char *shapes[] = {"paths", "packages", "emails", "varlen", "decimal"};
  const char *values[] = {"0", "100", "4", "300", "2000"};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    char *argv[] = {(char *)bench_bin(), "seek", "--keys", (char *)shapes[i], "--docs", "20000",
                    "--lookups", "5000", "--rounds", "1", "--values", (char *)values[i], "--dir",
                    dir, NULL};
    int rc = run(argv, log);
    if (rc != 0) dump(log);
    assert_int_equal(rc, 0);
  }
  tu_rmtree(dir);
  free(log);
  free(dir);
}

/* open's reopen phase: open + get + close again and again in one
 * process, every answer verified (exit 1 on a wrong one), the table
 * printed. */
static void test_open_reopen(void **state) {
  (void)state;
  SKIP_WITHOUT_BINARY();
  char *dir = tu_tmpdir("bench-open");
  char *log = tu_path(dir, "open.log");
  char *argv[] = {(char *)bench_bin(), "open", "--docs", "20000", "--runs", "2", "--phases",
                  "reopen", "--dir", dir, NULL};
  char *text = run_text(argv, log, "### reopen:");
  assert_non_null(strstr(text, "0 errors)"));
  free(text);
  tu_rmtree(dir);
  free(log);
  free(dir);
}

/* Field `col` (1-based, between '|') of the table row that starts with
 * "| name |" after `from` in text, as a number; -1 when there is none. */
static double row_field(const char *text, const char *from, const char *name, int col) {
  const char *at = strstr(text, from);
  char head[64];
  snprintf(head, sizeof head, "\n| %s |", name);
  const char *row = at ? strstr(at, head) : NULL;
  if (!row) return -1;
  row += 1;
  for (int i = 0; i < col && row; i++) row = strchr(row + 1, '|');
  return row ? strtod(row + 1, NULL) : -1;
}

/* open's fresh phase: every sample of every side is measured (the pair
 * in a pass of its own, the read-ahead side and the whole processes in
 * a second one), every answer right: a sample a pass left out would show
 * as a zero median. */
static void test_open_fresh(void **state) {
  (void)state;
  SKIP_WITHOUT_BINARY();
  const char *tern = getenv("TERN_BIN");
  if (!tern || !*tern) skip();
  char *dir = tu_tmpdir("bench-fresh");
  char *log = tu_path(dir, "fresh.log");
  char *argv[] = {(char *)bench_bin(), "open", "--docs", "20000", "--samples", "3", "--runs", "1",
                  "--phases", "fresh", "--tern", (char *)tern, "--dir", dir, NULL};
  char *text = run_text(argv, log, "present keys (3 samples, medians; 0 errors)");
  const char *sections[] = {"present keys (3 samples, medians; 0 errors)",
                            "absent keys (3 samples, medians; 0 errors)"};
  for (int k = 0; k < 2; k++) {
    assert_non_null(strstr(text, sections[k]));
    /* open + get of each store, the whole processes of tern and lmdb */
    assert_true(row_field(text, sections[k], "tern", 3) > 0);
    assert_true(row_field(text, sections[k], "lmdb-nordahead", 3) > 0);
    assert_true(row_field(text, sections[k], "lmdb", 3) > 0);
    assert_true(row_field(text, sections[k], "tern", 8) > 0);
    assert_true(row_field(text, sections[k], "lmdb", 8) > 0);
    /* a cold get of tern's reads .tix, then one block (present) */
    if (k == 0) assert_true(row_field(text, sections[k], "tern", 5) == 2.0);
  }
  free(text);
  tu_rmtree(dir);
  free(log);
  free(dir);
}

/* engine's latency phase: both tables (each path alone in a process of its
 * own, then the four in one process), every path timed in each, its
 * ratios to bare LMDB there: a path a table left out, or a child process
 * whose figures were lost, shows as a missing row or a zero. */
static void test_engine_latency(void **state) {
  (void)state;
  SKIP_WITHOUT_BINARY();
  char *dir = tu_tmpdir("bench-latency");
  char *log = tu_path(dir, "latency.log");
  char *argv[] = {(char *)bench_bin(), "engine", "--phases", "latency", "--commits", "600",
                  "--runs", "2", "--dir", dir, NULL};
  char *text = run_text(argv, log, "the four paths in one process");
  const char *tables[] = {"each path alone, in a process of its own",
                          "the four paths in one process"};
  const char *paths[] = {"bare LMDB put + commit", "tern put + commit (background worker)",
                         "tern put + commit (TERN_FOREGROUND)", "LMDB doing tern's catalog writes"};
  const char *ratios[] = {"ratio background / LMDB", "ratio foreground / LMDB",
                          "ratio catalog writes / LMDB"};
  for (int t = 0; t < 2; t++) {
    assert_non_null(strstr(text, tables[t]));
    for (int p = 0; p < 4; p++)
      for (int col = 1; col <= 6; col++) /* wall and CPU: median, p99, max */
        assert_true(row_field(text, tables[t], paths[p], col) > 0);
    for (int p = 0; p < 3; p++) assert_true(row_field(text, tables[t], ratios[p], 2) > 0);
  }
  /* tern's paths flush at the end: one segment each */
  assert_true(row_field(text, tables[0], paths[1], 7) == 1.0);
  free(text);
  tu_rmtree(dir);
  free(log);
  free(dir);
}

/* latency-path, the fresh program the latency phase times each path in:
 * one line of seven numbers (median, p99, max of wall then CPU µs, in
 * order, and the segments at the end); a path out of range refused. */
static void test_latency_path(void **state) {
  (void)state;
  SKIP_WITHOUT_BINARY();
  char *dir = tu_tmpdir("bench-latency-path");
  char *log = tu_path(dir, "path.log");
  char *argv[] = {(char *)bench_bin(), "latency-path", "--path", "1", "--commits", "300",
                  "--dir", dir, NULL};
  char *text = run_text(argv, log, "\n");
  double f[7];
  assert_int_equal(sscanf(text, "%lf %lf %lf %lf %lf %lf %lf", &f[0], &f[1], &f[2], &f[3], &f[4],
                          &f[5], &f[6]),
                   7);
  for (int k = 0; k < 6; k += 3) {
    assert_true(f[k] > 0);
    assert_true(f[k] <= f[k + 1] && f[k + 1] <= f[k + 2]);
  }
  assert_true(f[6] == 1.0); /* tern flushes at the end: one segment */
  free(text);
  char *bad[] = {(char *)bench_bin(), "latency-path", "--path", "4", "--dir", dir, NULL};
  assert_int_equal(run(bad, log), 2);
  tu_rmtree(dir);
  free(log);
  free(dir);
}

/* engine's erase phase: both stores' rows of both kinds with their median,
 * p99 and the first run's first commits, the ratios; and a request for
 * more keys than there are is refused, not run on keys deleted already. */
static void test_engine_erase(void **state) {
  (void)state;
  SKIP_WITHOUT_BINARY();
  char *dir = tu_tmpdir("bench-erase");
  char *log = tu_path(dir, "erase.log");
  char *argv[] = {(char *)bench_bin(), "engine", "--phases", "erase", "--docs",  "3000",
                  "--commits",         "200",    "--runs",   "3",     "--dir",   dir,    NULL};
  /* 2 kinds x 3 runs x 200 = 1,200 of the 3,000 keys */
  char *text = run_text(argv, log, "one-document transactions a run of each kind");
  const char *rows[] = {"tern delete", "LMDB delete", "tern replace", "LMDB replace"};
  for (int r = 0; r < 4; r++)
    for (int col = 1; col <= 3; col++) assert_true(row_field(text, "erase:", rows[r], col) > 0);
  assert_true(row_field(text, "erase:", "ratio tern / LMDB, delete median (< 1: tern faster)", 1) > 0);
  assert_true(row_field(text, "erase:", "ratio tern / LMDB, replace median (< 1: tern faster)", 1) > 0);
  free(text);
  char *too_many[] = {(char *)bench_bin(), "engine", "--phases", "erase", "--docs", "1000",
                      "--commits", "300", "--runs", "2", "--dir", dir, NULL}; /* 1,200 */
  assert_int_not_equal(run(too_many, log), 0);
  tu_rmtree(dir);
  free(log);
  free(dir);
}

/* engine's memory phase: both tables, the buffer view's bytes a
 * document above the key and value it holds (32 bytes) and below what
 * even a sanitizer's shadow would make of it. */
static void test_engine_memory(void **state) {
  (void)state;
  SKIP_WITHOUT_BINARY();
  char *dir = tu_tmpdir("bench-memory");
  char *log = tu_path(dir, "memory.log");
  char *argv[] = {(char *)bench_bin(), "engine", "--phases", "memory", "--import", "2000",
                  "--runs", "1", "--dir", dir, NULL};
  const char view[] = "the write buffer's view a reader builds";
  char *text = run_text(argv, log, view);
  assert_non_null(strstr(text, "peak RSS of one transaction of 2000 puts"));
  if (!strstr(text, "not measured")) {
    double per = row_field(text, view, "200000 buffered", 1);
    print_message("buffer view: %.0f bytes a document\n", per);
    assert_true(per > 32 && per < 1024);
  }
  free(text);
  tu_rmtree(dir);
  free(log);
  free(dir);
}

/* whole: `tern get DIR -` and lmdb-get must print the same bytes (the tool
 * compares them and exits 1 otherwise), on generated keys and on a file. */
static void test_whole_small_run(void **state) {
  (void)state;
  SKIP_WITHOUT_BINARY();
  const char *tern = getenv("TERN_BIN");
  if (!tern || !*tern) skip();
  char *dir = tu_tmpdir("bench-whole");
  char *log = tu_path(dir, "whole.log"), *keys = tu_path(dir, "keys.txt");
  const char text[] = "/usr/bin/a\n/usr/bin/b\n/usr/share/doc/x y\n@scope/name\nb\\ack\n";
  tu_write_file(keys, text, sizeof text - 1);
  char spec[4200];
  snprintf(spec, sizeof spec, "file:%s", keys);
  const char *shapes[] = {"paths", spec};
  for (size_t i = 0; i < 2; i++) {
    char *argv[] = {(char *)bench_bin(), "whole", "--keys", (char *)shapes[i], "--docs", "20000",
                    "--lookups", "3000", "--runs", "1", "--values", "100", "--tern",
                    (char *)tern, "--dir", dir, NULL};
    int rc = run(argv, log);
    if (rc != 0) dump(log);
    assert_int_equal(rc, 0);
  }
  tu_rmtree(dir);
  free(log);
  free(keys);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_help_lists_subcommands),
      cmocka_unit_test(test_pk_small_run),
      cmocka_unit_test(test_codec_small_run),
      cmocka_unit_test(test_seek_shapes),
      cmocka_unit_test(test_whole_small_run),
      cmocka_unit_test(test_open_reopen),
      cmocka_unit_test(test_open_fresh),
      cmocka_unit_test(test_engine_latency),
      cmocka_unit_test(test_latency_path),
      cmocka_unit_test(test_engine_erase),
      cmocka_unit_test(test_engine_memory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
