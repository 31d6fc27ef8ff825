/* SPDX-License-Identifier: MIT */
/*
 * cursor.c — key cursors over a snapshot (tern.h, "ordered").
 *
 * A cursor merges its snapshot's sources — each segment's primary-key
 * field and the buffer view — by a linear min (or max, backwards) over
 * them: a snapshot has few segments, and a heap would cost more than it
 * saves.  The pick also keeps the runner-up (`second`), so a step that
 * leaves the shown source first costs one comparison (step_top).  Every source stands on a live document (tern_src), and a
 * snapshot holds at most one live document per key, so the merge needs no
 * version logic; should two sources still show one key, the newest
 * (highest source) is shown and both move on.
 *
 * Bounds are kept as one half-open range [lo, hi): `from` and the prefix
 * give lo, `to` and the prefix's successor give hi.  Changing direction
 * re-seeks every source from the current key, as RocksDB's merging
 * iterator does.
 *
 * A scan of one segment — the only source with keys left forwards, none
 * of them deleted — is most scans of a compacted index, and for it
 * tern_cursor_next goes straight to the codec's step (c->fast): no merge,
 * no deletion check, only the upper bound's compare when there is one;
 * backwards, tern_cursor_prev likewise (c->back), through the keyed
 * windows the codec decodes a reverse scan by (codec/segment_scan.h).
 */
#include "engine/read/key_range.h"
#include "engine/state/index.h"

#include "codec/segment_scan.h"
#include "codec/status.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

struct tern_cursor {
  tern_snapshot *snap;
  size_t n;
  tern_src *src; /* segments oldest first, then the buffer */
  tern_key_range range;
  uint8_t cur[TERN_KEY_MAX];
  size_t curlen;
  int empty;
  int dir;    /* +1, -1, or 0 when unpositioned */
  size_t top; /* the source shown */
  const tern_src *shown; /* &src[top] */
  size_t nvalid; /* sources with keys left in direction dir (1: top alone, "solo") */
  size_t second; /* unless solo: the source that would be shown next, top aside */
  int tie;       /* unless solo: second shows top's key too */
  int counted; /* in snap->iters */
  tern_src *fast;      /* forwards on one segment source without deletions, or NULL */
  tern_src *back;      /* the same backwards, or NULL */
  const tern_seg *fseg; /* fast's or back's segment */
  int keyed;            /* fast's entry came from a batch with tails (tern_seg_next_keyed,
                         * fast->e not filled, or tern_seg_next_term): its value is
                         * tern_seg_keyed_value's; back's from a keyed window
                         * (tern_seg_prev_keyed, back->e not filled): its value is
                         * tern_seg_run_value's (0 whenever both are NULL) */
};

static int slice_ok(const tern_slice *s) {
  return !s->data || s->len <= TERN_KEY_MAX;
}

/* Frees the cursor; the snapshot's count of open handles drops when counted. */
static void cursor_free(tern_cursor *c) {
  for (size_t i = 0; i < c->n; i++)
    tern_src_release(&c->src[i]);
  free(c->src);
  if (c->counted) atomic_fetch_sub(&c->snap->iters, 1);
  free(c);
}

