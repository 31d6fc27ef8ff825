/* SPDX-License-Identifier: MIT */
/*
 * state.c — materialised commits (index.h): building a state from the
 * catalog, sharing segment readers and live docs between states, and the
 * file lifetime of dropped segments.
 */
#include "engine/util/counters.h"
#include "engine/state/edit.h"
#include "engine/util/errwrap.h"
#include "engine/state/index.h"
#include "engine/util/vec.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ readers */

/* Opens segment `number` and checks it against its record (no lock needed). */
static int segref_open(tern_index *idx, uint64_t number, const tern_rec_segment *r,
                       tern_segref **out) {
  tern_segref *s = calloc(1, sizeof *s);
  if (!s) return tern_fail(TERN_ENOMEM, "segment reader: out of memory");
  s->number = number;
  tern_segment_name(s->name, number);
  TERN_COUNT(seg_opens);
  int rc = tern_seg_open(&s->seg, idx->dir, s->name, TERN_IDX_IO_MODE(idx));
  if (rc == TERN_OK) {
    s->unique = tern_seg_unique_field(s->seg);
    s->max_doc = tern_seg_max_doc(s->seg);
    tern_seg_gate_of(s->seg, &s->gate);
    if (!s->unique || s->max_doc != r->max_doc ||
        memcmp(tern_seg_id(s->seg), r->segid, TERN_SEGID_SIZE) != 0)
      rc = tern_fail(TERN_ECORRUPT,
                     "%s/%s: segment does not match its catalog record (max_doc %u vs %" PRIu64
                     ", id or unique field)",
                     idx->dir, s->name, s->max_doc, r->max_doc);
  }
  if (rc != TERN_OK) {
    if (s->seg) tern_seg_close(s->seg);
    free(s);
    return rc;
  }
  s->refs = 1;
  *out = s;
  return TERN_OK;
}

static int segref_get(tern_index *idx, uint64_t number, const tern_rec_segment *r,
                      tern_segref **out) {
  for (tern_segref *s = idx->segrefs; s; s = s->next)
    if (s->number == number) {
      s->refs++;
      *out = s;
      return TERN_OK;
    }
  TERN_TRY(segref_open(idx, number, r, out));
  (*out)->next = idx->segrefs;
  idx->segrefs = *out;
  return TERN_OK;
}

int tern_segref_preopen(tern_index *idx, uint64_t number, const tern_rec_segment *r,
                        tern_segref **out) {
  TERN_TRY(segref_open(idx, number, r, out));
  tern_mu_lock(idx);
  (*out)->next = idx->segrefs;
  idx->segrefs = *out;
  tern_mu_unlock(idx);
  return TERN_OK;
}

static void segref_put(tern_index *idx, tern_segref *s) {
  assert(s->refs > 0);
  if (--s->refs > 0) return;
  for (tern_segref **pp = &idx->segrefs; *pp; pp = &(*pp)->next)
    if (*pp == s) {
      *pp = s->next;
      break;
    }
  tern_seg_close(s->seg);
  if (s->dropped) tern_seg_remove(idx->dir, s->name);
  free(s);
}

void tern_segref_release(tern_index *idx, tern_segref *s) {
  tern_mu_lock(idx);
  segref_put(idx, s);
  tern_mu_unlock(idx);
}

static void ldref_put(tern_ldref *l) {
  assert(!l || l->refs > 0);
  if (l && --l->refs == 0) {
    tern_livedocs_free(l->ld);
    free(l);
  }
}

void tern_segments_dropped(tern_index *idx, const uint64_t *numbers, size_t n) {
  tern_mu_lock(idx);
  for (size_t i = 0; i < n; i++) {
    int found = 0;
    for (tern_segref *s = idx->segrefs; s; s = s->next)
      if (s->number == numbers[i]) {
        s->dropped = 1;
        found = 1;
      }
    if (!found) {
      char name[TERN_SEGNAME_MAX];
      tern_segment_name(name, numbers[i]);
      tern_seg_remove(idx->dir, name);
    }
  }
  tern_mu_unlock(idx);
}

/* ------------------------------------------------------------ states */

/* A zeroed state with one reference and room for `room` slots: the
 * handle's spare (its slots array grown when short), else fresh memory.
 * A commit makes one state and frees its base: reusing it spares a
 * calloc of ~1.2 KiB (past malloc's per-thread cache) and the slots'
 * malloc, and their frees.  REQUIRES: idx->mu held. */
static tern_state *state_new(tern_index *idx, size_t room) {
  assert(tern_mu_held(idx));
  tern_state *st = idx->spare_state;
  tern_slot *slots = NULL;
  size_t cap = 0;
  if (st) {
    idx->spare_state = NULL;
    slots = st->slots;
    cap = st->capslots;
  } else if (!(st = malloc(sizeof *st))) {
    return NULL;
  }
  if (cap < room) {
    tern_slot *grown = realloc(slots, room * sizeof *grown);
    if (!grown) {
      free(slots);
      free(st);
      return NULL;
    }
    slots = grown;
    cap = room;
  }
  memset(st, 0, sizeof *st);
  st->refs = 1;
  st->slots = slots;
  st->capslots = cap;
  return st;
}

/* Releases what st holds and keeps it as the handle's spare (or frees it
 * when there is one).  REQUIRES: idx->mu held, no reference left. */
static void state_free(tern_index *idx, tern_state *st) {
  assert(tern_mu_held(idx));
  assert(st != idx->spare_state);
  for (size_t i = 0; i < st->nslots; i++) {
    segref_put(idx, st->slots[i].ref);
    ldref_put(st->slots[i].live);
  }
  tern_state_cfilter_put(st);
  tern_state_ranges_free(st);
  tern_memseg_free(st->buffer);
  free(st->health);
  st->health = NULL;
  st->nslots = 0;
  st->buffer = NULL;
  if (!idx->spare_state) {
    idx->spare_state = st;
    return;
  }
  free(st->slots);
  free(st);
}

