/* SPDX-License-Identifier: MIT */
/*
 * test_model.c — the engine against a reference model.
 *
 * Long random sequences of put / replace / delete / commit / abort /
 * reopen / compact / flush / delete-range / ingest (segments made by a bulk
 * commit of a scratch index, ingested winning or TERN_INGEST_BEHIND) /
 * export (into a builder, ingested into a fresh index and compared with the
 * model's range) / split_keys, with a write buffer of a few KiB so that
 * segments, live-docs generations and merges happen all the time, and
 * bulk transactions mixed in.  After every step the index is compared
 * with the model: get on every key, get_batch on a random batch,
 * postings of every vocabulary term and of random conjunctions (with
 * advance), stats; a snapshot held across steps must keep seeing the
 * model of its time.  TERN_TEST_SCALE multiplies the number of steps.
 */
#include "tests/engine/enginetest.h"

#include "codec/segment.h"
#include "codec/status.h"
#include "engine/state/index.h"

#include <dirent.h>
#include <sys/stat.h>

typedef struct world {
  tu_rng r;
  char *dir;
  tern_index *idx;
  tern_options opts;
  tern_field_option fields[2];
  uint64_t salt;
  et_model committed, pending;
  tern_txn *txn;
  unsigned txn_flags;
  tern_snapshot *held; /* a snapshot kept across steps */
  et_model held_model;
  size_t steps, commits;
  unsigned open_flags; /* TERN_FOREGROUND: flushes and merges inside commits */
} world;

static void key_of(const world *w, uint32_t id, uint8_t *buf, size_t *len) {
  *len = et_key(id, w->salt, buf);
}

/* ------------------------------------------------------------ checks */

static void check_gets(tern_snapshot *s, const world *w, const et_model *m) {
  uint8_t key[ET_KEY_MAX];
  size_t cap = 16 << 10;
  uint8_t *buf = malloc(cap);
  assert_non_null(buf);
  for (uint32_t id = 0; id < m->n; id++) {
    size_t klen, vlen = 0;
    key_of(w, id, key, &klen);
    int rc = tern_get(s, key, klen, buf, cap, &vlen);
    const et_doc *d = &m->docs[id];
    if (!d->present) {
      if (rc != TERN_NOTFOUND)
        fprintf(stderr, "id %u: expected NOTFOUND, got %d (%s)\n", id, rc, tern_errmsg());
      assert_int_equal(rc, TERN_NOTFOUND);
      continue;
    }
    if (rc != TERN_OK) fprintf(stderr, "id %u: get = %d %s\n", id, rc, tern_errmsg());
    assert_int_equal(rc, TERN_OK);
    assert_int_equal(vlen, d->vlen);
    if (vlen) assert_memory_equal(buf, d->val, vlen);
    if (d->vlen > 0) { /* too small a buffer: ERANGE with the length */
      size_t need = 0;
      assert_int_equal(tern_get(s, key, klen, buf, d->vlen - 1, &need), TERN_ERANGE);
      assert_int_equal(need, d->vlen);
    }
  }
  free(buf);
}

typedef struct batch_check {
  const et_model *m;
  const uint32_t *ids;
  size_t next;
} batch_check;

static int batch_cb(void *payload, size_t i, int status, const void *val, size_t vlen) {
  batch_check *b = payload;
  assert_int_equal(i, b->next);
  b->next++;
  const et_doc *d = &b->m->docs[b->ids[i]];
  if (!d->present) {
    assert_int_equal(status, TERN_NOTFOUND);
    return 0;
  }
  assert_int_equal(status, TERN_OK);
  assert_int_equal(vlen, d->vlen);
  if (vlen) assert_memory_equal(val, d->val, vlen);
  return 0;
}

static void check_batch(tern_snapshot *s, world *w, const et_model *m) {
  size_t n = 1 + (size_t)tu_below(&w->r, 2 * m->n);
  uint32_t *ids = malloc(n * sizeof *ids);
  tern_slice *keys = malloc(n * sizeof *keys);
  uint8_t *kb = malloc(n * ET_KEY_MAX);
  assert_true(ids && keys && kb);
  for (size_t i = 0; i < n; i++) {
    ids[i] = (uint32_t)tu_below(&w->r, m->n);
    size_t len;
    key_of(w, ids[i], kb + i * ET_KEY_MAX, &len);
    keys[i] = (tern_slice){kb + i * ET_KEY_MAX, len};
  }
  batch_check b = {m, ids, 0};
  ET_OK(tern_get_batch(s, keys, n, batch_cb, &b));
  assert_int_equal(b.next, n);
  free(ids);
  free(keys);
  free(kb);
}

/* Reads a postings iterator to its end: doc ids ascending, every doc
 * expected, each once, values right; returns the ids it produced. */
