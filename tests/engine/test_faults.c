/* SPDX-License-Identifier: MIT */
/*
 * test_faults.c — fault loops (SQLite's do_ioerr_test and crash tests):
 * for an import, a commit with deletes (and the merge it triggers, in the
 * background worker: a fault there must not touch the commit), a flush
 * (and its merge), a commit and flush that merges, a compact, an ingest
 * (of a segment a bulk commit wrote elsewhere, keys new, in segments and
 * in the buffer) and a commit of a deleted range; after an ingest or a
 * range, the reopened index also holds no file of a segment it does not
 * list:
 *
 *   - for every call kind (open, pread, write, fsync, rename, unlink, mmap,
 *     ftruncate, LMDB's catalog writes and syncs) and errno (EIO, ENOSPC),
 *     for N = 1, 2, ... until the operation makes fewer than N such calls:
 *     fail call N;
 *   - for N = 1, 2, ... until the operation makes fewer than N syncs: cut
 *     the power at sync N, discarding every unsynced write (and, in a
 *     second pass, keeping a random subset of them: torn writes);
 *
 * then reopen without faults and require: the index opens, tern_verify
 * passes, and every key reads its value of the state before the operation
 * or after it, all keys the same state (after it, whenever the operation
 * reported success: nothing committed is lost); a failure reported with
 * its true errno.  Any wrong answer fails the test.
 *
 * The catalog's own writes are covered by faultfs.c's interposers over
 * LMDB's pwrite/writev/fdatasync (included here so that no other test
 * gets them).  The power cuts are strict POSIX (ff_strict): a directory
 * entry survives only once its own directory was fsynced after it.  TERN_TEST_SCALE=n runs n plans of different shapes.
 */
#include "tests/engine/enginetest.h"
#include "tests/engine/faultfs.c"

#include "codec/segment.h"
#include "engine/state/index.h"

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

#define NK 640 /* ids: 9 x seg_docs (<= 40) + 220 (ingest_id) */
#define SALT 0xfa17

typedef struct kstate {
  uint8_t ver[NK]; /* 0: absent */
} kstate;

typedef struct plan {
  uint32_t seg_docs; /* docs per base segment (nine of them) */
  uint32_t vmod;     /* shapes values: some go to .val */
} plan;

enum op { OP_IMPORT, OP_DELETES, OP_FLUSH, OP_MERGE, OP_COMPACT, OP_INGEST, OP_RANGE, NOPS };
static const char *const op_name[NOPS] = {"import", "commit with deletes", "flush", "merge",
                                          "compact", "ingest", "delete range"};
static const char *g_ingest; /* the segment directory OP_INGEST ingests */

typedef struct tally {
  uint64_t rounds, clean_errors, partial, ok_despite_fault, wrong, lost;
  uint64_t calls[FF_NKINDS + 1]; /* most calls of each kind an operation made; [FF_NKINDS]: syncs */
} tally;

static size_t value_of(const plan *p, uint32_t id, uint8_t ver, uint8_t *out) {
  size_t len = (id * 7 + ver) % p->vmod == 0 ? 70 + (id + ver) % 300 : 1 + (id + ver) % 30;
  for (size_t i = 0; i < len; i++) out[i] = (uint8_t)(id * 31 + ver * 17 + i);
  return len;
}

static int put(tern_txn *t, const plan *p, kstate *m, uint32_t id, uint8_t ver) {
  uint8_t key[ET_KEY_MAX], val[512];
  assert_true(id < NK);
  size_t kl = et_key(id, SALT, key), vl = value_of(p, id, ver, val);
  uint8_t g = (uint8_t)('a' + id % 3);
  tern_term term = {"a", &g, 1};
  if (m) m->ver[id] = ver;
  return t ? tern_put(t, key, kl, val, vl, &term, 1) : TERN_OK;
}

static int del(tern_txn *t, kstate *m, uint32_t id) {
  uint8_t key[ET_KEY_MAX];
  assert_true(id < NK);
  size_t kl = et_key(id, SALT, key);
  if (m) m->ver[id] = 0;
  return t ? tern_delete(t, key, kl) : TERN_OK;
}

static int byte_order(const uint8_t *a, size_t al, const uint8_t *b, size_t bl) {
  size_t n = al < bl ? al : bl;
  int c = n ? memcmp(a, b, n) : 0;
  return c ? c : (al > bl) - (al < bl);
}

