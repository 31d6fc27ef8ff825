/* SPDX-License-Identifier: MIT */
/*
 * test_open.c — opening and the edges of the API: options kept in the
 * catalog, not-an-index and newer-version refusals, invalid arguments,
 * the single writer (threads and processes), empty and large values,
 * binary keys, a full catalog map, and removal of leftover files.
 */
#include "tests/engine/enginetest.h"

#include "engine/util/counters.h"
#include "tests/engine/rawcatalog.h"

#include "engine/format/catalog_schema.h"
#include "codec/segment.h"

#include <dirent.h>
#include <lmdb.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int file_exists(const char *dir, const char *name) {
  char *p = tu_path(dir, name);
  struct stat st;
  int r = stat(p, &st) == 0;
  free(p);
  return r;
}

static size_t count_entries(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  return n;
}

static void put1(tern_index *idx, const char *key, const void *val, size_t vlen) {
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, 0));
  ET_OK(tern_put(t, key, strlen(key), val, vlen, NULL, 0));
  ET_OK(tern_commit(t));
}

static void test_options_persist(void **state) {
  (void)state;
  char *dir = tu_tmpdir("opts");
  tern_field_option f[2] = {{"title", 8}, {"tag", 0}};
  tern_options o;
  ET_OK(tern_options_init(&o));
  assert_int_equal(o.pulsing_threshold, 1);
  assert_int_equal(o.inline_value_max, 128);
  assert_int_equal(o.bloom_bits_per_key, 10);
  assert_true(o.write_buffer_bytes == 8u << 20);
  assert_true(o.map_size == (uint64_t)64 << 30);
  o.pulsing_threshold = 3;
  o.inline_value_max = 100;
  o.bloom_bits_per_key = 0;
  o.write_buffer_bytes = 4096;
  o.map_size = 1ull << 30;
  o.fields = f;
  o.nfields = 2;
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, &o));
  put1(idx, "k", "v", 1);
  ET_OK(tern_close(idx));
  tern_options other;
  tern_options_init(&other);
  other.pulsing_threshold = 9;
  other.map_size = o.map_size; /* a larger one would grow the map (test_api) */
  ET_OK(tern_open(&idx, dir, TERN_CREATE, &other)); /* ignored on reopen */
  tern_options got;
  ET_OK(tern_get_options(idx, &got));
  assert_int_equal(got.pulsing_threshold, 3);
  assert_int_equal(got.inline_value_max, 100);
  assert_int_equal(got.bloom_bits_per_key, 0);
  assert_true(got.write_buffer_bytes == 4096);
  assert_true(got.map_size == 1ull << 30);
  assert_int_equal(got.nfields, 2);
  assert_string_equal(got.fields[0].field, "title");
  assert_int_equal(got.fields[0].threshold, 8);
  assert_string_equal(got.fields[1].field, "tag");
  assert_int_equal(got.fields[1].threshold, 0);
  ET_OK(tern_close(idx));
  ET_OK(tern_open(&idx, dir, TERN_RDONLY, NULL));
  ET_OK(tern_get_options(idx, &got));
  assert_int_equal(got.pulsing_threshold, 3);
  tern_txn *t;
  assert_int_equal(tern_txn_begin(&t, idx, 0), TERN_EINVAL);
  assert_int_equal(tern_flush(idx), TERN_EINVAL);
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  uint8_t buf[8];
  size_t vlen;
  ET_OK(tern_get(s, "k", 1, buf, sizeof buf, &vlen));
  assert_int_equal(vlen, 1);
  tern_snapshot_close(s);
  ET_OK(tern_close(idx));
  free(dir);
}