static void state_put(tern_index *idx, tern_state *st) {
  assert(!st || st->refs > 0);
  if (st && --st->refs == 0) state_free(idx, st);
}

void tern_state_put_locked(tern_index *idx, tern_state *st) {
  assert(tern_mu_held(idx));
  state_put(idx, st);
}

void tern_state_release(tern_index *idx, tern_state *st) {
  tern_mu_lock(idx);
  state_put(idx, st);
  tern_mu_unlock(idx);
}

void tern_states_close(tern_index *idx) {
  tern_mu_lock(idx);
  state_put(idx, idx->cur);
  idx->cur = NULL;
  if (idx->spare_state) free(idx->spare_state->slots);
  free(idx->spare_state);
  idx->spare_state = NULL;
  if (idx->rtxn) mdb_txn_abort(idx->rtxn);
  idx->rtxn = NULL;
  tern_mu_unlock(idx);
}

typedef struct build_ctx {
  tern_index *idx;
  MDB_txn *t;
  tern_state *st;
} build_ctx;

/* The live docs of generation `gen`, shared with the previous state when it had it. */
static int slot_livedocs(build_ctx *b, uint64_t number, const tern_rec_segment *r, tern_slot *sl) {
  tern_state *prev = b->idx->cur;
  for (size_t i = 0; prev && i < prev->nslots; i++)
    if (prev->slots[i].ref->number == number && prev->slots[i].gen == r->livedocs_gen &&
        prev->slots[i].live) {
      sl->live = prev->slots[i].live;
      sl->live->refs++;
      return TERN_OK;
    }
  const uint8_t *buf;
  size_t len;
  TERN_TRY(tern_catalog_get_livedocs(b->idx, b->t, number, &buf, &len));
  tern_ldref *l = calloc(1, sizeof *l);
  if (!l) return tern_fail(TERN_ENOMEM, "live docs: out of memory");
  int rc =
      tern_livedocs_read(&l->ld, buf, len, r->segid, (uint32_t)r->max_doc, (uint32_t)r->deleted);
  if (rc != TERN_OK) {
    free(l);
    if (rc == TERN_ECORRUPT) atomic_store(&b->idx->catalog_bad, 1);
    return tern_fail_wrap(rc, "%s/%s: segment %" PRIu64 " live docs generation %" PRIu64,
                          b->idx->dir, TERN_CATALOG_FILE, number, r->livedocs_gen);
  }
  l->refs = 1;
  sl->live = l;
  return TERN_OK;
}

static int add_slot(void *ctx, uint64_t number, const tern_rec_segment *r) {
  build_ctx *b = ctx;
  tern_state *st = b->st;
  tern_slot *s = tern_vec_room(st->slots, st->nslots, &st->capslots, sizeof *s);
  if (!s) return tern_fail(TERN_ENOMEM, "state: out of memory");
  st->slots = s;
  tern_slot *sl = &st->slots[st->nslots];
  memset(sl, 0, sizeof *sl);
  sl->deleted = r->deleted;
  sl->gen = r->livedocs_gen;
  memcpy(sl->segid, r->segid, TERN_SEGID_SIZE);
  TERN_TRY(segref_get(b->idx, number, r, &sl->ref));
  sl->gate = sl->ref->gate;
  int rc = r->livedocs_gen ? slot_livedocs(b, number, r, sl) : TERN_OK;
  if (rc != TERN_OK) {
    segref_put(b->idx, sl->ref);
    return rc;
  }
  st->nslots++;
  return TERN_OK;
}

static int build_state(tern_index *idx, MDB_txn *t, const tern_rec_state *rec, tern_state **out) {
  TERN_COUNT(state_loads);
  tern_state *st = state_new(idx, 0);
  if (!st) return tern_fail(TERN_ENOMEM, "state: out of memory");
  st->rec = *rec;
  build_ctx b = {idx, t, st};
  int rc = tern_catalog_each_segment(idx, t, rec, add_slot, &b);
  tern_rec_health h;
  if (rc == TERN_OK) rc = tern_health_read(idx, t, &h);
  if (rc == TERN_OK) st->health = tern_health_copy(&h, &rc);
  if (rc == TERN_OK) rc = tern_state_index_ranges(st);
  if (rc != TERN_OK) {
    state_free(idx, st);
    return rc;
  }
  tern_state_settle_filters(st); /* made from the catalog: not on the commit path */
  /* Made from the catalog: the previous state's combined filter, or a
   * new one (state_cfilter.c; never on the commit path). */
  if (!tern_state_cfilter_inherit(st, idx->cur)) tern_state_cfilter_build(st);
  tern_state_map_inherit(st, idx->cur);
  /* Fewer slots: the handle's builder thread, in the background. */
  if (tern_state_cfilter_wanted(st)) tern_cfbuilder_kick(idx);
  *out = st;
  return TERN_OK;
}

/* Copies one buffer entry into the memseg's arena. */
static int buffer_entry(tern_index *idx, tern_memseg *m, const MDB_val *k, const MDB_val *v) {
  uint8_t key[TERN_KEY_MAX];
  size_t klen, dlen;
  const uint8_t *doc;
  TERN_TRY(tern_catalog_decode_doc(idx, k, v, key, &klen, &doc, &dlen));
  uint8_t *p = tern_arena_alloc(&m->arena, klen + dlen);
  if (!p) return tern_fail(TERN_ENOMEM, "buffer view: out of memory");
  memcpy(p, key, klen);
  if (dlen) memcpy(p + klen, doc, dlen);
  m->docs[m->n++] = (tern_mdoc){{p, (uint32_t)klen, (uint32_t)dlen}, p + klen};
  m->stored_bytes += tern_catalog_doc_bytes(idx, k, v);
  return TERN_OK;
}

