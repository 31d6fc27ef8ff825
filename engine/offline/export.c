/* SPDX-License-Identifier: MIT */
/*
 * export.c — a key range of a snapshot into a segment builder
 * (tern_export, tern.h).
 *
 * The live documents come in key order from the snapshot's sources (each
 * segment's primary-key field and the buffer view) merged as a key cursor
 * merges them, newest source winning a key shown by two.  Their values
 * come with them; their secondary terms do not: a segment keeps terms
 * inverted (term -> doc ids), not per document.  So before the walk, each
 * segment whose key range meets the export's has its secondary fields
 * inverted back for the doc ids of the range (the keys' ranks, a
 * contiguous interval): every term of every field is visited once and its
 * postings advanced to the interval, and the (doc, field, term) found are
 * grouped by doc.  Buffered documents carry their terms in their records.
 */
#include "engine/offline/builder.h"

#include "codec/segment.h"
#include "codec/status.h"
#include "engine/util/arena.h"
#include "engine/read/key_range.h"
#include "engine/state/index.h"
#include "engine/util/vec.h"

#include <stdlib.h>
#include <string.h>

typedef struct dterm {
  uint32_t doc;   /* minus the range's first doc */
  uint32_t field; /* index into the segment's fields */
  const uint8_t *term;
  uint32_t len;
} dterm;

/* One segment's terms of the range's docs, grouped by doc. */
typedef struct seg_terms {
  uint32_t lo, hi; /* doc ids of the range: [lo, hi) */
  uint32_t *start; /* hi - lo + 1 offsets into by_doc */
  dterm *by_doc;
  char **fields; /* NUL-terminated names, by field index */
  size_t nfields;
} seg_terms;

typedef struct export_run {
  tern_snapshot *snap;
  tern_builder *b;
  tern_key_range range;
  size_t nsrc;
  tern_src *src;
  seg_terms *segs; /* per slot */
  tern_arena arena;
  tern_term *terms; /* one document's, for the builder */
  size_t terms_cap;
} export_run;

/* ------------------------------------------------------------ segment terms */

/* The doc id (rank) of the first key >= key in the slot's segment, or its
 * key count; key NULL: 0. */
static int rank_of(const tern_slot *s, const uint8_t *key, size_t len, uint32_t *rank) {
  if (!key || !len) {
    *rank = 0;
    return TERN_OK;
  }
  tern_seg_cursor c;
  tern_seg_cursor_init(&c);
  tern_term_entry e;
  int rc = tern_seg_seek_ceil(s->ref->seg, s->ref->unique, key, len, &c, &e);
  if (rc == TERN_OK) *rank = (uint32_t)e.ordinal;
  if (rc == TERN_NOTFOUND) {
    *rank = s->ref->max_doc;
    rc = TERN_OK;
  }
  tern_seg_cursor_release(&c);
  return rc;
}

/* Appends the docs of [t->lo, t->hi) in one term's postings. */
static int collect_term(export_run *r, const tern_slot *s, seg_terms *t, uint32_t field,
                        const tern_term_entry *e, dterm **v, size_t *n, size_t *cap) {
  tern_postings_iter it;
  TERN_TRY(tern_seg_postings(s->ref->seg, e, &it));
  uint32_t doc;
  int rc = tern_postings_iter_advance(&it, t->lo, &doc);
  const uint8_t *copy = NULL;
  while (rc == TERN_OK && doc != TERN_DOC_END && doc < t->hi) {
    if (!copy) {
      uint8_t *p = tern_arena_alloc(&r->arena, e->len);
      if (!p) {
        rc = tern_fail(TERN_ENOMEM, "export: out of memory");
        break;
      }
      memcpy(p, e->term, e->len);
      copy = p;
    }
    dterm *nv = tern_vec_room(*v, *n, cap, sizeof **v);
    if (!nv) {
      rc = tern_fail(TERN_ENOMEM, "export: out of memory");
      break;
    }
    *v = nv;
    (*v)[(*n)++] = (dterm){doc - t->lo, field, copy, (uint32_t)e->len};
    rc = tern_postings_iter_next(&it, &doc);
  }
  tern_postings_iter_release(&it);
  return rc;
}

static int collect_field(export_run *r, const tern_slot *s, seg_terms *t, uint32_t field,
                         const tern_seg_field *f, dterm **v, size_t *n, size_t *cap) {
  tern_seg_cursor c;
  tern_seg_cursor_init(&c);
  tern_term_entry e;
  int rc = tern_seg_first_term(s->ref->seg, f, &c, &e);
  while (rc == TERN_OK) {
    rc = collect_term(r, s, t, field, &e, v, n, cap);
    if (rc == TERN_OK) rc = tern_seg_next_term(s->ref->seg, &c, &e);
  }
  tern_seg_cursor_release(&c);
  return rc == TERN_NOTFOUND ? TERN_OK : rc;
}

