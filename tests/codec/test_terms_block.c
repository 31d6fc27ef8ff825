/* SPDX-License-Identifier: MIT */
/*
 * test_terms_block.c — the terms block codec alone: random sorted terms of
 * several shapes are packed into blocks as full as the builder makes them,
 * then every block is decoded and checked against the input: iteration in
 * order (one entry at a time, and by batches of terms decoded ahead, as a
 * scan does), lower_bound of every present term and of absent ones,
 * seeking to every entry, and corrupted pages decoding to an error or to
 * something, never to a crash.
 */
#include "codec/coding.h"
#include "codec/status.h"
#include "codec/terms_block.h"
#include "tests/common/testutil.h"
#include "tern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ref_term {
  uint8_t *t;
  uint32_t len;
  uint32_t df;
  uint32_t *docs;
  uint64_t off, plen;
  uint32_t vlen;
  uint8_t *val;
  uint64_t voff;
} ref_term;

static int term_cmp(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen) {
  uint32_t n = alen < blen ? alen : blen;
  int c = memcmp(a, b, n);
  if (c) return c;
  return alen < blen ? -1 : alen > blen;
}

static int ref_cmp(const void *x, const void *y) {
  const ref_term *a = x, *b = y;
  return term_cmp(a->t, a->len, b->t, b->len);
}

typedef struct shape {
  const char *name;
  uint32_t nsym;       /* alphabet: bytes 0..nsym-1 mapped through `base` */
  uint8_t base;
  uint32_t min_len, max_len;
  uint32_t prefix_len; /* common prefix of all terms (shared-prefix shape) */
  uint32_t threshold, max_df;
  int values;
  uint32_t inline_max;
  uint32_t tie_len; /* bytes [prefix_len, tie_len) drawn from 2 symbols only: restart keys share long prefixes */
} shape;

/* For test_group_sizes: the group size run_shape asks the builder for
 * (tern_tb_builder_set_group; 0: the writer's choice), and whether half
 * the characters gen_terms draws are the alphabet's first or last, so
 * that the lowest and highest codes of every size occur. */
static uint32_t want_group;
static int extremes;
/* Mixed into run_shape's seed: 0 but in test_batch_random (tu_seed()). */
static uint64_t seed_mix;

static void gen_terms(tu_rng *r, const shape *s, uint32_t n, ref_term **out, uint32_t *nout) {
  ref_term *v = calloc(n, sizeof *v);
  assert_non_null(v);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t len = s->min_len + (uint32_t)tu_below(r, s->max_len - s->min_len + 1);
    if (len < s->prefix_len + 1) len = s->prefix_len + 1;
    v[i].t = malloc(len);
    assert_non_null(v[i].t);
    for (uint32_t k = 0; k < len; k++) {
      uint64_t c = k < s->prefix_len ? 0 : tu_below(r, k < s->tie_len ? 2 : s->nsym);
      if (extremes && k >= s->tie_len && tu_below(r, 2)) c = tu_below(r, 2) ? 0 : s->nsym - 1;
      v[i].t[k] = (uint8_t)(s->base + c);
    }
    v[i].len = len;
  }
  qsort(v, n, sizeof *v, ref_cmp);
  uint32_t m = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (m && ref_cmp(&v[m - 1], &v[i]) == 0) {
      free(v[i].t);
      continue;
    }
    v[m++] = v[i];
  }
  uint64_t off = 32, voff = 32;
  for (uint32_t i = 0; i < m; i++) {
    ref_term *t = &v[i];
    uint32_t df = 1 + (uint32_t)(tu_below(r, 4) == 0 ? tu_below(r, s->max_df) : tu_below(r, 3));
    if (df > s->max_df) df = s->max_df;
    t->df = df;
    if (df <= s->threshold) {
      t->docs = malloc(df * sizeof *t->docs);
      uint32_t d = (uint32_t)tu_below(r, 1000);
      for (uint32_t k = 0; k < df; k++) {
        t->docs[k] = d;
        d += 1 + (uint32_t)tu_below(r, k % 3 ? 5 : 100000);
      }
    } else {
      t->plen = 1 + tu_below(r, 500);
      t->off = off;
      off += t->plen;
    }
    if (s->values) {
      t->vlen = (uint32_t)(tu_below(r, 3) == 0 ? tu_below(r, 2 * s->inline_max + 2) : tu_below(r, 9));
      if (t->vlen <= s->inline_max) {
        t->val = malloc(t->vlen + 1);
        tu_fill(r, t->val, t->vlen);
      } else {
        t->voff = voff;
        voff += t->vlen;
      }
    }
  }
  *out = v;
  *nout = m;
}

static void free_terms(ref_term *v, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    free(v[i].t);
    free(v[i].docs);
    free(v[i].val);
  }
  free(v);
}

static void input_of(const ref_term *t, tern_tb_input *in) {
  memset(in, 0, sizeof *in);
  in->term = t->t;
  in->len = t->len;
  in->df = t->df;
  in->docs = t->docs;
  in->post_off = t->off;
  in->post_len = t->plen;
  in->vlen = t->vlen;
  in->val = t->val;
  in->voff = t->voff;
}

static void check_tail(const ref_term *want, const tern_tb_block *b, const tern_tb_tail *t) {
  assert_int_equal(t->df, want->df);
  if (want->docs) {
    assert_true(t->pulsed);
    assert_memory_equal(t->docs, want->docs, want->df * sizeof(uint32_t));
  } else {
    assert_false(t->pulsed);
    assert_int_equal(t->post_off, want->off);
    assert_int_equal(t->post_len, want->plen);
  }
  assert_int_equal(t->vlen, want->vlen);
  if (want->val) {
    assert_true(t->vinline);
    uint8_t buf[2048];
    tern_tb_copy_value(b, t, buf);
    if (want->vlen) assert_memory_equal(buf, want->val, want->vlen);
  } else if (b->f.has_values) {
    assert_false(t->vinline);
    assert_int_equal(t->voff, want->voff);
  }
}

/* The pair decode table (tern_tb_use_pairs), shared by every block the
 * test checks, so that it is rebuilt when the alphabet changes and reused
 * when it does not; pair_blocks counts the blocks decoded with it. */
static tern_tb_pairs g_pairs;
static uint32_t pair_blocks;

