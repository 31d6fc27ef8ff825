/* SPDX-License-Identifier: MIT */
/*
 * test_ordered.c — ordered access under the promises that need a whole
 * index: a cursor's view and a backup are exactly their snapshot's while
 * another thread commits and merges, and a cold scan of 10,000
 * consecutive keys reads at most one page per terms block it covers, plus
 * one (counted by the file layer); and bounded scans over a compacted
 * index, where one source is left and the cursor steps it unmerged.
 */
#include "tests/engine/enginetest.h"

#include "codec/io.h"
#include "codec/segment_internal.h"
#include "engine/state/index.h"

#include <pthread.h>

#define NKEYS 20000u

static size_t key_of(uint32_t i, char *out) { return (size_t)sprintf(out, "user:%08u", i); }

static void load(tern_index *idx, uint32_t n) {
  tern_txn *t;
  char key[32];
  ET_OK(tern_txn_begin(&t, idx, TERN_TXN_BULK));
  for (uint32_t i = 0; i < n; i++) {
    size_t klen = key_of(i, key);
    ET_OK(tern_put(t, key, klen, key, klen, NULL, 0));
  }
  ET_OK(tern_commit(t));
}

/* Every key and value of a snapshot, concatenated "key=value\n". */
static char *dump(tern_snapshot *s, size_t *len) {
  tern_cursor *c;
  ET_OK(tern_cursor_open(&c, s, NULL));
  size_t cap = 1 << 20, n = 0;
  char *out = malloc(cap);
  assert_non_null(out);
  int rc;
  while ((rc = tern_cursor_next(c)) == TERN_OK) {
    tern_slice k, v;
    ET_OK(tern_cursor_key(c, &k));
    ET_OK(tern_cursor_value(c, &v));
    if (n + k.len + v.len + 2 > cap) {
      cap *= 2;
      out = realloc(out, cap);
      assert_non_null(out);
    }
    memcpy(out + n, k.data, k.len);
    n += k.len;
    out[n++] = '=';
    memcpy(out + n, v.data, v.len);
    n += v.len;
    out[n++] = '\n';
  }
  assert_int_equal(rc, TERN_NOTFOUND);
  tern_cursor_close(c);
  *len = n;
  return out;
}

typedef struct writer_arg {
  tern_index *idx;
  uint64_t seed;
  int commits;
} writer_arg;

/* Puts, replaces and deletes random keys in small commits (flushes and
 * merges follow from the small write buffer). */
static void *writer(void *p) {
  writer_arg *w = p;
  tu_rng r;
  tu_rng_init(&r, w->seed);
  char key[32], val[32];
  for (int c = 0; c < w->commits; c++) {
    tern_txn *t;
    if (tern_txn_begin(&t, w->idx, 0) != TERN_OK) return (void *)1;
    for (int i = 0; i < 50; i++) {
      uint32_t id = (uint32_t)tu_below(&r, NKEYS + 2000);
      size_t klen = key_of(id, key);
      if (tu_below(&r, 3) == 0) {
        int rc = tern_delete(t, key, klen);
        if (rc != TERN_OK && rc != TERN_NOTFOUND) return (void *)1;
      } else {
        int vl = sprintf(val, "w%d.%d", c, i);
        if (tern_put(t, key, klen, val, (size_t)vl, NULL, 0) != TERN_OK) return (void *)1;
      }
    }
    if (tern_commit(t) != TERN_OK) return (void *)1;
    if (c % 10 == 9 && tern_flush(w->idx) != TERN_OK) return (void *)1;
  }
  return NULL;
}

static tern_index *open_small_buffer(const char *dir) {
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = 4096;
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, &o));
  return idx;
}

static void test_cursor_view_fixed_while_committing(void **state) {
  (void)state;
  char *dir = tu_tmpdir("ordered-view");
  tern_index *idx = open_small_buffer(dir);
  load(idx, NKEYS);
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  size_t len0, len;
  char *before = dump(s, &len0);
  tern_cursor *c; /* a cursor opened before, stepped during the commits */
  ET_OK(tern_cursor_open(&c, s, NULL));
  writer_arg w = {idx, tu_seed() ^ 0x0d3du, 200};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, writer, &w), 0);
  size_t pos = 0;
  int rc;
  while ((rc = tern_cursor_next(c)) == TERN_OK) {
    tern_slice k;
    ET_OK(tern_cursor_key(c, &k));
    assert_true(pos + k.len <= len0);
    assert_memory_equal(before + pos, k.data, k.len);
    pos = (size_t)((char *)memchr(before + pos, '\n', len0 - pos) - before) + 1;
  }
  assert_int_equal(rc, TERN_NOTFOUND);
  assert_int_equal(pos, len0);
  for (int i = 0; i < 3; i++) {
    char *again = dump(s, &len);
    assert_int_equal(len, len0);
    assert_memory_equal(again, before, len);
    free(again);
  }
  void *ret;
  assert_int_equal(pthread_join(th, &ret), 0);
  assert_null(ret);
  tern_cursor_close(c);
  tern_snapshot_close(s);
  free(before);
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

