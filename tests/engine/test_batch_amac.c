/* SPDX-License-Identifier: MIT */
/*
 * test_batch_amac.c — the warm tern_get_batch that keeps many lookups in
 * flight (engine/read/batch_amac.c, codec/segment_lookup_steps.c) answers
 * exactly as a reference and as tern_get: random batches (any order,
 * repeated keys, absent ones) over keys present, overwritten in a newer
 * segment (the older doc dead), deleted, in the write buffer, with values
 * empty, inline and in .val, keys of 1 to 1005 bytes; over several
 * segments, then one compacted segment; warm (both ways a warm batch may
 * go), cold (each block read once by a sorted batch) and in pread mode; a damaged block is TERN_ECORRUPT
 * naming the .tim, with no key answered.  The seed is printed (TERN_SEED
 * replays it).
 */
#include "tests/engine/enginetest.h"

#include "codec/io.h"
#include "engine/state/index.h"

#include <dirent.h>

#define NID 6000u  /* ids [0, NID) may be put; batches also ask [NID, NID + 200) */
#define MAXB 10000u /* largest batch: a warm one is cut into chunks of 4,096 */

/* The reference: for each id its state and the version of its value. */
enum { ABSENT = 0, PRESENT = 1 };
static uint8_t ref_state[NID];
static uint8_t ref_ver[NID];

static size_t val_of(uint32_t id, uint32_t ver, uint8_t *out) {
  uint32_t h = id * 2654435761u + ver * 40503u;
  size_t n = h % 9 == 0 ? 0 : h % 9 == 1 ? 200 + h % 300 : 1 + h % 30; /* empty, .val, inline */
  for (size_t k = 0; k < n; k++) out[k] = (uint8_t)(h >> (k % 24)) + (uint8_t)k;
  return n;
}

static void put(tern_txn *t, uint32_t id, uint32_t ver) {
  uint8_t k[ET_KEY_MAX], v[600];
  ET_OK(tern_put(t, k, et_key(id, 0, k), v, val_of(id, ver, v), NULL, 0));
  ref_state[id] = PRESENT;
  ref_ver[id] = (uint8_t)ver;
}

/* Two bulk segments (the second overwrites some keys of the first), then
 * deletes and puts that stay in the write buffer. */
static char *build(void) {
  char *dir = tu_tmpdir("amac");
  memset(ref_state, 0, sizeof ref_state);
  tern_index *idx;
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = 1u << 30; /* the buffer is never flushed by itself */
  ET_OK(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, &o));
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, TERN_TXN_BULK));
  for (uint32_t id = 0; id < NID; id++)
    if (id % 3 != 2) put(t, id, 1);
  ET_OK(tern_commit(t));
  ET_OK(tern_txn_begin(&t, idx, TERN_TXN_BULK));
  for (uint32_t id = 0; id < NID; id++)
    if (id % 7 == 0 || (id % 3 == 2 && id % 2 == 0)) put(t, id, 2);
  ET_OK(tern_commit(t));
  ET_OK(tern_txn_begin(&t, idx, 0));
  for (uint32_t id = 0; id < NID; id += 11) {
    uint8_t k[ET_KEY_MAX];
    int rc = tern_delete(t, k, et_key(id, 0, k));
    assert_true(rc == TERN_OK || rc == TERN_NOTFOUND);
    ref_state[id] = ABSENT;
  }
  ET_OK(tern_commit(t));
  ET_OK(tern_txn_begin(&t, idx, 0));
  for (uint32_t id = 5; id < NID; id += 13) put(t, id, 3);
  ET_OK(tern_commit(t));
  ET_OK(tern_close(idx));
  return dir;
}

typedef struct batch {
  uint32_t ids[MAXB];
  tern_slice keys[MAXB];
  uint8_t kb[MAXB][ET_KEY_MAX];
  size_t n, calls;
  tern_snapshot *s; /* NULL: no tern_get to compare with (it would count reads) */
} batch;

static batch B;