/* Iterates the block again with the pair table: the same terms. */
static void check_pairs(tern_tb_block *b, const ref_term *v, uint32_t n) {
  tern_tb_tables(b);
  tern_tb_use_pairs(b, &g_pairs, 0); /* reuse only: the table may hold another alphabet */
  if (b->pair) assert_memory_equal(g_pairs.sym, b->sym, b->nsym);
  b->pair = NULL;
  tern_tb_use_pairs(b, &g_pairs, 1);
  if (!b->pair) {
    assert_true(b->group < 2 || b->nsym > TERN_TB_PAIR_K || b->nsym == 0);
    return;
  }
  pair_blocks++;
  uint8_t term[TERN_TB_TERM_MAX];
  uint32_t docs[TERN_TB_DOCS_MAX];
  tern_tb_tail t = {.docs = docs};
  tern_tb_iter it;
  assert_int_equal(tern_tb_iter_restart(b, &it, 0, term), TERN_OK);
  for (uint32_t i = 0; i < n; i++) {
    assert_int_equal(tern_tb_iter_next(b, &it, term, &t), TERN_OK);
    assert_int_equal(it.len, v[i].len);
    assert_memory_equal(term, v[i].t, v[i].len);
  }
  assert_int_equal(tern_tb_iter_next(b, &it, term, &t), TERN_NOTFOUND);
  for (uint32_t i = 0; i < n; i += 5) {
    assert_int_equal(tern_tb_iter_seek(b, &it, i, term), TERN_OK);
    assert_int_equal(tern_tb_iter_next(b, &it, term, &t), TERN_OK);
    assert_memory_equal(term, v[i].t, v[i].len);
  }
}

/* tern_tb_iter_seek_from: from entry i just decoded to an entry j >= i + 1
 * (in its run or past it), then the iterator goes on from j. */
static void check_seek_from(tu_rng *r, const tern_tb_block *b, const ref_term *v, uint32_t n) {
  uint8_t term[TERN_TB_TERM_MAX];
  uint32_t docs[TERN_TB_DOCS_MAX];
  tern_tb_tail t = {.docs = docs};
  tern_tb_iter it;
  for (uint32_t i = 0; i + 1 < n; i += 1 + (uint32_t)tu_below(r, 3)) {
    assert_int_equal(tern_tb_iter_seek(b, &it, i, term), TERN_OK);
    assert_int_equal(tern_tb_iter_next(b, &it, term, &t), TERN_OK);
    uint32_t j = i + 1 + (uint32_t)tu_below(r, 2 * b->restart);
    if (j >= n) j = n - 1;
    assert_int_equal(tern_tb_iter_seek_from(b, &it, j, term), TERN_OK);
    assert_int_equal(tern_tb_iter_next(b, &it, term, &t), TERN_OK);
    assert_int_equal(it.len, v[j].len);
    assert_memory_equal(term, v[j].t, v[j].len);
    check_tail(&v[j], b, &t);
    if (j + 1 < n) {
      assert_int_equal(tern_tb_iter_next(b, &it, term, &t), TERN_OK);
      assert_memory_equal(term, v[j + 1].t, v[j + 1].len);
    }
  }
}

/* ------------------------------------------------ resolving ranks */

/* A resolved entry's tail against the reference. */
static void check_hit(const ref_term *want, const tern_tb_block *b, const tern_tb_hit *x) {
  if (want->docs) {
    assert_false(x->flags & TERN_TB_HIT_POSTINGS);
    assert_int_equal(x->doc, want->docs[0]);
  } else {
    assert_true(x->flags & TERN_TB_HIT_POSTINGS);
    assert_int_equal(x->df, want->df);
    assert_int_equal(x->post_off, want->off);
    assert_int_equal(x->post_len, want->plen);
  }
  assert_int_equal(x->vlen, want->vlen);
  if (want->val) {
    assert_true(x->flags & TERN_TB_HIT_VINLINE);
    uint8_t buf[2048];
    tern_tb_tail t = {.vbit = x->vbit, .vlen = x->vlen, .vinline = 1};
    tern_tb_copy_value(b, &t, buf);
    if (want->vlen) assert_memory_equal(buf, want->val, want->vlen);
  } else if (b->f.has_values) {
    assert_false(x->flags & TERN_TB_HIT_VINLINE);
    assert_int_equal(x->voff, want->voff);
  }
}

/* Ascending entries of the block (each with probability 1/every; the
 * first and last half the time), as ids = entry + base, and two ids past
 * the block after them.  Returns their count (without the two). */
static uint32_t pick_entries(tu_rng *r, uint32_t n, uint64_t base, uint32_t *ids) {
  uint32_t every = 1 + (uint32_t)tu_below(r, 20), m = 0;
  int ends = tu_below(r, 2) == 0;
  for (uint32_t i = 0; i < n; i++)
    if ((ends && (i == 0 || i + 1 == n)) || tu_below(r, every) == 0) ids[m++] = (uint32_t)(base + i);
  ids[m] = (uint32_t)(base + n);
  ids[m + 1] = (uint32_t)(base + n + 1 + tu_below(r, 100));
  return m;
}

/* tern_tb_resolve over random subsets of the block, in calls of random
 * sizes (each carrying the walk over), against the reference terms. */
static void check_resolve(tu_rng *r, const tern_tb_block *b, const ref_term *v, uint32_t n) {
  static tern_tb_hits h;
  uint32_t *ids = malloc((n + 2) * sizeof *ids);
  assert_non_null(ids);
  for (int round = 0; round < 6; round++) {
    uint64_t base = tu_below(r, 2) ? 0 : 1 + tu_below(r, 1u << 20);
    uint32_t m = pick_entries(r, n, base, ids), at = 0;
    tern_tb_iter it = {0};
    while (at < m) {
      uint32_t want = 1 + (uint32_t)tu_below(r, 80), done;
      int rc = tern_tb_resolve(b, &it, &h, ids + at, want, base, &done);
      if (rc) fprintf(stderr, "resolve: %s\n", tern_errmsg());
      assert_int_equal(rc, TERN_OK);
      assert_true(done >= 1 && done <= want && done <= TERN_TB_HITS_MAX && done == h.n);
      for (uint32_t j = 0; j < done; j++) {
        const ref_term *w = &v[ids[at + j] - base];
        assert_int_equal(h.hit[j].len, w->len);
        assert_memory_equal(h.bytes + h.hit[j].off, w->t, w->len);
        check_hit(w, b, &h.hit[j]);
      }
      at += done;
    }
    uint32_t done = 99; /* past the block: nothing resolved, no error */
    assert_int_equal(tern_tb_resolve(b, &it, &h, ids + m, 2, base, &done), TERN_OK);
    assert_int_equal(done, 0);
    if (m >= 2) { /* an entry before the walk's position */
      uint32_t back = ids[m - 2];
      assert_int_equal(tern_tb_resolve(b, &it, &h, &back, 1, base, &done), TERN_EINVAL);
    }
  }
  free(ids);
}

/* check_resolve without and with the pair table. */
static void check_resolve_both(tu_rng *r, const tern_tb_block *b, const ref_term *v, uint32_t n) {
  tern_tb_block plain = *b, paired = *b;
  plain.pair = NULL;
  check_resolve(r, &plain, v, n);
  tern_tb_use_pairs(&paired, &g_pairs, 1);
  check_resolve(r, &paired, v, n);
}

/* tern_tb_resolve on a damaged block: TERN_ECORRUPT, or terms of a
 * length a term may have; never a read outside the block. */