static size_t drain_postings(tern_postings *p, const et_model *m, const uint8_t *expected,
                             uint64_t *docs_out) {
  uint8_t *seen = calloc(m->n, 1);
  assert_non_null(seen);
  size_t n = 0;
  uint64_t doc, prev = 0;
  for (;;) {
    ET_OK(tern_postings_next(p, &doc));
    if (doc == TERN_NO_MORE_DOCS) break;
    if (n) assert_true(doc > prev);
    prev = doc;
    tern_slice k, v;
    ET_OK(tern_postings_doc(p, &k, &v));
    uint32_t id = et_key_id(k.data, k.len);
    assert_true(id < m->n);
    assert_true(expected[id]);
    assert_false(seen[id]);
    seen[id] = 1;
    assert_int_equal(v.len, m->docs[id].vlen);
    if (v.len) assert_memory_equal(v.data, m->docs[id].val, v.len);
    if (docs_out) docs_out[n] = doc;
    n++;
  }
  ET_OK(tern_postings_next(p, &doc)); /* stays exhausted */
  assert_true(doc == TERN_NO_MORE_DOCS);
  free(seen);
  return n;
}

static size_t expected_set(const et_model *m, const et_term *t, size_t nt, uint8_t *out) {
  size_t c = 0;
  for (size_t i = 0; i < m->n; i++) {
    int ok = m->docs[i].present;
    for (size_t j = 0; ok && j < nt; j++)
      ok = et_doc_has(&m->docs[i], &t[j]);
    out[i] = (uint8_t)ok;
    c += ok;
  }
  return c;
}

/* Advance to random targets matches the first listed doc >= target. */
static void check_advance(world *w, tern_snapshot *s, const tern_term *tt, size_t nt,
                          const uint64_t *docs, size_t n) {
  tern_postings *p;
  ET_OK(tern_postings_open(&p, s, tt, nt));
  size_t pos = 0; /* index of the first doc not yet passed */
  int started = 0;
  uint64_t cur = 0;
  for (int step = 0; step < 8; step++) {
    uint64_t target;
    uint64_t pick = tu_below(&w->r, 4);
    if (n == 0 || pick == 0)
      target = tu_next(&w->r) >> (tu_below(&w->r, 64));
    else {
      size_t j = (size_t)tu_below(&w->r, n);
      target = docs[j] + (pick == 1 ? 1 : 0);
    }
    uint64_t exp;
    if (started && cur != TERN_NO_MORE_DOCS && cur >= target) {
      exp = cur;
    } else if (started && cur == TERN_NO_MORE_DOCS) {
      exp = TERN_NO_MORE_DOCS;
    } else {
      while (pos < n && docs[pos] < target)
        pos++;
      exp = pos < n ? docs[pos] : TERN_NO_MORE_DOCS;
      if (pos < n) pos++;
    }
    uint64_t got;
    ET_OK(tern_postings_advance(p, target, &got));
    if (got != exp)
      fprintf(stderr, "advance(%llx): got %llx want %llx\n", (unsigned long long)target,
              (unsigned long long)got, (unsigned long long)exp);
    assert_true(got == exp);
    started = 1;
    cur = got;
    if (exp != TERN_NO_MORE_DOCS) {
      tern_slice k, v;
      ET_OK(tern_postings_doc(p, &k, &v));
    }
  }
  tern_postings_close(p);
}

/* tern_postings_each_by_key: the same documents, in key byte order, with
 * their values. */
typedef struct by_key {
  const et_model *m;
  const uint8_t *expected;
  uint8_t prev[ET_KEY_MAX];
  size_t prev_len, n;
} by_key;

static int by_key_cb(void *payload, tern_slice key, tern_slice val) {
  by_key *b = payload;
  uint32_t id = et_key_id(key.data, key.len);
  assert_true(id < b->m->n && b->expected[id]);
  if (b->n) {
    size_t n = key.len < b->prev_len ? key.len : b->prev_len;
    int c = memcmp(b->prev, key.data, n);
    assert_true(c < 0 || (c == 0 && b->prev_len < key.len));
  }
  memcpy(b->prev, key.data, key.len);
  b->prev_len = key.len;
  assert_int_equal(val.len, b->m->docs[id].vlen);
  if (val.len) assert_memory_equal(val.data, b->m->docs[id].val, val.len);
  b->n++;
  return 0;
}

static void check_by_key(tern_snapshot *s, const et_model *m, const uint8_t *exp, size_t want,
                         const tern_term *tt, size_t nt) {
  tern_postings *p;
  ET_OK(tern_postings_open(&p, s, tt, nt));
  by_key b = {m, exp, {0}, 0, 0};
  ET_OK(tern_postings_each_by_key(p, 1, by_key_cb, &b));
  assert_int_equal(b.n, want);
  tern_postings_close(p);
}

static void check_query(world *w, tern_snapshot *s, const et_model *m, const et_term *t,
                        size_t nt) {
  uint8_t *exp = malloc(m->n);
  uint64_t *docs = malloc(m->n * sizeof *docs);
  assert_true(exp && docs);
  size_t want = expected_set(m, t, nt, exp);
  tern_term tt[4];
  for (size_t i = 0; i < nt; i++)
    tt[i] = et_tern_term(&t[i]);
  tern_postings *p;
  ET_OK(tern_postings_open(&p, s, tt, nt));
  assert_true(tern_postings_cost(p) >= want);
  size_t got = drain_postings(p, m, exp, docs);
  assert_int_equal(got, want);
  assert_int_equal(tern_postings_cost(p), 0);
  tern_postings_close(p);
  check_by_key(s, m, exp, want, tt, nt);
  check_advance(w, s, tt, nt, docs, got);
  free(exp);
  free(docs);
}

