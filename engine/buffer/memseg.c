/* SPDX-License-Identifier: MIT */
/*
 * memseg.c — in-memory documents in key order (memseg.h).
 */
#include "engine/buffer/memseg.h"

#include "codec/filter.h"

#include "engine/format/catalog_schema.h"
#include "engine/util/vec.h"
#include "engine/util/zalloc.h"
#include "codec/segment.h"
#include "codec/status.h"

#include <stdlib.h>
#include <string.h>

/* Where a layered memseg's run pointers are when allocated with it. */
static tern_mrun **inline_runs(tern_memseg *m) { return (tern_mrun **)(void *)(m + 1); }
_Static_assert(sizeof(tern_memseg) % _Alignof(tern_mrun *) == 0, "runs after a memseg stay aligned");

/* The memseg with room for `runs` run pointers after it (0: none). */
static int memseg_alloc(size_t runs, tern_memseg **out) {
  if (runs > (SIZE_MAX - sizeof(tern_memseg)) / sizeof(tern_mrun *))
    return tern_fail(TERN_ENOMEM, "buffer view: %zu runs", runs);
  tern_memseg *m = tern_zalloc(sizeof *m + runs * sizeof(tern_mrun *));
  if (!m) return tern_fail(TERN_ENOMEM, "buffer view: out of memory");
  if (runs) m->runs = inline_runs(m);
  tern_arena_init(&m->arena);
  pthread_mutex_init(&m->mu, NULL);
  atomic_init(&m->inv, NULL);
  atomic_init(&m->flat, 1);
  *out = m;
  return TERN_OK;
}

int tern_memseg_new(tern_memseg **out) { return memseg_alloc(0, out); }

int tern_memseg_new_layered(size_t runs, tern_memseg **out) { return memseg_alloc(runs, out); }

static void minv_free(tern_minv *inv) {
  if (!inv) return;
  free(inv->fields);
  free(inv->term_pool);
  free(inv->doc_pool);
  free(inv);
}

void tern_memseg_free(tern_memseg *m) {
  if (!m) return;
  minv_free(atomic_load(&m->inv));
  if (!m->docs_alias) free(m->docs);
  for (size_t i = m->nbase; i < m->nruns; i++)
    tern_mrun_put(m->runs[i]);
  tern_runbase_put(m->base);
  if (m->runs != inline_runs(m)) free(m->runs);
  tern_arena_free(&m->arena);
  pthread_mutex_destroy(&m->mu);
  free(m);
}

ptrdiff_t tern_mdocs_find(const tern_mdoc *docs, size_t n, const void *key, size_t klen) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const tern_keyref *k = &docs[mid].key;
    int c = tern_key_cmp(k->p, k->len, key, klen);
    if (c == 0) return (ptrdiff_t)mid;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

/* tern_memseg_find given the key's tern_filter_hash. */
static ptrdiff_t find_hashed(const tern_memseg *m, const void *key, size_t klen, uint64_t hash) {
  if (!m->n) return -1; /* an empty buffer costs a get one load */
  if (m->nruns) return tern_memseg_runs_find(m, key, klen, hash, NULL);
  return tern_mdocs_find(m->docs, m->n, key, klen);
}

ptrdiff_t tern_memseg_find_key(const tern_memseg *m, const void *key, size_t klen,
                               const tern_filter_key *fk) {
  if (!m->n) return -1; /* an empty buffer costs a get one load */
  if (m->nruns) return tern_memseg_runs_find(m, key, klen, fk->hash, fk);
  return tern_mdocs_find(m->docs, m->n, key, klen);
}

ptrdiff_t tern_memseg_find(const tern_memseg *m, const void *key, size_t klen) {
  if (!m->n) return -1;
  return find_hashed(m, key, klen, m->nruns ? tern_filter_hash(key, klen) : 0);
}

int tern_memseg_value(const tern_memseg *m, size_t i, tern_slice *val) {
  const tern_mdoc *d = tern_memseg_doc(m, i);
  const uint8_t *v;
  size_t vlen;
  TERN_TRY(tern_rec_doc_value(d->doc, d->key.aux, &v, &vlen));
  val->data = v;
  val->len = vlen;
  return TERN_OK;
}

/* ---------------------------------------------------------- inversion */

typedef struct fvec {
  const uint8_t *name;
  size_t len;
  tern_keyref *t; /* (term, aux = doc) in doc order */
  size_t n, cap;
} fvec;

typedef struct inv_build {
  fvec *f;
  size_t nf, capf;
  size_t last;
} inv_build;

