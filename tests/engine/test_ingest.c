/* SPDX-License-Identifier: MIT */
/*
 * test_ingest.c — tern_ingest against a reference map.
 *
 * Segments to ingest are made the way a bulk commit writes them: a bulk
 * transaction in a scratch index, whose one segment's files are linked
 * into a directory of their own (the layout tern_builder_* makes: a
 * directory holding exactly one segment's files, named as tern names
 * them).  Rounds of random commits, flushes and ingests (ingested wins,
 * TERN_INGEST_BEHIND, overlapping ingested segments with
 * TERN_INGEST_LATER_WINS) are checked key by key against the reference,
 * with a snapshot held across each ingest still answering as before it;
 * ingests of disjoint key ranges do no per-key lookup (counted); bad input
 * (a key in two segments, a damaged file, a directory of two segments, a
 * missing directory, a foreign file) is refused and leaves the index
 * answering as before.
 */
#include "tests/engine/enginetest.h"

#include "codec/segment.h"
#include "engine/util/counters.h"
#include "engine/state/index.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

enum { NIDS = 600 };

typedef struct ref {
  uint32_t ver[NIDS]; /* 0: absent */
} ref;

static uint64_t g_salt;

static void put_val(tern_txn *t, uint32_t id, uint32_t ver) {
  uint8_t key[ET_KEY_MAX];
  uint32_t v[2] = {id, ver};
  ET_OK(tern_put(t, key, et_key(id, g_salt, key), v, sizeof v, NULL, 0));
}

/* A directory under root holding one segment of ids[0..n) at version ver,
 * written by a bulk commit of a scratch index. */
static char *build_segment(const char *root, const uint32_t *ids, size_t n, uint32_t ver) {
  static unsigned serial;
  char tag[32];
  snprintf(tag, sizeof tag, "scratch%u", serial);
  char *scratch = tu_path(root, tag);
  snprintf(tag, sizeof tag, "seg%u", serial++);
  char *segdir = tu_path(root, tag);
  tern_index *s;
  ET_OK(tern_open(&s, scratch, TERN_CREATE | TERN_FOREGROUND, NULL));
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, s, TERN_TXN_BULK));
  for (size_t i = 0; i < n; i++) put_val(t, ids[i], ver);
  ET_OK(tern_commit(t));
  tern_stats *st;
  ET_OK(tern_stats_get(&st, s));
  assert_int_equal(st->nsegments, 1);
  char name[TERN_SEGNAME_MAX];
  tern_segment_name(name, st->segments[0].id);
  ET_OK(tern_stats_free(st));
  assert_int_equal(mkdir(segdir, 0755), 0);
  ET_OK(tern_seg_link(scratch, name, segdir, name));
  ET_OK(tern_close(s));
  tu_rmtree(scratch);
  free(scratch);
  return segdir;
}

static void check(tern_index *idx, const ref *m) {
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  for (uint32_t id = 0; id < NIDS; id++) {
    uint8_t key[ET_KEY_MAX];
    uint32_t v[2];
    size_t vlen;
    int rc = tern_get(s, key, et_key(id, g_salt, key), v, sizeof v, &vlen);
    if (!m->ver[id]) {
      if (rc != TERN_NOTFOUND) fprintf(stderr, "id %u: %d, want absent\n", id, rc);
      assert_int_equal(rc, TERN_NOTFOUND);
      continue;
    }
    if (rc != TERN_OK || v[1] != m->ver[id])
      fprintf(stderr, "id %u: %d ver %u, want %u\n", id, rc, rc ? 0 : v[1], m->ver[id]);
    assert_int_equal(rc, TERN_OK);
    assert_int_equal(v[0], id);
    assert_int_equal(v[1], m->ver[id]);
  }
  uint64_t live;
  ET_OK(tern_snapshot_count(s, &live));
  uint64_t want = 0;
  for (uint32_t id = 0; id < NIDS; id++) want += m->ver[id] != 0;
  assert_int_equal(live, want);
  ET_OK(tern_snapshot_close(s));
}

/* Random distinct ids, sorted; from [lo, hi). */
static size_t pick_ids(tu_rng *r, uint32_t lo, uint32_t hi, size_t want, uint32_t *out) {
  size_t n = 0;
  for (uint32_t id = lo; id < hi && n < want; id++)
    if (tu_below(r, hi - id) < want - n) out[n++] = id;
  return n;
}

