/* SPDX-License-Identifier: MIT */
/*
 * test_golden.c — indexes frozen on disk (tests/golden/, never
 * regenerated): the current format must keep reading the index written by
 * this version's tools, and an index of an older segment format must be
 * refused with TERN_EVERSION, never misread.  tests/golden/README.md says
 * how each was made.  A format change that breaks either fails here.
 *
 * Each golden directory is copied to a fresh temporary directory first
 * (opening may create LMDB's lock file), so the frozen bytes never change.
 */
#include "tests/common/testutil.h"
#include "tern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN_DOCS 300
#define GOLDEN_NEW 5

static const char *const colors[3] = {"red", "green", "blue"};

/* The reference, from the rule that wrote docs.tsv and the edits after
 * it (README.md): key k%04d, value "value-%d", color by i % 3, mod:i % 10;
 * every 15th deleted; new00..new04 put with color:red. */
static int golden_live(int i) { return i % 15 != 0; }

static char *copy_golden(const char *which) {
  const char *src = getenv("TERN_SOURCE_DIR");
  assert_non_null(src);
  char *dir = tu_tmpdir(which);
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "cp -r '%s/tests/golden/%s/.' '%s/'", src, which, dir);
  assert_int_equal(system(cmd), 0);
  return dir;
}

static void golden_value(tern_snapshot *s, const char *key, const char *want) {
  char buf[64];
  size_t len = 0;
  int rc = tern_get(s, key, strlen(key), buf, sizeof buf, &len);
  if (!want) {
    assert_int_equal(rc, TERN_NOTFOUND);
    return;
  }
  assert_int_equal(rc, TERN_OK);
  assert_int_equal(len, strlen(want));
  assert_memory_equal(buf, want, len);
}

static void check_gets(tern_snapshot *s) {
  char key[16], val[32];
  for (int i = 0; i < GOLDEN_DOCS; i++) {
    snprintf(key, sizeof key, "k%04d", i);
    snprintf(val, sizeof val, "value-%d", i);
    golden_value(s, key, golden_live(i) ? val : NULL);
  }
  for (int i = 0; i < GOLDEN_NEW; i++) {
    snprintf(key, sizeof key, "new0%d", i);
    snprintf(val, sizeof val, "fresh-%d", i);
    golden_value(s, key, val);
  }
  golden_value(s, "k0300", NULL);
  golden_value(s, "absent", NULL);
}

/* Keys in byte order: k0001.. (live ones) then new00..new04. */
static void check_scan(tern_snapshot *s) {
  tern_cursor *c;
  assert_int_equal(tern_cursor_open(&c, s, NULL), TERN_OK);
  int i = 0, n = 0, rc = tern_cursor_first(c);
  char want[16];
  for (; rc == TERN_OK; rc = tern_cursor_next(c), n++) {
    while (i < GOLDEN_DOCS && !golden_live(i)) i++;
    if (i < GOLDEN_DOCS) snprintf(want, sizeof want, "k%04d", i++);
    else snprintf(want, sizeof want, "new0%d", i++ - GOLDEN_DOCS);
    tern_slice k;
    assert_int_equal(tern_cursor_key(c, &k), TERN_OK);
    assert_int_equal(k.len, strlen(want));
    assert_memory_equal(k.data, want, k.len);
  }
  assert_int_equal(rc, TERN_NOTFOUND);
  assert_int_equal(n, GOLDEN_DOCS - GOLDEN_DOCS / 15 + GOLDEN_NEW);
  assert_int_equal(tern_cursor_close(c), TERN_OK);
}

