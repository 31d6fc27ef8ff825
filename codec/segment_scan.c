/* SPDX-License-Identifier: MIT */
/*
 * segment_scan.c — backward stepping through a field's terms by restart
 * runs (segment_scan.h).
 */
#include "codec/segment_scan.h"
#include "codec/segment_internal.h"
#include "codec/status.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* One decoded entry of a run: small, so that a run's entries share cache
 * lines (a primary key's pulsed docs are one id; any entry's at most
 * TERN_TB_DOCS_MAX, kept in run->docs). */
struct tern_seg_run_entry {
  uint32_t toff;        /* the term's bytes in run->terms */
  uint32_t doff;        /* its pulsed doc ids in run->docs */
  tern_tb_iter after;   /* decoding position after the entry */
  tern_tb_tail tail;    /* tail.docs: set on use (run->docs moves as it grows) */
};

void tern_seg_run_init(tern_seg_run *r) {
  memset(r, 0, sizeof *r);
  r->block_no = -1;
}

void tern_seg_run_release(tern_seg_run *r) {
  free(r->ents);
  free(r->terms);
  free(r->keys);
  free(r->docs);
  tern_seg_run_init(r);
}

/* Room in r->docs for an entry's pulsed docs after `used` ids. */
static int run_reserve_docs(tern_seg_run *r, size_t used) {
  size_t need = used + TERN_TB_DOCS_MAX;
  if (need <= r->dcap) return TERN_OK;
  size_t cap = 2 * need;
  uint32_t *d = realloc(r->docs, cap * sizeof *d);
  if (!d) return tern_fail(TERN_ENOMEM, "reverse scan: out of memory");
  r->docs = d;
  r->dcap = cap;
  return TERN_OK;
}

static int run_reserve(tern_seg_run *r, uint32_t n, size_t tbytes) {
  if (n > r->cap) {
    tern_seg_run_entry *e = realloc(r->ents, n * sizeof *e);
    if (!e) return tern_fail(TERN_ENOMEM, "reverse scan: out of memory");
    r->ents = e;
    r->cap = n;
  }
  if (tbytes > r->tcap) {
    uint8_t *t = realloc(r->terms, tbytes);
    if (!t) return tern_fail(TERN_ENOMEM, "reverse scan: out of memory");
    r->terms = t;
    r->tcap = tbytes;
  }
  return TERN_OK;
}

/* Entries j0 .. j0 + k->n - 1 of the run from batch k: each term's bytes,
 * its tail (from the batch, or decoded now) and the position after it —
 * the key side after its term (kend, len), the tail side after its tail. */
static int run_take(tern_seg_cursor *c, tern_seg_run *r, const tern_tb_keys *k, uint32_t j0,
                    tern_tb_iter *it, size_t *used, size_t *dused) {
  const tern_tb_block *b = &c->blk;
  for (uint32_t j = 0; j < k->n; j++) {
    tern_seg_run_entry *en = &r->ents[j0 + j];
    TERN_TRY(run_reserve_docs(r, *dused));
    en->doff = (uint32_t)*dused;
    en->tail = (tern_tb_tail){.docs = r->docs + *dused};
    if (k->tails) {
      tern_tb_keys_tail(b, k, j, &en->tail);
      tern_tb_keys_skip_tail(k, j, it);
    } else {
      TERN_TRY(tern_tb_iter_tail(b, it, &en->tail));
    }
    TERN_TRY(run_reserve(r, r->cap, *used + k->len[j]));
    memcpy(r->terms + *used, k->bytes + k->off[j], k->len[j]);
    en->toff = (uint32_t)*used;
    en->after = *it;
    en->after.kpos = k->kend[j];
    en->after.len = k->len[j];
    *used += k->len[j];
    *dused += en->tail.pulsed ? en->tail.df : 0;
  }
  return TERN_OK;
}

/* After a keyed window of n entries whose terms took `used` bytes of
 * the batch: r->span grows by a quarter, up to the entries half a batch
 * would hold at their mean length (terms at least half as long as where
 * the windows shrank).  Both margins keep windows over terms of varied
 * lengths from growing only to fail at the next longer ones, a batch
 * decoded for nothing: scanning 1M paths and 1M varied keys backwards
 * (tern-bench api --ops rscan), 66 windows of 48,698 failed; growing to
 * three quarters of a batch at once, 668 (paths 0.7 ns a key slower). */
static void window_regrow(tern_seg_run *r, uint32_t n, uint32_t used) {
  uint32_t fit = used ? (uint32_t)((uint64_t)TERN_TB_KEYS_FILL / 2 * n / used) : TERN_TB_KEYS_MAX;
  uint32_t step = r->span + r->span / 4 + 1;
  if (fit > step) fit = step;
  if (fit > r->span) r->span = fit < TERN_TB_KEYS_MAX ? fit : TERN_TB_KEYS_MAX;
}