static void test_not_an_index(void **state) {
  (void)state;
  tern_index *idx = NULL;
  char *base = tu_tmpdir("notidx");
  char *missing = tu_path(base, "missing");
  assert_int_equal(tern_open(&idx, missing, 0, NULL), TERN_ENOTINDEX);
  assert_int_equal(tern_open(&idx, missing, TERN_RDONLY, NULL), TERN_ENOTINDEX);
  assert_null(idx);
  assert_int_equal(count_entries(base), 0); /* nothing created */
  /* an empty directory without TERN_CREATE */
  assert_int_equal(tern_open(&idx, base, 0, NULL), TERN_ENOTINDEX);
  assert_int_equal(count_entries(base), 0);
  /* a foreign, non-empty directory: refused even with TERN_CREATE, untouched */
  tu_write_file(missing, "hello", 5);
  assert_int_equal(tern_open(&idx, base, TERN_CREATE, NULL), TERN_ENOTINDEX);
  assert_int_equal(count_entries(base), 1);
  /* a regular file as the directory */
  assert_int_equal(tern_open(&idx, missing, TERN_CREATE, NULL), TERN_ENOTINDEX);
  /* a catalog file that is not LMDB */
  char *d2 = tu_tmpdir("notidx2");
  char *cat = tu_path(d2, "catalog.mdb");
  uint8_t junk[8192];
  memset(junk, 0x5a, sizeof junk);
  tu_write_file(cat, junk, sizeof junk);
  int rc = tern_open(&idx, d2, TERN_CREATE, NULL);
  assert_true(rc == TERN_ENOTINDEX || rc == TERN_ECORRUPT);
  assert_null(idx);
  /* creation in a missing directory works; a second create reopens */
  /* a creation that crashed after LMDB made its lock file, before the catalog */
  char *d3 = tu_tmpdir("notidx3");
  char *lockf = tu_path(d3, "catalog.mdb-lock");
  tu_write_file(lockf, "", 0);
  assert_int_equal(tern_open(&idx, d3, 0, NULL), TERN_ENOTINDEX);
  ET_OK(tern_open(&idx, d3, TERN_CREATE, NULL));
  ET_OK(tern_close(idx));
  free(lockf);
  free(d3);
  char *fresh = tu_path(base, "fresh");
  ET_OK(tern_open(&idx, fresh, TERN_CREATE, NULL));
  ET_OK(tern_close(idx));
  ET_OK(tern_open(&idx, fresh, 0, NULL));
  ET_OK(tern_close(idx));
  free(fresh);
  free(cat);
  free(d2);
  free(missing);
  free(base);
}

static void test_newer_version(void **state) {
  (void)state;
  char *dir = tu_tmpdir("version");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  ET_OK(tern_close(idx));
  /* Rewrite the format record as a future library would. */
  char *cat = tu_path(dir, "catalog.mdb");
  MDB_env *env;
  MDB_txn *t = rc_begin(cat, &env);
  MDB_dbi dbi;
  assert_int_equal(mdb_dbi_open(t, "meta", 0, &dbi), 0);
  uint8_t fmt[TERN_REC_FORMAT_SIZE];
  tern_rec_format_encode(fmt);
  fmt[4] = (uint8_t)(TERN_CATALOG_VERSION + 1);
  MDB_val k = {6, "format"}, v = {sizeof fmt, fmt};
  assert_int_equal(mdb_put(t, dbi, &k, &v, 0), 0);
  rc_commit(env, t);
  idx = NULL;
  assert_int_equal(tern_open(&idx, dir, 0, NULL), TERN_EVERSION);
  assert_null(idx);
  assert_int_equal(tern_open(&idx, dir, TERN_RDONLY, NULL), TERN_EVERSION);
  free(cat);
  free(dir);
}

