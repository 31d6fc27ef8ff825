/* SPDX-License-Identifier: MIT */
/*
 * ingest.c — tern_ingest: segments built outside the index (a directory
 * holding one segment's files, as tern names them: NAME.tim, .tix, .doc,
 * .flt, .val) registered in one edit.
 *
 * 1. Outside any lock: each segment opened from its directory and
 *    verified whole (every file's checksums, as a merge checks its
 *    inputs); it must be an index segment (a primary-key field whose doc
 *    ids are its keys' ranks).  Keys present in two ingested segments (only
 *    looked for where their key ranges overlap) are TERN_EINVAL, or, with
 *    TERN_INGEST_LATER_WINS, deleted in the earlier one's first live docs.
 * 2. Under install_mu, on the newest state: the keys the index already has
 *    (only where an ingested segment's range overlaps a segment's or the
 *    buffer's) — by default the older document is deleted (a new live-docs
 *    generation, or taken out of the buffer), with TERN_INGEST_BEHIND the
 *    ingested one is (in its first live docs).  Fresh segment numbers; the
 *    files linked into the index directory (copied and fsynced across file
 *    systems), the directory fsynced; then ONE edit registers them all.
 *
 * A crash before the edit's LMDB commit leaves files under numbers at or
 * above the catalog's next number: the next writable open removes them.
 */
#include "engine/util/counters.h"
#include "engine/state/edit.h"
#include "engine/util/errwrap.h"
#include "engine/util/vec.h"
#include "engine/maint/worker.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SRC_NAME_MAX 256

typedef struct ing_seg {
  const char *path;
  char name[SRC_NAME_MAX]; /* the segment's name in its directory */
  tern_seg *seg;
  const tern_seg_field *unique;
  tern_seg_gate gate;
  tern_u32vec dels; /* its docs deleted at ingest */
  uint64_t number;
  int placed;
} ing_seg;

typedef struct ingest {
  tern_index *idx;
  unsigned flags;
  ing_seg *segs;
  size_t n;
  tern_state *cur;
  tern_u32vec *slot_dels; /* per slot of cur */
  tern_mdoc *gone;        /* buffered keys taken out of the buffer */
  size_t ngone, capgone;
  tern_arena arena; /* their bytes */
  tern_edit e;
} ingest;

/* ------------------------------------------------------------ the sources */