static fvec *field_vec(inv_build *b, const uint8_t *name, size_t len) {
  if (b->last < b->nf && b->f[b->last].len == len && !memcmp(b->f[b->last].name, name, len))
    return &b->f[b->last];
  for (size_t i = 0; i < b->nf; i++)
    if (b->f[i].len == len && !memcmp(b->f[i].name, name, len)) return &b->f[b->last = i];
  if (b->nf == b->capf) {
    size_t cap = b->capf ? 2 * b->capf : 8;
    fvec *f = realloc(b->f, cap * sizeof *f);
    if (!f) return NULL;
    b->f = f;
    b->capf = cap;
  }
  fvec *v = &b->f[b->nf];
  memset(v, 0, sizeof *v);
  v->name = name;
  v->len = len;
  b->last = b->nf++;
  return v;
}

static int fvec_push(fvec *v, const uint8_t *term, size_t len, uint32_t doc) {
  tern_keyref *t = tern_vec_room(v->t, v->n, &v->cap, sizeof *t);
  if (!t) return tern_fail(TERN_ENOMEM, "inverting terms: out of memory");
  v->t = t;
  v->t[v->n++] = (tern_keyref){term, (uint32_t)len, doc};
  return TERN_OK;
}

static int collect_terms(const tern_memseg *m, inv_build *b, size_t *ntuples) {
  for (size_t i = 0; i < m->n; i++) {
    tern_rec_doc d;
    TERN_TRY(tern_rec_doc_decode(&d, m->docs[i].doc, m->docs[i].key.aux));
    tern_rec_terms it;
    tern_rec_term t;
    int rc;
    tern_rec_terms_init(&it, &d);
    while ((rc = tern_rec_terms_next(&it, &t)) == 1) {
      fvec *v = field_vec(b, t.field, t.flen);
      if (!v) return tern_fail(TERN_ENOMEM, "inverting terms: out of memory");
      TERN_TRY(fvec_push(v, t.term, t.tlen, (uint32_t)i));
      (*ntuples)++;
    }
    TERN_TRY(rc);
  }
  return TERN_OK;
}

/* Groups one field's (term, doc) tuples, sorted by term then doc, into terms. */
static int invert_field(const fvec *v, tern_mfield *f, tern_mterm **tp, uint32_t **dp) {
  uint32_t *perm = malloc((v->n ? v->n : 1) * sizeof *perm);
  if (!perm) return tern_fail(TERN_ENOMEM, "inverting terms: out of memory");
  int rc = tern_sort_by_key(perm, v->t, sizeof *v->t, v->n, NULL);
  if (rc < 0) {
    free(perm);
    return rc;
  }
  f->name = v->name;
  f->len = v->len;
  f->terms = *tp;
  f->nterms = 0;
  for (size_t i = 0; i < v->n;) {
    const tern_keyref *k = &v->t[perm[i]];
    tern_mterm *t = &f->terms[f->nterms++];
    uint32_t *docs = *dp, nd = 0;
    size_t j = i;
    for (; j < v->n; j++) {
      const tern_keyref *kj = &v->t[perm[j]];
      if (kj->len != k->len || memcmp(kj->p, k->p, k->len)) break;
      if (nd == 0 || docs[nd - 1] != kj->aux) docs[nd++] = kj->aux; /* a doc may repeat a term */
    }
    t->term = (tern_keyref){k->p, k->len, nd};
    t->docs = docs;
    *dp += nd;
    i = j;
  }
  *tp += f->nterms;
  free(perm);
  return TERN_OK;
}

static int build_inv(const tern_memseg *m, tern_minv **out) {
  inv_build b = {0};
  size_t ntuples = 0;
  tern_minv *inv = calloc(1, sizeof *inv);
  int rc = inv ? collect_terms(m, &b, &ntuples) : tern_fail(TERN_ENOMEM, "out of memory");
  if (rc == TERN_OK) {
    inv->fields = calloc(b.nf ? b.nf : 1, sizeof *inv->fields);
    inv->term_pool = malloc((ntuples ? ntuples : 1) * sizeof *inv->term_pool);
    inv->doc_pool = malloc((ntuples ? ntuples : 1) * sizeof *inv->doc_pool);
    if (!inv->fields || !inv->term_pool || !inv->doc_pool)
      rc = tern_fail(TERN_ENOMEM, "inverting terms: out of memory");
  }
  uint32_t *order = NULL;
  if (rc == TERN_OK) {
    /* Fields in name order: sort their names. */
    tern_keyref *names = malloc((b.nf ? b.nf : 1) * sizeof *names);
    order = malloc((b.nf ? b.nf : 1) * sizeof *order);
    if (!names || !order) rc = tern_fail(TERN_ENOMEM, "inverting terms: out of memory");
    for (size_t i = 0; rc == TERN_OK && i < b.nf; i++)
      names[i] = (tern_keyref){b.f[i].name, (uint32_t)b.f[i].len, 0};
    if (rc == TERN_OK) rc = tern_sort_by_key(order, names, sizeof *names, b.nf, NULL);
    free(names);
  }
  tern_mterm *tp = inv ? inv->term_pool : NULL;
  uint32_t *dp = inv ? inv->doc_pool : NULL;
  for (size_t i = 0; rc == TERN_OK && i < b.nf; i++)
    rc = invert_field(&b.f[order[i]], &inv->fields[i], &tp, &dp);
  if (rc == TERN_OK) inv->nfields = b.nf;
  free(order);
  for (size_t i = 0; i < b.nf; i++)
    free(b.f[i].t);
  free(b.f);
  if (rc != TERN_OK) {
    minv_free(inv);
    return rc;
  }
  *out = inv;
  return TERN_OK;
}