static void test_invalid_arguments(void **state) {
  (void)state;
  char *dir = tu_tmpdir("einval");
  tern_index *idx = NULL;
  tern_options o;
  tern_field_option dup[2] = {{"f", 1}, {"f", 2}};
  tern_field_option empty[1] = {{"", 1}};
  tern_field_option high[1] = {{"f", 65}};
  tern_options_init(&o);
  o.version = 0;
  assert_int_equal(tern_open(&idx, dir, TERN_CREATE, &o), TERN_EINVAL);
  tern_options_init(&o);
  o.pulsing_threshold = TERN_THRESHOLD_MAX + 1;
  assert_int_equal(tern_open(&idx, dir, TERN_CREATE, &o), TERN_EINVAL);
  tern_options_init(&o);
  o.inline_value_max = TERN_INLINE_MAX + 1;
  assert_int_equal(tern_open(&idx, dir, TERN_CREATE, &o), TERN_EINVAL);
  tern_options_init(&o);
  o.write_buffer_bytes = 0;
  assert_int_equal(tern_open(&idx, dir, TERN_CREATE, &o), TERN_EINVAL);
  tern_options_init(&o);
  o.fields = dup;
  o.nfields = 2;
  assert_int_equal(tern_open(&idx, dir, TERN_CREATE, &o), TERN_EINVAL);
  tern_options_init(&o);
  o.fields = empty;
  o.nfields = 1;
  assert_int_equal(tern_open(&idx, dir, TERN_CREATE, &o), TERN_EINVAL);
  tern_options_init(&o);
  o.fields = high;
  o.nfields = 1;
  assert_int_equal(tern_open(&idx, dir, TERN_CREATE, &o), TERN_EINVAL);
  assert_int_equal(tern_open(&idx, dir, TERN_CREATE | TERN_RDONLY, NULL), TERN_EINVAL);
  assert_int_equal(tern_open(&idx, dir, 0x80, NULL), TERN_EINVAL);
  assert_int_equal(count_entries(dir), 0);
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, 0));
  uint8_t big[TERN_KEY_MAX + 1] = {0};
  assert_int_equal(tern_put(t, "", 0, "v", 1, NULL, 0), TERN_EINVAL);
  assert_int_equal(tern_put(t, big, TERN_KEY_MAX + 1, "v", 1, NULL, 0), TERN_EINVAL);
  assert_int_equal(tern_put(t, "k", 1, NULL, 5, NULL, 0), TERN_EINVAL);
  assert_int_equal(tern_put(t, "k", 1, big, (size_t)TERN_VALUE_MAX + 1, NULL, 0), TERN_EINVAL);
  tern_term bad[4] = {{"", "x", 1}, {NULL, "x", 1}, {"f", "x", 0}, {"f", big, TERN_KEY_MAX + 1}};
  for (int i = 0; i < 4; i++)
    assert_int_equal(tern_put(t, "k", 1, "v", 1, &bad[i], 1), TERN_EINVAL);
  assert_int_equal(tern_put(t, "k", 1, "v", 1, NULL, 2), TERN_EINVAL);
  assert_int_equal(tern_delete(t, "", 0), TERN_EINVAL);
  assert_int_equal(tern_delete(t, "k", 1), TERN_NOTFOUND);
  /* the longest key and term are fine */
  memset(big, 0, TERN_KEY_MAX);
  tern_term longest = {"f", big, TERN_KEY_MAX};
  ET_OK(tern_put(t, big, TERN_KEY_MAX, "v", 1, &longest, 1));
  ET_OK(tern_commit(t));
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  size_t vlen;
  char buf[4];
  assert_int_equal(tern_get(s, "", 0, buf, sizeof buf, &vlen), TERN_EINVAL);
  ET_OK(tern_get(s, big, TERN_KEY_MAX, buf, sizeof buf, &vlen));
  tern_postings *p;
  assert_int_equal(tern_postings_open(&p, s, &longest, 0), TERN_EINVAL);
  assert_int_equal(tern_postings_open(&p, s, &bad[0], 1), TERN_EINVAL);
  assert_int_equal(tern_close(idx), TERN_EBUSY); /* snapshot open */
  tern_snapshot_close(s);
  ET_OK(tern_close(idx));
  free(dir);
}

static void *second_writer(void *arg) {
  tern_txn *t = NULL;
  intptr_t rc = tern_txn_begin(&t, arg, 0);
  return (void *)rc;
}

static int child_begin(const char *dir) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    tern_index *idx;
    int rc = tern_open(&idx, dir, 0, NULL);
    if (rc != TERN_OK) _exit(2);
    tern_txn *t;
    rc = tern_txn_begin(&t, idx, 0);
    if (rc == TERN_OK) {
      rc = tern_put(t, "child", 5, "x", 1, NULL, 0);
      if (rc == TERN_OK) rc = tern_commit(t);
      _exit(rc == TERN_OK ? 0 : 3);
    }
    _exit(rc == TERN_EBUSY ? 1 : 4);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  return WEXITSTATUS(status);
}