/* Groups v[0..n) by doc (a counting sort: terms keep their order). */
static int group_by_doc(seg_terms *t, const dterm *v, size_t n) {
  size_t docs = t->hi - t->lo;
  t->start = calloc(docs + 1, sizeof *t->start);
  t->by_doc = malloc((n ? n : 1) * sizeof *t->by_doc);
  if (!t->start || !t->by_doc) return tern_fail(TERN_ENOMEM, "export: out of memory");
  for (size_t i = 0; i < n; i++)
    t->start[v[i].doc + 1]++;
  for (size_t d = 0; d < docs; d++)
    t->start[d + 1] += t->start[d];
  uint32_t *fill = malloc((docs ? docs : 1) * sizeof *fill);
  if (!fill) return tern_fail(TERN_ENOMEM, "export: out of memory");
  memcpy(fill, t->start, docs * sizeof *fill);
  for (size_t i = 0; i < n; i++)
    t->by_doc[fill[v[i].doc]++] = v[i];
  free(fill);
  return TERN_OK;
}

static int invert_segment(export_run *r, const tern_slot *s, seg_terms *t) {
  const tern_key_range *k = &r->range;
  TERN_TRY(rank_of(s, k->lolen ? k->lo : NULL, k->lolen, &t->lo));
  if (k->has_hi) {
    TERN_TRY(rank_of(s, k->hi, k->hilen, &t->hi));
    if (k->hilen == 0) t->hi = 0;
  } else {
    t->hi = s->ref->max_doc;
  }
  if (t->hi < t->lo) t->hi = t->lo;
  const tern_seg *seg = s->ref->seg;
  t->nfields = tern_seg_nfields(seg);
  t->fields = calloc(t->nfields ? t->nfields : 1, sizeof *t->fields);
  if (!t->fields) return tern_fail(TERN_ENOMEM, "export: out of memory");
  dterm *v = NULL;
  size_t n = 0, cap = 0;
  int rc = TERN_OK;
  for (size_t i = 0; rc == TERN_OK && t->hi > t->lo && i < t->nfields; i++) {
    const tern_seg_field *f = tern_seg_field_at(seg, i);
    if (f == s->ref->unique) continue;
    tern_field_info fi;
    tern_seg_field_info(f, &fi);
    if (!(t->fields[i] = strndup((const char *)fi.name, fi.name_len)))
      rc = tern_fail(TERN_ENOMEM, "export: out of memory");
    else
      rc = collect_field(r, s, t, (uint32_t)i, f, &v, &n, &cap);
  }
  if (rc == TERN_OK) rc = group_by_doc(t, v, n);
  free(v);
  return rc;
}

static void seg_terms_free(seg_terms *t) {
  for (size_t i = 0; i < t->nfields; i++)
    free(t->fields[i]);
  free(t->fields);
  free(t->start);
  free(t->by_doc);
}

/* ------------------------------------------------------------ the walk */

static int terms_room(export_run *r, size_t n) {
  if (n <= r->terms_cap) return TERN_OK;
  tern_term *t = realloc(r->terms, n * sizeof *t);
  if (!t) return tern_fail(TERN_ENOMEM, "export: out of memory");
  r->terms = t;
  r->terms_cap = n;
  return TERN_OK;
}

/* The current document of segment source i, with its terms. */
static int add_from_segment(export_run *r, tern_src *s, const seg_terms *t) {
  const tern_term_entry *e = &s->e;
  uint64_t doc = e->meta.pulsed ? e->docs[0] : e->ordinal;
  if (doc < t->lo || doc >= t->hi)
    return tern_fail(TERN_ECORRUPT, "segment %s: key of doc %llu outside its rank range",
                     s->slot->ref->name, (unsigned long long)doc);
  uint32_t a = t->start[doc - t->lo], z = t->start[doc - t->lo + 1];
  TERN_TRY(terms_room(r, z - a));
  for (uint32_t i = a; i < z; i++) {
    const dterm *d = &t->by_doc[i];
    r->terms[i - a] = (tern_term){t->fields[d->field], d->term, d->len};
  }
  tern_slice val;
  TERN_TRY(tern_src_value(s, &val));
  return tern_builder_add(r->b, s->key, s->klen, val.data, val.len, r->terms, z - a);
}