/* Tries entries first .. target of the cursor's block (first a restart,
 * its tails a primary key's: tern_tb_batch_tails) as a keyed window: one
 * batch, decoded with its tails.  1 when it is (r then holds it), 0 when
 * the terms fill the batch before target (r->span then shrinks to what
 * one held), <0 error.  Shorter terms let the next windows grow again
 * (window_regrow): a scan that met long terms goes back to whole windows
 * past them. */
static int window_decode(tern_seg_cursor *c, tern_seg_run *r, uint32_t first, uint32_t target) {
  tern_tb_block *b = &c->blk;
  uint32_t n = target - first + 1;
  tern_tb_iter it;
  TERN_TRY(tern_tb_iter_restart(b, &it, first / b->restart, c->term));
  int rc = tern_tb_iter_keys(b, &it, c->term, r->keys, n);
  if (rc == TERN_NOTFOUND)
    rc = tern_fail(TERN_ECORRUPT, "%s: block %llu ends before entry %u", b->what,
                   (unsigned long long)b->block_no, target);
  TERN_TRY(rc);
  assert(r->keys->tails);
  const tern_tb_keys *k = r->keys;
  if (k->n < n) { /* long terms: the next windows hold what this batch held */
    r->span = k->n;
    return 0;
  }
  if (r->span) window_regrow(r, n, (uint32_t)k->off[n - 1] + k->len[n - 1]);
  r->keyed_n = n;
  return 1;
}

/* The first entry of the keyed window ending at target: the restart
 * that leaves the most entries up to r->span, or, when the restart
 * interval is longer than that, target + 1 (no window). */
static uint32_t window_first(const tern_tb_block *b, const tern_seg_run *r, uint32_t target) {
  uint32_t span = r->span ? r->span : TERN_TB_KEYS_MAX, R = b->restart;
  uint32_t lo = target + 1 > span ? target + 1 - span : 0;
  uint32_t first = (lo + R - 1) / R * R;
  return first <= target ? first : target + 1;
}

/* Decodes the restart run of entry `target` of the cursor's block, from
 * its restart through target, into r: by the batches a forward scan
 * decodes (tern_tb_iter_keys, with the pair table once the block has
 * earned it), c->term the scratch term.  A primary key's block, a keyed
 * window of runs instead (window_decode). */
static int run_decode(tern_seg_cursor *c, tern_seg_run *r, uint32_t target) {
  tern_tb_block *b = &c->blk;
  uint32_t run = target / b->restart, first = run * b->restart, n = target - first + 1;
  r->block_no = -1;
  r->keyed_n = 0;
  TERN_TRY(run_reserve(r, n, 0));
  if (!r->keys && !(r->keys = calloc(1, sizeof *r->keys))) /* zeroed: a batch may read past */
    return tern_fail(TERN_ENOMEM, "reverse scan: out of memory");
  uint32_t wfirst = window_first(b, r, target);
  int windowed = wfirst <= target && tern_tb_batch_tails(b), keyed = 0;
  if (!b->tables) tern_seg_step_tables(c); /* once a block, as a forward step's */
  tern_seg_use_pairs(c, windowed ? target - wfirst + 1 : n);
  if (windowed) TERN_TRY(keyed = window_decode(c, r, wfirst, target));
  if (keyed) {
    r->seg_uid = c->seg_uid;
    r->block_no = c->block_no;
    r->first = wfirst;
    r->n = r->keyed_n;
    return TERN_OK;
  }
  tern_tb_iter it;
  TERN_TRY(tern_tb_iter_restart(b, &it, run, c->term));
  size_t used = 0, dused = 0;
  for (uint32_t got = 0; got < n; got += r->keys->n) {
    uint32_t want = n - got < TERN_TB_KEYS_MAX ? n - got : TERN_TB_KEYS_MAX;
    int rc = tern_tb_iter_keys(b, &it, c->term, r->keys, want);
    if (rc == TERN_NOTFOUND)
      rc = tern_fail(TERN_ECORRUPT, "%s: block %llu ends before entry %u", b->what,
                     (unsigned long long)b->block_no, target);
    TERN_TRY(rc);
    TERN_TRY(run_take(c, r, r->keys, got, &it, &used, &dused));
  }
  r->seg_uid = c->seg_uid;
  r->block_no = c->block_no;
  r->first = first;
  r->n = n;
  return TERN_OK;
}

/* Entry first + j of r's keyed window's tail, its docs into docs. */
static void window_tail(const tern_seg_cursor *c, const tern_seg_run *r, uint32_t j,
                        uint32_t *docs, tern_tb_tail *t) {
  *t = (tern_tb_tail){.docs = docs};
  tern_tb_keys_tail(&c->blk, r->keys, j, t);
}