/* Puts the docs in key order (LMDB order differs only for long keys). */
static int buffer_sort(tern_memseg *m) {
  if (m->n < 2) return TERN_OK;
  uint32_t *perm = malloc(m->n * sizeof *perm);
  tern_mdoc *sorted = malloc(m->n * sizeof *sorted);
  int rc = perm && sorted ? tern_sort_by_key(perm, m->docs, sizeof *m->docs, m->n, NULL)
                          : tern_fail(TERN_ENOMEM, "buffer view: out of memory");
  if (rc == TERN_OK) {
    for (size_t i = 0; i < m->n; i++)
      sorted[i] = m->docs[perm[i]];
    free(m->docs);
    m->docs = sorted;
    sorted = NULL;
  }
  free(perm);
  free(sorted);
  return rc;
}

int tern_buffer_read(tern_index *idx, MDB_txn *t, const tern_rec_state *rec, tern_memseg **out) {
  TERN_COUNT(buffer_loads);
  tern_memseg *m;
  TERN_TRY(tern_memseg_new(&m));
  size_t cap = rec->buffered_docs ? (size_t)rec->buffered_docs : 1;
  m->docs = malloc(cap * sizeof *m->docs);
  MDB_cursor *c = NULL;
  MDB_val k, v;
  int rc = m->docs ? TERN_OK : tern_fail(TERN_ENOMEM, "buffer view: out of memory");
  int mrc = rc == TERN_OK ? tern_catalog_buffer_first(idx, t, rec->buffer_gen, &c, &k, &v) : 0;
  while (rc == TERN_OK && mrc == TERN_OK) {
    if (m->n == cap) {
      cap *= 2;
      tern_mdoc *d = realloc(m->docs, cap * sizeof *d);
      if (!d) {
        rc = tern_fail(TERN_ENOMEM, "buffer view: out of memory");
        break;
      }
      m->docs = d;
    }
    rc = buffer_entry(idx, m, &k, &v);
    if (rc == TERN_OK) mrc = tern_catalog_buffer_next(idx, c, rec->buffer_gen, &k, &v);
  }
  if (rc == TERN_OK && mrc != TERN_NOTFOUND) rc = mrc;
  if (rc == TERN_OK && (m->n != rec->buffered_docs || m->stored_bytes != rec->buffered_bytes))
    rc = tern_catalog_damaged(
        idx, tern_fail(TERN_ECORRUPT,
                       "buffer holds %zu documents of %" PRIu64 " bytes; state says %" PRIu64
                       " of %" PRIu64,
                       m->n, m->stored_bytes, rec->buffered_docs, rec->buffered_bytes));
  if (c) mdb_cursor_close(c);
  if (rc == TERN_OK) rc = buffer_sort(m);
  if (rc != TERN_OK) {
    tern_memseg_free(m);
    return rc;
  }
  *out = m;
  return TERN_OK;
}

static int build_buffer(tern_index *idx, MDB_txn *t, tern_state *st) {
  tern_memseg *m;
  TERN_TRY(tern_buffer_read(idx, t, &st->rec, &m));
  /* Layered, so that the next commit hands it forward with a run on top. */
  return tern_memseg_layered(m, &st->buffer);
}

enum { READ_AGAIN = 1, READ_RESIZED = 2 }; /* internal: a torn read under MDB_NOLOCK; the map grew */

/* REQUIRES: idx->mu held. */
static int begin_read(tern_index *idx, MDB_txn **t) {
  assert(tern_mu_held(idx));
  TERN_COUNT(catalog_reads);
  if (idx->rtxn) {
    int rc = mdb_txn_renew(idx->rtxn);
    if (rc == 0) {
      *t = idx->rtxn;
      idx->rtxn = NULL;
      return TERN_OK;
    }
    mdb_txn_abort(idx->rtxn);
    idx->rtxn = NULL;
  }
  int rc = mdb_txn_begin(idx->env, NULL, MDB_RDONLY, t);
  if (rc == MDB_MAP_RESIZED) return READ_RESIZED;
  return tern_mdb_status(rc, "beginning a read");
}

static void end_read(tern_index *idx, MDB_txn *t) {
  mdb_txn_reset(t);
  if (idx->rtxn)
    mdb_txn_abort(t);
  else
    idx->rtxn = t;
}

/* Without the LMDB lock file no writer knows of this reader, so what it
 * read is sound only if at most one commit happened since its
 * transaction began: LMDB reuses the pages a commit frees from the
 * second commit after it on. */
static int read_was_stable(tern_index *idx, MDB_txn *t) {
  if (!idx->nolock) return 1;
  MDB_envinfo info;
  if (mdb_env_info(idx->env, &info) != 0) return 0;
  return info.me_last_txnid <= (size_t)mdb_txn_id(t) + 1;
}

/* *txnid: the LMDB transaction the catalog was read at, 0 when it was not
 * read (this process holds the write lock and knows the last commit).
 * REQUIRES: idx->mu held. */
