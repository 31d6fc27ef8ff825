/* SPDX-License-Identifier: MIT */
/*
 * test_cursor_fast.c — the cursor's single-segment fast path (cursor.c
 * next_fast) and its lazily taken values, against a sorted reference.
 *
 * Random walks (first, last, next, prev, seek, seek_for_prev, with and
 * without bounds) over a compacted index — one segment, an empty buffer:
 * forward steps take the fast path, and runs of steps back its backward
 * twin (c->back, the codec's keyed windows) — then over a snapshot a later commit
 * gave a buffer source and deletions (the merge path), while a cursor
 * opened on the older snapshot goes on showing exactly that snapshot,
 * then compacted again — for keys of every bench shape (base36, UUIDs,
 * decimal, paths, package names, e-mails, time-ordered) as well as the
 * mixed keys.  Probes are stored keys, absent ones, and keys before the
 * first and after the last.  Each position is compared with the reference's:
 * key, value (inline ones of every length, and some in the values file),
 * status, and an empty tern_errmsg() after every call that succeeds.
 * Seeks followed by runs of next of lengths held and changed check the
 * first batch each seek sizes from the steps after the one before.
 */
#include "tests/engine/enginetest.h"

#include <stdio.h>

#define NKEYS 5000u
#define KMAX 48u

typedef struct ref {
  uint8_t k[KMAX];
  uint8_t klen;
  int dead;
  uint32_t vlen, vseed;
} ref;

static int ref_cmp(const void *a, const void *b) {
  const ref *x = a, *y = b;
  size_t n = x->klen < y->klen ? x->klen : y->klen;
  int c = memcmp(x->k, y->k, n);
  return c ? c : (x->klen > y->klen) - (x->klen < y->klen);
}

static int key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  int c = n ? memcmp(a, b, n) : 0;
  return c ? c : (alen > blen) - (alen < blen);
}

/* The key shapes (tern-bench's): SHAPE_MIXED, keys sharing prefixes (a
 * small alphabet) with some bytes outside it, of 1 to 24 bytes; then
 * random base36, UUIDs, decimal numbers, paths, package names, e-mails,
 * time-ordered keys.  Each gives blocks of its own alphabet size and
 * characters-per-code, fixed or varying lengths. */
enum { SHAPE_MIXED, SHAPE_BASE36, SHAPE_UUID, SHAPE_DECIMAL, SHAPE_PATHS, SHAPE_PACKAGES,
       SHAPE_EMAILS, SHAPE_TIME, NSHAPES };
static const char *const shape_names[NSHAPES] = {"mixed",  "base36",   "uuid",   "decimal",
                                                 "paths",  "packages", "emails", "time"};
static int g_shape; /* the shape random_key makes */
/* >= 0: every value has this length, as a primary key's values of one
 * size: its blocks' tails are decoded with their terms, and most steps
 * are keyed (segment.h, tern_seg_next_keyed) */
static int g_vlen = -1;

static const char *const words[] = {"usr", "lib", "share", "data", "alpha", "beta", "core",
                                    "net", "util", "io", "x", "mail", "web", "app"};
#define NWORDS (sizeof words / sizeof words[0])

/* Appends s to e's key while it fits. */
static void put_str(ref *e, const char *s) {
  while (*s && e->klen < KMAX) e->k[e->klen++] = (uint8_t)*s++;
}

static void put_chars(tu_rng *r, ref *e, const char *alpha, uint32_t n) {
  size_t k = strlen(alpha);
  for (uint32_t j = 0; j < n && e->klen < KMAX; j++) e->k[e->klen++] = (uint8_t)alpha[tu_below(r, k)];
}

