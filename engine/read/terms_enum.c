/* SPDX-License-Identifier: MIT */
/*
 * terms_enum.c — one field's terms over a snapshot (tern.h, "ordered"),
 * Lucene's TermsEnum with exact live document frequencies.
 *
 * Like the key cursor, a linear min over the sources: each segment having
 * the field (a codec cursor on its terms) and the buffer view's inverted
 * index.  A term's frequency is the sum over the sources showing it of its
 * live documents there: the entry's df for a segment without deletions,
 * else its postings filtered by the live docs (O(df)).  Terms whose every
 * document is deleted are skipped, so the enumeration is what a merge
 * would leave.
 */
#include "engine/state/index.h"

#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

typedef struct term_src {
  const tern_slot *slot; /* NULL: the buffer */
  const tern_seg_field *f;
  tern_seg_cursor *sc;
  tern_term_entry e;
  const tern_mfield *mf;
  size_t pos;
  int valid;
  const uint8_t *term;
  size_t len;
} term_src;

struct tern_terms {
  tern_snapshot *snap;
  char *field;
  size_t n;
  term_src *src;
  int on;       /* positioned */
  size_t top;   /* a source showing the current term */
  uint64_t df;  /* of the current term */
  int counted;  /* in snap->iters */
};

static void src_buf_at(term_src *s, size_t i) {
  s->pos = i;
  s->valid = i < s->mf->nterms;
  if (!s->valid) return;
  s->term = s->mf->terms[i].term.p;
  s->len = s->mf->terms[i].term.len;
}

static int src_seg_result(term_src *s, int rc) {
  s->valid = 0;
  if (rc == TERN_NOTFOUND) return TERN_OK;
  TERN_TRY(rc);
  s->valid = 1;
  s->term = s->e.term;
  s->len = s->e.len;
  return TERN_OK;
}