static void check_postings(world *w, tern_snapshot *s, const et_model *m) {
  for (size_t v = 0; v < ET_VOCAB; v++) {
    et_term t = et_vocab(v);
    check_query(w, s, m, &t, 1);
  }
  for (int q = 0; q < 4; q++) {
    et_term t[3];
    size_t nt = 2 + (size_t)tu_below(&w->r, 2);
    for (size_t i = 0; i < nt; i++)
      t[i] = et_vocab((size_t)tu_below(&w->r, ET_VOCAB));
    check_query(w, s, m, t, nt);
  }
  /* absent term and absent field: empty, cost 0 */
  tern_term none[2] = {{"a", "zz", 2}, {"nope", "t0", 2}};
  for (int i = 0; i < 2; i++) {
    tern_postings *p;
    uint64_t doc;
    ET_OK(tern_postings_open(&p, s, &none[i], 1));
    assert_int_equal(tern_postings_cost(p), 0);
    ET_OK(tern_postings_next(p, &doc));
    assert_true(doc == TERN_NO_MORE_DOCS);
    tern_postings_close(p);
  }
}


/* ------------------------------------------------------------ ordered access */

/* The model's live keys in byte order: the reference of scans. */
typedef struct ref_keys {
  size_t n;
  uint32_t *ids;
  uint8_t (*keys)[ET_KEY_MAX];
  size_t *lens;
} ref_keys;

static int byte_cmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl) {
  size_t n = al < bl ? al : bl;
  int c = n ? memcmp(a, b, n) : 0;
  return c ? c : (al > bl) - (al < bl);
}

static const ref_keys *g_sort_ref;
static int cmp_ref(const void *x, const void *y) {
  const ref_keys *r = g_sort_ref;
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  return byte_cmp(r->keys[a], r->lens[a], r->keys[b], r->lens[b]);
}

static void ref_build(ref_keys *r, const world *w, const et_model *m) {
  r->ids = malloc((m->n + 1) * sizeof *r->ids);
  r->keys = malloc((m->n + 1) * sizeof *r->keys);
  r->lens = malloc((m->n + 1) * sizeof *r->lens);
  assert_true(r->ids && r->keys && r->lens);
  r->n = 0;
  for (uint32_t id = 0; id < m->n; id++) {
    key_of(w, id, r->keys[id], &r->lens[id]);
    if (m->docs[id].present) r->ids[r->n++] = id;
  }
  g_sort_ref = r;
  qsort(r->ids, r->n, sizeof *r->ids, cmp_ref);
}

static void ref_free(ref_keys *r) {
  free(r->ids);
  free(r->keys);
  free(r->lens);
}