/* dest_parent NULL: the backup beside the index directory (hard links); else in
 * another directory, on another file system when it is one (copies). */
static void backup_while_committing(const char *dest_parent) {
  char *dir = tu_tmpdir("ordered-backup");
  tern_index *idx = open_small_buffer(dir);
  load(idx, NKEYS);
  writer_arg w0 = {idx, tu_seed() ^ 0xb0u, 30}; /* segments, deletions and a buffer */
  assert_null(writer(&w0));
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  size_t len0, len;
  char *want = dump(s, &len0);
  writer_arg w = {idx, tu_seed() ^ 0xb1u, 200};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, writer, &w), 0);
  char *other = dest_parent ? tu_path(dest_parent, "tern-backup-test-XXXXXX") : NULL;
  if (other) assert_non_null(mkdtemp(other));
  char *dest = other ? tu_path(other, "copy") : NULL;
  if (!dest) {
    dest = malloc(strlen(dir) + 6);
    assert_non_null(dest);
    sprintf(dest, "%s.copy", dir);
  }
  char *inside = tu_path(dir, "copy"); /* refused: a backup inside the index */
  assert_int_equal(tern_backup(s, inside), TERN_EINVAL);
  assert_non_null(strstr(tern_errmsg(), "inside the index directory"));
  free(inside);
  ET_OK(tern_backup(s, dest));
  void *ret;
  assert_int_equal(pthread_join(th, &ret), 0);
  assert_null(ret);
  uint64_t live;
  ET_OK(tern_snapshot_count(s, &live));
  tern_snapshot_close(s);
  ET_OK(tern_close(idx));
  tern_index *b;
  ET_OK(tern_open(&b, dest, 0, NULL));
  ET_OK(tern_verify(b));
  tern_snapshot *bs;
  ET_OK(tern_snapshot_open(&bs, b));
  char *got = dump(bs, &len);
  assert_int_equal(len, len0);
  assert_memory_equal(got, want, len);
  uint64_t blive;
  ET_OK(tern_snapshot_count(bs, &blive));
  assert_int_equal(blive, live);
  tern_snapshot_close(bs);
  ET_OK(tern_close(b));
  assert_int_equal(tern_backup(NULL, dest), TERN_EINVAL);
  free(got);
  free(want);
  if (!other) tu_rmtree(dest);
  free(dest);
  if (other) tu_rmtree(other);
  free(other);
  tu_rmtree(dir);
  free(dir);
}

static void test_backup_while_committing(void **state) {
  (void)state;
  backup_while_committing(NULL);
}

static void test_backup_copies_across_file_systems(void **state) {
  (void)state;
  backup_while_committing("/var/tmp"); /* the index sits in tmpfs when /dev/shm is writable */
}