static void resolve_damaged(tu_rng *r, const tern_tb_block *blk) {
  static tern_tb_hits h;
  tern_tb_block copy = *blk, *b = &copy;
  tern_tb_tables(b);
  uint32_t n = b->n < 4096 ? b->n : 4096;
  uint32_t *ids = malloc((n + 2) * sizeof *ids);
  assert_non_null(ids);
  uint32_t m = pick_entries(r, n, 0, ids), at = 0;
  tern_tb_iter it = {0};
  while (at < m) {
    uint32_t done;
    int rc = tern_tb_resolve(b, &it, &h, ids + at, m - at, 0, &done);
    if (rc != TERN_OK) {
      assert_int_equal(rc, TERN_ECORRUPT);
      break;
    }
    assert_true(done >= 1);
    for (uint32_t j = 0; j < done; j++) assert_true(h.hit[j].len <= TERN_TB_TERM_MAX);
    at += done;
  }
  free(ids);
}

/* Batches of terms decoded ahead (tern_tb_iter_keys, batches of random
 * sizes), from the block's start or from a sought entry, with and without
 * the pair table: the same terms and tails as the reference, and after
 * each batch whose tails are all taken, `it` and term[] exactly as
 * tern_tb_iter_next leaves them (kend: the key side after each term). */
static void check_batches(tu_rng *r, tern_tb_block *b, const ref_term *v, uint32_t n) {
  static tern_tb_keys k; /* 6 KiB: not on the stack */
  uint8_t term[TERN_TB_TERM_MAX], rterm[TERN_TB_TERM_MAX];
  uint32_t docs[TERN_TB_DOCS_MAX], rdocs[TERN_TB_DOCS_MAX];
  tern_tb_tail t = {.docs = docs}, rt = {.docs = rdocs};
  const uint8_t *pair = b->pair;
  for (int round = 0; round < 4; round++) {
    b->pair = round & 1 ? pair : NULL;
    uint32_t from = round < 2 ? 0 : (uint32_t)tu_below(r, n);
    tern_tb_iter it, ref;
    if (from == 0) {
      assert_int_equal(tern_tb_iter_restart(b, &it, 0, term), TERN_OK);
    } else { /* as a cursor's seek: the entry before, then batches */
      assert_int_equal(tern_tb_iter_seek(b, &it, from - 1, term), TERN_OK);
      assert_int_equal(tern_tb_iter_next(b, &it, term, &t), TERN_OK);
    }
    ref = it;
    memcpy(rterm, term, it.len);
    uint32_t i = from;
    while (i < n) {
      uint32_t want = 1 + (uint32_t)tu_below(r, tu_below(r, 2) ? TERN_TB_KEYS_MAX : 5);
      int rc = tern_tb_iter_keys(b, &it, term, &k, want);
      if (rc) fprintf(stderr, "batch at %u of %u: %s\n", i, n, tern_errmsg());
      assert_int_equal(rc, TERN_OK);
      assert_int_equal(k.first, i);
      assert_true(k.n >= 1 && k.n <= want && i + k.n <= n);
      for (uint32_t j = 0; j < k.n; j++, i++) {
        assert_int_equal(k.len[j], v[i].len);
        assert_memory_equal(k.bytes + k.off[j], v[i].t, v[i].len);
        assert_int_equal(tern_tb_iter_next(b, &ref, rterm, &rt), TERN_OK);
        assert_int_equal(k.kend[j], ref.kpos);
        if (k.tails) {
          tern_tb_keys_tail(b, &k, j, &t);
          tern_tb_keys_skip_tail(&k, j, &it);
        } else {
          assert_int_equal(tern_tb_iter_tail(b, &it, &t), TERN_OK);
        }
        check_tail(&v[i], b, &t);
        assert_int_equal(it.entry, ref.entry);
        assert_int_equal(it.pos, ref.pos);
      }
      assert_int_equal(it.kpos, ref.kpos);
      assert_int_equal(it.len, ref.len);
      assert_memory_equal(term, rterm, ref.len);
    }
    assert_int_equal(tern_tb_iter_keys(b, &it, term, &k, 1), TERN_NOTFOUND);
    assert_int_equal(tern_tb_iter_tail(b, &it, &t), TERN_NOTFOUND);
  }
  b->pair = pair;
}

/* Checks one encoded block holding terms v[0..n). */
static void check_block(tu_rng *r, const uint8_t *page, const tern_tb_field *f, const ref_term *v,
                        uint32_t n, const ref_term *next) {
  tern_tb_block b;
  int orc = tern_tb_open(&b, page, f, n, "test", 0);
  if (orc) fprintf(stderr, "open: %s\n", tern_errmsg());
  assert_int_equal(orc, TERN_OK);
  if (want_group) assert_int_equal(b.group, want_group);
  uint8_t term[TERN_TB_TERM_MAX];
  uint32_t docs[TERN_TB_DOCS_MAX];
  tern_tb_tail t = {.docs = docs};
  tern_tb_iter it;
  assert_int_equal(tern_tb_iter_restart(&b, &it, 0, term), TERN_OK);
  for (uint32_t i = 0; i < n; i++) {
    int rc = tern_tb_iter_next(&b, &it, term, &t);
    if (rc) fprintf(stderr, "entry %u of %u: %s\n", i, n, tern_errmsg());
    assert_int_equal(rc, TERN_OK);
    assert_int_equal(it.len, v[i].len);
    assert_memory_equal(term, v[i].t, v[i].len);
    check_tail(&v[i], &b, &t);
  }
  assert_int_equal(tern_tb_iter_next(&b, &it, term, &t), TERN_NOTFOUND);
  check_pairs(&b, v, n);
  check_batches(r, &b, v, n);
  check_seek_from(r, &b, v, n);
  check_resolve_both(r, &b, v, n);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t idx;
    tern_tb_iter at;
    assert_int_equal(tern_tb_lower_bound(&b, v[i].t, v[i].len, &idx, &at, &t), 1);
    assert_int_equal(idx, i);
    check_tail(&v[i], &b, &t);
    /* the iterator continues after the found entry */
    memcpy(term, v[i].t, v[i].len);
    if (i + 1 < n) {
      assert_int_equal(tern_tb_iter_next(&b, &at, term, &t), TERN_OK);
      assert_int_equal(at.len, v[i + 1].len);
      assert_memory_equal(term, v[i + 1].t, v[i + 1].len);
    }
    if (i % 7 == 0) {
      assert_int_equal(tern_tb_iter_seek(&b, &at, i, term), TERN_OK);
      assert_int_equal(tern_tb_iter_next(&b, &at, term, &t), TERN_OK);
      assert_memory_equal(term, v[i].t, v[i].len);
    }
  }
  /* Absent keys: mutations of present ones, against a linear reference. */
  for (uint32_t k = 0; k < 4 * n; k++) {
    const ref_term *src = &v[tu_below(r, n)];
    uint8_t key[TERN_TB_TERM_MAX + 1];
    uint32_t klen = src->len;
    memcpy(key, src->t, klen);
    switch (tu_below(r, 4)) {
    case 0: key[tu_below(r, klen)] ^= (uint8_t)(1 + tu_below(r, 255)); break;
    case 1: if (klen > 1) klen--; break;
    case 2: if (klen < TERN_TB_TERM_MAX) key[klen++] = (uint8_t)tu_below(r, 256); break;
    default: key[klen - 1]++; break;
    }
    uint32_t want = 0;
    while (want < n && term_cmp(v[want].t, v[want].len, key, klen) < 0) want++;
    uint32_t idx;
    tern_tb_iter at;
    int rc = tern_tb_lower_bound(&b, key, klen, &idx, &at, &t);
    int exact = want < n && term_cmp(v[want].t, v[want].len, key, klen) == 0;
    if (rc != exact || idx != want) {
      fprintf(stderr, "rc %d idx %u want %u exact %d n %u klen %u\n", rc, idx, want, exact, n, klen);
      for (uint32_t q = want > 2 ? want - 2 : 0; q < want + 2 && q < n; q++) {
        for (uint32_t z = 0; z < v[q].len; z++) fprintf(stderr, "%02x", v[q].t[z]);
        fprintf(stderr, " <- %u\n", q);
      }
      for (uint32_t z = 0; z < klen; z++) fprintf(stderr, "%02x", key[z]);
      fprintf(stderr, " key\n");
    }
    assert_int_equal(rc, exact);
    assert_int_equal(idx, want);
  }
  /* Past the block's last term. */
  if (next) {
    uint32_t idx;
    tern_tb_iter at;
    assert_int_equal(tern_tb_lower_bound(&b, next->t, next->len, &idx, &at, &t), 0);
    assert_int_equal(idx, n);
  }
}

