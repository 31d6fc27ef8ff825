/* SPDX-License-Identifier: MIT */
/*
 * test_txn_spill.c — a bulk transaction over its memory limit
 * (tern_txn_set_memory) spills segments and stays one transaction:
 *  - against a reference array on random operations (puts of new and
 *    repeated keys, deletes, deleted ranges, NOOVERWRITE, tern_txn_get),
 *    over an index with segments and buffered documents: after the
 *    commit every key reads as the reference says, counts and a term's
 *    postings agree, tern_verify passes, and it did spill;
 *  - tern_abort leaves the index as it was and no segment file behind;
 *  - under injected faults (I/O errors of every kind, power cuts at every
 *    sync, strict POSIX: a directory entry survives only once its
 *    directory was fsynced) the index is the state before or after (after
 *    when the commit returned), verifies, and holds no file no commit
 *    installed once reopened.
 */
#include "tests/engine/enginetest.h"
#include "tests/engine/faultfs.c"

#include "codec/segment.h"
#include "engine/state/index.h"

#include <dirent.h>
#include <errno.h>

#define NKEYS 3000u
#define LIMIT ((2u << 20) + (48u << 10)) /* a spill every few hundred puts */

typedef struct model {
  char *val[NKEYS]; /* NULL: absent */
} model;

static size_t key_of(uint32_t id, char *out) { return (size_t)sprintf(out, "k%06u", id); }

static void model_set(model *m, uint32_t id, const char *v) {
  free(m->val[id]);
  m->val[id] = v ? strdup(v) : NULL;
}

static void model_free(model *m) {
  for (uint32_t i = 0; i < NKEYS; i++) free(m->val[i]);
}

static void model_copy(model *dst, const model *src) {
  for (uint32_t i = 0; i < NKEYS; i++) dst->val[i] = src->val[i] ? strdup(src->val[i]) : NULL;
}

static int put_doc(tern_txn *t, model *m, uint32_t id, uint32_t ver) {
  char k[16], v[64], g[8];
  size_t kl = key_of(id, k);
  int vl = snprintf(v, sizeof v, "v%u-%u-%.*s", id, ver, (int)(ver % 30), "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyy");
  snprintf(g, sizeof g, "g%u", id % 7);
  tern_term terms[2] = {{"grp", g, strlen(g)}, {"ver", v, (size_t)vl}};
  int rc = tern_put(t, k, kl, v, (size_t)vl, terms, 2);
  if (rc == TERN_OK && m) model_set(m, id, v);
  return rc;
}

/* Whether the index holds exactly the model (gets, count, a term's postings). */
static int holds(tern_index *idx, const model *m) {
  tern_snapshot *s;
  if (tern_snapshot_open(&s, idx) != TERN_OK) return 0;
  int ok = 1;
  uint64_t live = 0, want = 0, grp = 0, want_grp = 0;
  for (uint32_t i = 0; ok && i < NKEYS; i++) {
    char k[16], buf[128];
    size_t n, kl = key_of(i, k);
    int rc = tern_get(s, k, kl, buf, sizeof buf, &n);
    if (m->val[i]) {
      want++;
      want_grp += i % 7 == 3;
      ok = rc == TERN_OK && n == strlen(m->val[i]) && !memcmp(buf, m->val[i], n);
    } else {
      ok = rc == TERN_NOTFOUND;
    }
    if (!ok && getenv("SPILL_DEBUG")) fprintf(stderr, "key %u: %d (%.*s), want %s\n", i, rc, rc == TERN_OK ? (int)n : 0, buf, m->val[i] ? m->val[i] : "absent");
  }
  ok = ok && tern_snapshot_count(s, &live) == TERN_OK && live == want;
  if (!ok && getenv("SPILL_DEBUG")) fprintf(stderr, "count %llu want %llu\n", (unsigned long long)live, (unsigned long long)want);
  tern_term g3 = {"grp", "g3", 2};
  tern_postings *p;
  if (ok && tern_postings_open(&p, s, &g3, 1) == TERN_OK) {
    uint64_t d;
    while (tern_postings_next(p, &d) == TERN_OK && d != TERN_NO_MORE_DOCS) grp++;
    tern_postings_close(p);
    ok = grp == want_grp;
  }
  tern_snapshot_close(s);
  return ok;
}