int tern_cursor_open(tern_cursor **out, tern_snapshot *snap, const tern_bounds *bounds) {
  tern_clear_error();
  if (out) *out = NULL;
  if (!out || !snap) return tern_fail(TERN_EINVAL, "tern_cursor_open: NULL argument");
  if (bounds && (!slice_ok(&bounds->from) || !slice_ok(&bounds->to) ||
                 !slice_ok(&bounds->prefix) || (bounds->prefix.len && !bounds->prefix.data)))
    return tern_fail(TERN_EINVAL, "tern_cursor_open: bound longer than %u bytes", TERN_KEY_MAX);
  tern_cursor *c = calloc(1, sizeof *c);
  if (!c) return tern_fail(TERN_ENOMEM, "cursor: out of memory");
  c->snap = snap;
  const tern_state *st = snap->st;
  c->src = calloc(st->nslots + 1, sizeof *c->src);
  int rc = c->src ? TERN_OK : tern_fail(TERN_ENOMEM, "cursor: out of memory");
  for (size_t i = 0; rc == TERN_OK && i <= st->nslots; i++) {
    rc = tern_src_init(&c->src[i], i < st->nslots ? &st->slots[i] : NULL, snap->buf);
    if (rc == TERN_OK) c->n = i + 1;
  }
  /* An empty buffer view (the snapshot's, fixed for its life) is no
   * source: a compacted index's cursor then merges one segment alone,
   * and every seek's pick looks at it only. */
  if (rc == TERN_OK && snap->buf->n == 0) {
    assert(c->n == st->nslots + 1 && !c->src[c->n - 1].slot); /* the buffer's, last */
    c->n--;
  }
  if (rc != TERN_OK) {
    cursor_free(c);
    return rc;
  }
  tern_key_range_set(&c->range, bounds);
  c->empty = tern_key_range_empty(&c->range);
  atomic_fetch_add(&snap->iters, 1); /* tern_snapshot_close refuses while it is open */
  c->counted = 1;
  *out = c;
  return TERN_OK;
}

int tern_cursor_close(tern_cursor *c) {
  tern_clear_error();
  if (c) cursor_free(c);
  return TERN_OK;
}

/* Whether s's key lies inside the bounds on the side direction dir runs to. */
static int within(const tern_cursor *c, const tern_src *s, int dir) {
  if (dir > 0) return tern_key_range_below_hi(&c->range, s->key, s->klen);
  return tern_key_cmp(s->key, s->klen, c->range.lo, c->range.lolen) >= 0;
}

/* The cursor stands on no key (c->dir 0), so no step takes the fast path. */
static void unposition(tern_cursor *c) {
  c->dir = 0;
  c->fast = NULL;
  c->back = NULL;
  c->keyed = 0;
}

/* Sets c->fast (forwards) or c->back when the next steps may skip the
 * merge: top the only source with keys left, a segment whose every entry
 * is live. */
static void set_fast(tern_cursor *c) {
  tern_src *t = &c->src[c->top];
  int ok = c->nvalid == 1 && t->slot && !t->slot->live;
  c->fast = ok && c->dir > 0 ? t : NULL;
  c->back = ok && c->dir < 0 ? t : NULL;
  c->fseg = ok ? t->slot->ref->seg : NULL;
  c->keyed = 0; /* t->e is the entry shown */
}

/* Picks the source to show in direction dir, and checks the bounds; also
 * the one that would come next (second) and whether it shows the same
 * key (tie), for step_top. */
static int pick(tern_cursor *c, int dir) {
  size_t best = c->n, second = c->n, nvalid = 0;
  int tie = 0;
  for (size_t i = 0; i < c->n; i++) {
    const tern_src *s = &c->src[i];
    if (!s->valid) continue;
    nvalid++;
    if (best == c->n) {
      best = i;
      continue;
    }
    int cmp = tern_key_cmp(s->key, s->klen, c->src[best].key, c->src[best].klen);
    if (cmp * dir <= 0) { /* ties: the newer source */
      second = best;
      tie = cmp == 0;
      best = i;
    } else if (second == c->n ||
               tern_key_cmp(s->key, s->klen, c->src[second].key, c->src[second].klen) * dir < 0) {
      second = i; /* after best, strictly: no tie */
      tie = 0;
    }
  }
  unposition(c);
  if (best == c->n || !within(c, &c->src[best], dir)) return TERN_NOTFOUND;
  c->top = best;
  c->shown = &c->src[best];
  c->dir = dir;
  c->nvalid = nvalid;
  c->second = second;
  c->tie = tie;
  set_fast(c);
  return TERN_OK;
}

static int fail_reset(tern_cursor *c, int rc) {
  unposition(c);
  return rc;
}