/* First term >= term (len 0: the first). */
static int src_seek(term_src *s, const void *term, size_t len) {
  if (!s->slot) {
    size_t lo = 0, hi = s->mf->nterms;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      const tern_keyref *k = &s->mf->terms[mid].term;
      if (tern_key_cmp(k->p, k->len, term, len) < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
    src_buf_at(s, lo);
    return TERN_OK;
  }
  const tern_seg *seg = s->slot->ref->seg;
  if (len == 0) return src_seg_result(s, tern_seg_first_term(seg, s->f, s->sc, &s->e));
  return src_seg_result(s, tern_seg_seek_ceil(seg, s->f, term, len, s->sc, &s->e));
}

static int src_next(term_src *s) {
  if (!s->slot) {
    src_buf_at(s, s->pos + 1);
    return TERN_OK;
  }
  return src_seg_result(s, tern_seg_next_term(s->slot->ref->seg, s->sc, &s->e));
}

/* Live documents of the source's current term. */
static int src_live_df(const term_src *s, uint64_t *df) {
  if (!s->slot) {
    *df = s->mf->terms[s->pos].term.aux;
    return TERN_OK;
  }
  const tern_term_entry *e = &s->e;
  if (!s->slot->live) {
    *df = e->meta.df;
    return TERN_OK;
  }
  tern_postings_iter it;
  TERN_TRY(tern_seg_postings(s->slot->ref->seg, e, &it));
  uint64_t n = 0;
  uint32_t d;
  int rc;
  while ((rc = tern_postings_iter_next(&it, &d)) == TERN_OK && d != TERN_DOC_END)
    n += d < s->slot->ref->max_doc && tern_slot_is_live(s->slot, d);
  tern_postings_iter_release(&it);
  *df = n;
  return rc;
}

/* Frees the enumeration; the snapshot's count of open handles drops when
 * counted. */
static void terms_free(tern_terms *te) {
  for (size_t i = 0; te->src && i < te->n; i++)
    if (te->src[i].sc) {
      tern_seg_cursor_release(te->src[i].sc);
      free(te->src[i].sc);
    }
  free(te->src);
  free(te->field);
  if (te->counted) atomic_fetch_sub(&te->snap->iters, 1);
  free(te);
}

int tern_terms_open(tern_terms **out, tern_snapshot *snap, const char *field) {
  tern_clear_error();
  if (out) *out = NULL;
  size_t fl = field ? strnlen(field, TERN_FIELD_MAX + 1) : 0;
  if (!out || !snap || fl == 0 || fl > TERN_FIELD_MAX)
    return tern_fail(TERN_EINVAL, "tern_terms_open: bad arguments");
  const tern_state *st = snap->st;
  tern_terms *te = calloc(1, sizeof *te);
  if (!te) return tern_fail(TERN_ENOMEM, "terms: out of memory");
  te->snap = snap;
  te->field = strdup(field);
  te->src = calloc(st->nslots + 1, sizeof *te->src);
  int rc = te->field && te->src ? TERN_OK : tern_fail(TERN_ENOMEM, "terms: out of memory");
  for (size_t i = 0; rc == TERN_OK && i < st->nslots; i++) {
    const tern_seg_field *f = tern_seg_find_field(st->slots[i].ref->seg, field, fl);
    if (!f || f == st->slots[i].ref->unique) continue;
    term_src *s = &te->src[te->n];
    s->slot = &st->slots[i];
    s->f = f;
    s->sc = malloc(sizeof *s->sc);
    if (!s->sc) {
      rc = tern_fail(TERN_ENOMEM, "terms: out of memory");
      break;
    }
    tern_seg_cursor_init(s->sc);
    te->n++;
  }
  const tern_minv *inv = NULL;
  if (rc == TERN_OK && snap->buf->n) rc = tern_memseg_inv(snap->buf, &inv);
  const tern_mfield *mf = inv ? tern_minv_field(inv, field, fl) : NULL;
  if (rc == TERN_OK && mf) te->src[te->n++].mf = mf;
  if (rc != TERN_OK) {
    terms_free(te);
    return rc;
  }
  atomic_fetch_add(&snap->iters, 1); /* tern_snapshot_close refuses while it is open */
  te->counted = 1;
  *out = te;
  return TERN_OK;
}

int tern_terms_close(tern_terms *te) {
  tern_clear_error();
  if (te) terms_free(te);
  return TERN_OK;
}

/* Shows the smallest term of the sources and its live df; 0 when none. */
static int pick(tern_terms *te, int *found) {
  size_t best = te->n;
  for (size_t i = 0; i < te->n; i++) {
    const term_src *s = &te->src[i];
    if (!s->valid) continue;
    if (best == te->n ||
        tern_key_cmp(s->term, s->len, te->src[best].term, te->src[best].len) < 0)
      best = i;
  }
  *found = best < te->n;
  if (!*found) return TERN_OK;
  const term_src *b = &te->src[best];
  uint64_t df = 0;
  for (size_t i = 0; i < te->n; i++) {
    const term_src *s = &te->src[i];
    if (!s->valid || tern_key_cmp(s->term, s->len, b->term, b->len) != 0) continue;
    uint64_t d;
    TERN_TRY(src_live_df(s, &d));
    df += d;
  }
  te->top = best;
  te->df = df;
  return TERN_OK;
}

/* Moves every source showing the current term to its next. */
static int advance_current(tern_terms *te) {
  const term_src *b = &te->src[te->top];
  uint8_t cur[TERN_KEY_MAX];
  size_t len = b->len;
  memcpy(cur, b->term, len);
  for (size_t i = 0; i < te->n; i++) {
    term_src *s = &te->src[i];
    if (s->valid && tern_key_cmp(s->term, s->len, cur, len) == 0) TERN_TRY(src_next(s));
  }
  return TERN_OK;
}

/* From the sources' positions: the first term with live documents. */
static int settle(tern_terms *te) {
  for (;;) {
    int found;
    TERN_TRY(pick(te, &found));
    if (!found) return TERN_NOTFOUND;
    if (te->df > 0) {
      te->on = 1;
      return TERN_OK;
    }
    TERN_TRY(advance_current(te));
  }
}

static int positioned(tern_terms *te, int rc) {
  te->on = rc == TERN_OK;
  return rc;
}

int tern_terms_seek_ceil(tern_terms *te, const void *term, size_t len, int *exact) {
  tern_clear_error();
  if (!te || (!term && len) || len > TERN_KEY_MAX)
    return tern_fail(TERN_EINVAL, "tern_terms_seek_ceil: bad arguments");
  te->on = 0;
  for (size_t i = 0; i < te->n; i++)
    TERN_TRY(src_seek(&te->src[i], term, len));
  int rc = positioned(te, settle(te));
  if (exact)
    *exact = rc == TERN_OK &&
             tern_key_cmp(te->src[te->top].term, te->src[te->top].len, term, len) == 0;
  return rc;
}

int tern_terms_next(tern_terms *te) {
  tern_clear_error();
  if (!te) return tern_fail(TERN_EINVAL, "tern_terms_next: NULL enumeration");
  if (!te->on) return tern_terms_seek_ceil(te, NULL, 0, NULL);
  te->on = 0;
  TERN_TRY(advance_current(te));
  return positioned(te, settle(te));
}

int tern_terms_term(tern_terms *te, tern_slice *term) {
  tern_clear_error();
  if (!te || !term || !te->on) return tern_fail(TERN_EINVAL, "tern_terms_term: not on a term");
  term->data = te->src[te->top].term;
  term->len = te->src[te->top].len;
  return TERN_OK;
}

int tern_terms_docfreq(tern_terms *te, uint64_t *df) {
  tern_clear_error();
  if (!te || !df || !te->on) return tern_fail(TERN_EINVAL, "tern_terms_docfreq: not on a term");
  *df = te->df;
  return TERN_OK;
}

int tern_terms_postings(tern_terms *te, tern_postings **out) {
  tern_clear_error();
  if (out) *out = NULL;
  if (!te || !out || !te->on) return tern_fail(TERN_EINVAL, "tern_terms_postings: not on a term");
  tern_term t = {te->field, te->src[te->top].term, te->src[te->top].len};
  return tern_postings_open(out, te->snap, &t, 1);
}