static int acquire_once(tern_index *idx, int want_buffer, tern_state **out, uint64_t *txnid) {
  assert(tern_mu_held(idx));
  tern_state *known = idx->cur;
  *txnid = 0;
  if (idx->cur_seq && known && known->rec.seq == idx->cur_seq &&
      (!want_buffer || known->buffer)) {
    known->refs++;
    *out = known;
    return TERN_OK;
  }
  MDB_txn *t;
  int rc = begin_read(idx, &t);
  if (rc != TERN_OK) return rc; /* READ_RESIZED too (TERN_TRY passes it: positive) */
  *txnid = (uint64_t)mdb_txn_id(t);
  tern_rec_state rec;
  rc = tern_catalog_get_state(idx, t, &rec);
  tern_state *st = idx->cur, *fresh = NULL;
  if (rc == TERN_OK && (!st || st->rec.seq != rec.seq)) {
    rc = tern_catalog_count_buffer(idx, t, &rec);
    if (rc == TERN_OK) rc = build_state(idx, t, &rec, &fresh);
    st = fresh;
  }
  int built_buffer = 0;
  if (rc == TERN_OK && want_buffer && !st->buffer) {
    rc = build_buffer(idx, t, st);
    built_buffer = rc == TERN_OK;
  }
  if (!read_was_stable(idx, t)) {
    if (fresh) state_free(idx, fresh);
    else if (built_buffer) {
      tern_memseg_free(st->buffer);
      st->buffer = NULL;
    }
    fresh = NULL;
    rc = READ_AGAIN;
  }
  end_read(idx, t);
  if (rc != TERN_OK && fresh) state_free(idx, fresh);
  if (rc == TERN_OK && fresh) {
    state_put(idx, idx->cur);
    idx->cur = fresh;
  }
  /* This process holds the write lock: no other commits until it goes. */
  if (rc == TERN_OK && idx->write_holds) idx->cur_seq = st->rec.seq;
  if (rc == TERN_OK) {
    st->refs++;
    *out = st;
  }
  return rc;
}

int tern_state_acquire(tern_index *idx, int want_buffer, tern_state **out) {
  uint64_t txnid;
  return tern_state_acquire_at(idx, want_buffer, out, &txnid);
}

int tern_state_acquire_at(tern_index *idx, int want_buffer, tern_state **out, uint64_t *txnid) {
  assert(!tern_mu_held(idx));
  tern_mu_lock(idx);
  int rc;
  /* A segment can vanish between reading the catalog and opening its
   * files when another process merges meanwhile: read the catalog again. */
  for (int attempt = 0;; attempt++) {
    rc = acquire_once(idx, want_buffer, out, txnid);
    if (rc == READ_RESIZED && attempt < 8) { /* another process grew the map */
      tern_mu_unlock(idx);
      rc = tern_catalog_adopt_size(idx);
      tern_mu_lock(idx);
      if (rc != TERN_OK) break;
      continue;
    }
    if ((rc != -ENOENT && rc != READ_AGAIN) || attempt == 8) break;
  }
  tern_mu_unlock(idx);
  if (rc == READ_RESIZED)
    rc = tern_fail(TERN_EBUSY, "%s: the catalog's map kept growing under every read", idx->dir);
  if (rc == READ_AGAIN)
    rc = tern_fail(TERN_EBUSY, "%s: the catalog changed under every read (no lock file)", idx->dir);
  return rc;
}

/* ------------------------------------------------------------ apply */

static int edit_drops(const tern_edit *e, uint64_t number) {
  for (size_t i = 0; i < e->ndrops; i++)
    if (e->drops[i] == number) return 1;
  return 0;
}

static tern_edit_live *edit_live(tern_edit *e, uint64_t number) {
  for (size_t i = 0; i < e->nlives; i++)
    if (e->lives[i].number == number) return &e->lives[i];
  return NULL;
}

/* A live-docs reference taking ld over (*ld NULL afterwards). */
static int ldref_of(tern_livedocs **ld, tern_ldref **out) {
  tern_ldref *l = calloc(1, sizeof *l);
  if (!l) return tern_fail(TERN_ENOMEM, "state: out of memory");
  l->refs = 1;
  l->ld = *ld;
  *ld = NULL;
  *out = l;
  return TERN_OK;
}

/* Base's slot i as the edit leaves it. */
static int apply_base_slot(tern_state *st, const tern_slot *old, tern_edit *e) {
  tern_slot *sl = &st->slots[st->nslots];
  *sl = *old;
  tern_edit_live *l = edit_live(e, old->ref->number);
  if (l) {
    sl->deleted = tern_livedocs_deleted(l->ld);
    sl->gen++;
    TERN_TRY(ldref_of(&l->ld, &sl->live));
  } else if (sl->live) {
    assert(sl->live->refs > 0);
    sl->live->refs++;
  }
  assert(sl->ref->refs > 0);
  sl->ref->refs++;
  st->nslots++;
  return TERN_OK;
}

static int apply_added_slot(tern_state *st, tern_edit_add *a) {
  tern_slot *sl = &st->slots[st->nslots];
  memset(sl, 0, sizeof *sl);
  assert(a->ref && a->ref->refs > 0);
  sl->ref = a->ref;
  sl->gate = a->ref->gate;
  sl->deleted = a->rec.deleted;
  sl->gen = a->rec.livedocs_gen;
  memcpy(sl->segid, a->rec.segid, TERN_SEGID_SIZE);
  if (a->ld) TERN_TRY(ldref_of(&a->ld, &sl->live));
  a->ref->refs++;
  st->nslots++;
  return TERN_OK;
}

static int cmp_add(const void *a, const void *b) {
  uint64_t x = ((const tern_edit_add *)a)->number, y = ((const tern_edit_add *)b)->number;
  return (x > y) - (x < y);
}