/* Rank of the first reference key >= k. */
static size_t ref_lower(const ref_keys *r, const uint8_t *k, size_t len) {
  size_t lo = 0, hi = r->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    uint32_t id = r->ids[mid];
    if (byte_cmp(r->keys[id], r->lens[id], k, len) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int has_prefix(const uint8_t *k, size_t len, const uint8_t *p, size_t plen) {
  return len >= plen && (plen == 0 || !memcmp(k, p, plen));
}

/* A random bound: a reference key, a prefix of one, or random bytes. */
static size_t random_bound(world *w, const ref_keys *r, uint8_t *out) {
  uint64_t p = tu_below(&w->r, 4);
  uint32_t id = (uint32_t)tu_below(&w->r, w->committed.n);
  size_t len = r->lens[id];
  memcpy(out, r->keys[id], len);
  if (p == 0) return len;
  if (p == 1 && len > 1) {
    out[len - 1] ^= 1;
    return len;
  }
  if (p == 2) return 1 + (size_t)tu_below(&w->r, len < 6 ? len : 6);
  size_t n = 1 + (size_t)tu_below(&w->r, 3);
  tu_fill(&w->r, out, n);
  return n;
}

static void expect_key(tern_cursor *c, const world *w, const et_model *m, const ref_keys *r,
                       size_t rank, int with_value) {
  tern_slice k;
  ET_OK(tern_cursor_key(c, &k));
  uint32_t id = r->ids[rank];
  if (byte_cmp(k.data, k.len, r->keys[id], r->lens[id]) != 0)
    fprintf(stderr, "cursor: rank %zu of %zu: key id %u, expected id %u\n", rank, r->n,
            et_key_id(k.data, k.len), id);
  assert_int_equal(k.len, r->lens[id]);
  assert_memory_equal(k.data, r->keys[id], k.len);
  if (with_value) {
    tern_slice v;
    ET_OK(tern_cursor_value(c, &v));
    assert_int_equal(v.len, m->docs[id].vlen);
    if (v.len) assert_memory_equal(v.data, m->docs[id].val, v.len);
  }
  (void)w;
}

/* One random bounded scan, forward or backward, with a limit, against the
 * reference; then a random walk of next/prev from a random seek. */
static void check_one_scan(world *w, tern_snapshot *s, const et_model *m, const ref_keys *r) {
  uint8_t from[ET_KEY_MAX], to[ET_KEY_MAX], pre[ET_KEY_MAX];
  size_t fl = 0, tl = 0, pl = 0;
  tern_bounds b;
  memset(&b, 0, sizeof b);
  uint64_t kind = tu_below(&w->r, 5);
  if (kind == 1 || kind == 2) {
    fl = random_bound(w, r, from);
    b.from = (tern_slice){from, fl};
  }
  if (kind == 2 || kind == 3) {
    tl = random_bound(w, r, to);
    b.to = (tern_slice){to, tl};
  }
  if (kind == 4) {
    pl = random_bound(w, r, pre);
    if (pl > 3) pl = 1 + (size_t)tu_below(&w->r, 3);
    b.prefix = (tern_slice){pre, pl};
  }
  size_t lo = fl ? ref_lower(r, from, fl) : 0, hi = b.to.data ? ref_lower(r, to, tl) : r->n;
  if (pl) {
    lo = ref_lower(r, pre, pl);
    hi = lo;
    while (hi < r->n && has_prefix(r->keys[r->ids[hi]], r->lens[r->ids[hi]], pre, pl))
      hi++;
  }
  if (hi < lo) hi = lo;
  tern_cursor *c;
  ET_OK(tern_cursor_open(&c, s, &b));
  int reverse = (int)tu_below(&w->r, 2);
  size_t limit = tu_below(&w->r, 3) ? SIZE_MAX : (size_t)tu_below(&w->r, 20);
  size_t got = 0;
  int rc = reverse ? tern_cursor_last(c) : tern_cursor_first(c);
  while (rc == TERN_OK && got < limit) {
    assert_true(got < hi - lo);
    expect_key(c, w, m, r, reverse ? hi - 1 - got : lo + got, got % 7 == 0);
    got++;
    rc = reverse ? tern_cursor_prev(c) : tern_cursor_next(c);
  }
  if (rc != TERN_OK && rc != TERN_NOTFOUND) ET_OK(rc);
  assert_int_equal(got, limit < hi - lo ? limit : hi - lo);
  /* a walk: seek (or seek_for_prev), then random steps either way */
  uint8_t k[ET_KEY_MAX];
  size_t kl = random_bound(w, r, k);
  int fwd = (int)tu_below(&w->r, 2);
  size_t at = fwd ? ref_lower(r, k, kl) : 0;
  if (!fwd) { /* last <= k */
    size_t up = ref_lower(r, k, kl);
    if (up < r->n && byte_cmp(r->keys[r->ids[up]], r->lens[r->ids[up]], k, kl) == 0) up++;
    at = up; /* at - 1 is the answer when >= 1 */
  }
  rc = fwd ? tern_cursor_seek(c, k, kl) : tern_cursor_seek_for_prev(c, k, kl);
  ptrdiff_t pos;
  if (fwd) {
    if (at < lo) at = lo;
    pos = at < hi ? (ptrdiff_t)at : -1;
  } else {
    if (at > hi) at = hi;
    pos = at > lo ? (ptrdiff_t)at - 1 : -1;
  }
  if (pos < 0) {
    assert_int_equal(rc, TERN_NOTFOUND);
  } else {
    ET_OK(rc);
    for (int st = 0; st < 12; st++) {
      expect_key(c, w, m, r, (size_t)pos, st == 0);
      int next = (int)tu_below(&w->r, 2);
      rc = next ? tern_cursor_next(c) : tern_cursor_prev(c);
      ptrdiff_t want = pos + (next ? 1 : -1);
      if (want < (ptrdiff_t)lo || want >= (ptrdiff_t)hi) {
        assert_int_equal(rc, TERN_NOTFOUND);
        break;
      }
      ET_OK(rc);
      pos = want;
    }
  }
  tern_cursor_close(c);
}

static void check_scans(world *w, tern_snapshot *s, const et_model *m, int nscans) {
  ref_keys r;
  ref_build(&r, w, m);
  tern_cursor *c; /* the whole of it, both ways */
  ET_OK(tern_cursor_open(&c, s, NULL));
  size_t n = 0;
  int rc;
  while ((rc = tern_cursor_next(c)) == TERN_OK)
    expect_key(c, w, m, &r, n++, 1);
  assert_int_equal(rc, TERN_NOTFOUND);
  assert_int_equal(n, r.n);
  while ((rc = tern_cursor_prev(c)) == TERN_OK)
    expect_key(c, w, m, &r, --n, 0);
  assert_int_equal(rc, TERN_NOTFOUND);
  assert_int_equal(n, 0);
  tern_cursor_close(c);
  for (int i = 0; i < nscans; i++)
    check_one_scan(w, s, m, &r);
  uint64_t live;
  ET_OK(tern_snapshot_count(s, &live));
  assert_int_equal(live, r.n);
  ref_free(&r);
}

/* Every field's terms and live doc counts against the model. */
static void check_terms(world *w, tern_snapshot *s, const et_model *m) {
  for (size_t f = 0; f < ET_FIELDS; f++) {
    /* expected: the vocabulary's terms of f in byte order with their counts */
    et_term voc[ET_VOCAB];
    uint64_t df[ET_VOCAB];
    size_t nv = 0;
    for (size_t v = 0; v < ET_VOCAB; v++) {
      et_term t = et_vocab(v);
      if (t.field != f) continue;
      uint64_t c = 0;
      for (size_t i = 0; i < m->n; i++)
        c += m->docs[i].present && et_doc_has(&m->docs[i], &t);
      if (!c) continue;
      size_t j = nv++;
      while (j > 0 && byte_cmp(voc[j - 1].bytes, voc[j - 1].len, t.bytes, t.len) > 0) {
        voc[j] = voc[j - 1];
        df[j] = df[j - 1];
        j--;
      }
      voc[j] = t;
      df[j] = c;
    }
    tern_terms *te;
    ET_OK(tern_terms_open(&te, s, et_field_names[f]));
    size_t i = 0;
    int rc;
    while ((rc = tern_terms_next(te)) == TERN_OK) {
      assert_true(i < nv);
      tern_slice t;
      uint64_t d;
      ET_OK(tern_terms_term(te, &t));
      ET_OK(tern_terms_docfreq(te, &d));
      assert_int_equal(t.len, voc[i].len);
      assert_memory_equal(t.data, voc[i].bytes, t.len);
      assert_int_equal(d, df[i]);
      if (i == 0) { /* postings from the term: exactly its live docs */
        tern_postings *p;
        ET_OK(tern_terms_postings(te, &p));
        uint64_t doc, n = 0;
        while (tern_postings_next(p, &doc) == TERN_OK && doc != TERN_NO_MORE_DOCS)
          n++;
        assert_int_equal(n, d);
        tern_postings_close(p);
      }
      i++;
    }
    assert_int_equal(rc, TERN_NOTFOUND);
    assert_int_equal(i, nv);
    /* seek_ceil to every vocabulary term of the field and to a random one */
    for (size_t v = 0; v <= ET_VOCAB; v++) {
      et_term t = v < ET_VOCAB ? et_vocab(v) : (et_term){0};
      if (v == ET_VOCAB) {
        t.len = (uint8_t)(1 + tu_below(&w->r, 3));
        tu_fill(&w->r, t.bytes, t.len);
      } else if (t.field != f) {
        continue;
      }
      size_t j = 0;
      while (j < nv && byte_cmp(voc[j].bytes, voc[j].len, t.bytes, t.len) < 0)
        j++;
      int exact = -1;
      rc = tern_terms_seek_ceil(te, t.bytes, t.len, &exact);
      if (j == nv) {
        assert_int_equal(rc, TERN_NOTFOUND);
        continue;
      }
      ET_OK(rc);
      tern_slice got;
      ET_OK(tern_terms_term(te, &got));
      assert_int_equal(got.len, voc[j].len);
      assert_memory_equal(got.data, voc[j].bytes, got.len);
      assert_int_equal(exact, byte_cmp(voc[j].bytes, voc[j].len, t.bytes, t.len) == 0);
    }
    tern_terms_close(te);
  }
}

/* Deleted-doc iterators: ascending, each doc deleted, cost exact, and
 * their total the stats' deleted count. */
static void check_deleted(tern_snapshot *s, uint64_t want_total) {
  uint64_t total = 0;
  for (size_t i = 0; i < tern_snapshot_nsegments(s); i++) {
    tern_deleted *d;
    ET_OK(tern_deleted_open(&d, s, i));
    uint64_t cost = tern_deleted_cost(d), n = 0, doc, prev = 0;
    while (tern_deleted_next(d, &doc) == TERN_OK && doc != TERN_NO_MORE_DOCS) {
      if (n) assert_true(doc > prev);
      prev = doc;
      n++;
    }
    assert_int_equal(n, cost);
    total += n;
    tern_deleted_close(d);
  }
  tern_deleted *d;
  assert_int_equal(tern_deleted_open(&d, s, tern_snapshot_nsegments(s)), TERN_EINVAL);
  /* With background work, stats may see a later merge than s. */
  if (want_total != UINT64_MAX) assert_int_equal(total, want_total);
}

static size_t g_max_segments, g_max_deleted;

static uint64_t check_stats(world *w, const et_model *m) {
  tern_stats *st;
  ET_OK(tern_stats_get(&st, w->idx));
  if (st->nsegments > g_max_segments) g_max_segments = st->nsegments;
  if (st->deleted > g_max_deleted) g_max_deleted = st->deleted;
  uint64_t live = st->buffered;
  for (size_t i = 0; i < st->nsegments; i++) {
    const tern_segment_stats *g = &st->segments[i];
    assert_true(g->deleted <= g->max_doc);
    assert_true(g->terms >= g->max_doc);
    assert_non_null(g->livedocs_form);
    if (i) assert_true(g->id > st->segments[i - 1].id);
    live += g->max_doc - g->deleted;
  }
  assert_int_equal(st->docs, live);
  assert_int_equal(st->docs, et_model_count(m));
  uint64_t deleted = st->deleted;
  tern_stats_free(st);
  return deleted;
}

static void check_all(world *w, int full) {
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, w->idx));
  check_gets(s, w, &w->committed);
  check_batch(s, w, &w->committed);
  if (full) check_postings(w, s, &w->committed);
  check_scans(w, s, &w->committed, full ? 6 : 1);
  if (full) check_terms(w, s, &w->committed);
  uint64_t deleted = check_stats(w, &w->committed);
  check_deleted(s, (w->open_flags & TERN_FOREGROUND) ? deleted : UINT64_MAX);
  tern_snapshot_close(s);
  if (w->held) {
    check_gets(w->held, w, &w->held_model);
    check_scans(w, w->held, &w->held_model, 1);
  }
}

