/* SPDX-License-Identifier: MIT */
/*
 * test_catalog_state.c — where the state record and the buffer live
 * (docs/FORMAT.md, "state record"): a catalog created now (version 4)
 * keeps both in LMDB's main database, the buffered documents under their
 * generation, and rewrites the state record only when a flush, a merge or
 * a segment changes it, never for a commit of buffered documents; a flush
 * starts a new generation and its sweeps remove the old one.  Version 2
 * (tests/golden/v4: the state record in "meta") and version 3
 * (tests/golden/v4c3: a "buffer" table) catalogs keep their layout
 * through writes, flushes, compaction and reopenings.  Either way the
 * documents read back against a reference, the commit number never goes
 * back, and a state record gone from its place is TERN_ECORRUPT naming the
 * catalog, never an index read as empty.
 */
#include "tests/engine/enginetest.h"
#include "tests/engine/rawcatalog.h"

#include "engine/format/catalog_schema.h"
#include "codec/record.h"
#include "engine/maint/worker.h"

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

/* The main database's buffered documents of generation `gen` (*older:
 * those of earlier generations). */
static size_t raw_docs(const char *cat, uint64_t gen, size_t *older) {
  MDB_env *env;
  MDB_txn *t = rc_begin(cat, &env);
  MDB_dbi main_db;
  MDB_cursor *c;
  assert_int_equal(mdb_dbi_open(t, NULL, 0, &main_db), 0);
  assert_int_equal(mdb_cursor_open(t, main_db, &c), 0);
  MDB_val k, v;
  size_t same = 0;
  *older = 0;
  for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    uint64_t g;
    if (!tern_rec_genkey_decode(k.mv_data, k.mv_size, &g)) continue;
    assert_true(g <= gen);
    if (g == gen)
      same++;
    else
      ++*older;
  }
  mdb_cursor_close(c);
  mdb_txn_abort(t);
  mdb_env_close(env);
  return same;
}

/* The state record's stored bytes (main database). */
static size_t raw_state(const char *cat, uint8_t *out, size_t cap) {
  MDB_env *env;
  MDB_txn *t = rc_begin(cat, &env);
  MDB_dbi main_db;
  assert_int_equal(mdb_dbi_open(t, NULL, 0, &main_db), 0);
  MDB_val k = {5, "state"}, v;
  assert_int_equal(mdb_get(t, main_db, &k, &v), 0);
  assert_true(v.mv_size <= cap);
  memcpy(out, v.mv_data, v.mv_size);
  mdb_txn_abort(t);
  mdb_env_close(env);
  return v.mv_size;
}

/* Puts a document of generation `gen` under the main database's prefix;
 * with `counted`, also counts it in the state record's old_docs (what a
 * sweep cut short by a crash leaves), else as another program's write. */
static void raw_put_doc(const char *cat, uint64_t gen, const char *key, int counted) {
  MDB_env *env;
  MDB_txn *t = rc_begin(cat, &env);
  MDB_dbi main_db;
  assert_int_equal(mdb_dbi_open(t, NULL, 0, &main_db), 0);
  uint8_t lk[TERN_REC_MAINBUFKEY_MAX];
  MDB_val k = {tern_rec_mainbufkey(lk, gen, key, strlen(key)), lk}, v = {4, "junk"};
  assert_int_equal(mdb_put(t, main_db, &k, &v, 0), 0);
  MDB_val sk = {5, "state"}, sv;
  assert_int_equal(mdb_get(t, main_db, &sk, &sv), 0);
  tern_rec_state rec;
  assert_int_equal(tern_rec_state4_decode(&rec, sv.mv_data, sv.mv_size - TERN_REC_SEAL_SIZE),
                   TERN_OK);
  rec.old_docs += counted != 0;
  uint8_t buf[TERN_REC_STATE_MAX + TERN_REC_SEAL_SIZE];
  size_t n = tern_rec_state4_encode(buf, &rec);
  tern_rec_seal("state", 5, buf, n);
  sv = (MDB_val){n + TERN_REC_SEAL_SIZE, buf};
  assert_int_equal(mdb_put(t, main_db, &sk, &sv, 0), 0);
  rc_commit(env, t);
}