static void random_commit(tern_index *idx, tu_rng *r, ref *m, uint32_t *clock) {
  tern_txn *t;
  unsigned bulk = tu_below(r, 6) == 0 ? TERN_TXN_BULK : 0;
  ET_OK(tern_txn_begin(&t, idx, bulk));
  size_t n = 1 + tu_below(r, bulk ? 80 : 8);
  for (size_t i = 0; i < n; i++) {
    uint32_t id = (uint32_t)tu_below(r, NIDS);
    uint8_t key[ET_KEY_MAX];
    if (m->ver[id] && tu_below(r, 4) == 0) {
      int rc = tern_delete(t, key, et_key(id, g_salt, key));
      assert_true(rc == TERN_OK || rc == TERN_NOTFOUND);
      m->ver[id] = 0;
    } else {
      m->ver[id] = (*clock)++;
      put_val(t, id, m->ver[id]);
    }
  }
  ET_OK(tern_commit(t));
}

/* One ingest of 1-3 random segments, the reference updated as the mode says. */
static void random_ingest(tern_index *idx, tu_rng *r, const char *root, ref *m, uint32_t *clock) {
  size_t nseg = 1 + tu_below(r, 3);
  unsigned flags = tu_below(r, 3) == 0 ? TERN_INGEST_BEHIND : 0;
  if (nseg > 1) flags |= TERN_INGEST_LATER_WINS;
  char *dirs[3];
  uint32_t *ids = malloc(NIDS * sizeof *ids);
  ref before = *m, ing = {{0}};
  for (size_t k = 0; k < nseg; k++) {
    uint32_t lo = (uint32_t)tu_below(r, NIDS - 10), hi = lo + 10 + (uint32_t)tu_below(r, NIDS - lo - 9);
    if (hi > NIDS) hi = NIDS;
    size_t n = pick_ids(r, lo, hi, 1 + tu_below(r, hi - lo), ids);
    uint32_t ver = (*clock)++;
    dirs[k] = build_segment(root, ids, n, ver);
    for (size_t i = 0; i < n; i++) ing.ver[ids[i]] = ver; /* the later segment wins */
  }
  for (uint32_t id = 0; id < NIDS; id++) {
    if (!ing.ver[id]) continue;
    if (!(flags & TERN_INGEST_BEHIND) || !before.ver[id]) m->ver[id] = ing.ver[id];
  }
  tern_snapshot *held;
  ET_OK(tern_snapshot_open(&held, idx));
  ET_OK(tern_ingest(idx, (const char *const *)dirs, nseg, flags));
  tern_snapshot *now;
  ET_OK(tern_snapshot_open(&now, idx));
  uint64_t a, b;
  ET_OK(tern_snapshot_seq(held, &a));
  ET_OK(tern_snapshot_seq(now, &b));
  assert_true(b > a);
  ET_OK(tern_snapshot_close(now));
  /* the snapshot held across it answers as before */
  for (uint32_t id = 0; id < NIDS; id += 7) {
    uint8_t key[ET_KEY_MAX];
    uint32_t v[2];
    size_t vlen;
    int rc = tern_get(held, key, et_key(id, g_salt, key), v, sizeof v, &vlen);
    assert_int_equal(rc, before.ver[id] ? TERN_OK : TERN_NOTFOUND);
    if (before.ver[id]) assert_int_equal(v[1], before.ver[id]);
  }
  ET_OK(tern_snapshot_close(held));
  for (size_t k = 0; k < nseg; k++) {
    tu_rmtree(dirs[k]);
    free(dirs[k]);
  }
  free(ids);
}

static void test_ingest_model(void **state) {
  (void)state;
  uint64_t seed = tu_seed();
  tu_rng r;
  tu_rng_init(&r, seed ^ 0x696e67);
  g_salt = tu_next(&r);
  print_message("[seed] %llu\n", (unsigned long long)seed);
  for (int worker = 0; worker < 2; worker++) {
    char *root = tu_tmpdir("ingest");
    char *dir = tu_path(root, "idx");
    tern_options o;
    tern_options_init(&o);
    o.write_buffer_bytes = 4096;
    tern_index *idx;
    ET_OK(tern_open(&idx, dir, TERN_CREATE | (worker ? 0 : TERN_FOREGROUND), &o));
    ref m = {{0}};
    uint32_t clock = 1;
    for (int round = 0; round < 120; round++) {
      unsigned what = (unsigned)tu_below(&r, 10);
      if (what < 6)
        random_commit(idx, &r, &m, &clock);
      else if (what < 7)
        ET_OK(tern_flush(idx));
      else
        random_ingest(idx, &r, root, &m, &clock);
      if (round % 10 == 9) check(idx, &m);
    }
    check(idx, &m);
    ET_OK(tern_verify(idx));
    ET_OK(tern_close(idx));
    ET_OK(tern_open(&idx, dir, 0, NULL)); /* and after reopening */
    check(idx, &m);
    ET_OK(tern_close(idx));
    tu_rmtree(root);
    free(dir);
    free(root);
  }
}