/* ------------------------------------------------------------ steps */

static void open_index(world *w) {
  ET_OK(tern_open(&w->idx, w->dir, TERN_CREATE | w->open_flags, &w->opts));
}

static void step_put(world *w) {
  uint32_t id = (uint32_t)tu_below(&w->r, w->pending.n);
  et_doc *d = &w->pending.docs[id];
  et_doc_random(&w->r, d);
  uint8_t key[ET_KEY_MAX];
  size_t klen;
  key_of(w, id, key, &klen);
  tern_term terms[8];
  size_t nt = et_doc_terms(d, terms);
  ET_OK(tern_put(w->txn, key, klen, d->val, d->vlen, terms, nt));
}

static void step_delete(world *w) {
  uint32_t id = (uint32_t)tu_below(&w->r, w->pending.n);
  et_doc *d = &w->pending.docs[id];
  uint8_t key[ET_KEY_MAX];
  size_t klen;
  key_of(w, id, key, &klen);
  int rc = tern_delete(w->txn, key, klen);
  if (d->present) {
    if (rc != TERN_OK) fprintf(stderr, "delete id %u: %d %s\n", id, rc, tern_errmsg());
    assert_int_equal(rc, TERN_OK);
    et_doc_clear(d);
  } else {
    assert_int_equal(rc, TERN_NOTFOUND);
  }
}