/* What any block decode may answer: the value or a detected corruption. */
static void status_ok_notfound_or_corrupt(int rc) {
  if (rc != TERN_OK && rc != TERN_NOTFOUND && rc != TERN_ECORRUPT)
    fail_msg("damaged block: status %d", rc);
}

/* Whatever the bytes, a decoded entry stays inside the block's limits. */
static void tail_in_bounds(const tern_tb_block *b, const tern_tb_iter *it, const tern_tb_tail *t) {
  assert_true(it->len <= TERN_TB_TERM_MAX);
  assert_true(it->entry <= b->n);
  if (t->pulsed) assert_true(t->df >= 1 && t->df <= TERN_TB_DOCS_MAX);
  if (t->vinline) assert_true(t->vlen <= b->f.inline_max);
}

/* Iterating a damaged block: at most n entries, each within bounds, and
 * the walk ends in "no more" or TERN_ECORRUPT. */
static void iterate_damaged(const tern_tb_block *b, uint8_t *term, tern_tb_tail *t) {
  tern_tb_iter it;
  int rc = tern_tb_iter_restart(b, &it, 0, term);
  status_ok_notfound_or_corrupt(rc);
  uint32_t seen = 0;
  while (rc == TERN_OK && (rc = tern_tb_iter_next(b, &it, term, t)) == TERN_OK) {
    assert_true(++seen <= b->n);
    tail_in_bounds(b, &it, t);
    if (t->vinline) {
      uint8_t vb[2048];
      tern_tb_copy_value(b, t, vb);
    }
  }
  status_ok_notfound_or_corrupt(rc);
}

/* Iterating a damaged block by batches of terms decoded ahead: each batch
 * within its limits, every term within the longest, and the walk ends in
 * "no more" or TERN_ECORRUPT. */
static void iterate_damaged_batches(const tern_tb_block *b, uint8_t *term, tern_tb_tail *t) {
  static tern_tb_keys k;
  tern_tb_iter it;
  int rc = tern_tb_iter_restart(b, &it, 0, term);
  status_ok_notfound_or_corrupt(rc);
  uint32_t want = 1;
  while (rc == TERN_OK && (rc = tern_tb_iter_keys(b, &it, term, &k, want)) == TERN_OK) {
    assert_true(k.n >= 1 && k.n <= want && k.first + k.n <= b->n);
    for (uint32_t j = 0; j < k.n && rc == TERN_OK; j++) {
      assert_true(k.len[j] <= TERN_TB_TERM_MAX);
      assert_true(k.off[j] + k.len[j] <= TERN_TB_KEYS_ROOM);
      if (k.tails) {
        tern_tb_keys_skip_tail(&k, j, &it);
        assert_true(tern_tb_keys_vbit(&k, j) <= 8 * TERN_TB_PAGE);
      } else {
        rc = tern_tb_iter_tail(b, &it, t);
        if (rc == TERN_OK) tail_in_bounds(b, &it, t);
      }
    }
    want = want * 2 > TERN_TB_KEYS_MAX ? TERN_TB_KEYS_MAX : want * 2;
  }
  status_ok_notfound_or_corrupt(rc);
}

/* A lower bound in a damaged block: an index within [0, n], and a "found"
 * whose iterator holds the key's length. */
static void search_damaged(const tern_tb_block *b, const ref_term *v, uint32_t n, uint8_t *term,
                           tern_tb_tail *t) {
  tern_tb_iter it;
  for (uint32_t i = 0; i < n; i += 1 + n / 16) {
    uint32_t idx = UINT32_MAX;
    int rc = tern_tb_lower_bound(b, v[i].t, v[i].len, &idx, &it, t);
    if (rc < 0) {
      assert_int_equal(rc, TERN_ECORRUPT);
      continue;
    }
    assert_true(rc == 0 || rc == 1);
    assert_true(idx <= b->n);
    if (rc == 1) {
      assert_true(idx < b->n);
      assert_int_equal(it.len, v[i].len);
      tail_in_bounds(b, &it, t);
    }
    if (b->n) status_ok_notfound_or_corrupt(tern_tb_iter_seek(b, &it, i % b->n, term));
  }
}

/* Damaged pages (flipped bytes, mostly in the header): opening says
 * TERN_ECORRUPT, or every decode stays within the block and answers with a
 * status a reader handles.  (Pages are checksummed before a block is
 * opened; this is the decoder's own defence.) */