int tern_memseg_inv(tern_memseg *m, const tern_minv **out) {
  TERN_TRY(tern_memseg_flat(m));
  tern_minv *inv = atomic_load_explicit(&m->inv, memory_order_acquire);
  if (inv) {
    *out = inv;
    return TERN_OK;
  }
  pthread_mutex_lock(&m->mu);
  inv = atomic_load_explicit(&m->inv, memory_order_relaxed);
  int rc = TERN_OK;
  if (!inv) {
    rc = build_inv(m, &inv);
    if (rc == TERN_OK) atomic_store_explicit(&m->inv, inv, memory_order_release);
  }
  pthread_mutex_unlock(&m->mu);
  *out = rc == TERN_OK ? inv : NULL; /* defined on failure too (gcc -O3) */
  return rc;
}

const tern_mfield *tern_minv_field(const tern_minv *inv, const void *name, size_t len) {
  size_t lo = 0, hi = inv->nfields;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = tern_key_cmp(inv->fields[mid].name, inv->fields[mid].len, name, len);
    if (c == 0) return &inv->fields[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

const tern_mterm *tern_minv_term(const tern_mfield *f, const void *term, size_t len) {
  size_t lo = 0, hi = f->nterms;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = tern_key_cmp(f->terms[mid].term.p, f->terms[mid].term.len, term, len);
    if (c == 0) return &f->terms[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

/* ---------------------------------------------------------- writing */

uint32_t tern_options_threshold(const tern_options *o, const uint8_t *name, size_t len) {
  for (size_t i = 0; i < o->nfields; i++)
    if (strlen(o->fields[i].field) == len && !memcmp(o->fields[i].field, name, len))
      return o->fields[i].threshold;
  return o->pulsing_threshold;
}

static int write_docs(tern_memseg *m, tern_segw *w, const tern_options *o) {
  TERN_TRY(tern_segw_field(w, "", 0, TERN_FIELD_UNIQUE, o->pulsing_threshold));
  for (size_t i = 0; i < m->n; i++) {
    tern_slice v;
    uint32_t doc = (uint32_t)i;
    /* Docs sorted from random input sit at random places: fetch ahead. */
    if (i + 16 < m->n) __builtin_prefetch(m->docs[i + 16].doc);
    TERN_TRY(tern_memseg_value(m, i, &v));
    TERN_TRY(tern_segw_term(w, m->docs[i].key.p, m->docs[i].key.len, &doc, 1, v.data, v.len));
  }
  return tern_memseg_write_fields(m, w, o);
}

int tern_memseg_write_fields(tern_memseg *m, tern_segw *w, const tern_options *o) {
  const tern_minv *inv;
  TERN_TRY(tern_memseg_inv(m, &inv));
  for (size_t f = 0; f < inv->nfields; f++) {
    const tern_mfield *fl = &inv->fields[f];
    TERN_TRY(
        tern_segw_field(w, fl->name, fl->len, 0, tern_options_threshold(o, fl->name, fl->len)));
    for (size_t t = 0; t < fl->nterms; t++) {
      const tern_mterm *mt = &fl->terms[t];
      TERN_TRY(tern_segw_term(w, mt->term.p, mt->term.len, mt->docs, mt->term.aux, NULL, 0));
    }
  }
  return TERN_OK;
}

int tern_memseg_write(tern_memseg *m, const char *dir, const char *name, const tern_options *o,
                      uint8_t *segid) {
  tern_segw_options so;
  tern_segw_options_init(&so);
  so.inline_value_max = o->inline_value_max;
  so.bloom_bits_per_key = o->bloom_bits_per_key;
  TERN_TRY(tern_memseg_flat(m));
  tern_segw *w;
  TERN_TRY(tern_segw_open(&w, dir, name, &so));
  memcpy(segid, tern_segw_id(w), TERN_SEGID_SIZE);
  int rc = write_docs(m, w, o);
  if (rc < 0) {
    tern_segw_abort(w);
    return rc;
  }
  return tern_segw_finish(w, (uint32_t)m->n);
}
