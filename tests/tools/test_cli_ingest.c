/* SPDX-License-Identifier: MIT */
/*
 * test_cli_ingest.c — `tern ingest` and `tern delete-range` end to end:
 * a segment made by `tern import` in a scratch index, linked into a
 * directory of its own, ingested (the ingested document winning, and with
 * --behind), then ranges and prefixes deleted; every result compared with
 * the scan the documents predict, and the errors' exit codes.
 */
#include "tests/common/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *g_bin;
static char *g_dir;

static int sh(const char *fmt, const char *a) {
  char cmd[4096];
  char body[2048];
  snprintf(body, sizeof body, fmt, a, a, a, a);
  snprintf(cmd, sizeof cmd, "cd '%s' && %s", g_dir, body);
  int st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Runs `tern ARGS`; checks the exit code and (when want is not NULL) stdout. */
static void expect(const char *args, int code, const char *want) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s >out 2>err", g_dir, g_bin, args);
  int st = system(cmd);
  int got = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  char *p = tu_path(g_dir, "out");
  size_t n;
  char *out = (char *)tu_read_file(p, &n);
  out[n] = 0;
  free(p);
  if (got != code || (want && strcmp(out, want)))
    fail_msg("tern %s: exit %d (want %d)\n--- got:\n%s--- want:\n%s", args, got, code, out,
             want ? want : "(any)");
  free(out);
}

static void write_tsv(const char *name, const char *text) {
  char *p = tu_path(g_dir, name);
  tu_write_file(p, text, strlen(text));
  free(p);
}

/* The one segment of index `src`, linked into directory `seg`. */
static void segment_of(const char *src, const char *seg) {
  char fmt[512];
  snprintf(fmt, sizeof fmt, "mkdir %s && ln %s/s[0-9]*.* %s/", seg, src, seg);
  assert_int_equal(sh(fmt, ""), 0);
}

static void test_ingest_and_delete_range(void **state) {
  (void)state;
  write_tsv("a.tsv", "a1\tx1\na2\tx2\nb1\told\n");
  write_tsv("b.tsv", "b1\tnew\nb2\ty2\nb3\ty3\n");
  expect("import -q idx a.tsv", 0, NULL);
  expect("import -q src b.tsv", 0, NULL);
  segment_of("src", "seg");
  expect("ingest idx seg", 0, "");
  expect("scan idx", 0, "a1\tx1\na2\tx2\nb1\tnew\nb2\ty2\nb3\ty3\n");
  expect("verify idx", 0, NULL);
  /* --behind: the index keeps its documents */
  write_tsv("c.tsv", "b2\tlost\nc1\tz1\n");
  expect("import -q src2 c.tsv", 0, NULL);
  segment_of("src2", "seg2");
  expect("ingest --behind idx seg2", 0, "");
  expect("scan idx", 0, "a1\tx1\na2\tx2\nb1\tnew\nb2\ty2\nb3\ty3\nc1\tz1\n");
  /* a key in two segments: refused unless --later-wins */
  expect("ingest idx seg seg2", 2, "");
  expect("ingest --later-wins idx seg seg2", 0, "");
  expect("scan idx", 0, "a1\tx1\na2\tx2\nb1\tnew\nb2\tlost\nb3\ty3\nc1\tz1\n");
  /* errors */
  expect("ingest idx nowhere", 2, "");
  expect("ingest idx", 2, "");
  expect("ingest idx .", 2, ""); /* not a segment's directory */
  /* delete-range */
  expect("delete-range idx --from b2 --to c", 0, "");
  expect("scan idx", 0, "a1\tx1\na2\tx2\nb1\tnew\nc1\tz1\n");
  expect("delete-range idx --prefix a", 0, "");
  expect("scan idx", 0, "b1\tnew\nc1\tz1\n");
  expect("delete-range idx --prefix a --from b", 2, "");
  expect("delete-range idx --prefix ''", 2, ""); /* an empty prefix is refused, not "all" */
  expect("delete-range idx --bogus", 2, "");
  expect("scan idx", 0, "b1\tnew\nc1\tz1\n");
  expect("delete-range idx --prefix '\xff\xff'", 0, ""); /* no successor: [ff ff, end) */
  expect("scan idx", 0, "b1\tnew\nc1\tz1\n");
  expect("delete-range idx --to c", 0, "");
  expect("scan idx", 0, "c1\tz1\n");
  expect("delete-range idx", 0, "");
  expect("scan idx", 0, "");
  expect("verify idx", 0, NULL);
  expect("ingest --help", 0, NULL);
  expect("delete-range --help", 0, NULL);
}

int main(void) {
  g_bin = getenv("TERN_BIN");
  if (!g_bin || !*g_bin || access(g_bin, X_OK) != 0) {
    fprintf(stderr, "TERN_BIN is not set to the tern binary; run through ctest\n");
    return 77;
  }
  g_dir = tu_tmpdir("cli-ingest");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ingest_and_delete_range),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  tu_rmtree(g_dir);
  free(g_dir);
  return rc;
}