/* Every source on its first key >= key (> key when strict). */
static int position_ge(tern_cursor *c, const void *key, size_t klen, int strict) {
  unposition(c);
  if (c->empty) return TERN_NOTFOUND;
  for (size_t i = 0; i < c->n; i++) {
    int rc = tern_src_seek_ge(&c->src[i], key, klen, strict);
    if (rc != TERN_OK) return fail_reset(c, rc);
  }
  return pick(c, 1);
}

/* Every source on its last key <= key (< key when strict; key NULL: last). */
static int position_le(tern_cursor *c, const void *key, size_t klen, int strict) {
  unposition(c);
  if (c->empty) return TERN_NOTFOUND;
  for (size_t i = 0; i < c->n; i++) {
    int rc = tern_src_seek_le(&c->src[i], key, klen, strict);
    if (rc != TERN_OK) return fail_reset(c, rc);
  }
  return pick(c, -1);
}

int tern_cursor_first(tern_cursor *c) {
  tern_clear_error();
  if (!c) return tern_fail(TERN_EINVAL, "tern_cursor_first: NULL cursor");
  return position_ge(c, c->range.lo, c->range.lolen, 0);
}

int tern_cursor_last(tern_cursor *c) {
  tern_clear_error();
  if (!c) return tern_fail(TERN_EINVAL, "tern_cursor_last: NULL cursor");
  if (c->range.has_hi) return position_le(c, c->range.hi, c->range.hilen, 1);
  return position_le(c, NULL, 0, 0);
}

static int key_ok(const void *key, size_t klen) {
  return (key || klen == 0) && klen <= TERN_KEY_MAX;
}

int tern_cursor_seek(tern_cursor *c, const void *key, size_t klen) {
  tern_clear_error();
  if (!c || !key_ok(key, klen)) return tern_fail(TERN_EINVAL, "tern_cursor_seek: bad arguments");
  if (tern_key_cmp(key, klen, c->range.lo, c->range.lolen) < 0) return tern_cursor_first(c);
  return position_ge(c, key, klen, 0);
}

int tern_cursor_seek_for_prev(tern_cursor *c, const void *key, size_t klen) {
  tern_clear_error();
  if (!c || !key_ok(key, klen))
    return tern_fail(TERN_EINVAL, "tern_cursor_seek_for_prev: bad arguments");
  if (c->range.has_hi && tern_key_cmp(key, klen, c->range.hi, c->range.hilen) >= 0)
    return tern_cursor_last(c);
  return position_le(c, key ? key : (const void *)"", klen, 0);
}

/* Steps the only source left: no other source can become valid moving
 * the same way, so there is nothing to merge (a scan of one segment). */
static int step_solo(tern_cursor *c, int dir) {
  tern_src *t = &c->src[c->top];
  int rc = tern_src_step(t, dir);
  if (rc != TERN_OK) return fail_reset(c, rc);
  if (!t->valid || !within(c, t, dir)) return fail_reset(c, TERN_NOTFOUND);
  return TERN_OK;
}

/* Steps the top source alone, where no other shows its key: the others
 * stand where they stood, so while the top's next key still comes before
 * the second's, the top stays shown, and of two sources the second is
 * shown next — one comparison a step; else the merge picks again. */
static int step_top(tern_cursor *c, int dir) {
  size_t top = c->top, second = c->second;
  tern_src *t = &c->src[top];
  const tern_src *r = &c->src[second];
  assert(c->nvalid > 1 && second != top && r->valid);
  int rc = tern_src_step(t, dir);
  if (rc != TERN_OK) return fail_reset(c, rc);
  if (!t->valid) return pick(c, dir);
  int cmp = tern_key_cmp(t->key, t->klen, r->key, r->klen) * dir;
  if (cmp >= 0) {
    if (c->nvalid > 2) return pick(c, dir);
    /* Two sources: they trade places (ties: the newer source shown). */
    c->tie = cmp == 0;
    if (!c->tie || second > top) {
      c->top = second;
      c->second = top;
      c->shown = r;
    }
  }
  if (!within(c, c->shown, dir)) return fail_reset(c, TERN_NOTFOUND);
  return TERN_OK;
}