static void test_single_writer(void **state) {
  (void)state;
  char *dir = tu_tmpdir("busy");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  tern_txn *t, *t2 = NULL;
  ET_OK(tern_txn_begin(&t, idx, 0));
  assert_int_equal(tern_txn_begin(&t2, idx, 0), TERN_EBUSY);
  assert_int_equal(tern_txn_begin(&t2, idx, TERN_TXN_BULK), TERN_EBUSY);
  assert_int_equal(tern_flush(idx), TERN_EBUSY);
  assert_int_equal(tern_compact(idx), TERN_EBUSY);
  pthread_t th;
  void *res;
  assert_int_equal(pthread_create(&th, NULL, second_writer, idx), 0);
  pthread_join(th, &res);
  assert_int_equal((intptr_t)res, TERN_EBUSY);
  assert_int_equal(child_begin(dir), 1); /* another process: EBUSY */
  assert_int_equal(tern_close(idx), TERN_EBUSY);
  ET_OK(tern_put(t, "p", 1, "v", 1, NULL, 0));
  ET_OK(tern_commit(t));
  assert_int_equal(child_begin(dir), 0); /* free again: the child commits */
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  size_t vlen;
  char buf[4];
  ET_OK(tern_get(s, "child", 5, buf, sizeof buf, &vlen)); /* sees the other process's commit */
  ET_OK(tern_get(s, "p", 1, buf, sizeof buf, &vlen));
  tern_snapshot_close(s);
  ET_OK(tern_txn_begin(&t, idx, 0));
  ET_OK(tern_abort(t));
  ET_OK(tern_close(idx));
  free(dir);
}

static void test_values_and_keys(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 31);
  char *dir = tu_tmpdir("values");
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = 64 << 10;
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, &o));
  size_t big_len = (size_t)(1u << 20) + 17;
  uint8_t *big = malloc(big_len), *out = malloc(big_len);
  tu_fill(&r, big, big_len);
  uint8_t keys[6][3] = {{0, 0, 0},   {0, 0, 1},   {0xff, 0xff, 0xff},
                        {0, 'a', 0}, {'a', 0, 0}, {1, 2, 3}};
  size_t klens[6] = {1, 3, 3, 3, 2, 3};
  for (int round = 0; round < 3; round++) {
    tern_txn *t;
    ET_OK(tern_txn_begin(&t, idx, round == 1 ? TERN_TXN_BULK : 0));
    for (int i = 0; i < 6; i++) {
      size_t vlen = i == 0 ? 0 : i == 1 ? big_len : (size_t)(i * 100);
      ET_OK(tern_put(t, keys[i], klens[i], big, vlen, NULL, 0));
    }
    ET_OK(tern_commit(t));
    for (int pass = 0; pass < 2; pass++) {
      tern_snapshot *s;
      ET_OK(tern_snapshot_open(&s, idx));
      for (int i = 0; i < 6; i++) {
        size_t want = i == 0 ? 0 : i == 1 ? big_len : (size_t)(i * 100), vlen = 99;
        ET_OK(tern_get(s, keys[i], klens[i], out, big_len, &vlen));
        assert_int_equal(vlen, want);
        if (want) assert_memory_equal(out, big, want);
      }
      size_t vlen = 0;
      assert_int_equal(tern_get(s, keys[1], klens[1], out, 10, &vlen), TERN_ERANGE);
      assert_int_equal(vlen, big_len);
      ET_OK(tern_get(s, keys[0], klens[0], NULL, 0, &vlen)); /* empty value, no buffer */
      assert_int_equal(vlen, 0);
      assert_int_equal(tern_get(s, "\0\0", 2, out, 10, &vlen), TERN_NOTFOUND);
      tern_snapshot_close(s);
      ET_OK(tern_flush(idx));
    }
  }
  ET_OK(tern_verify(idx));
  ET_OK(tern_close(idx));
  free(big);
  free(out);
  free(dir);
}