static void put_one(tern_index *idx, const char *key, const char *val, uint64_t *seq) {
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, 0));
  ET_OK(tern_put(t, key, strlen(key), val, strlen(val), NULL, 0));
  ET_OK(tern_commit_seq(t, seq));
}

static uint64_t seq_now(tern_index *idx) {
  tern_snapshot *s;
  uint64_t seq;
  ET_OK(tern_snapshot_open(&s, idx));
  ET_OK(tern_snapshot_seq(s, &seq));
  ET_OK(tern_snapshot_close(s));
  return seq;
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

/* Version 4: a commit of buffered documents writes them and nothing
 * else; a flush moves the buffer to the next generation, its sweeps leave
 * none of the older one; the commit number grows by LMDB's transaction id
 * and never goes back, through compaction too. */
static void test_buffer_generations(void **state) {
  (void)state;
  char *dir = tu_tmpdir("state-gen"), *cat = tu_path(dir, "catalog.mdb");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  uint64_t seq, last = 0;
  uint8_t before[128], after[128];
  size_t nb = raw_state(cat, before, sizeof before), older;
  for (int i = 0; i < NPUT; i++) {
    char key[16];
    snprintf(key, sizeof key, "g%02d", i);
    put_one(idx, key, "v", &seq);
    assert_true(seq > last);
    last = seq;
  }
  assert_int_equal(raw_state(cat, after, sizeof after), nb);
  assert_memory_equal(after, before, nb); /* not rewritten by those commits */
  assert_int_equal(raw_docs(cat, 0, &older), NPUT);
  assert_int_equal(older, 0);
  ET_OK(tern_flush(idx));
  assert_int_equal(raw_docs(cat, 1, &older), 0); /* flushed, and swept */
  assert_int_equal(older, 0);
  put_one(idx, "h00", "w", &seq);
  assert_true(seq > last);
  last = seq;
  assert_int_equal(raw_docs(cat, 1, &older), 1);
  ET_OK(tern_close(idx));
  /* A sweep cut short: older generations' documents, never read, and gone
   * after the next flush. */
  raw_put_doc(cat, 0, "g05", 1);
  raw_put_doc(cat, 0, "zz", 1);
  ET_OK(tern_open(&idx, dir, 0, NULL));
  ET_OK(tern_verify(idx));
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  char buf[8];
  size_t len;
  assert_int_equal(tern_get(s, "zz", 2, buf, sizeof buf, &len), TERN_NOTFOUND);
  ET_OK(tern_get(s, "g05", 3, buf, sizeof buf, &len));
  assert_memory_equal(buf, "v", len);
  ET_OK(tern_snapshot_close(s));
  seq = seq_now(idx);
  assert_true(seq > last); /* the raw writes are catalog changes too */
  ET_OK(tern_flush(idx));
  assert_int_equal(raw_docs(cat, 2, &older), 0);
  assert_int_equal(older, 0);
  put_one(idx, "h01", "w", &last);
  ET_OK(tern_compact(idx)); /* LMDB's compacting copy restarts its ids */
  put_one(idx, "h02", "w", &seq);
  assert_true(seq > last);
  ET_OK(tern_close(idx));
  ET_OK(tern_open(&idx, dir, TERN_RDONLY, NULL));
  assert_int_equal(seq_now(idx), seq);
  ET_OK(tern_close(idx));
  /* A document of an older generation the record does not count, or of a
   * newer one (a flipped generation byte): damage, never a lost document. */
  for (int newer = 0; newer < 2; newer++) {
    char *copy = tu_tmpdir("state-gen-bad"), cmd[4096];
    snprintf(cmd, sizeof cmd, "cp -r '%s/.' '%s/'", dir, copy);
    assert_int_equal(system(cmd), 0);
    char *ccat = tu_path(copy, "catalog.mdb");
    raw_put_doc(ccat, newer ? 99 : 0, "g07", 0);
    for (unsigned flags = 0; flags <= TERN_RDONLY; flags += TERN_RDONLY) {
      ET_OK(tern_open(&idx, copy, flags, NULL)); /* the state is read at the first use */
      tern_snapshot *bad = NULL;
      assert_int_equal(tern_snapshot_open(&bad, idx), TERN_ECORRUPT);
      assert_non_null(strstr(tern_errmsg(), "catalog.mdb"));
      assert_null(bad);
      ET_OK(tern_close(idx));
    }
    tu_rmtree(copy);
    free(ccat);
    free(copy);
  }
  tu_rmtree(dir);
  free(cat);
  free(dir);
}

/* The buffer's generation, from the state record. */
static uint64_t raw_gen(const char *cat) {
  uint8_t b[128];
  size_t n = raw_state(cat, b, sizeof b);
  tern_rec_state rec;
  assert_int_equal(tern_rec_state4_decode(&rec, b, n - TERN_REC_SEAL_SIZE), TERN_OK);
  return rec.buffer_gen;
}

/* The background worker flushes as the buffer fills and sweeps what each
 * flush leaves, between commits: once it is idle, no older generation's
 * document is left; every document reads back. */
static void test_worker_sweeps(void **state) {
  (void)state;
  char *dir = tu_tmpdir("state-sweep"), *cat = tu_path(dir, "catalog.mdb");
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = 16u << 10;
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, &o));
  /* ~11 bytes a document: 20,000 are more than three times the 4 x 16 KiB
   * a lagging worker lets the buffer reach before a commit waits for it,
   * so at least three flushes happen however busy the machine (3,000
   * relied on the worker keeping up: under load it flushed twice) */
  enum { N = 20000 };
  for (int i = 0; i < N; i++) {
    char key[16];
    snprintf(key, sizeof key, "w%05d", i);
    put_one(idx, key, "value", NULL);
  }
  tern_worker_wait(idx);
  size_t older;
  uint64_t gen = raw_gen(cat);
  assert_true(gen >= 3); /* flushed in the background, several times */
  (void)raw_docs(cat, gen, &older);
  assert_int_equal(older, 0);
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  for (int i = 0; i < N; i++) {
    char key[16], buf[8];
    size_t len;
    snprintf(key, sizeof key, "w%05d", i);
    ET_OK(tern_get(s, key, strlen(key), buf, sizeof buf, &len));
    assert_memory_equal(buf, "value", len);
  }
  ET_OK(tern_snapshot_close(s));
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(cat);
  free(dir);
}