static tern_index *open_index(const char *dir, unsigned flags) {
  tern_options o;
  tern_options_init(&o);
  o.write_buffer_bytes = 1u << 30; /* flushes only when asked */
  o.map_size = 64u << 20;
  tern_index *idx = NULL;
  int rc = tern_open(&idx, dir, flags, &o);
  if (rc != TERN_OK) fprintf(stderr, "open %s: %d %s\n", dir, rc, tern_errmsg());
  assert_int_equal(rc, TERN_OK);
  return idx;
}

/* Nine segments, a buffer with puts, replacements and deletes. */
static void build_base(const char *dir, const plan *p, kstate *m) {
  memset(m, 0, sizeof *m);
  tern_index *idx = open_index(dir, TERN_CREATE);
  tern_txn *t;
  for (uint32_t s = 0; s < 9; s++) {
    assert_int_equal(tern_txn_begin(&t, idx, 0), TERN_OK);
    for (uint32_t i = 0; i < p->seg_docs; i++)
      assert_int_equal(put(t, p, m, s * p->seg_docs + i, 1), TERN_OK);
    assert_int_equal(tern_commit(t), TERN_OK);
    assert_int_equal(tern_flush(idx), TERN_OK);
  }
  uint32_t n = 9 * p->seg_docs;
  assert_int_equal(tern_txn_begin(&t, idx, 0), TERN_OK);
  for (uint32_t i = 0; i < 30; i++) assert_int_equal(put(t, p, m, n + i, 1), TERN_OK);
  for (uint32_t i = 0; i < 10; i++) assert_int_equal(put(t, p, m, i, 2), TERN_OK);
  for (uint32_t i = 0; i < 10; i++) assert_int_equal(del(t, m, p->seg_docs + i), TERN_OK);
  assert_int_equal(tern_commit(t), TERN_OK);
  assert_int_equal(tern_close(idx), TERN_OK);
}

/* OP_INGEST's documents: new keys, keys in segments, keys in the buffer. */
#define NINGEST 40
static uint32_t ingest_id(const plan *p, uint32_t i) {
  uint32_t n = 9 * p->seg_docs;
  if (i < 20) return n + 200 + i;
  if (i < 35) return 4 * p->seg_docs + (i - 20);
  return n + (i - 35);
}

/* OP_RANGE's bounds: the keys of two ids. */
static uint8_t g_range_from[ET_KEY_MAX], g_range_to[ET_KEY_MAX];
static size_t g_range_flen, g_range_tlen;
static int in_range(const uint8_t *k, size_t kl) {
  return byte_order(k, kl, g_range_from, g_range_flen) >= 0 &&
         byte_order(k, kl, g_range_to, g_range_tlen) < 0;
}

/* The operation, on the index (idx) and on the model (m), either may be
 * NULL.  Returns the first failure. */