/* Every segment file in dir belongs to a segment the index lists. */
static int leftovers(tern_index *idx, const char *dir) {
  tern_stats *st;
  assert_int_equal(tern_stats_get(&st, idx), TERN_OK);
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  int found = 0;
  while ((e = readdir(d))) {
    char name[64];
    if (!tern_seg_file_segment(e->d_name, name, sizeof name)) continue;
    int listed = 0;
    for (size_t i = 0; i < st->nsegments; i++) {
      char want[TERN_SEGNAME_MAX];
      tern_segment_name(want, st->segments[i].id);
      listed |= !strcmp(want, name);
    }
    if (!listed) fprintf(stderr, "leftover %s\n", e->d_name);
    found += !listed;
  }
  closedir(d);
  tern_stats_free(st);
  return found;
}

static size_t nsegments(tern_index *idx) {
  tern_stats *st;
  assert_int_equal(tern_stats_get(&st, idx), TERN_OK);
  size_t n = st->nsegments;
  tern_stats_free(st);
  return n;
}

/* An index with two segments and buffered documents (keys 0..NKEYS/2). */
static tern_index *make_base(const char *dir, model *m) {
  tern_index *idx;
  assert_int_equal(tern_open(&idx, dir, TERN_CREATE | TERN_FOREGROUND, NULL), TERN_OK);
  for (int seg = 0; seg < 2; seg++) {
    tern_txn *t;
    assert_int_equal(tern_txn_begin(&t, idx, TERN_TXN_BULK), TERN_OK);
    for (uint32_t i = (uint32_t)seg; i < NKEYS / 2; i += 2) assert_int_equal(put_doc(t, m, i, 1), TERN_OK);
    assert_int_equal(tern_commit(t), TERN_OK);
  }
  tern_txn *t;
  assert_int_equal(tern_txn_begin(&t, idx, 0), TERN_OK);
  for (uint32_t i = 0; i < NKEYS / 2; i += 5) assert_int_equal(put_doc(t, m, i, 2), TERN_OK);
  assert_int_equal(tern_commit(t), TERN_OK);
  return idx;
}

/* The random transaction: returns its first failure (the model then
 * means nothing), else the commit's status. */
static int random_txn(tern_index *idx, model *m, uint64_t seed, uint32_t nops, int check_reads,
                      int commit) {
  tu_rng r;
  tu_rng_init(&r, seed);
  tern_txn *t;
  int rc = tern_txn_begin(&t, idx, TERN_TXN_BULK);
  if (rc != TERN_OK) return rc;
  assert_int_equal(tern_txn_set_memory(t, LIMIT), TERN_OK);
  for (uint32_t op = 0; rc == TERN_OK && op < nops; op++) {
    uint32_t id = (uint32_t)tu_below(&r, NKEYS), what = (uint32_t)tu_below(&r, 100);
    char k[16];
    size_t kl = key_of(id, k);
    if (what < 80) {
      rc = put_doc(t, m, id, op + 3);
    } else if (what < 90) {
      rc = tern_delete(t, k, kl);
      if (rc == TERN_NOTFOUND) {
        assert_null(m->val[id]);
        rc = TERN_OK;
      } else if (rc == TERN_OK) {
        assert_non_null(m->val[id]);
        model_set(m, id, NULL);
      }
    } else if (what < 92) {
      char to[16];
      uint32_t end = id + (uint32_t)tu_below(&r, 40);
      tern_slice a = {k, kl}, b = {to, key_of(end, to)};
      rc = tern_delete_range(t, &a, &b);
      for (uint32_t i = id; rc == TERN_OK && i < end && i < NKEYS; i++) model_set(m, i, NULL);
    } else if (what < 95) {
      char g[8];
      snprintf(g, sizeof g, "g%u", id % 7);
      tern_term grp = {"grp", g, strlen(g)};
      rc = tern_put_flags(t, TERN_NOOVERWRITE, k, kl, "new", 3, &grp, 1);
      if (rc == TERN_EEXIST) {
        assert_non_null(m->val[id]);
        rc = TERN_OK;
      } else if (rc == TERN_OK) {
        assert_null(m->val[id]);
        model_set(m, id, "new");
      }
    } else if (check_reads) {
      char buf[128];
      size_t n;
      rc = tern_txn_get(t, k, kl, buf, sizeof buf, &n);
      if (m->val[id]) {
        assert_int_equal(rc, TERN_OK);
        assert_int_equal(n, strlen(m->val[id]));
        assert_memory_equal(buf, m->val[id], n);
      } else {
        assert_int_equal(rc, TERN_NOTFOUND);
      }
      rc = TERN_OK;
    }
  }
  if (rc != TERN_OK || !commit) {
    tern_abort(t);
    return rc;
  }
  return tern_commit(t);
}