/* The one segment in `path`: every entry a file of the same segment. */
static int find_segment(ing_seg *s) {
  DIR *d = opendir(s->path);
  if (!d) return tern_fail_errno(s->path);
  int rc = TERN_OK;
  struct dirent *de;
  s->name[0] = '\0';
  while (rc == TERN_OK && (de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    char name[SRC_NAME_MAX];
    size_t len = strlen(de->d_name);
    int ok = tern_seg_file_segment(de->d_name, name, sizeof name) &&
             !(len > 4 && !strcmp(de->d_name + len - 4, ".tmp"));
    if (ok && s->name[0] && strcmp(name, s->name)) ok = 0;
    if (!ok) {
      rc = tern_fail(TERN_EINVAL, "%s: %s is not a file of one segment (a directory holding "
                     "exactly one segment's files is wanted)", s->path, de->d_name);
      break;
    }
    snprintf(s->name, sizeof s->name, "%s", name);
  }
  closedir(d);
  if (rc == TERN_OK && !s->name[0]) rc = TERN_NOTFOUND; /* an empty build: nothing to add */
  return rc;
}

/* Opens and verifies one source segment. */
static int open_source(ing_seg *s) {
  TERN_TRY(find_segment(s));
  TERN_TRY(tern_seg_open(&s->seg, s->path, s->name, TERN_IO_MMAP));
  TERN_TRY(tern_seg_verify(s->seg));
  s->unique = tern_seg_unique_field(s->seg);
  tern_field_info fi;
  if (s->unique) tern_seg_field_info(s->unique, &fi);
  if (!s->unique || fi.nterms != tern_seg_max_doc(s->seg) || !fi.nterms)
    return tern_fail(TERN_EINVAL,
                     "%s/%s: not an index segment (a primary-key field with one key per "
                     "document, at least one)",
                     s->path, s->name);
  tern_seg_gate_of(s->seg, &s->gate);
  return TERN_OK;
}

static int ranges_overlap(const tern_seg_gate *a, const tern_seg_gate *b) {
  return tern_seg_term_cmp(a->min, a->min_len, b->max, b->max_len) <= 0 &&
         tern_seg_term_cmp(b->min, b->min_len, a->max, a->max_len) <= 0;
}

/* Keys of two ingested segments (a before b): TERN_EINVAL, or the
 * earlier one's document deleted. */
static int ingested_pair(ingest *g, ing_seg *a, ing_seg *b) {
  if (!ranges_overlap(&a->gate, &b->gate)) return TERN_OK;
  tern_seg_cursor *ca = malloc(sizeof *ca), *cb = malloc(sizeof *cb);
  int rc = ca && cb ? TERN_OK : tern_fail(TERN_ENOMEM, "ingest: out of memory");
  tern_term_entry ea, eb;
  int ha = 0, hb = 0;
  if (rc == TERN_OK) {
    tern_seg_cursor_init(ca);
    tern_seg_cursor_init(cb);
    rc = tern_seg_first_term(a->seg, a->unique, ca, &ea);
    ha = rc == TERN_OK;
    if (rc == TERN_NOTFOUND) rc = TERN_OK;
    if (rc == TERN_OK) rc = tern_seg_seek_ceil(b->seg, b->unique, ea.term, ea.len, cb, &eb);
    hb = rc == TERN_OK;
    if (rc == TERN_NOTFOUND) rc = TERN_OK;
  }
  while (rc == TERN_OK && ha && hb) {
    int c = tern_seg_term_cmp(ea.term, ea.len, eb.term, eb.len);
    if (c == 0 && !(g->flags & TERN_INGEST_LATER_WINS)) {
      rc = tern_fail(TERN_EINVAL, "%s and %s both hold key \"%.*s\" (TERN_INGEST_LATER_WINS "
                     "lets the later one win)", a->path, b->path, (int)(ea.len > 64 ? 64 : ea.len),
                     (const char *)ea.term);
      break;
    }
    if (c == 0) rc = tern_u32vec_push(&a->dels, (uint32_t)ea.ordinal);
    if (rc != TERN_OK) break;
    if (c <= 0) {
      rc = tern_seg_next_term(a->seg, ca, &ea);
      ha = rc == TERN_OK;
    }
    if (c >= 0 && rc >= 0) {
      rc = tern_seg_next_term(b->seg, cb, &eb);
      hb = rc == TERN_OK;
    }
    if (rc == TERN_NOTFOUND) rc = TERN_OK;
  }
  if (ca) tern_seg_cursor_release(ca);
  if (cb) tern_seg_cursor_release(cb);
  free(ca);
  free(cb);
  return rc;
}

/* ------------------------------------------------------------ the index's keys */

static int note_gone(ingest *g, const uint8_t *key, size_t klen) {
  tern_mdoc *d = tern_vec_room(g->gone, g->ngone, &g->capgone, sizeof *d);
  uint8_t *p = d ? tern_arena_alloc(&g->arena, klen) : NULL;
  if (!p) return tern_fail(TERN_ENOMEM, "ingest: out of memory");
  g->gone = d;
  memcpy(p, key, klen);
  g->gone[g->ngone++] = (tern_mdoc){{p, (uint32_t)klen, 0}, NULL};
  return TERN_OK;
}

/* One key of ingested segment s (doc `doc`) that the index may hold. */
static int against_index(ingest *g, ing_seg *s, const tern_term_entry *e, const int *overlap,
                         int in_buffer_range, tern_seg_cursor *c) {
  int behind = g->flags & TERN_INGEST_BEHIND;
  uint32_t doc = (uint32_t)e->ordinal;
  TERN_COUNT(ingest_probes);
  if (in_buffer_range && tern_memseg_find(g->cur->buffer, e->term, e->len) >= 0)
    return behind ? tern_u32vec_push(&s->dels, doc) : note_gone(g, e->term, e->len);
  for (size_t i = g->cur->nslots; i-- > 0;) {
    if (!overlap[i]) continue;
    tern_term_entry se;
    uint32_t old;
    int rc = tern_slot_find(&g->cur->slots[i], e->term, e->len, c, &se, &old);
    if (rc == TERN_NOTFOUND) continue;
    TERN_TRY(rc);
    return behind ? tern_u32vec_push(&s->dels, doc) : tern_u32vec_push(&g->slot_dels[i], old);
  }
  return TERN_OK;
}

/* Whether key k lies within [min, max] of the buffer view. */
static int in_buffer(const tern_memseg *b, const uint8_t *k, size_t klen) {
  const tern_keyref *lo = &b->docs[0].key, *hi = &b->docs[b->n - 1].key;
  return tern_key_cmp(k, klen, lo->p, lo->len) >= 0 && tern_key_cmp(k, klen, hi->p, hi->len) <= 0;
}

/* The keys of s the index holds, looked for only where ranges overlap
 * (an ingest of disjoint ranges does no per-key work). */
static int resolve_source(ingest *g, ing_seg *s) {
  const tern_state *st = g->cur;
  int *overlap = calloc(st->nslots + 1, sizeof *overlap), any = 0;
  if (!overlap) return tern_fail(TERN_ENOMEM, "ingest: out of memory");
  for (size_t i = 0; i < st->nslots; i++)
    any |= overlap[i] = st->slots[i].gate.lo <= st->slots[i].gate.hi &&
                        ranges_overlap(&st->slots[i].gate, &s->gate);
  const tern_memseg *b = st->buffer;
  int buf = b && b->n && tern_memseg_flat(b) == TERN_OK &&
            tern_key_cmp(s->gate.min, s->gate.min_len, b->docs[b->n - 1].key.p,
                         b->docs[b->n - 1].key.len) <= 0 &&
            tern_key_cmp(b->docs[0].key.p, b->docs[0].key.len, s->gate.max, s->gate.max_len) <= 0;
  tern_seg_cursor *sc = malloc(sizeof *sc), *c = malloc(sizeof *c);
  int rc = sc && c ? TERN_OK : tern_fail(TERN_ENOMEM, "ingest: out of memory");
  if (rc == TERN_OK && (any || buf)) {
    tern_seg_cursor_init(sc);
    tern_seg_cursor_init(c);
    tern_term_entry e;
    for (rc = tern_seg_first_term(s->seg, s->unique, sc, &e); rc == TERN_OK;
         rc = tern_seg_next_term(s->seg, sc, &e))
      if ((rc = against_index(g, s, &e, overlap, buf && in_buffer(b, e.term, e.len), c)) != TERN_OK)
        break;
    if (rc == TERN_NOTFOUND) rc = TERN_OK;
    tern_seg_cursor_release(sc);
    tern_seg_cursor_release(c);
  }
  free(sc);
  free(c);
  free(overlap);
  return rc;
}

/* ------------------------------------------------------------ placing the files */

/* Links (same file system) or copies s's files under its new number. */
static int place(tern_index *idx, ing_seg *s) {
  char name[TERN_SEGNAME_MAX];
  tern_segment_name(name, s->number);
  s->placed = 1;
  return tern_seg_link(s->path, s->name, idx->dir, name);
}

/* ------------------------------------------------------------ the edit */

static int livedocs_of(uint32_t max_doc, const tern_livedocs *base, tern_u32vec *d,
                       tern_livedocs **out) {
  tern_livedocs *fresh = NULL;
  int rc = base ? TERN_OK : tern_livedocs_new(&fresh, max_doc);
  if (rc == TERN_OK) rc = tern_livedocs_apply(out, base ? base : fresh, d->v, d->n);
  tern_livedocs_free(fresh);
  return rc;
}

/* The ingested segments (opened from the index directory) and their
 * first live docs. */
static int edit_adds(ingest *g) {
  for (size_t i = 0; i < g->n; i++) {
    ing_seg *s = &g->segs[i];
    tern_rec_segment r = {{0}, tern_seg_max_doc(s->seg), 0, 0};
    memcpy(r.segid, tern_seg_id(s->seg), TERN_SEGID_SIZE);
    tern_segref *ref;
    TERN_TRY(tern_segref_preopen(g->idx, s->number, &r, &ref));
    tern_livedocs *ld = NULL;
    int rc = s->dels.n ? livedocs_of((uint32_t)r.max_doc, NULL, &s->dels, &ld) : TERN_OK;
    if (rc != TERN_OK) {
      tern_segref_release(g->idx, ref);
      return rc;
    }
    TERN_TRY(tern_edit_add_segment(g->idx, &g->e, s->number, &r, ref, ld));
  }
  return TERN_OK;
}

/* New live docs of the index's segments that lost documents. */
static int edit_lives(ingest *g) {
  for (size_t i = 0; g->slot_dels && i < g->cur->nslots; i++) {
    if (!g->slot_dels[i].n) continue;
    const tern_slot *sl = &g->cur->slots[i];
    tern_livedocs *ld;
    TERN_TRY(livedocs_of(sl->ref->max_doc, sl->live ? sl->live->ld : NULL, &g->slot_dels[i], &ld));
    TERN_TRY(tern_edit_set_livedocs(&g->e, sl->ref->number, ld));
  }
  return TERN_OK;
}

/* The buffered keys that lose their documents: sorted, unique, and their
 * tombstones as the run on top of the buffer view. */
static int edit_buffer(ingest *g) {
  if (!g->ngone) return TERN_OK;
  uint32_t *perm = malloc(g->ngone * sizeof *perm);
  tern_mdoc *sorted = malloc(g->ngone * sizeof *sorted);
  int rc = perm && sorted ? tern_sort_by_key(perm, g->gone, sizeof *g->gone, g->ngone, NULL)
                          : tern_fail(TERN_ENOMEM, "ingest: out of memory");
  size_t m = 0;
  for (size_t i = 0; rc == TERN_OK && i < g->ngone; i++) {
    const tern_mdoc *d = &g->gone[perm[i]];
    if (m && !tern_key_cmp(sorted[m - 1].key.p, sorted[m - 1].key.len, d->key.p, d->key.len))
      continue;
    sorted[m++] = *d;
  }
  free(perm);
  if (rc == TERN_OK) rc = tern_mrun_new(m, 0, &g->e.run);
  for (size_t i = 0; rc == TERN_OK && i < m; i++)
    rc = tern_mrun_push(g->e.run, &sorted[i]);
  free(g->gone);
  g->gone = sorted;
  g->ngone = m;
  g->e.buf = TERN_EDIT_BUF_DROP;
  g->e.ops = g->gone;
  g->e.nops = m;
  return rc;
}

/* Under install_mu: resolve against the newest state, place, log. */
static int install(ingest *g) {
  tern_index *idx = g->idx;
  TERN_TRY(tern_state_acquire(idx, 1, &g->cur));
  tern_edit_init(&g->e, g->cur);
  g->slot_dels = calloc(g->cur->nslots + 1, sizeof *g->slot_dels);
  int rc = g->slot_dels ? TERN_OK : tern_fail(TERN_ENOMEM, "ingest: out of memory");
  for (size_t i = 0; rc == TERN_OK && i < g->n; i++)
    rc = resolve_source(g, &g->segs[i]);
  for (size_t i = 0; rc == TERN_OK && i < g->n; i++) {
    g->segs[i].number = tern_new_segment_number(idx, &g->cur->rec);
    rc = place(idx, &g->segs[i]);
  }
  if (rc == TERN_OK) rc = tern_fsync_dir(idx->dir);
  if (rc == TERN_OK) rc = edit_adds(g);
  if (rc == TERN_OK) rc = edit_lives(g);
  if (rc == TERN_OK) rc = edit_buffer(g);
  if (rc == TERN_OK) rc = tern_log_and_apply(idx, &g->e);
  tern_edit_free(idx, &g->e); /* the new readers go before their files may */
  for (size_t i = 0; rc != TERN_OK && i < g->n; i++) {
    if (!g->segs[i].placed) continue;
    char name[TERN_SEGNAME_MAX];
    tern_segment_name(name, g->segs[i].number);
    tern_discard_new_segment(idx, name);
  }
  return rc;
}

static void ingest_free(ingest *g) {
  for (size_t i = 0; g->segs && i < g->n; i++) {
    if (g->segs[i].seg) tern_seg_close(g->segs[i].seg);
    free(g->segs[i].dels.v);
  }
  for (size_t i = 0; g->slot_dels && g->cur && i < g->cur->nslots; i++)
    free(g->slot_dels[i].v);
  free(g->slot_dels);
  free(g->segs);
  free(g->gone);
  tern_arena_free(&g->arena);
  if (g->cur) tern_state_release(g->idx, g->cur);
}

/* Opens every source; an empty directory (a build or export of no
 * document) is dropped from the list: it adds nothing. */
static int open_sources(ingest *g) {
  size_t kept = 0;
  for (size_t i = 0; i < g->n; i++) {
    int rc = open_source(&g->segs[i]);
    if (rc == TERN_NOTFOUND) continue;
    TERN_TRY(rc);
    if (kept != i) {
      g->segs[kept] = g->segs[i];
      memset(&g->segs[i], 0, sizeof g->segs[i]);
    }
    kept++;
  }
  g->n = kept;
  return TERN_OK;
}

static int ingest_locked(ingest *g) {
  TERN_TRY(open_sources(g));
  if (!g->n) return TERN_OK;
  for (size_t i = 0; i < g->n; i++)
    for (size_t j = i + 1; j < g->n; j++)
      TERN_TRY(ingested_pair(g, &g->segs[i], &g->segs[j]));
  tern_install_lock(g->idx);
  int rc = install(g);
  tern_install_unlock(g->idx);
  TERN_TRY(rc);
  int failed = tern_worker_after_commit(g->idx, &g->e.rec, 1); /* merges may be due */
  if (failed)
    return tern_fail(TERN_EPARTIAL, "%s: ingested; a flush or merge after a commit failed (%s)",
                     g->idx->dir, tern_strerror(failed));
  return TERN_OK;
}

int tern_ingest(tern_index *idx, const char *const *paths, size_t n, unsigned flags) {
  tern_clear_error();
  if (!idx || (n && !paths) || (flags & ~(TERN_INGEST_BEHIND | TERN_INGEST_LATER_WINS)))
    return tern_fail(TERN_EINVAL, "tern_ingest: bad arguments");
  for (size_t i = 0; i < n; i++)
    if (!paths[i]) return tern_fail(TERN_EINVAL, "tern_ingest: path %zu is NULL", i);
  if (!n) return TERN_OK;
  TERN_TRY(tern_writer_lock(idx));
  ingest g = {0};
  g.idx = idx;
  g.flags = flags;
  g.n = n;
  tern_arena_init(&g.arena);
  g.segs = calloc(n, sizeof *g.segs);
  int rc = g.segs ? TERN_OK : tern_fail(TERN_ENOMEM, "ingest: out of memory");
  for (size_t i = 0; rc == TERN_OK && i < n; i++)
    g.segs[i].path = paths[i];
  if (rc == TERN_OK) rc = ingest_locked(&g);
  ingest_free(&g);
  tern_writer_unlock(idx);
  if (rc == TERN_OK) tern_clear_error();
  return rc;
}