static void shaped_key(tu_rng *r, ref *e) {
  char buf[64];
  e->klen = 0;
  switch (g_shape) {
  case SHAPE_BASE36: put_chars(r, e, "0123456789abcdefghijklmnopqrstuvwxyz", 16); break;
  case SHAPE_UUID:
    for (int g = 0; g < 5; g++) {
      if (g) put_str(e, "-");
      put_chars(r, e, "0123456789abcdef", g == 0 ? 8 : g == 4 ? 12 : 4);
    }
    break;
  case SHAPE_DECIMAL:
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)tu_below(r, 1000000000000ull));
    put_str(e, buf);
    break;
  case SHAPE_PATHS:
    for (uint64_t d = 1 + tu_below(r, 4); d > 0; d--) {
      put_str(e, "/");
      put_str(e, words[tu_below(r, NWORDS)]);
    }
    snprintf(buf, sizeof buf, "/f%u.%s", (unsigned)tu_below(r, 5000), tu_below(r, 2) ? "so" : "txt");
    put_str(e, buf);
    break;
  case SHAPE_PACKAGES:
    put_str(e, tu_below(r, 3) ? "org." : "com.");
    put_str(e, words[tu_below(r, NWORDS)]);
    put_str(e, ".");
    put_chars(r, e, "abcdefghijklmnopqrstuvwxyz-", 3 + (uint32_t)tu_below(r, 10));
    break;
  case SHAPE_EMAILS:
    put_chars(r, e, "abcdefghijklmnopqrstuvwxyz", 3 + (uint32_t)tu_below(r, 8));
    put_chars(r, e, "._0123456789", (uint32_t)tu_below(r, 3));
    put_str(e, "@");
    put_str(e, words[tu_below(r, NWORDS)]);
    put_str(e, tu_below(r, 2) ? ".com" : ".org");
    break;
  default: /* SHAPE_TIME: a timestamp rising slowly, then a random tail */
    snprintf(buf, sizeof buf, "2026-12-%02u %010llu-", 1 + (unsigned)tu_below(r, 3),
             (unsigned long long)tu_below(r, 100000));
    put_str(e, buf);
    put_chars(r, e, "0123456789abcdef", 6);
    break;
  }
}

/* Keys of the shape g_shape; values mostly inline, of every small length,
 * some longer than the inline limit (128). */
static void random_key(tu_rng *r, ref *e) {
  if (g_shape == SHAPE_MIXED) {
    e->klen = (uint8_t)(1 + tu_below(r, 24));
    for (uint32_t j = 0; j < e->klen; j++)
      e->k[j] = tu_below(r, 20) == 0 ? (uint8_t)tu_below(r, 256) : (uint8_t)('a' + tu_below(r, 6));
  } else {
    shaped_key(r, e);
  }
  e->vlen = tu_below(r, 10) == 0 ? 129 + (uint32_t)tu_below(r, 300) : (uint32_t)tu_below(r, 40);
  if (g_vlen >= 0) e->vlen = (uint32_t)g_vlen;
  e->vseed = (uint32_t)tu_next(r);
  e->dead = 0;
}

static void value_of(const ref *e, uint8_t *out) {
  for (uint32_t j = 0; j < e->vlen; j++) out[j] = (uint8_t)(e->vseed >> (j % 4 * 8)) ^ (uint8_t)j;
}

/* n random distinct keys, sorted. */
static size_t make_keys(tu_rng *r, ref *keys, size_t n) {
  for (size_t i = 0; i < n; i++) random_key(r, &keys[i]);
  qsort(keys, n, sizeof *keys, ref_cmp);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (m == 0 || ref_cmp(&keys[m - 1], &keys[i]) != 0) keys[m++] = keys[i];
  return m;
}

static void put_all(tern_txn *t, const ref *keys, size_t n) {
  uint8_t v[512];
  for (size_t i = 0; i < n; i++) {
    value_of(&keys[i], v);
    ET_OK(tern_put(t, keys[i].k, keys[i].klen, v, keys[i].vlen, NULL, 0));
  }
}

/* The live reference keys inside [lo, hi) (hi NULL: open above). */
typedef struct view {
  const ref **e;
  size_t n;
} view;

static view view_of(const ref *keys, size_t n, const tern_bounds *b) {
  view v = {malloc((n + 1) * sizeof *v.e), 0};
  assert_non_null(v.e);
  for (size_t i = 0; i < n; i++) {
    if (keys[i].dead) continue;
    if (b && b->from.data && key_cmp(keys[i].k, keys[i].klen, b->from.data, b->from.len) < 0)
      continue;
    if (b && b->to.data && key_cmp(keys[i].k, keys[i].klen, b->to.data, b->to.len) >= 0) continue;
    v.e[v.n++] = &keys[i];
  }
  return v;
}