/* The current document of the buffer: its record holds value and terms. */
static int add_from_buffer(export_run *r, tern_src *s) {
  const tern_mdoc *d = &s->buf->docs[s->pos];
  tern_rec_doc rec;
  TERN_TRY(tern_rec_doc_decode(&rec, d->doc, d->key.aux));
  TERN_TRY(terms_room(r, rec.nterms));
  tern_rec_terms it;
  tern_rec_terms_init(&it, &rec);
  tern_rec_term rt;
  size_t n = 0;
  int more;
  while ((more = tern_rec_terms_next(&it, &rt)) == 1) {
    /* field names are C strings in the builder's API: copy with a NUL */
    char *name = (char *)tern_arena_alloc(&r->arena, rt.flen + 1);
    if (!name) return tern_fail(TERN_ENOMEM, "export: out of memory");
    memcpy(name, rt.field, rt.flen);
    name[rt.flen] = '\0';
    r->terms[n++] = (tern_term){name, rt.term, rt.tlen};
  }
  TERN_TRY(more);
  return tern_builder_add(r->b, s->key, s->klen, rec.val, rec.vlen, r->terms, n);
}

static int within(const export_run *r, const tern_src *s) {
  return tern_key_range_below_hi(&r->range, s->key, s->klen);
}

static int walk(export_run *r) {
  for (size_t i = 0; i < r->nsrc; i++)
    TERN_TRY(tern_src_seek_ge(&r->src[i], r->range.lo, r->range.lolen, 0));
  for (;;) {
    size_t top = r->nsrc;
    for (size_t i = 0; i < r->nsrc; i++) {
      tern_src *s = &r->src[i];
      if (!s->valid || !within(r, s)) continue;
      /* the newest (highest) source wins a tie */
      if (top == r->nsrc || tern_key_cmp(s->key, s->klen, r->src[top].key, r->src[top].klen) <= 0)
        top = i;
    }
    if (top == r->nsrc) return TERN_OK;
    tern_src *t = &r->src[top];
    if (t->slot)
      TERN_TRY(add_from_segment(r, t, &r->segs[top]));
    else
      TERN_TRY(add_from_buffer(r, t));
    /* Every source on this key moves on (a shadowed copy is not shown). */
    uint8_t key[TERN_KEY_MAX];
    size_t klen = t->klen;
    memcpy(key, t->key, klen);
    for (size_t i = 0; i < r->nsrc; i++)
      if (r->src[i].valid && tern_key_cmp(r->src[i].key, r->src[i].klen, key, klen) == 0)
        TERN_TRY(tern_src_step(&r->src[i], 1));
    /* the arena holds one document's copied field names at most */
    tern_arena_free(&r->arena);
    tern_arena_init(&r->arena);
  }
}

static int run_export(export_run *r) {
  const tern_state *st = r->snap->st;
  r->src = calloc(st->nslots + 1, sizeof *r->src);
  r->segs = calloc(st->nslots + 1, sizeof *r->segs);
  if (!r->src || !r->segs) return tern_fail(TERN_ENOMEM, "export: out of memory");
  for (size_t i = 0; i <= st->nslots; i++) {
    TERN_TRY(tern_src_init(&r->src[i], i < st->nslots ? &st->slots[i] : NULL, r->snap->buf));
    r->nsrc = i + 1;
  }
  /* The segments' terms, inverted for the range (before the walk, which
   * frees the arena per document: keep their bytes apart). */
  tern_arena keep = r->arena;
  tern_arena_init(&r->arena);
  int rc = TERN_OK;
  for (size_t i = 0; rc == TERN_OK && i < st->nslots; i++)
    rc = invert_segment(r, &st->slots[i], &r->segs[i]);
  tern_arena terms_bytes = r->arena;
  r->arena = keep;
  if (rc == TERN_OK) rc = walk(r);
  tern_arena_free(&terms_bytes);
  return rc;
}

int tern_export(tern_snapshot *snap, const tern_slice *from, const tern_slice *to,
                tern_builder *b) {
  tern_clear_error();
  if (!snap || !b) return tern_fail(TERN_EINVAL, "tern_export: NULL argument");
  if ((from && from->len > TERN_KEY_MAX) || (to && to->len > TERN_KEY_MAX) ||
      (from && from->len && !from->data) || (to && to->len && !to->data))
    return tern_fail(TERN_EINVAL, "tern_export: bound longer than %u bytes or without data",
                     TERN_KEY_MAX);
  export_run *r = calloc(1, sizeof *r);
  if (!r) return tern_fail(TERN_ENOMEM, "export: out of memory");
  r->snap = snap;
  r->b = b;
  tern_arena_init(&r->arena);
  tern_key_range_between(&r->range, from, to);
  int rc = run_export(r);
  for (size_t i = 0; i < r->nsrc; i++)
    tern_src_release(&r->src[i]);
  for (size_t i = 0; r->segs && i < r->snap->st->nslots; i++)
    seg_terms_free(&r->segs[i]);
  free(r->src);
  free(r->segs);
  free(r->terms);
  tern_arena_free(&r->arena);
  free(r);
  return rc;
}