static char *copy_golden(const char *which) {
  const char *src = getenv("TERN_SOURCE_DIR");
  assert_non_null(src);
  char *dir = tu_tmpdir(which);
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "cp -r '%s/tests/golden/%s/.' '%s/'", src, which, dir);
  assert_int_equal(system(cmd), 0);
  return dir;
}

/* Version 3 (tests/golden/v4c3): the buffer stays in table "buffer" and
 * the main database holds no document, through writes, a flush and a
 * compaction. */
static void test_version3_keeps_buffer_table(void **state) {
  (void)state;
  char *dir = copy_golden("v4c3"), *cat = tu_path(dir, "catalog.mdb");
  uint32_t version;
  assert_true(raw_has(cat, "buffer", "new00", &version));
  assert_int_equal(version, 3);
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, 0, NULL));
  write_some(idx, "c");
  ET_OK(tern_close(idx));
  assert_true(raw_has(cat, "buffer", "c39", &version));
  size_t older;
  assert_int_equal(raw_docs(cat, 0, &older), 0);
  ET_OK(tern_open(&idx, dir, 0, NULL));
  ET_OK(tern_compact(idx));
  ET_OK(tern_close(idx));
  assert_false(raw_has(cat, "buffer", "c39", &version));
  assert_int_equal(version, 3);
  ET_OK(tern_open(&idx, dir, TERN_RDONLY, NULL));
  check_some(idx, "c");
  ET_OK(tern_verify(idx));
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(cat);
  free(dir);
}

static void test_version2_stays_in_meta(void **state) {
  (void)state;
  char *dir = copy_golden("v4"), *cat = tu_path(dir, "catalog.mdb");
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
                                     cmocka_unit_test(test_buffer_generations),
                                     cmocka_unit_test(test_worker_sweeps),
                                     cmocka_unit_test(test_version3_keeps_buffer_table),
                                     cmocka_unit_test(test_version2_stays_in_meta)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
