/* SPDX-License-Identifier: MIT */
/*
 * cursor_source.c — one source of a key cursor (index.h, "cursors"): a
 * segment's primary-key field walked with a codec cursor, or the buffer
 * view walked by rank.  A source stands on a live document or is done;
 * moving it skips the documents its slot's live docs mark deleted.
 */
#include "engine/state/index.h"

#include "codec/segment_scan.h"
#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

int tern_src_init(tern_src *s, const tern_slot *slot, const tern_memseg *buf) {
  memset(s, 0, sizeof *s);
  s->slot = slot;
  s->buf = buf;
  if (!slot) return tern_memseg_flat(buf); /* walked by rank */
  s->sc = malloc(sizeof *s->sc);
  s->run = malloc(sizeof *s->run);
  if (!s->sc || !s->run) {
    free(s->sc);
    free(s->run);
    s->sc = NULL;
    s->run = NULL;
    return tern_fail(TERN_ENOMEM, "cursor: out of memory");
  }
  tern_seg_cursor_init(s->sc);
  tern_seg_run_init(s->run);
  return TERN_OK;
}

void tern_src_release(tern_src *s) {
  if (s->sc) tern_seg_cursor_release(s->sc);
  if (s->run) tern_seg_run_release(s->run);
  free(s->sc);
  free(s->run);
  s->sc = NULL;
  s->run = NULL;
}