/* Base's slots minus drops, plus adds, by number (oldest first). */
static int apply_slots(tern_state *st, const tern_state *base, tern_edit *e) {
  assert(st->capslots >= base->nslots + e->nadds);
  if (e->nadds > 1) qsort(e->adds, e->nadds, sizeof *e->adds, cmp_add);
  size_t j = 0;
  for (size_t i = 0; i < base->nslots; i++) {
    const tern_slot *old = &base->slots[i];
    for (; j < e->nadds && e->adds[j].number < old->ref->number; j++)
      TERN_TRY(apply_added_slot(st, &e->adds[j]));
    if (!edit_drops(e, old->ref->number)) TERN_TRY(apply_base_slot(st, old, e));
  }
  for (; j < e->nadds; j++)
    TERN_TRY(apply_added_slot(st, &e->adds[j]));
  return TERN_OK;
}

/* A flush's view: the documents of the ops' keys base's view holds. */
static int kept_view(const tern_memseg *b, const tern_edit *e, const tern_rec_state *rec,
                     size_t merge_max, tern_memseg **out) {
  tern_mrun *run;
  TERN_TRY(tern_mrun_new(e->nops ? e->nops : 1, 0, &run));
  for (size_t i = 0; i < e->nops; i++) {
    ptrdiff_t h = tern_memseg_find(b, e->ops[i].key.p, e->ops[i].key.len);
    if (h < 0) continue;
    int rc = tern_mrun_push(run, tern_memseg_doc(b, (size_t)h));
    if (rc != TERN_OK) {
      tern_mrun_put(run);
      return rc;
    }
  }
  assert(run->n == rec->buffered_docs);
  return tern_memseg_layer(NULL, run, (size_t)rec->buffered_docs, rec->buffered_bytes, merge_max,
                           out);
}

/* The next state's buffer view; NULL (built on first need) when base had
 * none or memory ran out: never wrong, at worst read from the catalog. */
static void apply_buffer(const tern_index *idx, tern_state *st, const tern_state *base,
                         tern_edit *e) {
  const tern_rec_state *rec = &e->rec;
  size_t merge_max = tern_buffer_merge_max(idx);
  tern_memseg *view = NULL;
  int rc = TERN_OK;
  switch (e->buf) {
  case TERN_EDIT_BUF_VIEW:
    view = e->view;
    e->view = NULL;
    break;
  case TERN_EDIT_BUF_OPS:
  case TERN_EDIT_BUF_DROP:
    if (base->buffer)
      rc = tern_memseg_layer(base->buffer, e->run, (size_t)rec->buffered_docs,
                             rec->buffered_bytes, merge_max, &view);
    else
      tern_mrun_put(e->run);
    e->run = NULL; /* consumed */
    break;
  case TERN_EDIT_BUF_KEEP:
    if (base->buffer) rc = kept_view(base->buffer, e, rec, merge_max, &view);
    break;
  case TERN_EDIT_BUF_SAME:
    if (base->buffer)
      rc = tern_memseg_layer(base->buffer, NULL, (size_t)rec->buffered_docs, rec->buffered_bytes,
                             merge_max, &view);
    break;
  case TERN_EDIT_BUF_COPY: break;
  }
  st->buffer = rc == TERN_OK ? view : NULL;
}

int tern_state_apply(tern_index *idx, const tern_state *base, tern_edit *e, tern_state **out) {
  assert(tern_mu_held(idx));
  assert(base->refs > 0);
  tern_state *st = state_new(idx, base->nslots + e->nadds + 1);
  if (!st) return tern_fail(TERN_ENOMEM, "state: out of memory");
  st->rec = e->rec;
  int rc;
  st->health = tern_health_copy(e->health ? e->health : tern_state_health(base), &rc);
  if (rc == TERN_OK) rc = apply_slots(st, base, e);
  if (rc == TERN_OK) rc = tern_state_index_ranges(st);
  if (rc != TERN_OK) {
    state_free(idx, st);
    return rc;
  }
  assert(st->nslots == e->rec.nsegments);
  /* Never built here (the commit path): base's when it still covers st,
   * else the edit's (the worker's, made apart), else none. */
  if (!tern_state_cfilter_inherit(st, base) && e->cf) tern_state_cfilter_adopt(st, &e->cf);
  tern_state_map_inherit(st, base);
  apply_buffer(idx, st, base, e);
  *out = st;
  return TERN_OK;
}

int tern_state_install_cfilter(tern_index *idx, tern_cfilter **cf, int only_idle) {
  assert(tern_install_held(idx));
  tern_mu_lock(idx);
  tern_state *cur = idx->cur, *next = NULL;
  int wait = only_idle && idx->writing;
  if (cur && *cf && tern_state_cfilter_wanted(cur) && !wait) {
    tern_edit e;
    tern_edit_init(&e, cur); /* TERN_EDIT_BUF_SAME: the same buffer view */
    e.rec = cur->rec;
    e.cf = *cf;
    if (tern_state_apply(idx, cur, &e, &next) != TERN_OK) tern_clear_error(); /* none: still right */
    *cf = e.cf; /* NULL when adopted */
    if (next && next->cf) {
      state_put(idx, cur);
      idx->cur = next; /* the same commit: cur_seq holds for it */
    } else if (next) {
      state_free(idx, next);
    }
  }
  tern_mu_unlock(idx);
  return wait;
}

/* ------------------------------------------------------------ lookups */

/* The codec's primary-key lookup in slot s, past the gate with `filter`,
 * and the doc it finds when it is live there. */
static int slot_pk_find(const tern_slot *s, const tern_seg_probe *p, int filter,
                        tern_seg_cursor *c, tern_term_entry *e, uint32_t *doc) {
  uint32_t d;
  TERN_TRY(tern_seg_pk_find(s->ref->seg, p, filter, c, e, &d));
  if (!tern_slot_is_live(s, d)) return TERN_NOTFOUND;
  *doc = d;
  return TERN_OK;
}