static void test_map_full(void **state) {
  (void)state;
  char *dir = tu_tmpdir("full");
  tern_options o;
  tern_options_init(&o);
  o.map_size = 1u << 20;
  o.write_buffer_bytes = 1ull << 40;
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, &o));
  put1(idx, "kept", "v", 1);
  uint8_t val[4096] = {1};
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, 0));
  for (int i = 0; i < 1000; i++) {
    char key[16];
    snprintf(key, sizeof key, "k%04d", i);
    ET_OK(tern_put(t, key, strlen(key), val, sizeof val, NULL, 0));
  }
  /* 4 MB into a 1 MiB map: the writer grows the map and commits. */
  unsigned long grows = atomic_load(&tern_engine_count.map_grows);
  ET_OK(tern_commit(t));
  assert_true(atomic_load(&tern_engine_count.map_grows) > grows);
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  size_t vlen;
  char buf[4];
  ET_OK(tern_get(s, "kept", 4, buf, sizeof buf, &vlen));
  assert_int_equal(tern_get(s, "k0999", 5, buf, sizeof buf, &vlen), TERN_ERANGE);
  assert_int_equal(vlen, sizeof val);
  tern_snapshot_close(s);
  put1(idx, "after", "v", 1); /* still writable */
  ET_OK(tern_close(idx));
  free(dir);
}

static void test_leftovers_removed(void **state) {
  (void)state;
  char *dir = tu_tmpdir("leftover");
  tern_options o;
  tern_options_init(&o);
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, &o));
  put1(idx, "a", "1", 1);
  ET_OK(tern_flush(idx));
  tern_stats *st;
  ET_OK(tern_stats_get(&st, idx));
  assert_int_equal(st->nsegments, 1);
  tern_stats_free(st);
  ET_OK(tern_close(idx));
  size_t before = count_entries(dir);
  /* Files a crashed writer could leave: an unregistered segment, temporaries. */
  const char *junk[] = {"s000000000099.tim", "s000000000099.tix", "s000000000099.tim.tmp",
                        "s000000000098.doc.tmp"};
  for (size_t i = 0; i < 4; i++) {
    char *p = tu_path(dir, junk[i]);
    tu_write_file(p, "x", 1);
    free(p);
    char name[64];
    assert_int_equal(tern_seg_file_segment(junk[i], name, sizeof name), 1);
  }
  ET_OK(tern_open(&idx, dir, 0, NULL));
  for (size_t i = 0; i < 4; i++)
    assert_false(file_exists(dir, junk[i]));
  assert_int_equal(count_entries(dir), before);
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  size_t vlen;
  char buf[4];
  ET_OK(tern_get(s, "a", 1, buf, sizeof buf, &vlen));
  tern_snapshot_close(s);
  ET_OK(tern_verify(idx));
  ET_OK(tern_close(idx));
  free(dir);
}

/* Files of segments a merge dropped stay while a snapshot holds them. */
static void test_file_lifetime(void **state) {
  (void)state;
  char *dir = tu_tmpdir("lifetime");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  for (int i = 0; i < 3; i++) {
    char key[8];
    snprintf(key, sizeof key, "k%d", i);
    put1(idx, key, "v", 1);
    ET_OK(tern_flush(idx));
  }
  tern_stats *st;
  ET_OK(tern_stats_get(&st, idx));
  assert_int_equal(st->nsegments, 3);
  char names[3][64];
  for (int i = 0; i < 3; i++)
    snprintf(names[i], sizeof names[i], "s%012llu.tim", (unsigned long long)st->segments[i].id);
  tern_stats_free(st);
  for (int i = 0; i < 3; i++)
    assert_true(file_exists(dir, names[i]));
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  ET_OK(tern_compact(idx));
  ET_OK(tern_stats_get(&st, idx));
  assert_int_equal(st->nsegments, 1);
  tern_stats_free(st);
  for (int i = 0; i < 3; i++)
    assert_true(file_exists(dir, names[i])); /* still in use */
  size_t vlen;
  char buf[4];
  ET_OK(tern_get(s, "k1", 2, buf, sizeof buf, &vlen));
  tern_snapshot_close(s);
  tern_snapshot *s2; /* a new snapshot makes the old state go */
  ET_OK(tern_snapshot_open(&s2, idx));
  tern_snapshot_close(s2);
  for (int i = 0; i < 3; i++)
    assert_false(file_exists(dir, names[i]));
  ET_OK(tern_verify(idx));
  ET_OK(tern_close(idx));
  free(dir);
}

