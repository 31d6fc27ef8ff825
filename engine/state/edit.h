/* SPDX-License-Identifier: MIT */
/*
 * edit.h — one change of the index, as a delta from the state it builds
 * on (after LevelDB's VersionEdit): segments added (with their open reader
 * and first live docs), segments dropped, new live docs per segment,
 * changes to the write buffer (documents put and taken out of the
 * catalog's buffer; in memory a run on top of the view, the view replaced,
 * or the view kept to some keys), a sweep of the buffer's older
 * generations, a new health record, and the counters (next segment number;
 * the commit number is the catalog's, moved by every edit that writes it).
 *
 * A commit, a bulk commit, a flush, a merge, a health record and a
 * backup's catalog each only build an edit.  tern_log_and_apply is the one
 * place that moves the current state for a write of this process: under
 * install_mu it checks that the edit builds on idx->cur, writes the edit
 * into the catalog in ONE LMDB transaction (tern_edit_log), and installs
 * the next state made from idx->cur and the edit (tern_state_apply), so
 * the catalog is never read back after this process's own writes.
 */
#ifndef TERN_ENGINE_EDIT_H
#define TERN_ENGINE_EDIT_H

#include "engine/state/index.h"

/* A segment the edit registers. */
typedef struct tern_edit_add {
  uint64_t number;
  tern_rec_segment rec; /* segid and max_doc; deleted and generation follow ld */
  tern_segref *ref;     /* its open reader (one reference, owned); NULL: log only */
  tern_livedocs *ld;    /* its first live docs (owned), NULL: nothing deleted */
} tern_edit_add;

/* New live docs of a segment of the base state. */
typedef struct tern_edit_live {
  uint64_t number;
  tern_livedocs *ld; /* owned */
} tern_edit_live;

/* What the edit does to the write buffer. */
typedef enum tern_edit_buffer {
  TERN_EDIT_BUF_SAME, /* unchanged */
  TERN_EDIT_BUF_OPS,  /* ops: put (doc) or taken out (doc NULL); view: `run` on top */
  TERN_EDIT_BUF_DROP, /* ops' keys taken out when buffered; view: `run` (their tombstones) */
  TERN_EDIT_BUF_KEEP, /* the buffer keeps only ops' keys it holds (a flush) */
  TERN_EDIT_BUF_VIEW, /* no catalog change; the view replaced by `view` (same documents) */
  TERN_EDIT_BUF_COPY  /* the buffer becomes exactly `view`'s documents (a backup) */
} tern_edit_buffer;

typedef struct tern_edit {
  tern_state *base; /* the state the edit builds on (a reference the caller holds) */
  tern_edit_add *adds;
  size_t nadds, capadds;
  uint64_t *drops; /* numbers of segments the edit removes */
  size_t ndrops, capdrops;
  tern_edit_live *lives;
  size_t nlives, caplives;
  uint64_t number_used; /* a segment number consumed (0: none); adds' numbers count too */
  /* buffer */
  tern_edit_buffer buf;
  const tern_mdoc *ops; /* ascending unique keys; the caller's memory */
  size_t nops;
  tern_mrun *run;         /* owned: BUF_OPS / BUF_DROP */
  tern_memseg *view;      /* owned (BUF_VIEW), or the caller's (BUF_COPY) */
  /* health: the new record (the caller's memory), NULL: unchanged */
  const tern_rec_health *health;
  /* a backup's catalog: the commit counter and next number set, not bumped */
  int copy_counters;
  uint64_t copy_seq, copy_next_segment;
  int log_always;  /* a commit: the counter moves even when nothing else does */
  size_t sweep;    /* version 4: remove up to this many older-generation documents */
  int borrowed_ld; /* the adds' live docs are not the edit's (a backup's) */
  /* A combined filter for the next state (owned; no catalog change): the
   * worker's (engine/maint/combined.c), adopted when it covers the
   * state's slots probed in turn (state_cfilter.c). */
  struct tern_cfilter *cf;
  /* result */
  tern_rec_state rec; /* the state record the edit committed */
} tern_edit;

void tern_edit_init(tern_edit *e, tern_state *base);
/* Frees what the edit still owns (after log_and_apply or instead of it). */
void tern_edit_free(tern_index *idx, tern_edit *e);
/* Appends to the edit; ref and ld pass to it (also on failure). */
int tern_edit_add_segment(tern_index *idx, tern_edit *e, uint64_t number,
                          const tern_rec_segment *r, tern_segref *ref, tern_livedocs *ld);
int tern_edit_drop_segment(tern_edit *e, uint64_t number);
int tern_edit_set_livedocs(tern_edit *e, uint64_t number, tern_livedocs *ld);
/* Whether the edit writes the catalog (BUF_VIEW alone does not). */
int tern_edit_writes_catalog(const tern_edit *e);

/* ---- edit_log.c */
/* Writes the edit into the catalog in one LMDB write transaction and
 * bumps the commit counter; e->rec receives the state record committed.
 * TERN_EBUSY when the catalog is not at e->base's commit.  REQUIRES: the
 * write lock and install_mu held (or idx not yet shared: a backup's). */
int tern_edit_log(tern_index *idx, tern_edit *e);

/* ---- state.c */
/* The next state: base's segments minus drops plus adds (by number),
 * live docs replaced, health and buffer view as the edit says, record
 * e->rec.  The edit's readers gain a reference, its live docs and run pass
 * to the state.  REQUIRES: idx->mu held. */
int tern_state_apply(tern_index *idx, const tern_state *base, tern_edit *e, tern_state **out);

/* ---- edit.c: the one entry point */
/* The install lock: the catalog writer's critical section. */
void tern_install_lock(tern_index *idx);
void tern_install_unlock(tern_index *idx);
/* Logs the edit and installs the state it makes as idx->cur.  REQUIRES:
 * install_mu held, e->base == idx->cur (TERN_EBUSY otherwise, nothing
 * written).  After a failure of mdb_txn_commit itself, idx->commit_uncertain
 * is set.  A state that cannot be made after a durable write (out of
 * memory) leaves idx->cur marked stale: the next acquire reads the catalog. */
int tern_log_and_apply(tern_index *idx, tern_edit *e);

/* ---- the flush in flight (edit.c): what edits do to the buffer while a
 * flush writes its frozen view (REQUIRES: install_mu held) */
void tern_flight_freeze(tern_index *idx);
/* The runs of the edits since the freeze (valid until thaw), and whether
 * some edit changed the buffer in a way no run says (the flush starts over). */
void tern_flight_noted(tern_index *idx, tern_mrun *const **runs, size_t *n, int *unknown);
void tern_flight_thaw(tern_index *idx);

#endif
