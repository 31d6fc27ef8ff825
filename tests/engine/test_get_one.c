/* SPDX-License-Identifier: MIT */
/*
 * test_get_one.c — the direct path of a get on a snapshot of one segment
 * (engine/read/snapshot.c, find_one) against a reference model and against
 * the state's general search (tern_state_find after the buffer view), key
 * by key: one compacted segment; with deletions still in the buffer, then
 * flushed into its live docs; with puts and replacements in the buffer;
 * with its filter idle (no page checked nor asked for: a get does not hash
 * its key, and an absent key's miss asks for its page), its pages asked
 * for by misses, and checked (tern_verify: an absent key ends at the
 * filter); and after a reopen (a state made from the catalog).  Present,
 * deleted and never-written keys, tern_get and tern_get_batch, and a
 * buffer too small for the value.
 */
#include "tests/engine/enginetest.h"

#include "codec/segment.h"
#include "codec/status.h"
#include "engine/state/index.h"

#include <string.h>

enum { NIDS = 3000, ABSENT = 1000 };

typedef struct world {
  tu_rng r;
  uint64_t salt;
  char *dir;
  tern_index *idx;
  uint32_t ver[NIDS + ABSENT]; /* 0: absent; else the value */
  size_t direct;               /* gets checked on a snapshot taking the direct path */
} world;

static void put_ids(world *w, unsigned flags, uint32_t from, uint32_t to, uint32_t step,
                    uint32_t v) {
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, w->idx, flags));
  for (uint32_t id = from; id < to; id += step) {
    uint8_t key[ET_KEY_MAX];
    size_t klen = et_key(id, w->salt, key);
    w->ver[id] = v + id;
    ET_OK(tern_put(t, key, klen, &w->ver[id], sizeof w->ver[id], NULL, 0));
  }
  ET_OK(tern_commit(t));
}

static void delete_ids(world *w, uint32_t from, uint32_t to, uint32_t step) {
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, w->idx, 0));
  for (uint32_t id = from; id < to; id += step) {
    uint8_t key[ET_KEY_MAX];
    size_t klen = et_key(id, w->salt, key);
    int rc = tern_delete(t, key, klen);
    assert_int_equal(rc, w->ver[id] ? TERN_OK : TERN_NOTFOUND);
    w->ver[id] = 0;
  }
  ET_OK(tern_commit(t));
}

/* The answer of the general path: the buffer view, then tern_state_find. */
static int ref_get(tern_snapshot *s, const uint8_t *key, size_t klen, uint32_t *val) {
  tern_slice v = {0};
  int rc;
  ptrdiff_t i = tern_memseg_find(s->buf, key, klen);
  tern_seg_cursor c;
  tern_seg_cursor_init(&c);
  if (i >= 0) {
    rc = tern_memseg_value(s->buf, (size_t)i, &v);
  } else {
    tern_seg_probe p;
    ET_OK(tern_seg_probe_init(&p, key, klen));
    tern_term_entry e;
    tern_state_hit hit = {NULL, 0};
    rc = tern_state_find(s->st, &p, &c, &e, &hit);
    if (rc == TERN_OK) rc = tern_seg_value(hit.slot->ref->seg, &e, &c, &v);
  }
  if (rc == TERN_OK) {
    assert_int_equal(v.len, sizeof *val);
    memcpy(val, v.data, sizeof *val);
  }
  tern_seg_cursor_release(&c);
  return rc;
}

typedef struct batch_got {
  const world *w;
  const uint32_t *ids;
  size_t calls;
} batch_got;

static int batch_cb(void *payload, size_t i, int status, const void *val, size_t vlen) {
  batch_got *g = payload;
  uint32_t want = g->w->ver[g->ids[i]];
  assert_int_equal(status, want ? TERN_OK : TERN_NOTFOUND);
  if (want) {
    uint32_t got;
    assert_int_equal(vlen, sizeof got);
    memcpy(&got, val, sizeof got);
    assert_int_equal(got, want);
  }
  g->calls++;
  return 0;
}

/* A batch of random ids (AMAC when mapped) against the model. */
static void check_batch(world *w, tern_snapshot *s) {
  enum { NB = 700 };
  static uint32_t ids[NB];
  static tern_slice keys[NB];
  static uint8_t kbuf[NB][ET_KEY_MAX];
  for (size_t i = 0; i < NB; i++) {
    ids[i] = (uint32_t)tu_below(&w->r, NIDS + ABSENT);
    keys[i] = (tern_slice){kbuf[i], et_key(ids[i], w->salt, kbuf[i])};
  }
  batch_got g = {w, ids, 0};
  ET_OK(tern_get_batch(s, keys, NB, batch_cb, &g));
  assert_int_equal(g.calls, NB);
}

/* Every id (written, deleted, never written) and random keys, through
 * tern_get, the general path and a batch, against the model; the snapshot
 * must take the direct path when it holds one segment. */
/* idle_first: the snapshot's filter must be idle at first, and no longer
 * after the absent keys (2: the batch before the gets). */