/* The name of the one segment in dir (malloc'd). */
static char *seg_name_in(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  char name[64] = "";
  struct dirent *e;
  while ((e = readdir(d)))
    if (tern_seg_file_segment(e->d_name, name, sizeof name)) break;
  closedir(d);
  assert_true(name[0] != '\0');
  return strdup(name);
}

/* Counts the files of the index directory that belong to segments. */
static size_t segment_files(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  size_t n = 0;
  struct dirent *e;
  char name[64];
  while ((e = readdir(d)))
    n += (size_t)tern_seg_file_segment(e->d_name, name, sizeof name);
  closedir(d);
  return n;
}

static void test_ingest_disjoint_and_errors(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, tu_seed() ^ 0x6469736a);
  g_salt = tu_next(&r);
  char *root = tu_tmpdir("ingest2");
  char *dir = tu_path(root, "idx");
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, NULL));
  ref m = {{0}};
  uint32_t ids[NIDS];
  for (uint32_t i = 0; i < NIDS; i++) ids[i] = i;
  /* the index holds ids whose keys sort first; the segments hold ranges after */
  uint8_t keys[NIDS][ET_KEY_MAX];
  size_t klens[NIDS];
  uint32_t order[NIDS];
  for (uint32_t i = 0; i < NIDS; i++) {
    klens[i] = et_key(i, g_salt, keys[i]);
    order[i] = i;
  }
  for (uint32_t i = 1; i < NIDS; i++) /* insertion sort of ids by key */
    for (uint32_t j = i; j > 0; j--) {
      uint32_t a = order[j - 1], b = order[j];
      size_t n = klens[a] < klens[b] ? klens[a] : klens[b];
      int c = memcmp(keys[a], keys[b], n);
      if (c < 0 || (c == 0 && klens[a] <= klens[b])) break;
      order[j - 1] = b;
      order[j] = a;
    }
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, TERN_TXN_BULK));
  for (uint32_t i = 0; i < 200; i++) {
    put_val(t, order[i], 1);
    m.ver[order[i]] = 1;
  }
  ET_OK(tern_commit(t));
  ET_OK(tern_txn_begin(&t, idx, 0));
  for (uint32_t i = 200; i < 210; i++) { /* the buffer */
    put_val(t, order[i], 2);
    m.ver[order[i]] = 2;
  }
  ET_OK(tern_commit(t));
  uint32_t a[100], b[100];
  for (uint32_t i = 0; i < 100; i++) {
    a[i] = order[300 + i];
    b[i] = order[450 + i];
  }
  char *da = build_segment(root, a, 100, 3), *db = build_segment(root, b, 100, 4);
  const char *both[2] = {da, db};
  unsigned long probes = atomic_load(&tern_engine_count.ingest_probes);
  ET_OK(tern_ingest(idx, both, 2, 0));
  assert_int_equal(atomic_load(&tern_engine_count.ingest_probes), probes); /* no per-key work */
  for (uint32_t i = 0; i < 100; i++) {
    m.ver[a[i]] = 3;
    m.ver[b[i]] = 4;
  }
  check(idx, &m);

  /* errors: each leaves the index answering as before, with no new file */
  size_t files = segment_files(dir);
  uint32_t c[3] = {order[100], order[205], order[500]};
  char *dc = build_segment(root, c, 3, 5), *dd = build_segment(root, c + 1, 2, 6);
  const char *dup[2] = {dc, dd};
  assert_int_equal(tern_ingest(idx, dup, 2, 0), TERN_EINVAL); /* a key in both */
  assert_non_null(strstr(tern_errmsg(), "both hold key"));
  const char *missing[1] = {"/nonexistent/tern-ingest"};
  assert_int_equal(tern_ingest(idx, missing, 1, 0), -ENOENT);
  assert_int_equal(tern_ingest(idx, dup, 1, 0x80), TERN_EINVAL); /* bad flags */
  char *two = tu_path(root, "two"); /* a directory of two segments */
  assert_int_equal(mkdir(two, 0755), 0);
  char *nc = seg_name_in(dc), *nd = seg_name_in(dd);
  ET_OK(tern_seg_link(dc, nc, two, "s000000000001"));
  ET_OK(tern_seg_link(dd, nd, two, "s000000000002"));
  const char *twos[1] = {two};
  assert_int_equal(tern_ingest(idx, twos, 1, 0), TERN_EINVAL);
  char *stray = tu_path(dc, "notes.txt"); /* a foreign file */
  tu_write_file(stray, "x", 1);
  const char *strays[1] = {dc};
  assert_int_equal(tern_ingest(idx, strays, 1, 0), TERN_EINVAL);
  unlink(stray);
  char timname[80];
  snprintf(timname, sizeof timname, "%s.tim", nd);
  char *tim = tu_path(dd, timname); /* a damaged file */
  size_t len;
  uint8_t *bytes = tu_read_file(tim, &len);
  bytes[len / 2] ^= 0x40;
  unlink(tim); /* a new inode: the hard-linked original is the scratch's */
  tu_write_file(tim, bytes, len);
  free(bytes);
  const char *bad[1] = {dd};
  assert_int_equal(tern_ingest(idx, bad, 1, 0), TERN_ECORRUPT);
  assert_non_null(strstr(tern_errmsg(), nd));
  assert_int_equal(segment_files(dir), files);
  check(idx, &m);
  /* later wins when asked */
  const char *good[2] = {dc, da};
  ET_OK(tern_ingest(idx, good, 2, TERN_INGEST_LATER_WINS));
  for (int i = 0; i < 3; i++) m.ver[c[i]] = 5;
  for (uint32_t i = 0; i < 100; i++) m.ver[a[i]] = 3;
  check(idx, &m);
  ET_OK(tern_verify(idx));
  ET_OK(tern_close(idx));
  free(tim);
  free(nc);
  free(nd);
  free(stray);
  free(two);
  free(da);
  free(db);
  free(dc);
  free(dd);
  tu_rmtree(root);
  free(dir);
  free(root);
  (void)r;
  (void)ids;
}