/* Moves every source showing the current key one step in direction dir. */
static int step(tern_cursor *c, int dir) {
  if (c->nvalid == 1) return step_solo(c, dir);
  if (!c->tie) return step_top(c, dir);
  tern_src *t = &c->src[c->top];
  for (size_t i = 0; i < c->n; i++) {
    tern_src *s = &c->src[i];
    if (i == c->top || !s->valid || tern_key_cmp(s->key, s->klen, t->key, t->klen) != 0) continue;
    int rc = tern_src_step(s, dir);
    if (rc != TERN_OK) return fail_reset(c, rc);
  }
  int rc = tern_src_step(t, dir);
  if (rc != TERN_OK) return fail_reset(c, rc);
  return pick(c, dir);
}

/* Re-seeks every source strictly past the current key in direction dir. */
static int turn(tern_cursor *c, int dir) {
  const tern_src *t = &c->src[c->top];
  memcpy(c->cur, t->key, t->klen);
  c->curlen = t->klen;
  if (dir > 0) return position_ge(c, c->cur, c->curlen, 1);
  return position_le(c, c->cur, c->curlen, 1);
}

static int move(tern_cursor *c, int dir) {
  if (c->dir == 0) return dir > 0 ? tern_cursor_first(c) : tern_cursor_last(c);
  if (c->dir != dir) return turn(c, dir);
  return step(c, dir);
}

/* The fast step (c->fast, in tern_cursor_next) is step_solo forwards:
 * what tern_src_step, seg_step and settle would do on a segment with no
 * deletions, leaving the source and cursor as step_solo leaves them —
 * apart from the source's entry (t->e), which a step from the terms the
 * codec decoded ahead with their tails (most steps: tern_seg_next_keyed,
 * inline) does not fill.  Nothing reads it while c->fast stands: the
 * value is then tern_seg_keyed_value's (c->keyed), and every way out of
 * the fast path (unposition) repositions the sources before they are
 * read again. */

/* A fast step went past the upper bound: the source stays on the key. */
static int past_hi(tern_cursor *c) { return fail_reset(c, TERN_NOTFOUND); }

/* The upper bound's check of a fast step; out of line, as
 * next_fast_entry. */
static __attribute__((noinline)) int next_fast_bounded(tern_cursor *c) {
  const tern_src *t = c->fast;
  if (tern_key_range_below_hi(&c->range, t->key, t->klen)) return TERN_OK;
  return past_hi(c);
}

/* A fast step whose term was not decoded ahead with its tail (a new
 * batch, another kind of block, the end), filling the source's entry;
 * out of line, so that the inline step saves no registers. */
static __attribute__((noinline)) int next_fast_entry(tern_cursor *c) {
  tern_src *t = c->fast;
  int rc = tern_seg_next_term(c->fseg, t->sc, &t->e);
  if (rc != TERN_OK) {
    t->valid = 0; /* done (TERN_NOTFOUND) or failed */
    return fail_reset(c, rc);
  }
  /* Mostly the first entry of a new batch with tails: its value then
   * comes inline (tern_cursor_value), as a keyed step's does. */
  c->keyed = tern_seg_stepped_keyed(t->sc);
  t->key = t->e.term;
  t->klen = t->e.len;
  if (tern_key_range_below_hi(&c->range, t->key, t->klen)) return TERN_OK;
  return past_hi(c);
}

/* tern_cursor_next but for the fast step: the error state cleared, the
 * arguments checked, the merge's step. */
static __attribute__((noinline)) int next_slow(tern_cursor *c) {
  tern_clear_error();
  if (!c) return tern_fail(TERN_EINVAL, "tern_cursor_next: NULL cursor");
  return move(c, 1);
}

/* The per-key calls (next, key, value) test the error flag with their
 * fast case and take everything else out of line (a tail call), so that
 * the fast case is a leaf that saves no registers. */