static int check_cb(void *payload, size_t i, int status, const void *val, size_t vlen) {
  batch *b = payload;
  assert_int_equal(i, b->calls);
  b->calls++;
  uint32_t id = b->ids[i];
  if (id >= NID || ref_state[id] != PRESENT) {
    assert_int_equal(status, TERN_NOTFOUND);
    assert_null(val);
  } else {
    uint8_t v[600];
    assert_int_equal(status, TERN_OK);
    assert_int_equal(vlen, val_of(id, ref_ver[id], v));
    assert_non_null(val);
    if (vlen) assert_memory_equal(val, v, vlen);
  }
  if (!b->s) return 0;
  /* the single get answers the same */
  uint8_t g[600];
  size_t glen;
  int st = tern_get(b->s, b->keys[i].data, b->keys[i].len, g, sizeof g, &glen);
  assert_int_equal(st, status);
  if (st == TERN_OK) {
    assert_int_equal(glen, vlen);
    if (vlen) assert_memory_equal(g, val, vlen);
  }
  return 0;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* A random batch of n ids (repeats and absent ones; sorted: ascending by
 * key, distinct). */
static void random_batch(tu_rng *r, size_t n, int sorted) {
  B.n = n;
  for (size_t i = 0; i < n; i++) {
    uint64_t p = tu_below(r, 100);
    B.ids[i] = p < 10 && i ? B.ids[tu_below(r, i)] : (uint32_t)tu_below(r, NID + 200);
  }
  if (sorted) { /* keys order by first byte (id % 3), then id */
    for (size_t i = 0; i < n; i++) B.ids[i] = (B.ids[i] % 3) << 28 | B.ids[i];
    qsort(B.ids, n, sizeof *B.ids, cmp_u32);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
      if (!m || B.ids[i] != B.ids[m - 1]) B.ids[m++] = B.ids[i];
    for (size_t i = 0; i < m; i++) B.ids[i] &= (1u << 28) - 1;
    B.n = m;
  }
  for (size_t i = 0; i < B.n; i++)
    B.keys[i] = (tern_slice){B.kb[i], et_key(B.ids[i], 0, B.kb[i])};
}

static void run_batch(tern_snapshot *s) {
  B.calls = 0;
  B.s = s;
  ET_OK(tern_get_batch(s, B.keys, B.n, check_cb, &B));
  assert_int_equal(B.calls, B.n);
}

/* Every id looked up once: every page the lookups touch is then checked
 * (warm). */
static void warm_up(tern_snapshot *s) {
  uint8_t k[ET_KEY_MAX], v[600];
  size_t vlen;
  for (uint32_t id = 0; id < NID + 200; id++) {
    int rc = tern_get(s, k, et_key(id, 0, k), v, sizeof v, &vlen);
    assert_true(rc == TERN_OK || rc == TERN_NOTFOUND);
  }
}

static void evict(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' || !strncmp(e->d_name, "catalog", 7)) continue;
    char *p = tu_path(dir, e->d_name);
    tern_io_evict_path(p);
    free(p);
  }
  closedir(d);
}

/* Random batches on a fresh open with `flags`, warm or cold. */
static void batches(const char *dir, unsigned flags, int warm, tu_rng *r, int rounds) {
  for (int round = 0; round < rounds; round++) {
    if (!warm) evict(dir);
    tern_index *idx;
    ET_OK(tern_open(&idx, dir, flags, NULL));
    tern_snapshot *s;
    ET_OK(tern_snapshot_open(&s, idx));
    if (warm) warm_up(s);
    for (int k = 0; k < 4; k++) {
      random_batch(r, 1 + (size_t)tu_below(r, MAXB), (int)tu_below(r, 3) == 0);
      run_batch(s);
    }
    ET_OK(tern_snapshot_close(s));
    ET_OK(tern_close(idx));
  }
}

static void test_matches_reference(void **state) {
  (void)state;
  char *dir = build();
  tu_rng r;
  tu_rng_init(&r, 24);
  batches(dir, TERN_RDONLY, 1, &r, 3);              /* several segments and the buffer, warm */
  batches(dir, TERN_RDONLY, 0, &r, 2);              /* cold: queue or in order */
  batches(dir, TERN_RDONLY | TERN_PREAD, 1, &r, 1); /* pread: one lookup at a time */
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_FOREGROUND, NULL));
  ET_OK(tern_compact(idx)); /* one segment, the buffer in it */
  ET_OK(tern_close(idx));
  batches(dir, TERN_RDONLY, 1, &r, 3);
  batches(dir, TERN_RDONLY, 0, &r, 2);
  tu_rmtree(dir);
  free(dir);
}

/* A warm batch goes one of two ways, the one measured cheaper on this
 * index (engine/util/pick.h): many lookups in flight, or one after the
 * other in input order; the first timed batches take them in turn, and
 * later ones try the costlier way again now and then.  Both answer as
 * the reference, over several segments and the buffer. */
static void test_both_warm_ways(void **state) {
  (void)state;
  char *dir = build();
  tu_rng r;
  tu_rng_init(&r, 0xB07);
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_RDONLY, NULL));
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  warm_up(s);
  for (unsigned k = 0; k < 2 * TERN_PICK_EXPLORE_FAR; k++) {
    random_batch(&r, k % 8 == 7 ? MAXB : 64 + (size_t)tu_below(&r, 2000), 0);
    run_batch(s);
    if (k == 2 * TERN_PICK_START - 1) /* the start takes them in turn: both went */
      assert_true(idx->warm_batch.seen[0] == TERN_PICK_START &&
                  idx->warm_batch.seen[1] == TERN_PICK_START);
  }
  ET_OK(tern_snapshot_close(s));
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