int tern_slot_find(const tern_slot *s, const void *key, size_t klen, tern_seg_cursor *c,
                   tern_term_entry *e, uint32_t *doc) {
  tern_seg_probe p;
  TERN_TRY(tern_seg_probe_init(&p, key, klen));
  int filter = tern_seg_gate_pass(&s->gate, &p);
  if (filter <= 0) return filter < 0 ? filter : TERN_NOTFOUND;
  return slot_pk_find(s, &p, filter, c, e, doc);
}

int tern_slot_find_in(const tern_slot *s, const tern_seg_probe *p, int filter, uint64_t gb,
                      tern_seg_cursor *c, tern_term_entry *e, uint32_t *doc) {
  uint32_t d;
  TERN_TRY(tern_seg_pk_find_in(s->ref->seg, p, filter, gb, c, e, &d));
  if (!tern_slot_is_live(s, d)) return TERN_NOTFOUND;
  *doc = d;
  return TERN_OK;
}

/* Segments probed per wave: their filter lines are fetched together. */
#define PROBE_WAVE TERN_PREFETCH_WAVE

/* Filters and blocks of the slots cand[0..n), in that order (their ranges
 * admitted the key): TERN_OK with the first live hit, else TERN_NOTFOUND.
 * Bit k of `maybe`: cand[k]'s filter answered already (maybe). */
static int probe_candidates(const tern_state *st, const uint32_t *cand, size_t n, uint32_t maybe,
                            const tern_seg_probe *p, tern_seg_cursor *c, tern_term_entry *e,
                            tern_state_hit *hit) {
  assert(n <= 32);
  for (size_t k = 0; k < n; k++) {
    const tern_slot *sl = &st->slots[cand[k]];
    int filter = (maybe >> k) & 1 ? TERN_SEG_FILTER_MAYBE
                                  : tern_state_slot_filter(st, cand[k], p); /* line, else gate */
    if (filter <= 0) {
      if (filter < 0) return filter;
      continue;
    }
    TERN_COUNT_GET(block_probes, 1);
    int rc = slot_pk_find(sl, p, filter, c, e, &hit->doc);
    if (rc == TERN_NOTFOUND) continue;
    if (rc == TERN_OK) hit->slot = sl;
    return rc;
  }
  return TERN_NOTFOUND;
}

/* The filter of slot i, from its line (fetched already) when the line
 * decides, else from its gate: as tern_state_slot_filter, inline and
 * uncounted (the caller counts a wave's tests at once). */
static inline int slot_filter_inline(const tern_state *st, uint32_t i, const tern_seg_probe *p) {
  int line = tern_seg_filter_line_gate(&st->lines[i], &p->fk);
  return line >= 0 ? line : tern_seg_gate_filter(&st->slots[i].gate, p);
}

/* One wave, slots[ids[i]] for i in [lo, hi) newest first, with filter
 * lines: range and filter in one pass (issue 21 item 6: what a get pays
 * per segment beyond the line's cache miss).  The lines were fetched
 * before (tern_state_prefetch for the newest wave, the caller for the
 * others), so the misses still overlap. */
static int probe_wave_lines(const tern_state *st, const uint32_t *ids, size_t lo, size_t hi,
                            const tern_seg_probe *p, tern_seg_cursor *c, tern_term_entry *e,
                            tern_state_hit *hit) {
  TERN_COUNT_GET(range_checks, hi - lo);
  size_t tested = 0;
  int rc = TERN_NOTFOUND;
  for (size_t i = hi; i-- > lo;) {
    uint32_t id = ids ? ids[i] : (uint32_t)i;
    const tern_slot *sl = &st->slots[id];
    if (!tern_seg_gate_admits(&sl->gate, p)) continue;
    tested++;
    int filter = slot_filter_inline(st, id, p);
    if (filter == 0) continue;
    if (filter < 0) {
      rc = filter;
      break;
    }
    TERN_COUNT_GET(block_probes, 1);
    rc = slot_pk_find(sl, p, filter, c, e, &hit->doc);
    if (rc == TERN_NOTFOUND) continue;
    if (rc == TERN_OK) hit->slot = sl;
    break;
  }
  TERN_COUNT_GET(filter_checks, tested);
  return rc;
}

/* Starts fetching the filter lines of slots[ids[i]], i in [lo, hi). */
static void prefetch_wave(const tern_state *st, const uint32_t *ids, size_t lo, size_t hi,
                          const tern_seg_probe *p) {
  for (size_t i = lo; i < hi; i++) {
    uint64_t page = 0;
    const tern_seg_filter_line *l = &st->lines[ids ? ids[i] : i];
    const uint8_t *line = tern_seg_filter_line_block(l, p->fk.hash, &page);
    if (line) {
      __builtin_prefetch(line);
      if (!l->settled) __builtin_prefetch(&l->checked[page / 64]); /* settled: no bitmap read */
    }
  }
}

/* slots[ids[i]] for i in [0, n) newest first, in waves.  With filter
 * lines, the wave's lines fetched first (the newest wave's by
 * tern_state_prefetch, before the buffer), then range and line slot by
 * slot (probe_wave_lines).  Without, first every slot's range, starting
 * its filter's fetch, so that the cache misses overlap instead of
 * following one another; then the filters and the blocks.  ids NULL: the
 * slots 0..n-1 themselves. */