/* An index with one segment that has deletions; returns the segment's
 * file stem ("DIR/sNNN"). */
static char *index_with_deletions(const char *dir) {
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, TERN_TXN_BULK));
  for (int i = 0; i < 3000; i++) {
    char key[16];
    snprintf(key, sizeof key, "key%05d", i);
    ET_OK(tern_put(t, key, strlen(key), key, strlen(key), NULL, 0));
  }
  ET_OK(tern_commit(t));
  ET_OK(tern_txn_begin(&t, idx, 0));
  ET_OK(tern_delete(t, "key00010", 8));
  ET_OK(tern_commit(t));
  ET_OK(tern_verify(idx));
  tern_stats *st;
  ET_OK(tern_stats_get(&st, idx));
  assert_int_equal(st->nsegments, 1);
  assert_int_equal(st->segments[0].deleted, 1);
  char stem[64];
  snprintf(stem, sizeof stem, "s%012llu", (unsigned long long)st->segments[0].id);
  tern_stats_free(st);
  ET_OK(tern_close(idx));
  return tu_path(dir, stem);
}

static void flip_byte(const char *path, size_t at) {
  size_t len;
  uint8_t *b = tu_read_file(path, &len);
  assert_true(at < len);
  b[at] ^= 0x40;
  tu_write_file(path, b, len);
  free(b);
}

static void expect_corrupt(const char *dir, const char *name_in_message) {
  tern_index *idx;
  int rc = tern_open(&idx, dir, 0, NULL);
  char msg[512];
  snprintf(msg, sizeof msg, "%s", tern_errmsg());
  if (rc == TERN_OK) {
    rc = tern_verify(idx);
    snprintf(msg, sizeof msg, "%s", tern_errmsg()); /* tern_close clears it */
    tern_close(idx);
  }
  assert_int_equal(rc, TERN_ECORRUPT);
  if (!strstr(msg, name_in_message))
    fprintf(stderr, "message \"%s\" does not name %s\n", msg, name_in_message);
  assert_non_null(strstr(msg, name_in_message));
}

static void test_verify_detects_corruption(void **state) {
  (void)state;
  static const char *exts[] = {".tim", ".tix", ".flt"};
  for (size_t e = 0; e < 3; e++) {
    char *dir = tu_tmpdir("corrupt");
    char *stem = index_with_deletions(dir);
    char path[4096];
    snprintf(path, sizeof path, "%s%s", stem, exts[e]);
    size_t len;
    free(tu_read_file(path, &len));
    flip_byte(path, len / 2);
    expect_corrupt(dir, exts[e]);
    free(stem);
    free(dir);
  }
  /* the live docs value in the catalog */
  char *dir = tu_tmpdir("corrupt");
  free(index_with_deletions(dir));
  char *cat = tu_path(dir, "catalog.mdb");
  MDB_env *env;
  MDB_txn *t = rc_begin(cat, &env);
  MDB_dbi dbi;
  MDB_cursor *c;
  MDB_val k, v;
  assert_int_equal(mdb_dbi_open(t, "livedocs", 0, &dbi), 0);
  assert_int_equal(mdb_cursor_open(t, dbi, &c), 0);
  assert_int_equal(mdb_cursor_get(c, &k, &v, MDB_FIRST), 0);
  uint8_t *copy = malloc(v.mv_size);
  memcpy(copy, v.mv_data, v.mv_size);
  copy[v.mv_size / 2] ^= 0x01;
  MDB_val nv = {v.mv_size, copy};
  mdb_cursor_close(c);
  assert_int_equal(mdb_put(t, dbi, &k, &nv, 0), 0);
  rc_commit(env, t);
  free(copy);
  expect_corrupt(dir, "catalog.mdb");
  free(cat);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options_persist), cmocka_unit_test(test_not_an_index),
      cmocka_unit_test(test_newer_version),   cmocka_unit_test(test_invalid_arguments),
      cmocka_unit_test(test_single_writer),   cmocka_unit_test(test_values_and_keys),
      cmocka_unit_test(test_map_full),        cmocka_unit_test(test_leftovers_removed),
      cmocka_unit_test(test_file_lifetime),   cmocka_unit_test(test_verify_detects_corruption),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