/* A warm sorted batch of every key reads each terms block once (plus the
 * values in .val), as one cursor in key order would. */
static void test_sorted_batch_reads_each_block_once(void **state) {
  (void)state;
  char *dir = build();
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_FOREGROUND, NULL));
  ET_OK(tern_compact(idx));
  tern_stats *st;
  ET_OK(tern_stats_get(&st, idx));
  assert_int_equal(st->nsegments, 1);
  uint64_t blocks = st->segments[0].bytes_terms / 4096 + 1;
  tern_stats_free(st);
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  warm_up(s);
  B.n = 0;
  for (uint32_t first = 0; first < 3; first++) /* key order: first byte, then id */
    for (uint32_t id = first; id < NID; id += 3) B.ids[B.n++ % MAXB] = id;
  /* the batch: the last MAXB keys in key order (all of them when MAXB >= NID) */
  size_t n = B.n < MAXB ? B.n : MAXB;
  uint32_t tmp[MAXB];
  for (size_t i = 0; i < n; i++) tmp[i] = B.ids[(B.n - n + i) % MAXB];
  uint64_t in_val = 0;
  for (size_t i = 0; i < n; i++) {
    uint8_t v[600];
    B.ids[i] = tmp[i];
    B.keys[i] = (tern_slice){B.kb[i], et_key(tmp[i], 0, B.kb[i])};
    in_val += ref_state[tmp[i]] == PRESENT && val_of(tmp[i], ref_ver[tmp[i]], v) >= 200;
  }
  B.n = n;
  tern_io_stats io;
  tern_io_reset_global_stats();
  B.calls = 0;
  B.s = NULL;
  ET_OK(tern_get_batch(s, B.keys, B.n, check_cb, &B));
  tern_io_global_stats(&io);
  assert_int_equal(B.calls, B.n);
  print_message("  sorted warm batch of %zu keys: %llu reads, %llu blocks, %llu values in .val\n",
                B.n, (unsigned long long)io.reads, (unsigned long long)blocks,
                (unsigned long long)in_val);
  assert_true(io.reads <= blocks + in_val);
  assert_true(io.reads >= 1);
  ET_OK(tern_snapshot_close(s));
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

/* The only .tim of dir (one segment after a compaction), malloc'd. */
static char *tim_path(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  char *found = NULL;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n > 4 && !strcmp(e->d_name + n - 4, ".tim")) {
      assert_null(found);
      found = tu_path(dir, e->d_name);
    }
  }
  closedir(d);
  assert_non_null(found);
  return found;
}

/* A damaged terms block met by a warm batch (its file in the page cache,
 * the damaged page never checked by the process): TERN_ECORRUPT naming
 * the .tim, and no key called back (an index's first warm batch keeps
 * many lookups in flight, which answer once all are done). */
static void test_damaged_block(void **state) {
  (void)state;
  char *dir = build();
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_FOREGROUND, NULL));
  ET_OK(tern_compact(idx));
  ET_OK(tern_close(idx));
  char *tim = tim_path(dir);
  size_t len;
  uint8_t *bytes = tu_read_file(tim, &len); /* and so in the page cache: the batch goes in order */
  assert_true(len > 3 * 4096);
  bytes[4096 + 2000] ^= 0x40; /* block 0, which the first keys need */
  tu_write_file(tim, bytes, len);
  free(bytes);
  ET_OK(tern_open(&idx, dir, TERN_RDONLY, NULL));
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  B.n = 0;
  for (uint32_t id = 0; id < 3 * 400; id += 3) { /* keys starting 0x00: the first blocks */
    B.ids[B.n] = id;
    B.keys[B.n] = (tern_slice){B.kb[B.n], et_key(id, 0, B.kb[B.n])};
    B.n++;
  }
  B.calls = 0;
  B.s = NULL;
  assert_int_equal(tern_get_batch(s, B.keys, B.n, check_cb, &B), TERN_ECORRUPT);
  assert_non_null(strstr(tern_errmsg(), ".tim"));
  assert_int_equal(B.calls, 0);
  ET_OK(tern_snapshot_close(s));
  ET_OK(tern_close(idx));
  free(tim);
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matches_reference),
      cmocka_unit_test(test_both_warm_ways),
      cmocka_unit_test(test_sorted_batch_reads_each_block_once),
      cmocka_unit_test(test_damaged_block),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
