/* SPDX-License-Identifier: MIT */
/*
 * test_catalog_state.c — where the state record lives (docs/FORMAT.md,
 * "state record"): a catalog created now (version 3) keeps it in LMDB's
 * main database, beside the tables' records, and table "meta" has none; a
 * version 2 catalog (tests/golden/v4) keeps it in "meta" through writes,
 * flushes and reopenings, never moved.  Either way the documents read
 * back against a reference, and a state record gone from its place is
 * TERN_ECORRUPT naming the catalog, never an index read as empty.
 */
#include "tests/engine/enginetest.h"
#include "tests/engine/rawcatalog.h"

#include "engine/format/catalog_schema.h"

#include <stdio.h>
#include <string.h>

enum { NPUT = 40 };

/* Whether table `table` (NULL: the main database) of `cat` has key `key`;
 * *version: the format record's version. */
static int raw_has(const char *cat, const char *table, const char *key, uint32_t *version) {
  MDB_env *env;
  MDB_txn *t = rc_begin(cat, &env);
  MDB_dbi dbi, meta;
  assert_int_equal(mdb_dbi_open(t, table, 0, &dbi), 0);
  MDB_val k = {strlen(key), (void *)key}, v;
  int rc = mdb_get(t, dbi, &k, &v);
  assert_true(rc == 0 || rc == MDB_NOTFOUND);
  assert_int_equal(mdb_dbi_open(t, "meta", 0, &meta), 0);
  MDB_val fk = {6, "format"}, fv;
  assert_int_equal(mdb_get(t, meta, &fk, &fv), 0);
  assert_int_equal(tern_rec_format_decode(fv.mv_data, fv.mv_size, version), TERN_OK);
  mdb_txn_abort(t);
  mdb_env_close(env);
  return rc == 0;
}

static void raw_del(const char *cat, const char *table, const char *key) {
  MDB_env *env;
  MDB_txn *t = rc_begin(cat, &env);
  MDB_dbi dbi;
  assert_int_equal(mdb_dbi_open(t, table, 0, &dbi), 0);
  MDB_val k = {strlen(key), (void *)key};
  assert_int_equal(mdb_del(t, dbi, &k, NULL), 0);
  rc_commit(env, t);
}

/* NPUT one-document commits of keys pfx00..: values "v<i>", key 3 then
 * deleted; a flush after the first half moves them into a segment. */
static void write_some(tern_index *idx, const char *pfx) {
  for (int i = 0; i < NPUT; i++) {
    char key[16], val[16];
    snprintf(key, sizeof key, "%s%02d", pfx, i);
    snprintf(val, sizeof val, "v%d", i);
    tern_txn *t;
    ET_OK(tern_txn_begin(&t, idx, 0));
    ET_OK(tern_put(t, key, strlen(key), val, strlen(val), NULL, 0));
    ET_OK(tern_commit(t));
    if (i == NPUT / 2) ET_OK(tern_flush(idx));
  }
  char key[16];
  snprintf(key, sizeof key, "%s03", pfx);
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, 0));
  ET_OK(tern_delete(t, key, strlen(key)));
  ET_OK(tern_commit(t));
}

static void check_some(tern_index *idx, const char *pfx) {
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  for (int i = 0; i < NPUT; i++) {
    char key[16], want[16], buf[16];
    snprintf(key, sizeof key, "%s%02d", pfx, i);
    snprintf(want, sizeof want, "v%d", i);
    size_t len = 0;
    int rc = tern_get(s, key, strlen(key), buf, sizeof buf, &len);
    if (i == 3) {
      assert_int_equal(rc, TERN_NOTFOUND);
      continue;
    }
    ET_OK(rc);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(buf, want, len);
  }
  ET_OK(tern_snapshot_close(s));
}

static void test_new_catalog_in_main(void **state) {
  (void)state;
  char *dir = tu_tmpdir("state-main"), *cat = tu_path(dir, "catalog.mdb");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  write_some(idx, "a");
  ET_OK(tern_close(idx));
  uint32_t version;
  assert_true(raw_has(cat, NULL, "state", &version));
  assert_int_equal(version, TERN_CATALOG_VERSION);
  assert_false(raw_has(cat, "meta", "state", &version));
  ET_OK(tern_open(&idx, dir, TERN_RDONLY, NULL));
  check_some(idx, "a");
  ET_OK(tern_verify(idx));
  ET_OK(tern_close(idx));
  /* Gone from its place: damage, for a reader and a writer alike. */
  raw_del(cat, NULL, "state");
  idx = NULL;
  assert_int_equal(tern_open(&idx, dir, TERN_RDONLY, NULL), TERN_ECORRUPT);
  assert_non_null(strstr(tern_errmsg(), "catalog.mdb"));
  assert_null(idx);
  assert_int_equal(tern_open(&idx, dir, 0, NULL), TERN_ECORRUPT);
  tu_rmtree(dir);
  free(cat);
  free(dir);
}

static char *copy_golden_v4(void) {
  const char *src = getenv("TERN_SOURCE_DIR");
  assert_non_null(src);
  char *dir = tu_tmpdir("state-v2");
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "cp -r '%s/tests/golden/v4/.' '%s/'", src, dir);
  assert_int_equal(system(cmd), 0);
  return dir;
}

static void test_version2_stays_in_meta(void **state) {
  (void)state;
  char *dir = copy_golden_v4(), *cat = tu_path(dir, "catalog.mdb");
  uint32_t version;
  assert_true(raw_has(cat, "meta", "state", &version));
  assert_int_equal(version, 2);
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, 0, NULL));
  write_some(idx, "b");
  ET_OK(tern_compact(idx)); /* a flush, merges and a copied catalog */
  ET_OK(tern_close(idx));
  assert_true(raw_has(cat, "meta", "state", &version));
  assert_int_equal(version, 2);
  assert_false(raw_has(cat, NULL, "state", &version));
  ET_OK(tern_open(&idx, dir, TERN_RDONLY, NULL));
  check_some(idx, "b");
  ET_OK(tern_verify(idx));
  ET_OK(tern_close(idx));
  raw_del(cat, "meta", "state");
  idx = NULL;
  assert_int_equal(tern_open(&idx, dir, TERN_RDONLY, NULL), TERN_ECORRUPT);
  assert_non_null(strstr(tern_errmsg(), "catalog.mdb"));
  tu_rmtree(dir);
  free(cat);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_new_catalog_in_main),
                                     cmocka_unit_test(test_version2_stays_in_meta)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