static int run_op(tern_index *idx, enum op op, const plan *p, kstate *m) {
  tern_txn *t = NULL;
  uint32_t n = 9 * p->seg_docs;
  int rc = TERN_OK;
#define STEP(x)                                                                                    \
  do {                                                                                             \
    if (rc == TERN_OK) rc = (x);                                                                   \
  } while (0)
  switch (op) {
  case OP_IMPORT:
    if (idx) STEP(tern_txn_begin(&t, idx, TERN_TXN_BULK));
    for (uint32_t i = 0; i < 60; i++) STEP(put(t, p, m, n + 30 + i, 1));
    for (uint32_t i = 0; i < 30; i++) STEP(put(t, p, m, 2 * p->seg_docs + i, 3));
    break;
  case OP_DELETES: /* two thirds of segment 3: a merge follows the commit */
    if (idx) STEP(tern_txn_begin(&t, idx, 0));
    for (uint32_t i = 0; i < 2 * p->seg_docs / 3 + 1; i++) STEP(del(t, m, 3 * p->seg_docs + i));
    for (uint32_t i = 0; i < 5; i++) STEP(del(t, m, n + i));
    for (uint32_t i = 0; i < 5; i++) STEP(put(t, p, m, i, 4));
    break;
  case OP_FLUSH: /* the buffer becomes a tenth segment: a merge follows */
    if (idx) STEP(tern_flush(idx));
    return rc;
  case OP_MERGE:
    if (idx) STEP(tern_txn_begin(&t, idx, 0));
    for (uint32_t i = 0; i < 10; i++) STEP(put(t, p, m, n + 100 + i, 1));
    for (uint32_t i = 0; i < 3; i++) STEP(put(t, p, m, 5 * p->seg_docs + i, 5));
    if (t) {
      STEP(tern_commit(t));
      t = NULL;
    } else if (idx && rc != TERN_OK) {
      return rc;
    }
    if (idx) STEP(tern_flush(idx));
    return rc;
  case OP_COMPACT:
    if (idx) STEP(tern_compact(idx));
    return rc;
  case OP_INGEST: /* the model: what ingest_ids put, at version 6 */
    for (uint32_t i = 0; i < NINGEST; i++) STEP(put(NULL, p, m, ingest_id(p, i), 6));
    if (idx) STEP(tern_ingest(idx, &g_ingest, 1, 0));
    return rc;
  case OP_RANGE: /* ids whose keys sort in the middle third, segments and buffer */
    if (idx) STEP(tern_txn_begin(&t, idx, 0));
    if (t) STEP(tern_delete_range(t, &(tern_slice){g_range_from, g_range_flen},
                                  &(tern_slice){g_range_to, g_range_tlen}));
    for (uint32_t id = 0; m && id < NK; id++) {
      uint8_t key[ET_KEY_MAX];
      size_t kl = et_key(id, SALT, key);
      if (in_range(key, kl)) m->ver[id] = 0;
    }
    break;
  default:
    break;
  }
  if (t) {
    if (rc == TERN_OK)
      rc = tern_commit(t);
    else
      tern_abort(t);
  }
  return rc;
#undef STEP
}

/* Whether every key of the index reads its value in m. */
static int holds(tern_index *idx, const plan *p, const kstate *m) {
  tern_snapshot *s;
  assert_int_equal(tern_snapshot_open(&s, idx), TERN_OK);
  uint8_t key[ET_KEY_MAX], want[512], got[512];
  int same = 1;
  for (uint32_t id = 0; same && id < NK; id++) {
    size_t kl = et_key(id, SALT, key), vl = 0;
    int rc = tern_get(s, key, kl, got, sizeof got, &vl);
    if (rc != TERN_OK && rc != TERN_NOTFOUND) {
      fprintf(stderr, "get %u: %d %s\n", id, rc, tern_errmsg());
      fail();
    }
    if (!m->ver[id]) {
      same = rc == TERN_NOTFOUND;
    } else {
      size_t wl = value_of(p, id, m->ver[id], want);
      same = rc == TERN_OK && vl == wl && memcmp(got, want, wl) == 0;
    }
  }
  assert_int_equal(tern_snapshot_close(s), TERN_OK);
  return same;
}

static void copy_file(const char *from, const char *to) {
  size_t len;
  uint8_t *b = tu_read_file(from, &len);
  tu_write_file(to, b, len);
  free(b);
}

static void copy_dir(const char *from, const char *to) {
  tu_rmtree(to);
  assert_int_equal(mkdir(to, 0755), 0);
  DIR *d = opendir(from);
  assert_non_null(d);
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || strstr(e->d_name, "-lock") || !strcmp(e->d_name, "write.lock"))
      continue;
    char *a = tu_path(from, e->d_name), *b = tu_path(to, e->d_name);
    copy_file(a, b);
    free(a);
    free(b);
  }
  closedir(d);
}

/* Every segment file in dir belongs to a segment the index lists. */
static void no_leftovers(tern_index *idx, const char *dir, enum op op, const char *what,
                         uint64_t n) {
  tern_stats *st;
  assert_int_equal(tern_stats_get(&st, idx), TERN_OK);
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  while ((e = readdir(d))) {
    char name[64];
    if (!tern_seg_file_segment(e->d_name, name, sizeof name)) continue;
    int listed = 0;
    for (size_t i = 0; i < st->nsegments; i++) {
      char want[TERN_SEGNAME_MAX];
      tern_segment_name(want, st->segments[i].id);
      listed |= !strcmp(want, name);
    }
    if (!listed)
      fprintf(stderr, "%s, %s #%llu: leftover %s\n", op_name[op], what, (unsigned long long)n,
              e->d_name);
    assert_true(listed);
  }
  closedir(d);
  tern_stats_free(st);
}