static void fuzz_block(tu_rng *r, const uint8_t *page, const tern_tb_field *f, const ref_term *v,
                       uint32_t n) {
  uint8_t bad[TERN_TB_PAGE];
  for (int round = 0; round < 50; round++) {
    memcpy(bad, page, TERN_TB_PAGE);
    uint32_t flips = 1 + (uint32_t)tu_below(r, 3);
    for (uint32_t k = 0; k < flips; k++) {
      uint32_t at = (uint32_t)(tu_below(r, 2) ? tu_below(r, 128) : tu_below(r, TERN_TB_PAGE));
      bad[at] ^= (uint8_t)(1 + tu_below(r, 255));
    }
    tern_tb_block b;
    int rc = tern_tb_open(&b, bad, f, 0, "fuzz", 0);
    if (rc != TERN_OK) {
      assert_int_equal(rc, TERN_ECORRUPT);
      continue;
    }
    assert_true(b.n <= TERN_TB_PAGE * 8);
    uint8_t term[TERN_TB_TERM_MAX];
    uint32_t docs[TERN_TB_DOCS_MAX];
    tern_tb_tail t = {.docs = docs};
    if (round & 1) { /* half the rounds decode with the pair table */
      tern_tb_tables(&b);
      tern_tb_use_pairs(&b, &g_pairs, 1);
    }
    iterate_damaged(&b, term, &t);
    iterate_damaged_batches(&b, term, &t);
    resolve_damaged(r, &b);
    search_damaged(&b, v, n, term, &t);
  }
}

static void run_shape(const shape *s, uint32_t nterms, uint32_t restart) {
  tu_rng r;
  tu_rng_init(&r, (0x7b10c + nterms + s->nsym * 31 + s->max_len * 7 + restart) ^ seed_mix);
  ref_term *v;
  uint32_t n;
  gen_terms(&r, s, nterms, &v, &n);
  tern_tb_field f = {.threshold = s->threshold,
                     .inline_max = s->inline_max,
                     .has_values = (uint32_t)s->values,
                     .max_doc = UINT32_MAX};
  tern_tb_builder *b;
  assert_int_equal(tern_tb_builder_new(&b, restart), TERN_OK);
  tern_tb_builder_set_group(b, want_group);
  tern_tb_builder_start(b, &f);
  uint8_t *page = malloc(TERN_TB_PAGE);
  uint32_t first = 0, blocks = 0;
  for (uint32_t i = 0; i <= n; i++) {
    int rc = 1;
    if (i < n) {
      tern_tb_input in;
      input_of(&v[i], &in);
      rc = tern_tb_add(b, &in);
      assert_true(rc == 0 || rc == 1);
    }
    if (rc == 1) {
      uint32_t cnt = tern_tb_count(b);
      assert_int_equal(cnt, i - first);
      assert_true(cnt > 0);
      assert_int_equal(tern_tb_finish(b, page), TERN_OK);
      check_block(&r, page, &f, v + first, cnt, i < n ? &v[i] : NULL);
      if (blocks < 3) fuzz_block(&r, page, &f, v + first, cnt);
      blocks++;
      first = i;
      if (i < n) {
        tern_tb_input in;
        input_of(&v[i], &in);
        assert_int_equal(tern_tb_add(b, &in), 0);
      }
    }
  }
  print_message("%s: %u terms, %u blocks (restart %u)\n", s->name, n, blocks, restart);
  free(page);
  tern_tb_builder_free(b);
  free_terms(v, n);
}

static void test_base36_keys(void **state) {
  (void)state;
  /* 36 contiguous symbols, 16 bytes: primary keys, one doc, values */
  shape s = {"base36-like", 36, 'A', 16, 16, 0, 1, 1, 1, 64, 0};
  run_shape(&s, 20000, TERN_TB_RESTART);
  run_shape(&s, 5000, 16);
  run_shape(&s, 5000, 1);
  shape s0 = {"threshold-0", 36, 'a', 16, 16, 0, 0, 1, 0, 64, 0};
  run_shape(&s0, 5000, TERN_TB_RESTART);
  assert_true(pair_blocks > 0); /* base36 codes several characters a number */
}

/* Paths, URLs, scoped names: many restarts share their head, and the
 * search must tell them apart by their whole terms. */
static void test_tied_heads(void **state) {
  (void)state;
  shape fixed = {"tied-fixed", 36, 'a', 24, 24, 0, 1, 1, 1, 64, 10};
  run_shape(&fixed, 20000, TERN_TB_RESTART);
  run_shape(&fixed, 5000, 3);
  shape var = {"tied-varlen", 40, ' ', 8, 80, 0, 1, 1, 0, 64, 12};
  run_shape(&var, 20000, TERN_TB_RESTART);
  shape deep = {"tied-deep", 5, 'a', 30, 60, 0, 2, 5, 1, 16, 28};
  run_shape(&deep, 10000, 8);
}

static void test_binary_mixed(void **state) {
  (void)state;
  shape s = {"binary", 256, 0, 1, 40, 0, 8, 100000, 0, 64, 0};
  run_shape(&s, 20000, TERN_TB_RESTART);
  shape s2 = {"binary-values", 256, 0, 1, 12, 0, 1, 1, 1, 16, 0};
  run_shape(&s2, 5000, 7);
}

static void test_alphabets(void **state) {
  (void)state;
  const uint32_t ks[] = {1, 2, 3, 5, 64, 65, 90, 129, 181, 200};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
    shape s = {"alphabet", ks[i], (uint8_t)(ks[i] > 200 ? 0 : 10), 1, ks[i] < 3 ? 40 : 10, 0, 8, 20, 0, 64, 0};
    run_shape(&s, 3000, TERN_TB_RESTART);
  }
}

/* Every group size the format allows, for alphabet sizes around and
 * between powers of two, each block decoded (step, batch, pair table,
 * seek, search: check_block) against the terms it was built from; half
 * the characters the alphabet's ends, so that the largest code of each
 * size (all digits K - 1) and the smallest occur in every block. */
static void test_group_sizes(void **state) {
  (void)state;
  const uint32_t ks[] = {2, 3, 4, 5, 7, 10, 11, 16, 26, 31, 36, 37, 41, 50, 63, 64, 65, 100, 255};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
    for (uint32_t g = 1; g <= TERN_TB_GROUP_MAX; g++) {
      uint64_t p = ks[i];
      for (uint32_t j = 0; j < g; j++) p *= ks[i];
      if (p > (1ull << 32)) break; /* K^(g+1) > 2^32: not a valid group */
      shape s = {"groups", ks[i], (uint8_t)(ks[i] > 200 ? 0 : 1), 1, 30, 0, 2, 3, 1, 8, 0};
      want_group = g;
      extremes = 1;
      run_shape(&s, 1500, 1 + (uint32_t)(i + g) % 20);
    }
  want_group = 0;
  extremes = 0;
}

/* Batches of terms (check_batches: against the sorted terms they were
 * built from, from the block's start and from sought entries, with and
 * without the pair table) on blocks drawn from the run's seed (printed;
 * TERN_SEED repeats it): alphabet sizes, group sizes, restart intervals,
 * fixed and varying lengths, so that restarts fall at every place in a
 * batch and batches end at every place in a block. */