static void test_spills_match_reference(void **state) {
  (void)state;
  for (unsigned round = 0; round < 2 * tu_scale(); round++) {
    uint64_t seed = tu_seed() + round;
    char *dir = tu_tmpdir("spill");
    model m = {{0}};
    tern_index *idx = make_base(dir, &m);
    size_t before = nsegments(idx);
    int rc = random_txn(idx, &m, seed, 6000, 1, 1);
    if (rc != TERN_OK) fprintf(stderr, "seed %llu: %d %s\n", (unsigned long long)seed, rc, tern_errmsg());
    assert_int_equal(rc, TERN_OK);
    assert_int_equal(tern_flush(idx), TERN_OK); /* and the merges the spills made due */
    assert_true(holds(idx, &m));
    assert_int_equal(tern_verify(idx), TERN_OK);
    assert_int_equal(leftovers(idx, dir), 0);
    assert_int_equal(tern_close(idx), TERN_OK);
    assert_int_equal(tern_open(&idx, dir, 0, NULL), TERN_OK);
    assert_true(holds(idx, &m));
    print_message("seed %llu: %zu segments before\n", (unsigned long long)seed, before);
    assert_int_equal(tern_close(idx), TERN_OK);
    model_free(&m);
    tu_rmtree(dir);
    free(dir);
  }
}

/* It did spill: with no merge, the commit adds several segments. */
static void test_spill_adds_segments(void **state) {
  (void)state;
  char *dir = tu_tmpdir("spill-n");
  tern_index *idx;
  assert_int_equal(tern_open(&idx, dir, TERN_CREATE, NULL), TERN_OK);
  tern_txn *t;
  model m = {{0}};
  assert_int_equal(tern_txn_begin(&t, idx, TERN_TXN_BULK), TERN_OK);
  assert_int_equal(tern_txn_set_memory(t, LIMIT), TERN_OK);
  for (uint32_t v = 0; v < 3; v++) /* later versions of every key win over spilled ones */
    for (uint32_t i = 0; i < NKEYS; i++) assert_int_equal(put_doc(t, &m, i, v * 7 + 1), TERN_OK);
  size_t files = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; (e = readdir(d));) files += strstr(e->d_name, ".tim") != NULL;
  closedir(d);
  assert_true(files >= 2); /* written before the commit */
  assert_int_equal(nsegments(idx), 0);
  assert_int_equal(tern_commit(t), TERN_OK);
  assert_true(holds(idx, &m));
  assert_int_equal(tern_verify(idx), TERN_OK);
  assert_int_equal(leftovers(idx, dir), 0);
  assert_int_equal(tern_close(idx), TERN_OK);
  model_free(&m);
  tu_rmtree(dir);
  free(dir);
}