/* The segment OP_INGEST ingests: a bulk commit of a scratch index under
 * root, linked into root/ingest. */
static char *build_ingest(const char *root, const plan *p) {
  char *scratch = tu_path(root, "scratch"), *seg = tu_path(root, "ingest");
  tern_index *idx = open_index(scratch, TERN_CREATE);
  tern_txn *t;
  assert_int_equal(tern_txn_begin(&t, idx, TERN_TXN_BULK), TERN_OK);
  for (uint32_t i = 0; i < NINGEST; i++) assert_int_equal(put(t, p, NULL, ingest_id(p, i), 6), TERN_OK);
  assert_int_equal(tern_commit(t), TERN_OK);
  tern_stats *st;
  assert_int_equal(tern_stats_get(&st, idx), TERN_OK);
  assert_int_equal(st->nsegments, 1);
  char name[TERN_SEGNAME_MAX];
  tern_segment_name(name, st->segments[0].id);
  tern_stats_free(st);
  assert_int_equal(mkdir(seg, 0755), 0);
  assert_int_equal(tern_seg_link(scratch, name, seg, name), TERN_OK);
  assert_int_equal(tern_close(idx), TERN_OK);
  free(scratch);
  return seg;
}

typedef struct fault_spec {
  int crash, torn; /* crash at sync n; else fail call n of kind with err */
  ff_kind kind;
  int err;
  uint64_t n;
} fault_spec;

/* One round; returns whether the fault fired (else the loop is done). */
static int round_of(const char *base, const char *work, enum op op, const plan *p,
                    const kstate *before, const kstate *after, const fault_spec *f, tally *t) {
  copy_dir(base, work);
  tern_index *idx = open_index(work, 0);
  ff_reset();
  if (f->crash)
    ff_crash_at_sync(f->n, f->torn, tu_seed() ^ f->n);
  else
    ff_fail_nth(f->kind, f->n, f->err);
  int rc = run_op(idx, op, p, NULL);
  char msg[256];
  snprintf(msg, sizeof msg, "%s", tern_errmsg());
  int crc = tern_close(idx); /* waits for the worker's flush or merge */
  int fired = ff_fired();
  if (crc != TERN_OK) fprintf(stderr, "close after the fault: %d %s\n", crc, tern_errmsg());
  assert_int_equal(crc, TERN_OK);
  if (f->crash)
    ff_power_loss();
  else
    ff_reset();
  if (!fired) {
    if (rc != TERN_OK) fprintf(stderr, "%s without a fault: %d %s\n", op_name[op], rc, msg);
    assert_int_equal(rc, TERN_OK);
  }
  t->rounds++;
  const char *what = f->crash ? (f->torn ? "torn crash" : "crash") : ff_kind_name[f->kind];
  /* TERN_EPARTIAL: the commit is durable, the work after it (flush,
   * merge) met the fault; the data must then read as after. */
  int committed = rc == TERN_OK || rc == TERN_EPARTIAL;
  if (rc == TERN_EPARTIAL) {
    t->partial++;
  } else if (rc != TERN_OK) {
    int want = f->crash ? -EIO : -f->err;
    if (rc != want)
      fprintf(stderr, "%s, %s #%llu: status %d, not %d: %s\n", op_name[op], what,
              (unsigned long long)f->n, rc, want, msg);
    assert_int_equal(rc, want);
    t->clean_errors++;
  } else if (fired) {
    t->ok_despite_fault++;
  }
  tern_index *re = open_index(work, 0);
  int vrc = tern_verify(re);
  if (vrc != TERN_OK)
    fprintf(stderr, "%s, %s #%llu (status %d): verify %d %s\n", op_name[op], what,
            (unsigned long long)f->n, rc, vrc, tern_errmsg());
  assert_int_equal(vrc, TERN_OK);
  int is_after = holds(re, p, after), is_before = !is_after && holds(re, p, before);
  if (!is_after && !is_before) {
    fprintf(stderr, "%s, %s #%llu (status %d): neither the state before nor after\n",
            op_name[op], what, (unsigned long long)f->n, rc);
    t->wrong++;
  }
  if (committed && !is_after) {
    fprintf(stderr, "%s, %s #%llu: committed, then lost\n", op_name[op], what,
            (unsigned long long)f->n);
    t->lost++;
  }
  if (op == OP_INGEST || op == OP_RANGE) no_leftovers(re, work, op, what, f->n);
  assert_int_equal(tern_close(re), TERN_OK);
  assert_int_equal(t->wrong + t->lost, 0);
  return fired;
}