static int probe_in_turn(const tern_state *st, const uint32_t *ids, size_t count,
                         const tern_seg_probe *p, tern_seg_cursor *c, tern_term_entry *e,
                         tern_state_hit *hit) {
  uint32_t cand[PROBE_WAVE];
  for (size_t hi = count; hi > 0;) {
    size_t lo = hi > PROBE_WAVE ? hi - PROBE_WAVE : 0, n = 0;
    if (st->lines) {
      /* the newest wave's lines: tern_state_prefetch, before the buffer,
       * unless a combined filter was tested first (it fetches none) */
      if (hi != count || (tern_state_has_cfilter(st) && !tern_state_cf_lines_first(st)))
        prefetch_wave(st, ids, lo, hi, p);
      int rc = probe_wave_lines(st, ids, lo, hi, p, c, e, hit);
      if (rc != TERN_NOTFOUND) return rc;
      hi = lo;
      continue;
    }
    for (size_t i = hi; i-- > lo;) {
      cand[n] = ids ? ids[i] : (uint32_t)i;
      n += (size_t)tern_seg_gate_start(&st->slots[cand[n]].gate, p);
    }
    TERN_COUNT_GET(range_checks, hi - lo);
    int rc = probe_candidates(st, cand, n, 0, p, c, e, hit);
    if (rc != TERN_NOTFOUND) return rc;
    hi = lo;
  }
  return TERN_NOTFOUND;
}

/* What a get through st's combined filter found (present: a named slot
 * held the key live; absent: the Bloom filter or the table ruled it out,
 * or no named slot held it) moves the order of its lines: one get in
 * TERN_CF_LEARN_EVERY (picked by the hash's low bits) steps the state's
 * counter, cf_order, up when found, down when not, within [0,
 * TERN_CF_ORDER_MAX]; the table is read first from TERN_CF_ORDER_TABLE.
 * A stream of gets of one kind turns the order within a few dozen gets
 * and then writes nothing (the counter saturated); the two steps of
 * hysteresis keep a mix whose gets mostly find (or mostly miss) in the
 * right order nearly all the time, where one bit would follow the mix's
 * share (docs/benchmarks/HISTORY.md, "2026-12-02, evening").  A relaxed byte: no get
 * writes it while it stays.  Both orders answer the same (cfilter.h: the
 * table alone names a superset of the slots holding the key). */
void tern_state_order_step(const atomic_uchar *order, int present) {
  unsigned cur = atomic_load_explicit(order, memory_order_relaxed);
  unsigned next = present ? cur + (cur < TERN_CF_ORDER_MAX) : cur - (cur > 0);
  if (next == cur) return;
  /* a hint beside the state's immutable contents: st is never const itself */
  atomic_store_explicit((atomic_uchar *)order, (unsigned char)next, memory_order_relaxed);
}

static inline void cf_learn(const tern_state *st, const tern_seg_probe *p, int present) {
  if (p->fk.hash & (TERN_CF_LEARN_EVERY - 1) || tern_cfilter_test_tuning.order) return;
  tern_state_order_step(&st->cf_order, present); /* tests: fixed */
}

void tern_state_map_inherit(tern_state *st, const tern_state *from) {
  if (!from) return;
  atomic_store_explicit(&st->map_order, atomic_load_explicit(&from->map_order, memory_order_relaxed),
                        memory_order_relaxed);
}

/* The slots the combined filter's table names for the key (cfilter.h),
 * newest first; an overflowed bucket names nothing: every slot in turn. */
static __attribute__((noinline)) int probe_named(const tern_state *st, const uint32_t *ids,
                                                 size_t count, const tern_seg_probe *p,
                                                 tern_seg_cursor *c, tern_term_entry *e,
                                                 tern_state_hit *hit) {
  uint32_t cand[TERN_CFILTER_ENTRIES];
  size_t n = tern_cfilter_candidates(&st->cf_view, p->fk.hash, cand);
  if (n == TERN_CFILTER_ALL) return probe_in_turn(st, ids, count, p, c, e, hit);
  for (size_t k = 0; k < n; k++) {
    const tern_slot *sl = &st->slots[cand[k]];
    if (!tern_seg_gate_admits(&sl->gate, p)) continue;
    TERN_COUNT_GET(block_probes, 1);
    int rc = slot_pk_find(sl, p, 1, c, e, &hit->doc);
    if (rc == TERN_NOTFOUND) continue;
    if (rc == TERN_OK) {
      hit->slot = sl;
      cf_learn(st, p, 1);
    }
    return rc;
  }
  cf_learn(st, p, 0);
  return TERN_NOTFOUND;
}

/* The slots' own lines (probe_in_turn), what they found teaching the
 * combined filter's order. */
static int probe_lines_learning(const tern_state *st, const uint32_t *ids, size_t count,
                                const tern_seg_probe *p, tern_seg_cursor *c, tern_term_entry *e,
                                tern_state_hit *hit) {
  int rc = probe_in_turn(st, ids, count, p, c, e, hit);
  if (rc == TERN_OK || rc == TERN_NOTFOUND) cf_learn(st, p, rc == TERN_OK);
  return rc;
}

/* A key no router places (its escape, a segment this state lacks, or
 * no router at all): the slots the table names, or, without a table
 * (the Bloom filter alone), the slots' own lines. */
static int probe_unrouted(const tern_state *st, const uint32_t *ids, size_t count,
                          const tern_seg_probe *p, tern_seg_cursor *c, tern_term_entry *e,
                          tern_state_hit *hit) {
  if (st->cf_view.buckets) return probe_named(st, ids, count, p, c, e, hit);
  return probe_lines_learning(st, ids, count, p, c, e, hit);
}