/* The first position of v whose key is >= key (> key when after). */
static long view_bound(const view *v, const uint8_t *key, size_t klen, int after) {
  size_t lo = 0, hi = v->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = key_cmp(v->e[mid]->k, v->e[mid]->klen, key, klen);
    if (c < 0 || (after && c == 0))
      lo = mid + 1;
    else
      hi = mid;
  }
  return (long)lo;
}

/* The cursor's answer rc against the expected position pos (-1: none). */
static void check_at(tern_cursor *c, int rc, const view *v, long pos) {
  if (pos < 0 || pos >= (long)v->n) {
    assert_int_equal(rc, TERN_NOTFOUND);
    assert_string_equal(tern_errmsg(), "");
    tern_slice k;
    assert_int_equal(tern_cursor_key(c, &k), TERN_EINVAL);
    return;
  }
  ET_OK(rc);
  assert_string_equal(tern_errmsg(), "");
  const ref *e = v->e[pos];
  tern_slice k, val;
  ET_OK(tern_cursor_key(c, &k));
  assert_string_equal(tern_errmsg(), "");
  assert_int_equal(k.len, e->klen);
  assert_memory_equal(k.data, e->k, k.len);
  if (pos % 3 == 0) return; /* values taken on some keys only: lazily */
  ET_OK(tern_cursor_value(c, &val));
  uint8_t want[512];
  value_of(e, want);
  assert_int_equal(val.len, e->vlen);
  if (val.len) assert_memory_equal(val.data, want, val.len);
}

/* A random probe key: a stored one, a random one (mostly absent), or one
 * before the first or after the last key. */
static void probe(tu_rng *r, const ref *keys, size_t n, ref *p) {
  uint64_t what = tu_below(r, 20);
  if (what < 9) {
    *p = keys[tu_below(r, n)];
  } else if (what < 18) {
    random_key(r, p);
  } else {
    p->klen = (uint8_t)(1 + tu_below(r, 3));
    memset(p->k, what == 18 ? 0x00 : 0xff, p->klen);
  }
}

/* steps random cursor moves under bounds b, each checked. */
static void walk(tern_snapshot *s, const ref *keys, size_t n, const tern_bounds *b, tu_rng *r,
                 unsigned steps) {
  view v = view_of(keys, n, b);
  tern_cursor *c;
  ET_OK(tern_cursor_open(&c, s, b));
  long pos = -1;
  for (unsigned i = 0; i < steps; i++) {
    uint64_t op = tu_below(r, 100);
    int rc;
    ref p;
    if (op < 45) { /* runs of next: the fast path */
      unsigned run = 1 + (unsigned)tu_below(r, 30);
      for (unsigned j = 0; j < run; j++) {
        rc = tern_cursor_next(c);
        pos = pos < 0 ? 0 : pos + 1;
        if (pos >= (long)v.n) pos = -1;
        check_at(c, rc, &v, pos);
      }
      continue;
    } else if (op < 60) { /* runs of prev, past a keyed window now and then: back's */
      unsigned run = 1 + (unsigned)tu_below(r, tu_below(r, 4) ? 30 : 150);
      for (unsigned j = 0; j < run; j++) {
        rc = tern_cursor_prev(c);
        pos = pos < 0 ? (long)v.n - 1 : pos - 1;
        check_at(c, rc, &v, pos);
      }
      continue;
    } else if (op < 75) {
      rc = tern_cursor_prev(c);
      pos = pos < 0 ? (long)v.n - 1 : pos - 1;
    } else if (op < 88) {
      probe(r, keys, n, &p);
      rc = tern_cursor_seek(c, p.k, p.klen);
      pos = view_bound(&v, p.k, p.klen, 0);
    } else if (op < 94) {
      probe(r, keys, n, &p);
      rc = tern_cursor_seek_for_prev(c, p.k, p.klen);
      pos = view_bound(&v, p.k, p.klen, 1) - 1;
    } else if (op < 97) {
      rc = tern_cursor_first(c);
      pos = 0;
    } else {
      rc = tern_cursor_last(c);
      pos = (long)v.n - 1;
    }
    if (pos >= (long)v.n) pos = -1;
    check_at(c, rc, &v, pos);
  }
  tern_cursor_close(c);
  free(v.e);
}