static void test_batch_random(void **state) {
  (void)state;
  seed_mix = tu_seed() ^ 0xba7c4;
  tu_rng r;
  tu_rng_init(&r, seed_mix);
  const uint32_t ks[] = {2, 3, 5, 10, 16, 26, 36, 37, 62, 64, 95};
  const uint32_t restarts[] = {1, 2, 3, 5, 8, 16, 32};
  for (int round = 0; round < 24; round++) {
    uint32_t k = ks[tu_below(&r, sizeof ks / sizeof ks[0])];
    uint32_t g = 1 + (uint32_t)tu_below(&r, TERN_TB_GROUP_MAX);
    uint64_t p = k;
    for (uint32_t j = 0; j < g; j++) p *= k;
    if (p > (1ull << 32)) g = 0; /* not a valid group for k: the writer's choice */
    uint32_t len = 1 + (uint32_t)tu_below(&r, 40);
    int fixed = tu_below(&r, 2) != 0;
    shape s = {"batch-random", k, (uint8_t)(k > 100 ? 0 : 33), fixed ? len : 1, fixed ? len : len + 30,
               0, 1, 1, (int)tu_below(&r, 2), 16, 0};
    want_group = g;
    extremes = (int)tu_below(&r, 2);
    run_shape(&s, 800 + (uint32_t)tu_below(&r, 3000), restarts[tu_below(&r, 7)]);
  }
  want_group = 0;
  extremes = 0;
  seed_mix = 0;
}

/* Primary-key blocks damaged at a restart: its key made equal to the one
 * before (restart keys must ascend), its position in the key stream
 * moved by one bit, or — when the values' lengths vary, so that restarts
 * store their tail positions — its tail position moved by one bit.  A
 * walk by batches from the block's start, with and without the pair
 * table, answers TERN_ECORRUPT, never the keys. */
static int walk_batches(tern_tb_block *b) {
  static tern_tb_keys k;
  uint8_t term[TERN_TB_TERM_MAX];
  tern_tb_iter it;
  int rc = tern_tb_iter_restart(b, &it, 0, term);
  while (rc == TERN_OK && (rc = tern_tb_iter_keys(b, &it, term, &k, TERN_TB_KEYS_MAX)) == TERN_OK) {
    assert_true(k.tails); /* a primary-key block: the tails come with the terms */
    for (uint32_t j = 0; j < k.n; j++) tern_tb_keys_skip_tail(&k, j, &it);
  }
  return rc;
}

/* Moves the u16 at byte `at` of a page copy by one. */
static void bump16(uint8_t *page, uint32_t at) { tern_store16(page + at, tern_load16(page + at) + 1); }

/* One restart damage of test_batch_restart_damage (kind 0: key equal to
 * the one before, 1: key position, 2: tail position). */
static void damage_restart(uint8_t *bad, const tern_tb_block *b, const uint8_t *page, uint32_t rr,
                           int kind) {
  uint32_t off = (uint32_t)(b->rkey - page);
  uint32_t lo = tern_load16(bad + off + 2 * rr), to = tern_load16(bad + off + 2 * rr + 2);
  uint32_t plo = tern_load16(bad + off + 2 * rr - 2);
  if (kind == 0) { /* fixed length: restart rr - 1's key has rr's length */
    assert_int_equal(lo - plo, to - lo);
    memcpy(bad + lo, bad + plo, to - lo);
  } else if (kind == 1) {
    bump16(bad, (uint32_t)(b->rkpos - page) + 2 * (rr - 1));
  } else {
    bump16(bad, (uint32_t)(b->rtpos - page) + 2 * (rr - 1));
  }
}

static void restart_damage(tu_rng *r, int vary) {
  shape s = {"pk", 36, 'A', 16, 16, 0, 1, 1, 1, 64, 0};
  ref_term *v;
  uint32_t n;
  gen_terms(r, &s, 400, &v, &n);
  for (uint32_t i = 0; i < n; i++) { /* inline values: the tails come with the terms */
    free(v[i].val);
    v[i].vlen = vary ? 1 + (uint32_t)tu_below(r, 6) : 4;
    v[i].val = malloc(v[i].vlen + 1);
    tu_fill(r, v[i].val, v[i].vlen);
  }
  tern_tb_field f = {.threshold = 1, .inline_max = 64, .has_values = 1, .max_doc = UINT32_MAX};
  tern_tb_builder *bld;
  assert_int_equal(tern_tb_builder_new(&bld, 8), TERN_OK);
  tern_tb_builder_start(bld, &f);
  uint32_t cnt = 0;
  for (; cnt < n; cnt++) {
    tern_tb_input in;
    input_of(&v[cnt], &in);
    if (tern_tb_add(bld, &in) == 1) break;
  }
  uint8_t page[TERN_TB_PAGE], bad[TERN_TB_PAGE];
  assert_int_equal(tern_tb_finish(bld, page), TERN_OK);
  tern_tb_block b;
  assert_int_equal(tern_tb_open(&b, page, &f, cnt, "test", 0), TERN_OK);
  assert_true(b.nrestarts >= 3);
  assert_int_equal(b.rtpos != NULL, vary); /* tail positions stored only when they vary */
  for (int pair = 0; pair < 2; pair++) {
    tern_tb_tables(&b);
    b.pair = NULL;
    if (pair) tern_tb_use_pairs(&b, &g_pairs, 1);
    assert_int_equal(walk_batches(&b), TERN_NOTFOUND); /* intact: every entry, then no more */
  }
  for (uint32_t rr = 1; rr < b.nrestarts; rr++)
    for (int kind = 0; kind < 2 + vary; kind++)
      for (int pair = 0; pair < 2; pair++) {
        memcpy(bad, page, TERN_TB_PAGE);
        damage_restart(bad, &b, page, rr, kind);
        tern_tb_block d;
        assert_int_equal(tern_tb_open(&d, bad, &f, cnt, "test", 0), TERN_OK);
        tern_tb_tables(&d);
        if (pair) tern_tb_use_pairs(&d, &g_pairs, 1);
        assert_int_equal(walk_batches(&d), TERN_ECORRUPT);
      }
  tern_tb_builder_free(bld);
  free_terms(v, n);
}

static void test_batch_restart_damage(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, tu_seed() ^ 0xda3a6e);
  restart_damage(&r, 0); /* one value length: uniform tails */
  restart_damage(&r, 1); /* lengths 1 to 6: a value-length column */
}

/* A primary-key block without values whose key stream ends less than 8
 * bytes before the page's end (doc ids are positions: no tails at all),
 * so that a batch decodes it from a padded copy (scan_consts_of): every
 * check of check_block against the sorted keys, then damaged pages.
 * Blocks are filled until one ends that close to the page's end. */