static void test_abort_leaves_nothing(void **state) {
  (void)state;
  char *dir = tu_tmpdir("spill-abort");
  model m = {{0}}, scratch = {{0}};
  tern_index *idx = make_base(dir, &m);
  model_copy(&scratch, &m);
  assert_int_equal(random_txn(idx, &scratch, tu_seed(), 6000, 0, 0), TERN_OK);
  assert_true(holds(idx, &m));
  assert_int_equal(leftovers(idx, dir), 0);
  assert_int_equal(tern_close(idx), TERN_OK);
  model_free(&m);
  model_free(&scratch);
  tu_rmtree(dir);
  free(dir);
}

static void copy_tree(const char *from, const char *to) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -a '%s' '%s'", to, from, to);
  assert_int_equal(system(cmd), 0);
}

/* One faulted round; returns whether the fault fired. */
static int fault_round(const char *base, const char *work, const model *before, uint64_t seed,
                       int crash, ff_kind kind, int err, uint64_t n) {
  copy_tree(base, work);
  tern_index *idx;
  assert_int_equal(tern_open(&idx, work, TERN_FOREGROUND, NULL), TERN_OK);
  model after = {{0}};
  model_copy(&after, before);
  ff_reset();
  if (crash)
    ff_crash_at_sync(n, 0, seed ^ n);
  else
    ff_fail_nth(kind, n, err);
  int rc = random_txn(idx, &after, seed, 1500, 0, 1);
  int fired = ff_fired();
  assert_int_equal(tern_close(idx), TERN_OK);
  if (crash)
    ff_power_loss();
  else
    ff_reset();
  if (!fired) assert_int_equal(rc, TERN_OK);
  if (rc != TERN_OK && rc != TERN_EPARTIAL && !crash) {
    if (rc != -err) fprintf(stderr, "%s #%llu: %d, not %d\n", ff_kind_name[kind], (unsigned long long)n, rc, -err);
    assert_int_equal(rc, -err);
  }
  assert_int_equal(tern_open(&idx, work, 0, NULL), TERN_OK); /* removes leftovers */
  assert_int_equal(tern_verify(idx), TERN_OK);
  int is_after = holds(idx, &after), is_before = holds(idx, before);
  if (!is_after && !is_before)
    fprintf(stderr, "%s #%llu (status %d): neither before nor after\n",
            crash ? "crash" : ff_kind_name[kind], (unsigned long long)n, rc);
  assert_true(is_after || is_before);
  if (rc == TERN_OK || rc == TERN_EPARTIAL) assert_true(is_after);
  assert_int_equal(leftovers(idx, work), 0);
  assert_int_equal(tern_close(idx), TERN_OK);
  model_free(&after);
  return fired;
}

static void test_faults(void **state) {
  (void)state;
  char *root = tu_tmpdir("spill-faults");
  char *base = tu_path(root, "base"), *work = tu_path(root, "work");
  model m = {{0}};
  tern_index *idx = make_base(base, &m);
  assert_int_equal(tern_close(idx), TERN_OK);
  uint64_t seed = tu_seed();
  ff_install();
  ff_strict(1); /* a directory entry survives a power cut only once its directory was fsynced */
  static const ff_kind kinds[] = {FF_OPEN, FF_WRITE, FF_SYNC, FF_RENAME, FF_CAT_WRITE, FF_CAT_SYNC};
  unsigned rounds = 0;
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
    for (uint64_t n = 1; n < 2000 && fault_round(base, work, &m, seed, 0, kinds[k], EIO, n); n++)
      rounds++;
  for (uint64_t n = 1; n < 2000 && fault_round(base, work, &m, seed, 1, FF_SYNC, EIO, n); n++)
    rounds++;
  ff_uninstall();
  print_message("%u faulted rounds\n", rounds);
  assert_true(rounds > 20);
  model_free(&m);
  tu_rmtree(root);
  free(base);
  free(work);
  free(root);
}

int main(void) {
  tu_seed();
  et_prefer_tmpfs();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_spills_match_reference),
      cmocka_unit_test(test_spill_adds_segments),
      cmocka_unit_test(test_abort_leaves_nothing),
      cmocka_unit_test(test_faults),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