/* A random range [from, to) (either end may be open), deleted in the
 * transaction and in the pending model. */
static void step_delete_range(world *w) {
  uint8_t fk[ET_KEY_MAX], tk[ET_KEY_MAX];
  size_t fl, tl;
  key_of(w, (uint32_t)tu_below(&w->r, w->pending.n), fk, &fl);
  key_of(w, (uint32_t)tu_below(&w->r, w->pending.n), tk, &tl);
  tern_slice from = {fk, fl}, to = {tk, tl};
  int open_from = tu_below(&w->r, 8) == 0, open_to = tu_below(&w->r, 8) == 0;
  ET_OK(tern_delete_range(w->txn, open_from ? NULL : &from, open_to ? NULL : &to));
  for (uint32_t id = 0; id < w->pending.n; id++) {
    uint8_t k[ET_KEY_MAX];
    size_t kl;
    key_of(w, id, k, &kl);
    if (!open_from && byte_cmp(k, kl, fk, fl) < 0) continue;
    if (!open_to && byte_cmp(k, kl, tk, tl) >= 0) continue;
    et_doc_clear(&w->pending.docs[id]);
  }
}

/* The one segment a bulk commit wrote in scratch, linked into segdir. */
static void take_segment(const char *scratch, const char *segdir) {
  DIR *d = opendir(scratch);
  assert_non_null(d);
  char name[64] = "";
  struct dirent *e;
  while ((e = readdir(d)))
    if (tern_seg_file_segment(e->d_name, name, sizeof name)) break;
  closedir(d);
  assert_true(name[0] != '\0');
  assert_int_equal(mkdir(segdir, 0755), 0);
  ET_OK(tern_seg_link(scratch, name, segdir, name));
}

/* Random documents written by a bulk commit elsewhere, then ingested. */
static void step_ingest(world *w) {
  char *root = tu_tmpdir("modelseg");
  char *scratch = tu_path(root, "scratch"), *segdir = tu_path(root, "seg");
  tern_index *s;
  ET_OK(tern_open(&s, scratch, TERN_CREATE | TERN_FOREGROUND, &w->opts));
  tern_txn *t;
  ET_OK(tern_txn_begin(&t, s, TERN_TXN_BULK));
  et_model ing;
  et_model_init(&ing, w->committed.n);
  uint32_t lo = (uint32_t)tu_below(&w->r, ing.n), span = 1 + (uint32_t)tu_below(&w->r, ing.n);
  size_t n = 0;
  for (uint32_t id = lo; id < ing.n && id < lo + span; id++) {
    if (tu_below(&w->r, 2)) continue;
    et_doc *d = &ing.docs[id];
    et_doc_random(&w->r, d);
    uint8_t key[ET_KEY_MAX];
    size_t klen;
    key_of(w, id, key, &klen);
    tern_term terms[8];
    size_t nt = et_doc_terms(d, terms);
    ET_OK(tern_put(t, key, klen, d->val, d->vlen, terms, nt));
    n++;
  }
  ET_OK(tern_commit(t));
  ET_OK(tern_close(s));
  if (n) {
    take_segment(scratch, segdir);
    unsigned flags = tu_below(&w->r, 2) ? TERN_INGEST_BEHIND : 0;
    const char *paths[1] = {segdir};
    ET_OK(tern_ingest(w->idx, paths, 1, flags));
    for (uint32_t id = 0; id < ing.n; id++)
      if (ing.docs[id].present && (!flags || !w->committed.docs[id].present))
        et_doc_copy(&w->committed.docs[id], &ing.docs[id]);
    w->commits++;
  }
  et_model_free(&ing);
  tu_rmtree(root);
  free(scratch);
  free(segdir);
  free(root);
}