static void loop_op(const char *base, const char *work, enum op op, const plan *p,
                    const kstate *before, tally *t) {
  kstate after = *before;
  (void)run_op(NULL, op, p, &after);
  uint64_t start = t->rounds;
  static const int errs[] = {EIO, ENOSPC};
  for (int k = 0; k < FF_NKINDS; k++)
    for (int e = 0; e < 2; e++) {
      if (k == FF_SYNC || k == FF_CAT_SYNC) {
        if (errs[e] == ENOSPC) continue; /* fsync's ENOSPC: as EIO, once is enough */
      }
      fault_spec f = {0, 0, (ff_kind)k, errs[e], 1};
      while (f.n < 5000 && round_of(base, work, op, p, before, &after, &f, t)) f.n++;
      if (f.n - 1 > t->calls[k]) t->calls[k] = f.n - 1;
    }
  for (int torn = 0; torn < 2; torn++) {
    fault_spec f = {1, torn, FF_SYNC, EIO, 1};
    while (f.n < 5000 && round_of(base, work, op, p, before, &after, &f, t)) f.n++;
    if (f.n - 1 > t->calls[FF_NKINDS]) t->calls[FF_NKINDS] = f.n - 1;
  }
  print_message("%-20s %llu rounds\n", op_name[op], (unsigned long long)(t->rounds - start));
}

static void test_fault_loops(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0xfa);
  tally t = {0};
  ff_install();
  ff_strict(1); /* a directory entry survives a power cut only once its directory was fsynced */
  for (unsigned s = 0; s < tu_scale(); s++) {
    plan p = {s == 0 ? 30 : 20 + (uint32_t)tu_below(&r, 21), s == 0 ? 5 : 2 + (uint32_t)tu_below(&r, 6)};
    char *root = tu_tmpdir("faults");
    char *base = tu_path(root, "base"), *work = tu_path(root, "work");
    kstate before;
    build_base(base, &p, &before);
    char *ingest = build_ingest(root, &p);
    g_ingest = ingest;
    g_range_flen = et_key(2 * p.seg_docs, SALT, g_range_from); /* two keys: in_range decides */
    g_range_tlen = et_key(7 * p.seg_docs + 3, SALT, g_range_to);
    for (int op = 0; op < NOPS; op++) {
      loop_op(base, work, (enum op)op, &p, &before, &t);
    }
    tu_rmtree(root);
    free(ingest);
    free(base);
    free(work);
    free(root);
  }
  ff_strict(0);
  ff_uninstall();
  print_message("fault rounds %llu: clean errors %llu, committed with post-commit work "
                "failed (TERN_EPARTIAL) %llu, success despite the fault %llu, "
                "wrong answers %llu, committed data lost %llu, signals 0, hangs 0\n",
                (unsigned long long)t.rounds, (unsigned long long)t.clean_errors,
                (unsigned long long)t.partial,
                (unsigned long long)t.ok_despite_fault, (unsigned long long)t.wrong,
                (unsigned long long)t.lost);
  for (int k = 0; k < FF_NKINDS; k++)
    print_message("  %-14s up to %llu calls in one operation\n", ff_kind_name[k],
                  (unsigned long long)t.calls[k]);
  print_message("  %-14s up to %llu in one operation\n", "sync points",
                (unsigned long long)t.calls[FF_NKINDS]);
  assert_int_equal(t.wrong, 0);
  assert_int_equal(t.lost, 0);
  /* the layers saw the calls (the interposers reach LMDB's) */
  static const ff_kind seen[] = {FF_OPEN, FF_WRITE, FF_SYNC, FF_RENAME, FF_UNLINK, FF_MMAP,
                                 FF_CAT_WRITE, FF_CAT_SYNC};
  for (size_t i = 0; i < sizeof seen / sizeof seen[0]; i++) assert_true(t.calls[seen[i]] > 0);
}

int main(void) {
  et_prefer_tmpfs();
  tu_seed();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fault_loops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