static void test_batch_padded_page(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, tu_seed() ^ 0x9add3d);
  tern_tb_field f = {.threshold = 1, .inline_max = 64, .has_values = 0, .max_doc = UINT32_MAX};
  uint32_t tight = 0;
  for (int round = 0; round < 200 && tight < 3; round++) {
    shape s = {"pk-novalues", 36, 'A', 16, 16, 0, 1, 1, 0, 64, 0};
    ref_term *v;
    uint32_t n;
    gen_terms(&r, &s, 700, &v, &n);
    tern_tb_builder *bld;
    assert_int_equal(tern_tb_builder_new(&bld, 1 + (uint32_t)tu_below(&r, 16)), TERN_OK);
    tern_tb_builder_start(bld, &f);
    uint32_t cnt = 0;
    for (; cnt < n; cnt++) {
      v[cnt].docs[0] = cnt; /* doc ids equal to positions: no doc column */
      tern_tb_input in;
      input_of(&v[cnt], &in);
      if (tern_tb_add(bld, &in) == 1) break;
    }
    assert_true(cnt < n); /* the block is full */
    uint8_t *page = malloc(TERN_TB_PAGE);
    assert_int_equal(tern_tb_finish(bld, page), TERN_OK);
    tern_tb_block b;
    assert_int_equal(tern_tb_open(&b, page, &f, cnt, "test", 0), TERN_OK);
    assert_int_equal(b.tail_bits, 0);
    if (b.tails_start / 8 + 8 > TERN_TB_PAGE) {
      tight++;
      check_block(&r, page, &f, v, cnt, &v[cnt]);
      fuzz_block(&r, page, &f, v, cnt);
    }
    free(page);
    tern_tb_builder_free(bld);
    free_terms(v, n);
  }
  print_message("blocks ending within 8 bytes of the page: %u\n", tight);
  assert_true(tight > 0);
}

static void test_long_terms(void **state) {
  (void)state;
  shape s = {"long", 4, 'x', 1, 1024, 0, 8, 64, 0, 64, 0};
  run_shape(&s, 300, TERN_TB_RESTART);
  shape p = {"shared-prefix", 3, 'a', 900, 1024, 890, 8, 64, 1, 1024, 0};
  run_shape(&p, 300, 4);
  /* a 1024-byte term with a 1024-byte value and 64 docs still fits */
  shape big = {"max-entry", 256, 0, 1024, 1024, 0, 64, 64, 1, 1024, 0};
  run_shape(&big, 20, 2);
}

static void test_exact_fill(void **state) {
  (void)state;
  /* Identical entries of growing count: the block is filled to the bit,
   * every size from nearly empty to full passes through the fit test. */
  tern_tb_field f = {.threshold = 1, .inline_max = 64, .has_values = 0, .max_doc = UINT32_MAX};
  tern_tb_builder *b;
  /* Restart 16: the next entry that does not fit is a coded one (the
   * bound below is two coded entries; a plain restart key is larger). */
  assert_int_equal(tern_tb_builder_new(&b, 16), TERN_OK);
  tern_tb_builder_start(b, &f);
  uint8_t page[TERN_TB_PAGE];
  uint32_t n = 0;
  for (;; n++) {
    uint8_t t[4] = {(uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n, 7};
    uint32_t doc = n;
    tern_tb_input in = {.term = t, .len = 4, .df = 1, .docs = &doc};
    int rc = tern_tb_add(b, &in);
    if (rc == 1) break;
    assert_int_equal(rc, 0);
  }
  assert_int_equal(tern_tb_finish(b, page), TERN_OK);
  tern_tb_block blk;
  assert_int_equal(tern_tb_open(&blk, page, &f, n, "t", 0), TERN_OK);
  assert_int_equal(blk.tail_bits, 0); /* doc ids equal to positions cost nothing */
  assert_true(blk.used_bits > 8 * TERN_TB_PAGE - 40); /* less than 2 entries left */
  tern_tb_builder_free(b);
}

/* Builds one block of v[0..n) (all must fit) and checks it. */
static void one_block(tu_rng *r, ref_term *v, uint32_t n, uint32_t restart, const tern_tb_field *f) {
  tern_tb_builder *b;
  assert_int_equal(tern_tb_builder_new(&b, restart), TERN_OK);
  tern_tb_builder_start(b, f);
  for (uint32_t i = 0; i < n; i++) {
    tern_tb_input in;
    input_of(&v[i], &in);
    assert_int_equal(tern_tb_add(b, &in), 0);
  }
  uint8_t *page = malloc(TERN_TB_PAGE);
  assert_int_equal(tern_tb_finish(b, page), TERN_OK);
  check_block(r, page, f, v, n, NULL);
  fuzz_block(r, page, f, v, n);
  free(page);
  tern_tb_builder_free(b);
}

/* One entry: terms of 1 to 1024 bytes, with NUL and 0xff bytes, one doc. */
static void test_one_entry(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0x0e1);
  tern_tb_field f = {.threshold = 1, .inline_max = 64, .has_values = 1, .max_doc = UINT32_MAX};
  static const uint32_t lens[] = {1, 2, 7, 8, 9, 255, 256, 1023, 1024};
  for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
    uint8_t t[TERN_TB_TERM_MAX];
    tu_fill(&r, t, lens[k]);
    t[0] = k % 2 ? 0 : 0xff;
    uint32_t doc = (uint32_t)tu_below(&r, 1000);
    uint8_t val[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    ref_term v = {.t = t, .len = lens[k], .df = 1, .docs = &doc, .vlen = 8, .val = val};
    for (uint32_t restart = 1; restart <= 255; restart += 254) one_block(&r, &v, 1, restart, &f);
  }
}

/* A block of exactly 4096 entries (the most), doc ids equal to ordinals:
 * four characters of eight symbols, each term one more; the 4097th entry
 * is refused. */
static void test_max_entries(void **state) {
  (void)state;
  tu_rng r;
  tu_rng_init(&r, 0x4096);
  tern_tb_field f = {.threshold = 1, .inline_max = 64, .has_values = 0, .max_doc = UINT32_MAX};
  uint32_t n = TERN_TB_MAX_ENTRIES;
  ref_term *v = calloc(n + 1, sizeof *v);
  uint8_t *chars = malloc(4 * (n + 1));
  uint32_t *docs = malloc((n + 1) * sizeof *docs);
  for (uint32_t i = 0; i <= n; i++) {
    for (uint32_t k = 0; k < 4; k++) chars[4 * i + k] = (uint8_t)('a' + ((i >> (3 * (3 - k))) & 7));
    if (i == n) chars[4 * i] = 'z'; /* above every other */
    docs[i] = i;
    v[i] = (ref_term){.t = chars + 4 * i, .len = 4, .df = 1, .docs = docs + i};
  }
  one_block(&r, v, n, 255, &f);
  tern_tb_builder *b;
  assert_int_equal(tern_tb_builder_new(&b, 255), TERN_OK);
  tern_tb_builder_start(b, &f);
  for (uint32_t i = 0; i <= n; i++) {
    tern_tb_input in;
    input_of(&v[i], &in);
    assert_int_equal(tern_tb_add(b, &in), i < n ? 0 : 1);
  }
  assert_int_equal(tern_tb_count(b), n);
  tern_tb_builder_free(b);
  free(v);
  free(chars);
  free(docs);
}