int tern_cursor_next(tern_cursor *c) {
  if (TERN_LIKELY(!tern_errmsg_set && c && c->fast)) {
    tern_src *t = c->fast;
    if (!tern_seg_next_keyed(c->fseg, t->sc, &t->key, &t->klen)) return next_fast_entry(c);
    c->keyed = 1;
    return TERN_LIKELY(!c->range.has_hi) ? TERN_OK : next_fast_bounded(c);
  }
  return next_slow(c);
}

/* The fast step back (c->back) is step_solo backwards, as the fast step
 * is forwards: most steps take their entry from the codec's keyed window
 * (tern_seg_prev_keyed, inline), which leaves back->e unfilled; the rest
 * go out of line to tern_seg_prev_term. */

/* A fast step back went below the lower bound: the source stays on the key. */
static __attribute__((noinline)) int prev_back_bounded(tern_cursor *c) {
  if (within(c, c->back, -1)) return TERN_OK;
  return fail_reset(c, TERN_NOTFOUND);
}

/* A fast step back outside the keyed window (a new window, another kind
 * of block, the first key), filling the source's entry. */
static __attribute__((noinline)) int prev_back_entry(tern_cursor *c) {
  tern_src *t = c->back;
  int rc = tern_seg_prev_term(c->fseg, t->sc, t->run, &t->e);
  if (rc != TERN_OK) {
    t->valid = 0; /* done (TERN_NOTFOUND) or failed */
    return fail_reset(c, rc);
  }
  c->keyed = 0; /* t->e is the entry shown */
  t->key = t->e.term;
  t->klen = t->e.len;
  return prev_back_bounded(c);
}

static __attribute__((noinline)) int prev_slow(tern_cursor *c) {
  tern_clear_error();
  if (!c) return tern_fail(TERN_EINVAL, "tern_cursor_prev: NULL cursor");
  return move(c, -1);
}

int tern_cursor_prev(tern_cursor *c) {
  if (TERN_LIKELY(!tern_errmsg_set && c && c->back)) {
    tern_src *t = c->back;
    if (!tern_seg_prev_keyed(c->fseg, t->sc, t->run, &t->key, &t->klen))
      return prev_back_entry(c);
    c->keyed = 1;
    return TERN_LIKELY(c->range.lolen == 0) ? TERN_OK : prev_back_bounded(c);
  }
  return prev_slow(c);
}

static __attribute__((noinline)) int key_slow(tern_cursor *c, tern_slice *key) {
  tern_clear_error();
  if (!c || !key || c->dir == 0) return tern_fail(TERN_EINVAL, "tern_cursor_key: not on a key");
  key->data = c->shown->key;
  key->len = c->shown->klen;
  return TERN_OK;
}

int tern_cursor_key(tern_cursor *c, tern_slice *key) {
  if (TERN_UNLIKELY(tern_errmsg_set || !c || !key || c->dir == 0)) return key_slow(c, key);
  key->data = c->shown->key;
  key->len = c->shown->klen;
  return TERN_OK;
}

static __attribute__((noinline)) int value_slow(tern_cursor *c, tern_slice *val) {
  tern_clear_error();
  if (!c || !val || c->dir == 0)
    return tern_fail(TERN_EINVAL, "tern_cursor_value: not on a key");
  if (c->fast) {
    if (c->keyed) return tern_seg_keyed_value(c->fseg, c->fast->sc, val);
    return tern_seg_value(c->fseg, &c->fast->e, c->fast->sc, val);
  }
  if (c->back && c->keyed) return tern_seg_run_value(c->fseg, c->back->sc, c->back->run, val);
  return tern_src_value(&c->src[c->top], val);
}

int tern_cursor_value(tern_cursor *c, tern_slice *val) {
  /* A scan's value after a keyed step (either way: the source shown is
   * fast or back): a pointer into the block, or a short value's copy. */
  if (TERN_LIKELY(!tern_errmsg_set && c && val && c->keyed &&
                  tern_seg_keyed_value_fast(c->shown->sc, val)))
    return TERN_OK;
  return value_slow(c, val);
}