/* color:red in key order: the live k%04d with i % 3 == 0, then new0x. */
static void check_search(tern_snapshot *s, int color) {
  tern_term t = {.field = "color", .term = colors[color], .len = strlen(colors[color])};
  tern_postings *p;
  assert_int_equal(tern_postings_open(&p, s, &t, 1), TERN_OK);
  size_t hits = 0, want = 0;
  uint64_t doc;
  while (tern_postings_next(p, &doc) == TERN_OK && doc != TERN_NO_MORE_DOCS) {
    tern_slice k, v;
    assert_int_equal(tern_postings_doc(p, &k, &v), TERN_OK);
    int i;
    char buf[16];
    assert_true(k.len < sizeof buf);
    memcpy(buf, k.data, k.len);
    buf[k.len] = 0;
    if (sscanf(buf, "k%d", &i) == 1) {
      assert_int_equal(i % 3, color);
      assert_true(golden_live(i));
    } else {
      assert_int_equal(color, 0);
      assert_memory_equal(buf, "new0", 4);
    }
    hits++;
  }
  for (int i = 0; i < GOLDEN_DOCS; i++) want += i % 3 == color && golden_live(i);
  if (color == 0) want += GOLDEN_NEW;
  assert_int_equal(hits, want);
  assert_int_equal(tern_postings_close(p), TERN_OK);
}

/* Every answer of the golden index `which` read back, and verified. */
static void check_golden_reads(const char *which) {
  char *dir = copy_golden(which);
  tern_index *idx;
  assert_int_equal(tern_open(&idx, dir, 0, NULL), TERN_OK);
  assert_int_equal(tern_verify(idx), TERN_OK);
  tern_snapshot *s;
  assert_int_equal(tern_snapshot_open(&s, idx), TERN_OK);
  check_gets(s);
  check_scan(s);
  for (int c = 0; c < 3; c++) check_search(s, c);
  uint64_t live;
  assert_int_equal(tern_snapshot_count(s, &live), TERN_OK);
  assert_int_equal(live, GOLDEN_DOCS - GOLDEN_DOCS / 15 + GOLDEN_NEW);
  assert_int_equal(tern_snapshot_close(s), TERN_OK);
  assert_int_equal(tern_close(idx), TERN_OK);
  tu_rmtree(dir);
  free(dir);
}

/* The current formats: segment format 4, catalog version 4 (the buffered
 * documents in LMDB's main database, by generation). */
static void test_current_format_reads(void **state) {
  (void)state;
  check_golden_reads("v4c4");
}

/* Catalog version 2 (the state record in table "meta"): read and written
 * as it is. */
static void test_catalog2_reads(void **state) {
  (void)state;
  check_golden_reads("v4");
}

/* Catalog version 3 (the state record in LMDB's main database, the
 * buffer in table "buffer"): read and written as it is. */
static void test_catalog3_reads(void **state) {
  (void)state;
  check_golden_reads("v4c3");
}

/* Segment format 3 (before each .tim page carried its own checksum):
 * refused at open or at the first read of the segment, never read as
 * format 4, and the frozen files are left as they were. */
static void test_older_format_refused(void **state) {
  (void)state;
  char *dir = copy_golden("v3");
  tern_index *idx;
  char msg[512] = "";
  int rc = tern_open(&idx, dir, 0, NULL);
  if (rc == TERN_OK) {
    tern_snapshot *s;
    rc = tern_snapshot_open(&s, idx);
    if (rc == TERN_OK) {
      char buf[32];
      size_t len;
      rc = tern_get(s, "k0001", 5, buf, sizeof buf, &len);
      snprintf(msg, sizeof msg, "%s", tern_errmsg());
      assert_int_equal(tern_snapshot_close(s), TERN_OK);
    } else {
      snprintf(msg, sizeof msg, "%s", tern_errmsg());
    }
    assert_int_equal(tern_close(idx), TERN_OK);
  } else {
    snprintf(msg, sizeof msg, "%s", tern_errmsg());
  }
  assert_int_equal(rc, TERN_EVERSION);
  assert_non_null(strstr(msg, "s000000000001.tix"));
  assert_non_null(strstr(msg, "version 3"));
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_current_format_reads),
      cmocka_unit_test(test_catalog2_reads),
      cmocka_unit_test(test_catalog3_reads),
      cmocka_unit_test(test_older_format_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