/* Primary keys as the segment writes them: one pulsed doc each and a
 * value of one length inline (0, 4 or 17 bytes) or no values, so the
 * lookup decodes the found entry's tail by its short path.  Checked
 * against the reference, then damaged: with max_doc at the block's
 * largest doc id, and with the block's used length cut short of the last
 * tail, the lookups of those entries give TERN_ECORRUPT — never a doc or
 * a value — and the others still their own. */
/* Walks a primary-key block (one doc, inline values of one length) by
 * batches of terms with their tails: TERN_OK after its n entries, none of
 * them with doc `bad`, or the first error. */
static int scan_batches(tern_tb_block *b, uint32_t n, uint32_t bad) {
  static tern_tb_keys k;
  uint8_t term[TERN_TB_TERM_MAX];
  tern_tb_iter it;
  tern_tb_tables(b);
  int rc = tern_tb_iter_restart(b, &it, 0, term);
  uint32_t seen = 0;
  while (rc == TERN_OK && (rc = tern_tb_iter_keys(b, &it, term, &k, TERN_TB_KEYS_MAX)) == TERN_OK) {
    assert_true(k.tails);
    for (uint32_t j = 0; j < k.n; j++, seen++) {
      assert_true(tern_tb_keys_doc(&k, j) != bad);
      tern_tb_keys_skip_tail(&k, j, &it);
    }
  }
  if (rc == TERN_NOTFOUND) {
    assert_int_equal(seen, n);
    return TERN_OK;
  }
  return rc;
}

static void test_primary_keys(void **state) {
  (void)state;
  static const uint32_t vlens[] = {0, 4, 17};
  for (uint32_t k = 0; k <= 3; k++) {
    tu_rng r;
    tu_rng_init(&r, 0x9c0 + k);
    int values = k < 3;
    shape s = {"pk", 36, 'A', 16, 16, 0, 1, 1, values, 64, 0};
    ref_term *v;
    uint32_t n;
    gen_terms(&r, &s, 600, &v, &n);
    for (uint32_t i = 0; i < n; i++) {
      free(v[i].val);
      v[i].val = NULL;
      v[i].vlen = values ? vlens[k] : 0;
      if (values) {
        v[i].val = malloc(v[i].vlen + 1);
        tu_fill(&r, v[i].val, v[i].vlen);
      }
      v[i].docs[0] = (uint32_t)tu_below(&r, 1u << 20);
    }
    tern_tb_field f = {.threshold = 1, .inline_max = 64, .has_values = (uint32_t)values,
                       .max_doc = UINT32_MAX};
    tern_tb_builder *b;
    assert_int_equal(tern_tb_builder_new(&b, TERN_TB_RESTART), TERN_OK);
    tern_tb_builder_start(b, &f);
    uint32_t cnt = 0;
    for (; cnt < n; cnt++) {
      tern_tb_input in;
      input_of(&v[cnt], &in);
      int rc = tern_tb_add(b, &in);
      assert_true(rc == 0 || rc == 1);
      if (rc == 1) break;
    }
    uint8_t *page = malloc(TERN_TB_PAGE);
    assert_int_equal(tern_tb_finish(b, page), TERN_OK);
    check_block(&r, page, &f, v, cnt, cnt < n ? &v[cnt] : NULL);
    tern_tb_block blk;
    assert_int_equal(tern_tb_open_lookup(&blk, page, &f, cnt, "pk", 0), TERN_OK);
    assert_true(blk.tail_bits >= 0 && blk.df_min == 1); /* the short path's block */
    uint32_t top = 0, docs[TERN_TB_DOCS_MAX], idx;
    for (uint32_t i = 0; i < cnt; i++)
      if (v[i].docs[0] > top) top = v[i].docs[0];
    tern_tb_field low = f;
    low.max_doc = top;
    tern_tb_block lb;
    assert_int_equal(tern_tb_open_lookup(&lb, page, &low, cnt, "pk", 0), TERN_OK);
    for (uint32_t i = 0; i < cnt; i++) {
      tern_tb_tail t = {.docs = docs};
      tern_tb_iter it;
      int rc = tern_tb_lower_bound(&lb, v[i].t, v[i].len, &idx, &it, &t);
      assert_int_equal(rc, v[i].docs[0] == top ? TERN_ECORRUPT : 1);
      if (rc == 1) check_tail(&v[i], &lb, &t);
    }
    /* A scan by batches, whose tails come with their terms here, meets
     * that doc too: TERN_ECORRUPT once its batch is decoded. */
    assert_int_equal(scan_batches(&lb, cnt, top), TERN_ECORRUPT);
    assert_non_null(strstr(tern_errmsg(), "pk: terms block 0: doc id out of range"));
    assert_int_equal(scan_batches(&blk, cnt, UINT32_MAX), TERN_OK);
    /* The used length one bit short of the last tail's end. */
    uint32_t used = blk.used_bits;
    if (blk.tail_bits > 0) {
      uint8_t *cut = malloc(TERN_TB_PAGE);
      memcpy(cut, page, TERN_TB_PAGE);
      uint32_t end = blk.tails_start + cnt * (uint32_t)blk.tail_bits;
      assert_true(end <= used);
      cut[8] = (uint8_t)((end - 1) & 0xff);
      cut[9] = (uint8_t)((end - 1) >> 8);
      tern_tb_block cb;
      if (tern_tb_open_lookup(&cb, cut, &f, cnt, "pk", 0) == TERN_OK)
        for (uint32_t i = 0; i < cnt; i++) {
          tern_tb_tail t = {.docs = docs};
          tern_tb_iter it;
          int rc = tern_tb_lower_bound(&cb, v[i].t, v[i].len, &idx, &it, &t);
          assert_int_equal(rc, i + 1 == cnt ? TERN_ECORRUPT : 1);
          if (rc == 1) check_tail(&v[i], &cb, &t);
        }
      if (tern_tb_open_lookup(&cb, cut, &f, cnt, "pk", 0) == TERN_OK)
        assert_int_equal(scan_batches(&cb, cnt, UINT32_MAX), TERN_ECORRUPT);
      free(cut);
    }
    print_message("pk (values %d of %u bytes): %u entries in the block\n", values, v[0].vlen, cnt);
    free(page);
    tern_tb_builder_free(b);
    free_terms(v, n);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_base36_keys), cmocka_unit_test(test_binary_mixed),
      cmocka_unit_test(test_alphabets),   cmocka_unit_test(test_long_terms),
      cmocka_unit_test(test_exact_fill),  cmocka_unit_test(test_tied_heads),
      cmocka_unit_test(test_one_entry),   cmocka_unit_test(test_max_entries),
      cmocka_unit_test(test_primary_keys), cmocka_unit_test(test_group_sizes),
      cmocka_unit_test(test_batch_random), cmocka_unit_test(test_batch_restart_damage),
      cmocka_unit_test(test_batch_padded_page),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