/* The one slot the router names for the key (router.h): a key of the
 * covered segments that one of them holds is in that one, so its block
 * alone answers; a value past the covered segments is a key none holds.
 * The escape (a key in several) and a segment this state lacks go to
 * probe_unrouted.  Out of line, as probe_named: the Bloom filter's "no"
 * that ends most absent gets saves no registers for them. */
static __attribute__((noinline)) int probe_routed(const tern_state *st, const uint32_t *ids,
                                                  size_t count, const tern_seg_probe *p,
                                                  tern_seg_cursor *c, tern_term_entry *e,
                                                  tern_state_hit *hit) {
  const tern_cfilter_view *v = &st->cf_view;
  uint32_t k = tern_router_get(v->router, p->fk.hash);
  if (k == tern_router_escape(v->router)) return probe_unrouted(st, ids, count, p, c, e, hit);
  if (k >= v->ncovered) {
    cf_learn(st, p, 0);
    return TERN_NOTFOUND;
  }
  uint32_t s = v->slot_of[k];
  if (s == TERN_CFILTER_NONE) return probe_unrouted(st, ids, count, p, c, e, hit);
  const tern_slot *sl = &st->slots[s];
  int rc = TERN_NOTFOUND;
  if (tern_seg_gate_admits(&sl->gate, p)) {
    TERN_COUNT_GET(block_probes, 1);
    rc = slot_pk_find(sl, p, 1, c, e, &hit->doc);
  }
  if (rc == TERN_OK) hit->slot = sl;
  if (rc == TERN_OK || rc == TERN_NOTFOUND) cf_learn(st, p, rc == TERN_OK);
  return rc;
}

/* The slots ids[0..count) probed in turn, through the combined filter
 * when st has one (cfilter.h): its router names the one covered slot
 * that may hold the key (else its table's bucket names the slots, newest
 * first), and only their blocks are probed, never the other slots'
 * filter lines (issue 21 item 6).  Its Bloom filter, a third of the
 * table's size, is asked first while the gets' keys are mostly absent
 * (its "no" ends the get at one line that stays in cache better) and
 * skipped while they are mostly present (tern_state.cf_order).  Router
 * and table are exact about which slots hold a key but for fingerprint
 * matches and keys they were not built with, so a named slot's own
 * filter is skipped (TERN_SEG_FILTER_MAYBE: the block decides).  Over
 * more than TERN_CFILTER_TABLE_KEYS keys the combined filter has no
 * table: what the router does not place reads the slots' own lines, and
 * without a router (over TERN_CFILTER_ROUTER_KEYS keys, or few slots) so
 * does every key the Bloom filter lets through (and every key while most
 * are present). */
static int probe_overlapping(const tern_state *st, const uint32_t *ids, size_t count,
                             const tern_seg_probe *p, tern_seg_cursor *c, tern_term_entry *e,
                             tern_state_hit *hit) {
  if (!tern_state_has_cfilter(st)) return probe_in_turn(st, ids, count, p, c, e, hit);
  /* few slots, or no table, and mostly present: their lines */
  if (tern_state_cf_lines_first(st)) return probe_lines_learning(st, ids, count, p, c, e, hit);
  if (!tern_state_cf_table_first(st)) {
    TERN_COUNT_GET(filter_checks, 1);
    if (!tern_filter_view_may_contain(st->cf_view.bloom, &p->fk)) {
      cf_learn(st, p, 0);
      return TERN_NOTFOUND;
    }
  }
  if (st->cf_view.router) return probe_routed(st, ids, count, p, c, e, hit);
  return probe_unrouted(st, ids, count, p, c, e, hit);
}

int tern_state_find_at(const tern_state *st, const tern_seg_probe *p, tern_map_pos pos,
                       tern_seg_cursor *c, tern_term_entry *e, tern_state_hit *hit) {
  if (!st->ndisjoint) return probe_overlapping(st, NULL, st->nslots, p, c, e, hit);
  /* The one disjoint slot whose range admits the key, found by the search
   * (`at`), then the overlapping ones newest first: any order finds the
   * one live document (state_ranges.c).  Nothing left to probe costs no
   * call: an absent key the map's filter line rules out ends here. */
  uint32_t slot;
  int maybe, inside;
  int n = tern_state_ranges_find(st, p, pos, &slot, &maybe, &inside);
  TERN_COUNT_GET(range_checks, 1);
  if (n) {
    int rc = probe_candidates(st, &slot, 1, (uint32_t)maybe, p, c, e, hit);
    /* a candidate strictly inside by heads: what its filter and block
     * said teaches the map's order (its line's "absent" did, in the
     * search) */
    if (inside && (rc == TERN_OK || rc == TERN_NOTFOUND))
      tern_state_map_learn(st, p, rc == TERN_OK);
    if (rc != TERN_NOTFOUND) return rc;
  }
  if (!st->noverlap) return TERN_NOTFOUND;
  return probe_overlapping(st, st->overlap, st->noverlap, p, c, e, hit);
}

int tern_state_find(const tern_state *st, const tern_seg_probe *p, tern_seg_cursor *c,
                    tern_term_entry *e, tern_state_hit *hit) {
  return tern_state_find_at(st, p, tern_state_ranges_at(st, p), c, e, hit);
}

int tern_state_find_key(const tern_state *st, const tern_seg_probe *p, tern_seg_cursor *c,
                        tern_term_entry *e, tern_state_hit *hit, ptrdiff_t *buf_at) {
  tern_state_cfilter_prefetch(st, p);
  tern_state_prefetch(st, p); /* the newest wave's filter lines */
  *buf_at = tern_memseg_find_key(st->buffer, p->key, p->len, &p->fk); /* runs ruled out first */
  if (*buf_at >= 0) return TERN_OK;
  return tern_state_find(st, p, c, e, hit);
}