static void test_cold_scan_reads(void **state) {
  (void)state;
  char *dir = tu_tmpdir("ordered-io");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  load(idx, 100000);
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  assert_int_equal(s->st->nslots, 1);
  const tern_seg_field *f = s->st->slots[0].ref->unique;
  tu_rng r;
  tu_rng_init(&r, tu_seed() ^ 0xc01du);
  for (int round = 0; round < 5; round++) {
    uint32_t first = (uint32_t)tu_below(&r, 100000 - 10000), last = first + 9999;
    uint64_t bl, bf;
    ET_OK(tern_terms_index_find_ordinal(&f->index, last, &bl));
    ET_OK(tern_terms_index_find_ordinal(&f->index, first, &bf));
    uint64_t blocks = bl - bf + 1;
    ET_OK(tern_seg_evict(s->st->slots[0].ref->seg));
    tern_io_reset_global_stats();
    char key[32];
    tern_cursor *c;
    ET_OK(tern_cursor_open(&c, s, NULL));
    ET_OK(tern_cursor_seek(c, key, key_of(first, key)));
    for (uint32_t i = first; i <= last; i++) {
      tern_slice k, v;
      ET_OK(tern_cursor_key(c, &k));
      ET_OK(tern_cursor_value(c, &v));
      assert_int_equal(k.len, key_of(i, key));
      assert_memory_equal(k.data, key, k.len);
      if (i < last) ET_OK(tern_cursor_next(c));
    }
    tern_io_stats io;
    tern_io_global_stats(&io);
    fprintf(stderr, "[cold scan] keys %u..%u: %llu reads, %llu blocks covered\n", first, last,
            (unsigned long long)io.reads, (unsigned long long)blocks);
    assert_true(io.reads <= blocks + 1);
    tern_cursor_close(c);
  }
  tern_snapshot_close(s);
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

/* The live keys of [lo, hi) by number, compared with the cursor's walk
 * forward (first/next) and backward (last/prev) under bounds b. */
static void check_bounded(tern_snapshot *s, const tern_bounds *b, const uint8_t *dead,
                          uint32_t lo, uint32_t hi) {
  tern_cursor *c;
  char key[32];
  ET_OK(tern_cursor_open(&c, s, b));
  for (int dir = 1; dir >= -1; dir -= 2) {
    int rc = dir > 0 ? tern_cursor_first(c) : tern_cursor_last(c);
    for (uint32_t k = 0; k < hi - lo; k++) {
      uint32_t i = dir > 0 ? lo + k : hi - 1 - k;
      if (dead[i]) continue;
      ET_OK(rc);
      tern_slice sk, sv;
      ET_OK(tern_cursor_key(c, &sk));
      ET_OK(tern_cursor_value(c, &sv));
      assert_int_equal(sk.len, key_of(i, key));
      assert_memory_equal(sk.data, key, sk.len);
      assert_int_equal(sv.len, sk.len);
      assert_memory_equal(sv.data, key, sv.len);
      rc = dir > 0 ? tern_cursor_next(c) : tern_cursor_prev(c);
    }
    assert_int_equal(rc, TERN_NOTFOUND);
  }
  tern_cursor_close(c);
}

static void test_bounded_scans_one_source(void **state) {
  (void)state;
  enum { N = 6000 };
  char *dir = tu_tmpdir("ordered-solo");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  load(idx, N);
  static uint8_t dead[N];
  memset(dead, 0, sizeof dead);
  tu_rng r;
  tu_rng_init(&r, tu_seed() ^ 0x5010u);
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) { /* deleted docs inside the ranges, compacted away or not */
      tern_txn *t;
      char key[32];
      ET_OK(tern_txn_begin(&t, idx, 0));
      for (uint32_t i = 0; i < N; i++)
        if (tu_below(&r, 5) == 0) {
          ET_OK(tern_delete(t, key, key_of(i, key)));
          dead[i] = 1;
        }
      ET_OK(tern_commit(t));
    }
    tern_snapshot *s;
    ET_OK(tern_snapshot_open(&s, idx));
    for (int round = 0; round < 60; round++) {
      uint32_t a = (uint32_t)tu_below(&r, N), bnd = a + (uint32_t)tu_below(&r, N - a + 1);
      char from[32], to[32], pre[32];
      tern_bounds b = {{from, key_of(a, from)}, {to, key_of(bnd, to)}, {NULL, 0}};
      if (bnd == N) b.to = (tern_slice){NULL, 0}; /* open above */
      check_bounded(s, &b, dead, a, bnd);
      /* a prefix: a's key without its last d digits, the 10^d keys around a */
      uint32_t d = 1 + (uint32_t)tu_below(&r, 3), span = d == 1 ? 10 : d == 2 ? 100 : 1000;
      size_t keep = key_of(a, pre) - d;
      tern_bounds pb = {{NULL, 0}, {NULL, 0}, {pre, keep}};
      uint32_t plo = a / span * span, phi = plo + span < N ? plo + span : N;
      check_bounded(s, &pb, dead, plo, phi);
    }
    tern_snapshot_close(s);
  }
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  et_prefer_tmpfs();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cursor_view_fixed_while_committing),
      cmocka_unit_test(test_backup_while_committing),
      cmocka_unit_test(test_backup_copies_across_file_systems),
      cmocka_unit_test(test_cold_scan_reads),
      cmocka_unit_test(test_bounded_scans_one_source),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