/* The committed live documents of a random range [from, to) (either end
 * open), exported from a snapshot into a builder; the built segment is
 * ingested into a fresh index and compared with the model cut to the range:
 * gets, scans, postings and terms. */
static void step_export(world *w) {
  uint8_t fk[ET_KEY_MAX], tk[ET_KEY_MAX];
  size_t fl, tl;
  key_of(w, (uint32_t)tu_below(&w->r, w->committed.n), fk, &fl);
  key_of(w, (uint32_t)tu_below(&w->r, w->committed.n), tk, &tl);
  if (byte_cmp(fk, fl, tk, tl) > 0) {
    uint8_t x[ET_KEY_MAX];
    size_t xl = fl;
    memcpy(x, fk, fl);
    memcpy(fk, tk, tl);
    fl = tl;
    memcpy(tk, x, xl);
    tl = xl;
  }
  int open_from = tu_below(&w->r, 6) == 0, open_to = tu_below(&w->r, 6) == 0;
  tern_slice from = {fk, fl}, to = {tk, tl};
  et_model sub;
  et_model_init(&sub, w->committed.n);
  for (uint32_t id = 0; id < sub.n; id++) {
    uint8_t k[ET_KEY_MAX];
    size_t kl;
    key_of(w, id, k, &kl);
    if (!open_from && byte_cmp(k, kl, fk, fl) < 0) continue;
    if (!open_to && byte_cmp(k, kl, tk, tl) >= 0) continue;
    et_doc_copy(&sub.docs[id], &w->committed.docs[id]);
  }
  char *root = tu_tmpdir("modelexp");
  char *out = tu_path(root, "out"), *other = tu_path(root, "other");
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, w->idx));
  tern_builder *b;
  ET_OK(tern_builder_open(&b, out, &w->opts));
  ET_OK(tern_export(s, open_from ? NULL : &from, open_to ? NULL : &to, b));
  ET_OK(tern_snapshot_close(s));
  tern_build_info info;
  ET_OK(tern_builder_finish(b, &info));
  assert_int_equal(info.documents, et_model_count(&sub));
  if (info.documents) ET_OK(tern_builder_verify(out, NULL));
  tern_index *o;
  ET_OK(tern_open(&o, other, TERN_CREATE | TERN_FOREGROUND, &w->opts));
  const char *paths[1] = {out};
  ET_OK(tern_ingest(o, paths, 1, 0));
  ET_OK(tern_snapshot_open(&s, o));
  check_gets(s, w, &sub);
  check_scans(w, s, &sub, 2);
  check_postings(w, s, &sub);
  check_terms(w, s, &sub);
  ET_OK(tern_snapshot_close(s));
  ET_OK(tern_close(o));
  et_model_free(&sub);
  tu_rmtree(root);
  free(out);
  free(other);
  free(root);
}

/* tern_split_keys on a snapshot against the model: n-1 boundaries, the
 * given ones strictly ascending and inside the key space, the empty ones
 * last; when the parts are large (the model's are not, mostly) each holds
 * its share within 10%. */
static void step_split(world *w) {
  size_t n = 1 + (size_t)tu_below(&w->r, 8);
  tern_slice b[8];
  tern_snapshot *s;
  ET_OK(tern_snapshot_open(&s, w->idx));
  ET_OK(tern_split_keys(s, n, b));
  ET_OK(tern_snapshot_close(s));
  ref_keys r;
  ref_build(&r, w, &w->committed);
  size_t given = 0;
  while (given + 1 < n && b[given].len)
    given++;
  for (size_t i = given; i + 1 < n; i++)
    assert_int_equal(b[i].len, 0);
  for (size_t i = 0; i < given; i++) {
    assert_true(b[i].len <= TERN_KEY_MAX);
    if (i) assert_true(byte_cmp(b[i - 1].data, b[i - 1].len, b[i].data, b[i].len) < 0);
  }
  size_t start = 0;
  for (size_t i = 0; i <= given && r.n / n >= 20000; i++) { /* large parts only */
    size_t end = i < given ? ref_lower(&r, b[i].data, b[i].len) : r.n;
    double share = (double)r.n / (double)n;
    assert_true((double)(end - start) >= 0.9 * share && (double)(end - start) <= 1.1 * share);
    start = end;
  }
  for (size_t i = 0; i < given; i++)
    free((void *)b[i].data);
  ref_free(&r);
}