/* Makes entry `index` of the cursor's block (inside r's run) the result. */
static void run_emit(tern_seg_cursor *c, const tern_seg_run *r, uint32_t index,
                     tern_term_entry *e) {
  if (r->keyed_n) { /* as tern_seg_prev_keyed moves c, then the entry filled */
    const uint8_t *term;
    size_t len;
    tern_tb_tail t;
    tern_seg_run_move(c, r, index, &term, &len);
    window_tail(c, r, index - r->first, e->docs, &t);
    tern_seg_fill_entry(c, index, &t, e);
    return;
  }
  const tern_seg_run_entry *en = &r->ents[index - r->first];
  tern_tb_tail t = en->tail;
  uint32_t nd = t.pulsed ? t.df : 0;
  if (nd > TERN_TB_DOCS_MAX) nd = TERN_TB_DOCS_MAX;
  memcpy(e->docs, r->docs + en->doff, nd * sizeof *e->docs);
  t.docs = e->docs;
  memcpy(c->term, r->terms + en->toff, en->after.len);
  c->it = en->after;
  tern_seg_fill_entry(c, index, &t, e);
}

int tern_seg_run_value_copy(const tern_seg *s, tern_seg_cursor *c, const tern_seg_run *r,
                            tern_slice *value) {
  uint32_t j = c->entry - r->first, docs[TERN_TB_DOCS_MAX];
  assert(j < r->keyed_n && r->block_no == c->block_no && r->seg_uid == c->seg_uid);
  tern_tb_tail t;
  window_tail(c, r, j, docs, &t);
  tern_term_entry e = {.value_len = t.vlen, .value_inline = t.vinline, .value_off = t.voff};
  return tern_seg_value(s, &e, c, value);
}

static int entry_back(tern_seg_cursor *c, tern_seg_run *r, uint32_t index, tern_term_entry *e) {
  if (r->seg_uid != c->seg_uid || r->block_no != c->block_no || index < r->first ||
      index >= r->first + r->n)
    TERN_TRY(run_decode(c, r, index));
  run_emit(c, r, index, e);
  return TERN_OK;
}

int tern_seg_last_term(const tern_seg *s, const tern_seg_field *f, tern_seg_cursor *c,
                       tern_seg_run *r, tern_term_entry *e) {
  if (f->nterms == 0 || f->nblocks == 0) return TERN_NOTFOUND;
  TERN_TRY(tern_seg_load_block(s, f, f->nblocks - 1, c));
  if (c->blk.n == 0) return tern_fail(TERN_ECORRUPT, "%s: empty block", c->blk.what);
  return entry_back(c, r, c->blk.n - 1, e);
}

int tern_seg_prev_term(const tern_seg *s, tern_seg_cursor *c, tern_seg_run *r,
                       tern_term_entry *e) {
  if (c->seg != s || c->seg_uid != s->uid || c->block_no < 0)
    return tern_fail(TERN_EINVAL, "prev_term: the cursor holds no position in this segment");
  uint32_t index = c->entry;
  if (index == 0) {
    if (c->field_block == 0) return TERN_NOTFOUND;
    /* a step back into a block, as next_term_slow's forwards: a scan (a
     * positioning alone, last or seek_floor's own block, asks for none) */
    tern_seg_scan_behind(s, c->field, c->field_block - 1, c);
    TERN_TRY(tern_seg_load_block(s, c->field, c->field_block - 1, c));
    if (c->blk.n == 0) return tern_fail(TERN_ECORRUPT, "%s: empty block", c->blk.what);
    index = c->blk.n;
  }
  return entry_back(c, r, index - 1, e);
}

/* One block read, as a forward seek: the block the index names for the
 * term holds the answer, but when the term sorts before its first entry
 * (then the answer is the previous block's last). */
int tern_seg_seek_floor(const tern_seg *s, const tern_seg_field *f, const void *term, size_t len,
                        tern_seg_cursor *c, tern_seg_run *r, tern_term_entry *e) {
  if (!term || len < 1 || len > TERN_KEY_MAX)
    return tern_fail(TERN_EINVAL, "seek_floor: term of %zu bytes (1 to %u)", len, TERN_KEY_MAX);
  if (f->nterms == 0) return TERN_NOTFOUND;
  uint32_t index;
  int rc = tern_seg_block_lower_bound(s, f, term, len, c, e, &index);
  if (rc != 0) return rc < 0 ? rc : TERN_OK;
  if (index > 0) return entry_back(c, r, index - 1, e);
  c->entry = 0; /* the term sorts before the block: the previous block's last */
  return tern_seg_prev_term(s, c, r, e);
}