/* Buffer: the rank of the first key >= key (> key when strict). */
static size_t buf_lower(const tern_memseg *m, const void *key, size_t klen, int strict) {
  size_t lo = 0, hi = m->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const tern_keyref *k = &m->docs[mid].key;
    int c = tern_key_cmp(k->p, k->len, key, klen);
    if (c < 0 || (strict && c == 0))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static void buf_at(tern_src *s, size_t i) {
  s->valid = i < s->buf->n;
  s->pos = i;
  if (!s->valid) return;
  s->key = s->buf->docs[i].key.p;
  s->klen = s->buf->docs[i].key.len;
}

/* The doc id of the entry a segment source stands on (segments the
 * engine writes number their keys' docs by ordinal: tern_seg_doc). */
static int seg_doc(const tern_src *s, uint32_t *doc) {
  const tern_term_entry *e = &s->e;
  uint64_t d = e->meta.pulsed ? e->docs[0] : e->ordinal;
  if (d >= s->slot->ref->max_doc)
    return tern_fail(TERN_ECORRUPT, "segment %s: key with doc %llu of %u", s->slot->ref->name,
                     (unsigned long long)d, s->slot->ref->max_doc);
  *doc = (uint32_t)d;
  return TERN_OK;
}

/* After a codec call: done on TERN_NOTFOUND, else on the entry. */
static int seg_result(tern_src *s, int rc) {
  s->valid = 0;
  if (rc == TERN_NOTFOUND) return TERN_OK;
  TERN_TRY(rc);
  s->valid = 1;
  s->key = s->e.term;
  s->klen = s->e.len;
  return TERN_OK;
}

static int seg_step(tern_src *s, int dir) {
  const tern_seg *seg = s->slot->ref->seg;
  if (dir > 0) return seg_result(s, tern_seg_next_term(seg, s->sc, &s->e));
  return seg_result(s, tern_seg_prev_term(seg, s->sc, s->run, &s->e));
}

/* Steps in direction dir while the source stands on a deleted doc. */
static int settle(tern_src *s, int dir) {
  /* A segment with no deletions has every entry live (and the codec
   * checked each doc id against the segment's doc count as it decoded). */
  if (!s->slot || !s->slot->live) return TERN_OK;
  while (s->valid) {
    uint32_t doc = 0;
    TERN_TRY(seg_doc(s, &doc));
    if (tern_slot_is_live(s->slot, doc)) return TERN_OK;
    TERN_TRY(seg_step(s, dir));
  }
  return TERN_OK;
}

/* Before a forward seek: when the source took as many steps (forwards,
 * in its segment's ranks) after each of the last two seeks, the first
 * batch of terms the codec decodes ahead after this one holds that many
 * — a cursor that reads N keys after each seek (a page of N) decodes N,
 * in one batch, as RocksDB's adaptive readahead carries its size from
 * one seek to the next.  Runs of varied lengths keep the batches of 4,
 * 8, 16 ...: a first batch sized from them cost more than it saved
 * (callgrind, runs of 1 to 30 steps: +3% with the smaller of the last
 * two).  Anything else (a first seek, a walk back) drops the history.
 * Only a hint: what is read is the same. */
static void expect_steps(tern_src *s) {
  uint64_t ord, steps = 0;
  int ok = s->seek_ok && tern_seg_cursor_ordinal(s->sc, &ord) && ord >= s->seek_ord;
  if (ok) steps = ord - s->seek_ord;
  tern_seg_cursor_expect(s->sc, ok && s->last_ok && steps == s->last_run ? steps : 0);
  s->last_run = steps;
  s->last_ok = ok;
  s->seek_ok = 0;
}

int tern_src_seek_ge(tern_src *s, const void *key, size_t klen, int strict) {
  if (!s->slot) {
    buf_at(s, klen ? buf_lower(s->buf, key, klen, strict) : 0);
    return TERN_OK;
  }
  const tern_seg *seg = s->slot->ref->seg;
  const tern_seg_field *f = s->slot->ref->unique;
  expect_steps(s);
  if (klen == 0) {
    TERN_TRY(seg_result(s, tern_seg_first_term(seg, f, s->sc, &s->e)));
  } else {
    TERN_TRY(seg_result(s, tern_seg_seek_ceil(seg, f, key, klen, s->sc, &s->e)));
    if (strict && s->valid && tern_key_cmp(s->key, s->klen, key, klen) == 0)
      TERN_TRY(seg_step(s, 1));
  }
  TERN_TRY(settle(s, 1));
  s->seek_ok = s->valid && tern_seg_cursor_ordinal(s->sc, &s->seek_ord);
  return TERN_OK;
}

int tern_src_seek_le(tern_src *s, const void *key, size_t klen, int strict) {
  if (!s->slot) {
    size_t i = key ? buf_lower(s->buf, key, klen, !strict) : s->buf->n;
    s->valid = 0;
    if (i > 0) buf_at(s, i - 1);
    return TERN_OK;
  }
  const tern_seg *seg = s->slot->ref->seg;
  const tern_seg_field *f = s->slot->ref->unique;
  s->seek_ok = s->last_ok = 0; /* backwards: no forward steps to count from here */
  tern_seg_cursor_expect(s->sc, 0);
  if (!key) {
    TERN_TRY(seg_result(s, tern_seg_last_term(seg, f, s->sc, s->run, &s->e)));
  } else if (klen == 0) {
    s->valid = 0;
  } else {
    TERN_TRY(seg_result(s, tern_seg_seek_floor(seg, f, key, klen, s->sc, s->run, &s->e)));
    if (strict && s->valid && tern_key_cmp(s->key, s->klen, key, klen) == 0)
      TERN_TRY(seg_step(s, -1));
  }
  return settle(s, -1);
}

int tern_src_step(tern_src *s, int dir) {
  if (!s->valid) return TERN_OK;
  if (!s->slot) {
    if (dir > 0)
      buf_at(s, s->pos + 1);
    else if (s->pos == 0)
      s->valid = 0;
    else
      buf_at(s, s->pos - 1);
    return TERN_OK;
  }
  TERN_TRY(seg_step(s, dir));
  return settle(s, dir);
}

int tern_src_value(tern_src *s, tern_slice *val) {
  if (!s->slot) return tern_memseg_value(s->buf, s->pos, val);
  return tern_seg_value(s->slot->ref->seg, &s->e, s->sc, val);
}