static void begin(world *w) {
  w->txn_flags = tu_below(&w->r, 5) == 0 ? TERN_TXN_BULK : 0;
  ET_OK(tern_txn_begin(&w->txn, w->idx, w->txn_flags));
  et_model_copy(&w->pending, &w->committed);
}

static void end_txn(world *w, int commit) {
  if (commit) {
    ET_OK(tern_commit(w->txn));
    et_model_copy(&w->committed, &w->pending);
    w->commits++;
  } else {
    ET_OK(tern_abort(w->txn));
  }
  w->txn = NULL;
}

static void step(world *w) {
  uint64_t p = tu_below(&w->r, 100);
  if (w->txn) {
    if (p < 55)
      step_put(w);
    else if (p < 78)
      step_delete(w);
    else if (p < 80)
      step_delete_range(w);
    else if (p < 95)
      end_txn(w, 1);
    else
      end_txn(w, 0);
    return;
  }
  if (p < 77) {
    begin(w);
  } else if (p < 80) {
    step_ingest(w);
  } else if (p < 82) {
    if (tu_below(&w->r, 3))
      step_split(w);
    else
      step_export(w);
  } else if (p < 84) {
    if (w->held) tern_snapshot_close(w->held);
    w->held = NULL;
    ET_OK(tern_close(w->idx));
    open_index(w);
  } else if (p < 87) {
    ET_OK(tern_compact(w->idx));
    tern_stats *st;
    ET_OK(tern_stats_get(&st, w->idx));
    assert_true(st->nsegments <= 1);
    assert_int_equal(st->buffered, 0);
    assert_int_equal(st->deleted, 0);
    tern_stats_free(st);
  } else if (p < 90) {
    ET_OK(tern_flush(w->idx));
  } else if (p < 95) {
    if (w->held) tern_snapshot_close(w->held);
    ET_OK(tern_snapshot_open(&w->held, w->idx));
    et_model_copy(&w->held_model, &w->committed);
  } else {
    ET_OK(tern_verify(w->idx));
  }
}

static void run_model(uint64_t salt, size_t nkeys, size_t nsteps, unsigned open_flags) {
  world w;
  memset(&w, 0, sizeof w);
  w.open_flags = open_flags;
  tu_rng_init(&w.r, salt);
  w.salt = tu_next(&w.r);
  w.dir = tu_tmpdir("model");
  tern_options_init(&w.opts);
  static const uint32_t thresholds[3] = {0, 1, 4};
  w.opts.pulsing_threshold = thresholds[tu_below(&w.r, 3)];
  w.opts.inline_value_max = (uint32_t)(tu_below(&w.r, 2) ? 16 : 64);
  w.opts.bloom_bits_per_key = tu_below(&w.r, 4) == 0 ? 0 : 10;
  w.opts.write_buffer_bytes = 512 + tu_below(&w.r, 4096);
  w.fields[0] = (tern_field_option){"a", (uint32_t)tu_below(&w.r, 65)};
  w.fields[1] = (tern_field_option){"color", 0};
  w.opts.fields = w.fields;
  w.opts.nfields = 2;
  fprintf(stderr, "[model] keys %zu steps %zu threshold %u inline %u bloom %u buffer %llu %s\n",
          nkeys, nsteps, w.opts.pulsing_threshold, w.opts.inline_value_max,
          w.opts.bloom_bits_per_key, (unsigned long long)w.opts.write_buffer_bytes,
          open_flags & TERN_FOREGROUND ? "foreground" : "background worker");
  et_model_init(&w.committed, nkeys);
  et_model_init(&w.pending, nkeys);
  et_model_init(&w.held_model, nkeys);
  open_index(&w);
  for (w.steps = 0; w.steps < nsteps; w.steps++) {
    step(&w);
    if (!w.txn) check_all(&w, w.steps % 4 == 0);
  }
  if (w.txn) end_txn(&w, 1);
  check_all(&w, 1);
  ET_OK(tern_verify(w.idx));
  if (w.held) tern_snapshot_close(w.held);
  ET_OK(tern_close(w.idx));
  fprintf(stderr, "[model] %zu commits; at most %zu segments and %zu deleted docs at once\n",
          w.commits, g_max_segments, g_max_deleted);
  et_model_free(&w.committed);
  et_model_free(&w.pending);
  et_model_free(&w.held_model);
  free(w.dir);
}

static void test_model_small_keyspace(void **state) {
  (void)state;
  run_model(1, 40, 3000 * tu_scale(), TERN_FOREGROUND);
  run_model(3, 40, 3000 * tu_scale(), 0);
}

static void test_model_larger_keyspace(void **state) {
  (void)state;
  run_model(2, 300, 3000 * tu_scale(), TERN_FOREGROUND);
  run_model(4, 300, 3000 * tu_scale(), 0);
}

int main(void) {
  et_prefer_tmpfs();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_model_small_keyspace),
      cmocka_unit_test(test_model_larger_keyspace),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