/* Segments made by the public builder ingest as bulk-written ones do; a
 * build of no document (an empty directory) adds nothing and changes
 * nothing, alone or beside a real one. */
static void test_ingest_builder_and_empty(void **state) {
  (void)state;
  char *dir = tu_tmpdir("ingest-builder"), *root = tu_tmpdir("ingest-builder-src");
  char *full = tu_path(root, "full"), *empty = tu_path(root, "empty");
  tern_builder *b;
  ET_OK(tern_builder_open(&b, full, NULL));
  for (uint32_t i = 0; i < 100; i++) {
    char k[16];
    int n = snprintf(k, sizeof k, "b%05u", i);
    ET_OK(tern_builder_add(b, k, (size_t)n, &i, sizeof i, NULL, 0));
  }
  ET_OK(tern_builder_finish(b, NULL));
  ET_OK(tern_builder_open(&b, empty, NULL));
  tern_build_info info;
  ET_OK(tern_builder_finish(b, &info));
  assert_int_equal(info.documents, 0);
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, NULL));
  const char *only_empty[1] = {empty}, *both[2] = {empty, full};
  uint64_t before, after;
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, idx));
  ET_OK(tern_snapshot_seq(s, &before));
  ET_OK(tern_snapshot_close(s));
  ET_OK(tern_ingest(idx, only_empty, 1, 0));
  ET_OK(tern_snapshot_open(&s, idx));
  ET_OK(tern_snapshot_seq(s, &after));
  assert_int_equal(after, before); /* no commit */
  ET_OK(tern_snapshot_close(s));
  ET_OK(tern_ingest(idx, both, 2, 0));
  ET_OK(tern_snapshot_open(&s, idx));
  uint64_t live;
  ET_OK(tern_snapshot_count(s, &live));
  assert_int_equal(live, 100);
  uint32_t v;
  size_t vlen;
  ET_OK(tern_get(s, "b00042", 6, &v, sizeof v, &vlen));
  assert_int_equal(v, 42);
  ET_OK(tern_snapshot_close(s));
  ET_OK(tern_verify(idx));
  ET_OK(tern_close(idx));
  tu_rmtree(root);
  tu_rmtree(dir);
  free(full);
  free(empty);
  free(root);
  free(dir);
}

int main(void) {
  et_prefer_tmpfs();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ingest_model),
      cmocka_unit_test(test_ingest_disjoint_and_errors),
      cmocka_unit_test(test_ingest_builder_and_empty),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