static void check(world *w, const char *what, int idle_first) {
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, w->idx));
  size_t nseg = tern_snapshot_nsegments(s);
  int idle = s->one && tern_seg_filter_line_idle(s->one_line);
  printf("%s: %zu segment(s), %zu buffered, direct %s, filter idle %d\n", what, nseg,
         s->buf ? s->buf->n : 0, s->one ? "yes" : "no", idle);
  if (nseg == 1) assert_non_null(s->one);
  /* a fresh segment's filter: idle (no hash) until an absent key's miss
   * asks for a page, as a skipped probe's miss does */
  if (idle_first) assert_true(idle);
  if (idle_first == 2) check_batch(w, s); /* first: the lookups' steps on an idle filter */
  for (uint32_t id = 0; id < NIDS + ABSENT; id++) {
    uint8_t key[ET_KEY_MAX];
    size_t klen = et_key(id, w->salt, key), vlen = 0;
    uint32_t got = 0, ref = 0;
    int rc = tern_get(s, key, klen, &got, sizeof got, &vlen);
    int rrc = ref_get(s, key, klen, &ref);
    assert_int_equal(rc, rrc);
    assert_int_equal(rc, w->ver[id] ? TERN_OK : TERN_NOTFOUND);
    if (rc == TERN_OK) {
      assert_int_equal(vlen, sizeof got);
      assert_int_equal(got, w->ver[id]);
      assert_int_equal(ref, got);
      size_t need = 0;
      assert_int_equal(tern_get(s, key, klen, &got, sizeof got - 1, &need), TERN_ERANGE);
      assert_int_equal(need, sizeof got);
    }
  }
  for (size_t i = 0; i < 2000; i++) { /* keys of other shapes and lengths */
    uint8_t key[64];
    size_t klen = 1 + tu_below(&w->r, sizeof key);
    tu_fill(&w->r, key, klen);
    uint32_t got = 0, ref = 0;
    size_t vlen = 0;
    assert_int_equal(tern_get(s, key, klen, &got, sizeof got, &vlen),
                     ref_get(s, key, klen, &ref));
  }
  if (idle_first != 2) check_batch(w, s);
  if (s->one) w->direct++;
  if (idle_first) assert_false(tern_seg_filter_line_idle(s->one_line));
  ET_OK(tern_snapshot_close(s));
}

static size_t nsegments(world *w) {
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, w->idx));
  size_t n = tern_snapshot_nsegments(s);
  ET_OK(tern_snapshot_close(s));
  return n;
}

static void test_get_one_segment(void **state) {
  (void)state;
  uint64_t seed = tu_seed();
  printf("seed %llu\n", (unsigned long long)seed);
  static world w;
  memset(&w, 0, sizeof w);
  tu_rng_init(&w.r, seed);
  w.salt = tu_next(&w.r);
  et_prefer_tmpfs();
  w.dir = tu_tmpdir("get-one");
  ET_OK(tern_open(&w.idx, w.dir, TERN_CREATE | TERN_FOREGROUND, NULL));

  put_ids(&w, TERN_TXN_BULK, 0, NIDS, 1, 1000);
  ET_OK(tern_compact(w.idx));
  check(&w, "compacted", 0);
  ET_OK(tern_close(w.idx)); /* a fresh process's view: nothing of the filter checked or asked */
  ET_OK(tern_open(&w.idx, w.dir, TERN_FOREGROUND, NULL));
  check(&w, "compacted, reopened", 1);
  delete_ids(&w, 0, NIDS, 7);
  check(&w, "deletions buffered", 0);
  ET_OK(tern_flush(w.idx));
  check(&w, "deletions flushed", 0);
  if (nsegments(&w) != 1) ET_OK(tern_compact(w.idx));
  ET_OK(tern_close(w.idx)); /* the filter idle again, over deletions */
  ET_OK(tern_open(&w.idx, w.dir, TERN_FOREGROUND, NULL));
  check(&w, "deletions flushed, reopened", 2);
  put_ids(&w, 0, 1, NIDS, 5, 50000); /* replacements, some of deleted keys */
  put_ids(&w, 0, NIDS, NIDS + ABSENT / 2, 3, 90000); /* new keys */
  check(&w, "puts buffered", 0);
  ET_OK(tern_close(w.idx));
  ET_OK(tern_open(&w.idx, w.dir, TERN_FOREGROUND, NULL));
  check(&w, "reopened", 0);
  ET_OK(tern_compact(w.idx));
  delete_ids(&w, 2, NIDS, 11);
  ET_OK(tern_flush(w.idx));
  check(&w, "compacted again, deletions flushed", 0);
  ET_OK(tern_verify(w.idx)); /* every filter page checked: absent keys end at the filter */
  check(&w, "filter checked", 0);
  printf("%zu of 9 checks on the direct path\n", w.direct);
  assert_true(w.direct >= 7);
  ET_OK(tern_close(w.idx));
  tu_rmtree(w.dir);
  free(w.dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_get_one_segment),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