/* Seeks each followed by a run of next, the run's length kept for a few
 * seeks and then changed (0, 1, a few, about a batch, past the most a
 * batch holds): the steps each seek counts from the one before size the
 * codec's first batch after it (tern_seg_cursor_expect), so runs end
 * inside, at and past a batch, across blocks and at the last key; every
 * position checked against the reference. */
static void seek_runs(tern_snapshot *s, const ref *keys, size_t n, const tern_bounds *b,
                      tu_rng *r, unsigned seeks) {
  static const unsigned lens[] = {0, 1, 3, 4, 5, 9, 10, 11, 16, 33, 63, 64, 65, 100};
  view v = view_of(keys, n, b);
  tern_cursor *c;
  ET_OK(tern_cursor_open(&c, s, b));
  unsigned run = 10;
  for (unsigned i = 0; i < seeks; i++) {
    if (tu_below(r, 4) == 0) run = lens[tu_below(r, sizeof lens / sizeof lens[0])];
    ref p;
    probe(r, keys, n, &p);
    if (tu_below(r, 8) == 0 && v.n) p = *v.e[v.n - 1 - tu_below(r, v.n < 70 ? v.n : 70)]; /* the end */
    long pos = view_bound(&v, p.k, p.klen, 0);
    if (pos >= (long)v.n) pos = -1;
    check_at(c, tern_cursor_seek(c, p.k, p.klen), &v, pos);
    for (unsigned j = 0; j < run && pos >= 0; j++) {
      pos = pos + 1 < (long)v.n ? pos + 1 : -1;
      check_at(c, tern_cursor_next(c), &v, pos);
    }
  }
  tern_cursor_close(c);
  free(v.e);
}

/* A whole scan equals the view, forwards and backwards. */
static void scan_all(tern_snapshot *s, const ref *keys, size_t n) {
  view v = view_of(keys, n, NULL);
  tern_cursor *c;
  ET_OK(tern_cursor_open(&c, s, NULL));
  for (long pos = 0;; pos++) {
    int rc = tern_cursor_next(c);
    check_at(c, rc, &v, pos < (long)v.n ? pos : -1);
    if (rc != TERN_OK) break;
  }
  for (long pos = (long)v.n - 1;; pos--) {
    int rc = tern_cursor_prev(c);
    check_at(c, rc, &v, pos);
    if (rc != TERN_OK) break;
  }
  tern_cursor_close(c);
  free(v.e);
}

static void walks(tern_snapshot *s, const ref *keys, size_t n, tu_rng *r) {
  scan_all(s, keys, n);
  walk(s, keys, n, NULL, r, 400);
  seek_runs(s, keys, n, NULL, r, 300);
  for (int round = 0; round < 20; round++) {
    ref a, z;
    probe(r, keys, n, &a);
    probe(r, keys, n, &z);
    if (ref_cmp(&a, &z) > 0) {
      ref t = a;
      a = z;
      z = t;
    }
    tern_bounds b = {{a.k, a.klen}, {z.k, z.klen}, {NULL, 0}};
    if (round % 4 == 0) b.to = (tern_slice){NULL, 0};
    walk(s, keys, n, &b, r, 60);
    seek_runs(s, keys, n, &b, r, 20);
  }
}

/* The whole case for keys of shape g_shape. */
static void run_shape(uint64_t salt) {
  tu_rng r;
  tu_rng_init(&r, tu_seed() ^ salt);
  print_message("[shape] %s\n", shape_names[g_shape]);
  char *dir = tu_tmpdir("cursor-fast");
  static ref keys[2 * NKEYS], old[2 * NKEYS];
  size_t n = make_keys(&r, keys, NKEYS);
  tern_index *idx;
  ET_OK(tern_open(&idx, dir, TERN_CREATE, NULL));
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, idx, TERN_TXN_BULK));
  put_all(t, keys, n);
  ET_OK(tern_commit(t));
  ET_OK(tern_compact(idx));

  /* One segment, an empty buffer. */
  tern_snapshot *s1;
  ET_OK(tern_snapshot_open(&s1, idx));
  walks(s1, keys, n, &r);

  /* A cursor of s1 stands mid-scan while a commit deletes keys and adds
   * others (they stay in the buffer): it goes on showing s1. */
  tern_cursor *c;
  ET_OK(tern_cursor_open(&c, s1, NULL));
  view v1 = view_of(keys, n, NULL);
  long pos = 0;
  for (; pos < (long)v1.n / 2; pos++) check_at(c, tern_cursor_next(c), &v1, pos);
  memcpy(old, keys, n * sizeof *keys);
  ET_OK(tern_txn_begin(&t, idx, 0));
  for (size_t i = 0; i < n; i++)
    if (tu_below(&r, 7) == 0) {
      ET_OK(tern_delete(t, keys[i].k, keys[i].klen));
      keys[i].dead = 1;
    }
  ref add[200];
  size_t nadd = make_keys(&r, add, 200);
  put_all(t, add, nadd);
  ET_OK(tern_commit(t));
  for (; pos <= (long)v1.n; pos++) {
    int rc = tern_cursor_next(c);
    check_at(c, rc, &v1, pos < (long)v1.n ? pos : -1);
  }
  tern_cursor_close(c);
  free(v1.e);
  walk(s1, old, n, NULL, &r, 200); /* s1 unchanged for new cursors too */

  /* The reference after the commit: replaced values, added keys.  Looked
   * up in the sorted keys of before only: the appended ones are unsorted
   * (a search over them could miss a key and add it twice), and the
   * added keys are distinct among themselves. */
  size_t before = n;
  for (size_t i = 0; i < nadd; i++) {
    ref *hit = bsearch(&add[i], keys, before, sizeof *keys, ref_cmp);
    if (hit)
      *hit = add[i];
    else
      keys[n++] = add[i];
  }
  qsort(keys, n, sizeof *keys, ref_cmp);
  tern_snapshot *s2;
  ET_OK(tern_snapshot_open(&s2, idx));
  walks(s2, keys, n, &r); /* a segment with deletions and a buffer: merged */
  tern_snapshot_close(s2);
  tern_snapshot_close(s1);

  /* Compacted again: one segment, no deletions, the fast path again. */
  ET_OK(tern_compact(idx));
  tern_snapshot *s3;
  ET_OK(tern_snapshot_open(&s3, idx));
  walks(s3, keys, n, &r);
  tern_snapshot_close(s3);
  ET_OK(tern_close(idx));
  tu_rmtree(dir);
  free(dir);
}

static void test_fast_path_against_reference(void **state) {
  (void)state;
  g_shape = SHAPE_MIXED;
  run_shape(0xfa57u);
}

/* Every bench key shape: blocks of every alphabet size and group width,
 * scans decoding their terms in batches across blocks, seeks and steps
 * both ways, with deletions in between. */
static void test_shapes_against_reference(void **state) {
  (void)state;
  for (g_shape = SHAPE_BASE36; g_shape < NSHAPES; g_shape++) run_shape(0x5a9e0u + (uint64_t)g_shape);
}

/* Values of one length (4 bytes as the benchmarks', none, 17 bytes):
 * primary-key blocks, their batches decoded with the tails, so that
 * seeks followed by runs of next take keyed steps and values in place
 * from batches whose first one each seek sizes. */
static void test_fixed_values_against_reference(void **state) {
  (void)state;
  static const int vlens[] = {4, 0, 17};
  static const int shapes[] = {SHAPE_BASE36, SHAPE_UUID, SHAPE_PATHS, SHAPE_EMAILS, SHAPE_MIXED};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    g_shape = shapes[i];
    g_vlen = vlens[i % 3];
    print_message("[values] %d bytes\n", g_vlen);
    run_shape(0xf1eedu + (uint64_t)i);
  }
  g_vlen = -1;
}

int main(void) {
  et_prefer_tmpfs();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fast_path_against_reference),
      cmocka_unit_test(test_shapes_against_reference),
      cmocka_unit_test(test_fixed_values_against_reference),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
