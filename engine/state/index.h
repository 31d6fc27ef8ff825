/* SPDX-License-Identifier: MIT */
/*
 * index.h — the engine's internal view of an open index: the LMDB
 * catalog, the shared segment readers, and the immutable "states" that
 * snapshots and the writer hold.
 *
 * A state is one commit of the catalog, materialised: its segments (each
 * a shared reader plus the live docs of the generation that commit
 * recorded) and, once some snapshot needs it, an in-memory view of the
 * write buffer.  States, segment readers and live docs are refcounted
 * under idx->mu; a snapshot holds a state and no LMDB transaction, so any
 * number of threads read through it without locks.  idx->cur caches the
 * newest state; the catalog's commit counter (state record `seq`) tells
 * whether it is still the newest, across processes too.
 *
 * A segment dropped by a merge is marked `dropped`; its files are
 * unlinked when the last state holding it goes away (never under a
 * reader).  Files no commit references (a crash between writing a
 * segment and committing it, or between a merge's commit and its
 * unlinks) are removed at the next open by a process that gets the write
 * lock.
 */
#ifndef TERN_ENGINE_INDEX_H
#define TERN_ENGINE_INDEX_H

#include "codec/livedocs.h"
#include "engine/format/catalog_schema.h"
#include "codec/segment.h"
#include "codec/terms_index.h"
#include "engine/buffer/memseg.h"
#include "engine/state/cfilter.h"
#include "engine/state/range_heads.h"
#include "engine/util/counters.h"
#include "engine/util/path.h"
#include "engine/util/pick.h"
#include "engine/util/thread.h"
#include "tern.h"

#include <assert.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define TERN_CATALOG_FILE "catalog.mdb"
#define TERN_LOCK_FILE "write.lock"
#define TERN_SEGNAME_MAX 32

typedef struct tern_segref {
  unsigned refs; /* states holding it (under idx->mu) */
  int dropped;   /* no longer in the catalog: unlink the files at refs == 0 */
  int verified;  /* whole-file checksums passed in this process (merge input) */
  uint64_t number;
  char name[TERN_SEGNAME_MAX];
  tern_seg *seg;
  const tern_seg_field *unique;
  uint32_t max_doc;
  tern_seg_gate gate; /* range and filter, tested before any search */
  struct tern_segref *next;
} tern_segref;

typedef struct tern_ldref {
  unsigned refs; /* under idx->mu */
  tern_livedocs *ld;
} tern_ldref;

/* One segment as one commit sees it. */
typedef struct tern_slot {
  tern_seg_gate gate; /* ref->gate, here so that a get tests every slot from one array */
  tern_segref *ref;
  tern_ldref *live; /* NULL: nothing deleted */
  uint64_t deleted, gen;
  uint8_t segid[TERN_SEGID_SIZE];
} tern_slot;

/* One slot of the range map: what a get needs to send a key to it, and to
 * answer "absent" from its filter, in one cache line (state_ranges.c). */
typedef struct tern_range_entry {
  _Alignas(64) tern_seg_filter_line filter;
  uint64_t lo, hi; /* heads of the slot's first and last keys past the map's prefix */
  uint32_t slot;
} tern_range_entry;

struct tern_worker;
typedef struct tern_state {
  unsigned refs; /* under idx->mu */
  tern_rec_state rec;
  size_t nslots, capslots;
  tern_slot *slots;    /* oldest (lowest number) first; room for capslots */
  tern_memseg *buffer; /* the write buffer, built on first need (under idx->mu) */
  /* meta "health": last post-commit failure, segments merges skip; owned,
   * NULL when it is empty (nearly always: a commit copies none; read it
   * through tern_state_health) */
  tern_rec_health *health;
  /* The range map (state_ranges.c), built with the slots: disjoint[] the
   * most slots whose key ranges are pairwise disjoint, sorted by range (their
   * max's heads in `heads`, a search tree; each one's entry, with its
   * filter line, in disjoint[]); overlap[] the others, oldest
   * first, probed in turn.  NULL and 0 (every slot probed in turn) below
   * TERN_RANGE_MAP_MIN slots or fewer than 2 disjoint ones. */
  tern_range_entry *disjoint;
  uint32_t *overlap;
  /* By slot: 1 for the map's slots, 0 for the others (NULL: no map); a
   * batch sends each key to its one slot of the map (batch.c,
   * batch_amac.c). */
  uint8_t *in_map;
  /* Their max's heads as a search tree of cache-line nodes: one node per
   * level read, 2 for up to 64 ranges (range_heads.h). */
  tern_range_heads heads;
  size_t ndisjoint, noverlap;
  /* The bytes every key of the map's ranges starts with (a tenant, a date,
   * zero padding: the first range's first key, map_cp bytes of it, in its
   * segment): the map's heads are taken after them, so that ranges whose
   * keys share their first 8 bytes still differ by head (else a get would
   * compare whole keys with every such range in turn). */
  const uint8_t *map_prefix;
  size_t map_cp;
  /* Each slot's filter line (codec/segment.h), by slot: a get probing
   * slots in turn answers "absent" from these, not from each segment's
   * own state (state_ranges.c).  NULL (no memory): the gates decide. */
  tern_seg_filter_line *lines;
  /* One table over the keys of every slot probed in turn naming the slots
   * that may hold a key, shared between states that probe the same
   * segments (state_cfilter.c); NULL: none.  cf_view its buckets (NULL:
   * none) and this state's map of its segments to slots, read inline by
   * a get (cfilter.h). */
  struct tern_cfilter *cf;
  tern_cfilter_view cf_view;
  /* With a combined filter, which line a get reads first: below
   * TERN_CF_ORDER_TABLE the Bloom filter's (an absent key ends at it),
   * from it the table's bucket (a present key needs that line anyway;
   * skipping the Bloom filter's takes one miss off its path:
   * docs/benchmarks/HISTORY.md, "2026-12-02, evening").  A counter, 0 to
   * TERN_CF_ORDER_MAX, learnt from the gets' answers (state.c, cf_learn);
   * a hint: both orders answer the same. */
  atomic_uchar cf_order;
  /* With a range map, whether a get tests its candidate's filter line
   * before the candidate's block: below TERN_CF_ORDER_TABLE it does (an
   * absent key ends at the line), from it the block alone decides (a
   * present key needs the block anyway, and the line was one more cache
   * miss on its path, which a compacted index's idle filter does not
   * pay).  Learnt as cf_order is, from the answers of the gets the map
   * gives a candidate (state.c, order_learn); a hint: both answer the
   * same. */
  atomic_uchar map_order;
} tern_state;

/* How this index reads its segments (TERN_PREAD or the default mapping). */
#define TERN_IDX_IO_MODE(idx) (((idx)->flags & TERN_PREAD) ? TERN_IO_PREAD : TERN_IO_MMAP)

/* What edits did to the buffer while a flush writes its frozen view
 * (edit.c; under install_mu). */
typedef struct tern_flight {
  int frozen, unknown;
  struct tern_mrun **runs;
  size_t nruns, cap;
} tern_flight;

/* What a handle keeps of its last write transaction for the next one
 * (txn.c): its struct, its arena's first chunk and its operations array,
 * which a one-document commit otherwise mallocs and frees every time.
 * Guarded by the writer lock (idx->writing): one transaction per handle
 * at a time, so the spare is empty while one is open.  Freed at close
 * (tern_txn_spare_free). */
typedef struct tern_txn_spare {
  void *txn;         /* a struct tern_txn's memory, or NULL */
  tern_arena arena;  /* empty (tern_arena_reset) */
  tern_mdoc *ops;    /* tern_big_alloc'd room for cap operations, or NULL */
  size_t cap;
} tern_txn_spare;

/*
 * LOCKS — every lock of the engine, what it guards, and the order.
 *
 * Order (a thread holding one may take only those below it):
 *   1. writer lock    idx->writing (under mu) + write.lock's owner word
 *                     (writer.c), held by
 *                     the user's write transaction, tern_flush/compact and,
 *                     counted in write_holds, by the worker from the commit
 *                     that gives it work to that work's install, and
 *                     while it settles the buffer's runs (worker.c,
 *                     settle_runs: tried under worker->mu, never waited
 *                     for).  Never waited for (TERN_EBUSY).  Guards: one
 *                     writer thread per process, one writing process per
 *                     index.
 *   2. worker->mu     worker.c: kicked/busy/stop/streak/skip/unreported.
 *                     Released before the work runs.
 *   3. install_mu     tern_install_lock(): the catalog writer's critical
 *                     section, taken spinning first (tern_lock_spinning:
 *                     neither a commit nor the worker sleeps on it).  Guards: every LMDB write transaction, the
 *                     move of idx->cur by tern_log_and_apply, number_floor,
 *                     commit_uncertain, flight (the flush in flight).  A
 *                     commit holds it from resolving its keys to installing
 *                     its state, so no flush or merge lands in between.
 *   4. env_rw         read-held by calls that use env outside mu (verify,
 *                     stats); write-held to swap env (catalog_compact.c) or
 *                     to grow the map (catalog.c): no LMDB txn is open then.
 *   5. idx->mu        idx->cur, cur_seq, rtxn, segrefs, every refcount of
 *                     states, segment readers and live docs, snapshots,
 *                     writing, write_holds, last_error(_msg).
 *   6. cfbuilder->mu  cfilter_builder.c: kicked/busy/started/stopping.
 *                     Released before a build runs.
 *   (LMDB's own writer mutex is taken inside install_mu only.)
 *
 * Atomics need no lock: catalog_bad (set once, read anywhere), a
 * state's cf_order (a relaxed hint any get may step: both orders answer
 * the same).  codec/spare_buf.c's spare_mu is a leaf: taken alone, around
 * its table only.
 * Functions say "REQUIRES: <lock> held"; debug builds assert it.
 */
struct tern_index {
  char *dir;
  unsigned flags;
  MDB_env *env;
  MDB_dbi dbi_meta, dbi_segs, dbi_live, dbi_buf;
  MDB_dbi dbi_state; /* where the state record is: the main database (catalog version 3)
                        or dbi_meta (version 2); set at open with the tables */
  uint32_t catalog_version; /* the format record's, read at open */
  tern_options opts; /* fields: owned copies; read_depth: this open's */
  int lock_fd;       /* DIR/write.lock, -1 read-only */
  _Atomic uint64_t *lock_word; /* write.lock's owner word, mapped shared (writer.c) */
  uint64_t lock_owner; /* this handle's id in it: pid << 32 | token */
  int lock_shared;     /* flock(LOCK_SH) held on write.lock: older writers kept out */
  int dir_fd;        /* DIR, flock(LOCK_SH) while open: catalog_compact.c replaces
                        catalog.mdb only when it alone holds the directory */
  pthread_rwlock_t env_rw; /* LOCKS 4 */
  pthread_mutex_t mu;      /* LOCKS 5 */
  tern_state *cur; /* newest state known (holds a ref) */
  tern_state *spare_state; /* under mu: the last state freed, its slots array kept for the
                              next state made (state.c: a commit makes one and frees one) */
  uint64_t cur_seq; /* under mu: cur is commit cur_seq and no other process can have
                       committed since (this process holds the write lock, or wrote it):
                       acquiring needs no catalog read.  0: read the commit counter */
  uint64_t kept_seq, kept_txnid; /* under mu: cur_seq when the write lock was last let go
                                    (0: was 0) and LMDB's last transaction id then; taking
                                    the lock again with the id unmoved restores cur_seq
                                    (writer.c): nothing was committed in between */
  uint64_t logged_txnid, logged_seq; /* under install_mu: LMDB's id of this process's last
                                        edit_log transaction and the commit it wrote (0: none
                                        known); the next one, id + 1, takes the state record
                                        from its base instead of reading it (edit_log.c) */
  MDB_txn *rtxn;   /* a reset read transaction reused under mu (renew is cheaper than begin) */
  tern_segref *segrefs;
  unsigned snapshots;
  int writing; /* under mu: a transaction, flush or compaction holds the write lock */
  tern_txn_spare txn_spare; /* under the writer lock (writing) */
  uint32_t busy_timeout_ms; /* how long taking the write lock waits (tern_open's options) */
  unsigned write_holds; /* under mu: the user's writer and the worker's job (write.lock's
                           owner word held while > 0) */
  atomic_int catalog_bad; /* a check failed: nothing more is written into the catalog */
  int nolock;             /* read-only without access to the LMDB lock file (MDB_NOLOCK) */
  int commit_uncertain;   /* install_mu: the last LMDB commit failed inside mdb_txn_commit */
  uint64_t number_floor;  /* install_mu: numbers below were handed out by this process */
  int last_error;         /* under mu: this process's last post-commit failure */
  char last_error_msg[TERN_REC_HEALTH_MSG_MAX + 1];
  pthread_mutex_t install_mu; /* LOCKS 3 */
  tern_flight flight;         /* install_mu */
  struct tern_worker *worker; /* background flushes and merges (worker.h); NULL read-only */
  _Atomic(struct tern_rqueue *) spare_queue; /* idle, for the next cold batch
                                                (read/queue_spare.h); NULL: none */
  tern_pick2 warm_batch; /* a warm batch's way: many lookups in flight, or one at a
                            time in input order (read/batch.c; util/pick.h) */
  struct tern_cfbuilder *cfbuilder; /* under mu: the combined filter's thread
                                       (cfilter_builder.c); NULL until kicked */
  /* debug builds: which thread holds mu and install_mu (tern_lock_self()), 0: none */
  atomic_uintptr_t mu_owner, install_owner;
};

/* idx->mu, with its holder tracked for the asserts of debug builds. */
static inline void tern_mu_lock(tern_index *idx) {
  pthread_mutex_lock(&idx->mu);
#ifndef NDEBUG
  atomic_store_explicit(&idx->mu_owner, tern_lock_self(), memory_order_relaxed);
#endif
}
static inline void tern_mu_unlock(tern_index *idx) {
#ifndef NDEBUG
  assert(atomic_load_explicit(&idx->mu_owner, memory_order_relaxed) == tern_lock_self());
  atomic_store_explicit(&idx->mu_owner, 0, memory_order_relaxed);
#endif
  pthread_mutex_unlock(&idx->mu);
}
/* Whether this thread holds mu / install_mu (debug builds; 1 otherwise). */
static inline int tern_mu_held(const tern_index *idx) {
#ifndef NDEBUG
  return atomic_load_explicit(&idx->mu_owner, memory_order_relaxed) == tern_lock_self();
#else
  (void)idx;
  return 1;
#endif
}
static inline int tern_install_held(const tern_index *idx) {
#ifndef NDEBUG
  return atomic_load_explicit(&idx->install_owner, memory_order_relaxed) == tern_lock_self();
#else
  (void)idx;
  return 1;
#endif
}

/* How many documents a commit's buffer view merges at most
 * (tern_memseg_layer): few when the worker's thread merges the larger
 * runs, more when its work runs inside commits (TERN_FOREGROUND). */
static inline size_t tern_buffer_merge_max(const tern_index *idx) {
  return idx->flags & TERN_FOREGROUND ? TERN_MRUN_MERGE_MAX_FOREGROUND : TERN_MRUN_MERGE_MAX;
}

struct tern_snapshot {
  tern_index *idx;
  tern_state *st;
  tern_memseg *buf;   /* st->buffer */
  /* st's one slot and its filter line when a get needs nothing else of
   * st (one segment: no range map, no combined filter; its line in
   * place): tern_snapshot_find's direct path.  NULL otherwise. */
  const tern_slot *one;
  const tern_seg_filter_line *one_line;
  uint64_t txnid;     /* the LMDB transaction st was read at (0: not read) */
  atomic_uint iters;  /* open postings iterators, cursors, terms enumerations and deleted-docs
                         iterators: close refuses while any */
};

/* ---- catalog.c: LMDB records (every value sealed, checked on read) */
/* Begins an LMDB transaction (flags 0: the write one, REQUIRES install_mu;
 * MDB_RDONLY: a read) and, when another process grew the map, adopts
 * its size first (takes env_rw and mu: REQUIRES neither held, and for a
 * read no other LMDB transaction of this thread open). */
int tern_catalog_begin(tern_index *idx, unsigned flags, MDB_txn **t);
/* Adopts the map size another process gave the file (after
 * MDB_MAP_RESIZED).  REQUIRES: neither env_rw nor mu held. */
int tern_catalog_adopt_size(tern_index *idx);
/* Whether the last failure of this thread was LMDB's MDB_MAP_FULL
 * (and forgets it). */
int tern_catalog_map_full(void);
/* Doubles the catalog's map (takes env_rw and mu: no LMDB transaction of
 * this process is open meanwhile).  REQUIRES: install_mu held. */
int tern_catalog_grow(tern_index *idx);
int tern_mdb_status(int rc, const char *what);
/* The same, telling a full disk from EIO (LMDB reports a short write as EIO). */
int tern_mdb_env_status(tern_index *idx, int rc, const char *what);
/* Prefixes the recorded failure with the catalog's path; TERN_ECORRUPT
 * also marks the catalog damaged (no further writes).  Returns status. */
int tern_catalog_damaged(tern_index *idx, int status);
/* A sealed meta record by name (TERN_NOTFOUND when absent). */
int tern_catalog_get_meta(tern_index *idx, MDB_txn *t, const char *name, const uint8_t **p,
                          size_t *n);
/* The format record: TERN_EVERSION for another catalog version. */
int tern_catalog_get_format(tern_index *idx, MDB_txn *t, uint32_t *version);
int tern_catalog_put_meta(tern_index *idx, MDB_txn *t, const char *name, const uint8_t *p,
                          size_t n);
/* Buffer entries (generation gen: version 4 catalogs; ignored before):
 * writes one (*stored = key + value bytes in LMDB); replaces one, also
 * giving the bytes of the entry it replaced (*was; 0: the key was not
 * buffered); takes one out (*was as replace); reads one (k_out->mv_data
 * TERN_REC_MAINBUFKEY_MAX bytes of the caller's, TERN_NOTFOUND: not
 * buffered); checks and decodes one read. */
int tern_catalog_put_doc(tern_index *idx, MDB_txn *t, uint64_t gen, const void *key, size_t klen,
                         const uint8_t *doc, size_t dlen, size_t *stored);
int tern_catalog_replace_doc(tern_index *idx, MDB_txn *t, uint64_t gen, const void *key,
                             size_t klen, const uint8_t *doc, size_t dlen, size_t *stored,
                             size_t *was);
int tern_catalog_take_doc(tern_index *idx, MDB_txn *t, uint64_t gen, const void *key, size_t klen,
                          size_t *was);
int tern_catalog_get_doc(tern_index *idx, MDB_txn *t, uint64_t gen, const void *key, size_t klen,
                         MDB_val *k_out, MDB_val *v_out);
int tern_catalog_decode_doc(tern_index *idx, const MDB_val *k, const MDB_val *v, uint8_t *key,
                            size_t *klen, const uint8_t **doc, size_t *dlen);
/* A buffer entry's bytes as the buffered totals count them: its LMDB key
 * without version 4's generation prefix, and its value (so a write buffer
 * of a given size holds as many documents in either version). */
size_t tern_catalog_doc_bytes(const tern_index *idx, const MDB_val *k, const MDB_val *v);
/* The buffer's documents of generation gen in LMDB order: a cursor (*c,
 * closed by the caller, also after TERN_NOTFOUND) at the first, then the
 * next; TERN_NOTFOUND past the last. */
int tern_catalog_buffer_first(tern_index *idx, MDB_txn *t, uint64_t gen, MDB_cursor **c, MDB_val *k,
                              MDB_val *v);
int tern_catalog_buffer_next(tern_index *idx, MDB_cursor *c, uint64_t gen, MDB_val *k, MDB_val *v);
/* Empties table "buffer" (catalog versions 2 and 3). */
int tern_catalog_buffer_empty(tern_index *idx, MDB_txn *t);
/* Version 4: counts the buffered documents of rec's generation into rec
 * (buffered_docs, buffered_bytes), checking the documents of other
 * generations against the record (old_docs older ones, none newer):
 * TERN_ECORRUPT otherwise.  Before version 4 the state record holds the
 * totals: nothing to do. */
int tern_catalog_count_buffer(tern_index *idx, MDB_txn *t, tern_rec_state *rec);
/* Version 4: removes up to max documents of generations below gen
 * (*removed: how many; fewer than max: none is left). */
int tern_catalog_sweep(tern_index *idx, MDB_txn *t, uint64_t gen, size_t max, size_t *removed);
/* Sets where the state record of a catalog of `version` is
 * (idx->dbi_state), with the tables' handles already open in t. */
int tern_catalog_locate_state(tern_index *idx, MDB_txn *t, uint32_t version);
int tern_catalog_get_state(tern_index *idx, MDB_txn *t, tern_rec_state *out);
/* The same in a write transaction (version 4 numbers it one past the
 * commit it reads). */
int tern_catalog_get_state_writing(tern_index *idx, MDB_txn *t, tern_rec_state *out);
int tern_catalog_put_state(tern_index *idx, MDB_txn *t, const tern_rec_state *s);
/* Meta "health" (health.c writes it); absent: all zero. */
int tern_health_read(tern_index *idx, MDB_txn *t, tern_rec_health *out);
int tern_catalog_put_segment(tern_index *idx, MDB_txn *t, uint64_t number,
                             const tern_rec_segment *r);
int tern_catalog_del_segment(tern_index *idx, MDB_txn *t, uint64_t number);
int tern_catalog_put_livedocs(tern_index *idx, MDB_txn *t, uint64_t number, const tern_livedocs *ld,
                              const uint8_t *segid);
/* Calls fn (may be NULL) for each segment record, oldest first; with
 * `expect`, checks the records' count and digest against that state. */
typedef int (*tern_catalog_seg_fn)(void *ctx, uint64_t number, const tern_rec_segment *r);
int tern_catalog_each_segment(tern_index *idx, MDB_txn *t, const tern_rec_state *expect,
                              tern_catalog_seg_fn fn, void *ctx);
/* The live docs value of segment `number` (bytes valid during t). */
int tern_catalog_get_livedocs(tern_index *idx, MDB_txn *t, uint64_t number, const uint8_t **buf,
                              size_t *len);
/* Segment file name of a number. */
void tern_segment_name(char out[TERN_SEGNAME_MAX], uint64_t number);

/* ---- state.c: states and shared readers (each takes idx->mu itself unless noted) */
/* The newest committed state, refreshed from the catalog when another
 * commit happened since; with want_buffer, its buffer view built.  Takes
 * idx->mu itself.  The caller owns one reference. */
int tern_state_acquire(tern_index *idx, int want_buffer, tern_state **out);
/* tern_state_acquire, also giving the LMDB transaction id the catalog was
 * read at (0: not read, this process holding the write lock knew the last
 * commit): tern_snapshot_current compares it with LMDB's last one. */
int tern_state_acquire_at(tern_index *idx, int want_buffer, tern_state **out, uint64_t *txnid);
/* Drops one reference.  Takes idx->mu itself. */
void tern_state_release(tern_index *idx, tern_state *st);
/* The buffer as read in t (rec's generation), checked against rec's totals: a flat memseg. */
int tern_buffer_read(tern_index *idx, MDB_txn *t, const tern_rec_state *rec, tern_memseg **out);
/* Opens the reader of a segment not yet committed (outside idx->mu) and
 * lists it, so that the state that commits it shares it instead of
 * opening the files under idx->mu.  The caller owns one reference. */
int tern_segref_preopen(tern_index *idx, uint64_t number, const tern_rec_segment *r,
                        tern_segref **out);
void tern_segref_release(tern_index *idx, tern_segref *s);
/* Drops one reference.  REQUIRES: idx->mu held. */
void tern_state_put_locked(tern_index *idx, tern_state *st);
/* Marks segments dropped by a merge (files go when unreferenced). */
void tern_segments_dropped(tern_index *idx, const uint64_t *numbers, size_t n);
/* Releases idx->cur and every reader (close). */
void tern_states_close(tern_index *idx);

/* ---- lookups shared by reads and the writer */
/* The live value of `key` in the snapshot (snapshot.c); TERN_NOTFOUND. */
int tern_snapshot_find(tern_snapshot *s, const void *key, size_t klen, tern_seg_cursor *c,
                       tern_slice *val);
/* Cold batches (batch.c): reads a cold tern_get_batch keeps in flight by
 * default, and at most (tern_options.read_depth). */
#define TERN_READ_DEPTH_DEFAULT 32u
#define TERN_READ_DEPTH_MAX 1024u
/* The merge policy (engine/maint/merge.c): tern_options.merge_factor by
 * default, and at most. */
#define TERN_MERGE_FACTOR_DEFAULT 4u
#define TERN_MERGE_FACTOR_MAX 32u
/* The doc of `key` in slot `s` when it is live there: TERN_OK with *doc
 * and the entry in c/e; TERN_NOTFOUND otherwise. */
int tern_slot_find(const tern_slot *s, const void *key, size_t klen, tern_seg_cursor *c,
                   tern_term_entry *e, uint32_t *doc);
/* The same in block gb, the one tern_seg_pk_block named for the probe's
 * key, which passed the slot's gate with `filter` (tern_seg_pk_find_in). */
int tern_slot_find_in(const tern_slot *s, const tern_seg_probe *p, int filter, uint64_t gb,
                      tern_seg_cursor *c, tern_term_entry *e, uint32_t *doc);
/* Where a lookup found a key's live document: its slot and doc id. */
typedef struct tern_state_hit {
  const tern_slot *slot;
  uint32_t doc;
} tern_state_hit;
/* The live entry of the probe's key in the state's segments, newest
 * first (the range map's candidate; then, unless the combined filter rules
 * the key out, the slots probed in turn, in waves: each slot's range and
 * filter line, then its block): TERN_OK with the entry in c/e and its
 * slot and doc in *hit; TERN_NOTFOUND otherwise. */
int tern_state_find(const tern_state *st, const tern_seg_probe *p, tern_seg_cursor *c,
                    tern_term_entry *e, tern_state_hit *hit);
/* The committed live document of the probe's key, looked up as tern_get
 * does (the filters' lines fetched first, then the buffer view, then
 * tern_state_find): TERN_OK with *buf_at >= 0, its place in the buffer
 * view, or *buf_at < 0 and the segment's entry in c/e, its slot and doc
 * in *hit; TERN_NOTFOUND.  For reads of a write transaction (txn_read.c,
 * tern_delete). */
int tern_state_find_key(const tern_state *st, const tern_seg_probe *p, tern_seg_cursor *c,
                        tern_term_entry *e, tern_state_hit *hit, ptrdiff_t *buf_at);
/* The same, the map's search already done: `pos` is what
 * tern_state_ranges_at returned for this probe in this state. */
typedef struct tern_map_pos {
  size_t at;     /* tern_state_ranges_at, below */
  uint64_t head;
  int line;      /* the candidate's filter line's answer once a caller tested it
                  * (tern_state_map_line), else TERN_MAP_LINE_UNTESTED */
} tern_map_pos;
#define TERN_MAP_LINE_UNTESTED (-2)
int tern_state_find_at(const tern_state *st, const tern_seg_probe *p, tern_map_pos pos,
                       tern_seg_cursor *c, tern_term_entry *e, tern_state_hit *hit);
/* ---- state_ranges.c: the range map over disjoint slots */
#define TERN_RANGE_MAP_MIN 2u /* slots below which every slot is tested in turn (two range-disjoint
                                 * slots already cost less through the map: docs/BENCHMARKS.md,
                                 * "build and ingest") */
#define TERN_PREFETCH_WAVE 32u /* slots probed in turn per wave, their filter lines fetched together */
/* Builds the range map of st, a new state (none yet), from its slots.
 * Errors: TERN_ENOMEM (st then has none: still right, every slot probed
 * in turn). */
int tern_state_index_ranges(tern_state *st);
void tern_state_ranges_free(tern_state *st);
/* Settles the filter lines of st's range map (codec/segment.h): the pages
 * of each entry's filter that are in the page cache checked now, so that a
 * get reads no checked-pages bitmap for a settled one (an absent key on
 * the range map then costs the heads, the entry and the filter's line;
 * open pays about 1 ms per million keys).  Reads no disk;
 * for a state made from the catalog (open), never on the commit path
 * (there, lines settle from what is checked already).  REQUIRES: st not
 * yet installed. */
void tern_state_settle_filters(tern_state *st);
/* Where the range map's search puts the probe's key: `at`, the first map
 * entry whose max's head is at or above the key's (ndisjoint when none or
 * when the key lacks the map's prefix, so lies in no range of it; 0
 * without a map), and `head`, the key's head as the map compares heads
 * (past its prefix). */
static inline tern_map_pos tern_state_ranges_at(const tern_state *st, const tern_seg_probe *p) {
  tern_map_pos pos = {0, p->head, TERN_MAP_LINE_UNTESTED};
  if (!st->ndisjoint) return pos;
  if (st->map_cp) {
    if (p->len < st->map_cp || memcmp(p->key, st->map_prefix, st->map_cp) != 0) {
      pos.at = st->ndisjoint;
      return pos;
    }
    pos.head = tern_terms_index_head_at(p->key, p->len, st->map_cp);
  }
  pos.at = tern_range_heads_lower(&st->heads, pos.head);
  return pos;
}
/* Starts fetching the filter lines a get of the probe's key will test:
 * the map's candidate's, then the slots probed in turn (the newest wave of
 * them), so that their cache misses overlap the write buffer's probe.
 * Returns tern_state_ranges_at's answer, for tern_state_find_at.  A
 * hint otherwise: no effect on results. */
size_t tern_state_prefetch(const tern_state *st, const tern_seg_probe *p);
/* The same, given `at` (tern_state_ranges_at, which needs only p->head):
 * a get searches the map while its key is hashed (snapshot.c). */
void tern_state_prefetch_at(const tern_state *st, const tern_seg_probe *p, size_t at);
/* Starts fetching map entry `at` (a hint; none past the map). */
static inline void tern_state_entry_prefetch(const tern_state *st, size_t at) {
  if (at < st->ndisjoint) __builtin_prefetch(&st->disjoint[at]);
}
/* Slot i's filter for the probe's key, from its filter line when that can
 * tell, else from its gate: tern_seg_gate_filter's answer (0 absent, > 0
 * the block decides, < 0 a damaged filter page).  Counted as one filter
 * check. */
int tern_state_slot_filter(const tern_state *st, size_t i, const tern_seg_probe *p);
/* The map's slot whose range admits the probe's key (the ranges being
 * disjoint, one at most; pos: tern_state_ranges_at), into *slot, its
 * filter line's fetch started: 1, or 0 when none.  A slot whose filter
 * line says the key is absent (its page checked) is left out; one whose
 * line says it may be there sets *maybe: its filter answered
 * TERN_SEG_FILTER_MAYBE, so the caller asks it no more (a line pos.line
 * already gives is not tested again).  While the gets mostly find their
 * keys (tern_state_map_block_first) the line of a slot the key's head
 * lies strictly inside is not tested: *maybe is set, as for a "maybe".
 * *inside: 1 when the key's head lay strictly inside a slot's range (the
 * gets that teach the map's order, whatever its filter said). */
int tern_state_ranges_find(const tern_state *st, const tern_seg_probe *p, tern_map_pos pos,
                           uint32_t *slot, int *maybe, int *inside);
/* The map entry whose range alone of the map's can hold the probe's key
 * (pos: tern_state_ranges_at), its gate still to say whether it does;
 * SIZE_MAX when none can.  Whole keys are compared only when the key's
 * head ties a range's last (two binary searches); no filter is asked,
 * nothing counted but the map entries compared.  For a batch, which sends
 * each key to that one slot of the map (batch_amac.c). */
size_t tern_state_map_entry(const tern_state *st, const tern_seg_probe *p, tern_map_pos pos);
/* The slot of that entry for a key (UINT32_MAX: no range of the map can
 * hold it, or no map).  A batch sends the key to that slot alone of the
 * map's (batch.c, batch_amac.c; st->in_map names the map's slots). */
uint32_t tern_state_map_slot(const tern_state *st, const void *key, size_t len);
/* ---- state_cfilter.c: one table naming the slots probed in turn that may
 * hold a key (cfilter.h) */
#define TERN_CFILTER_MIN 8u               /* slots probed in turn below which open builds none */
/* From here, the table is built in the background: by the worker of a
 * writing process (engine/maint/combined.c), by a thread of the handle
 * for a state made from the catalog with fewer than TERN_CFILTER_MIN
 * (the build would cost every open about 135 ms per million keys). */
#define TERN_CFILTER_MIN_WORKER 2u /* two slots: absent gets then read one Bloom line, not two
                                   * (docs/benchmarks/HISTORY.md, 2026-12-04) */
#define TERN_CFILTER_TABLE_KEYS (2u << 20) /* keys above which it has no table, and open
                                          * builds none (table, router, Bloom: 12 MiB) */
#define TERN_CFILTER_ROUTER_KEYS (4u << 20) /* keys above which no router (its build: ~54 B
                                           * a key with the hashes, 216 MiB) */
#define TERN_CFILTER_MAX_KEYS (64u << 20) /* keys above which there is none (Bloom: 80 MiB) */
typedef struct tern_cfilter tern_cfilter;
/* Tests only (test_cfilter_table.c): fingerprints narrowed to 16 -
 * slot_bits_min bits (2 to 14; 0: as wide as the segment count allows) to
 * force collisions, and `load` entries per bucket on average (0:
 * TERN_CFILTER_LOAD) to force overflowed buckets, read when a table is
 * built; `order` fixes which of its lines gets read first (a state given a
 * table starts table first when 2; gets learn no other order while
 * nonzero). */
typedef struct tern_cfilter_tuning {
  uint32_t slot_bits_min, load;
  uint32_t order; /* 0: learnt (tern_state.cf_order, map_order); 1: Bloom filter first, and
                   * the range map's candidate's filter line first; 2: table first, and the
                   * candidate's block alone */
  uint32_t no_router; /* 1: combined filters built without their router (the table alone) */
  uint32_t table_keys;  /* keys above which no table (0: TERN_CFILTER_TABLE_KEYS) */
  uint32_t router_keys; /* keys above which no router either (0: TERN_CFILTER_ROUTER_KEYS) */
} tern_cfilter_tuning;
extern tern_cfilter_tuning tern_cfilter_test_tuning;
/* Builds st's combined filter when it has none and is worth one at open
 * (at least TERN_CFILTER_MIN slots probed in turn, at most
 * TERN_CFILTER_TABLE_KEYS keys and TERN_CFILTER_MAX_SLOTS slots, their terms
 * files mapped and cached): reads every key of those slots.  For a state
 * made from the catalog, never on the commit path.  Failures leave st
 * without one (still right). */
void tern_state_cfilter_build(tern_state *st);
/* The combined filter st would have (tern_state_cfilter_build's rules,
 * but from TERN_CFILTER_MIN_WORKER slots and up to TERN_CFILTER_MAX_KEYS
 * keys: no table above TERN_CFILTER_TABLE_KEYS, no router above
 * TERN_CFILTER_ROUTER_KEYS), made apart from st, into *out
 * (NULL: not worth one).  Reads the keys of st's slots probed in turn;
 * takes no lock (st held); gives up (TERN_ESTOPPED) once *stop (NULL:
 * none) is set.  Errors: TERN_ENOMEM, a damaged terms block's. */
int tern_cfilter_make(const tern_state *st, const atomic_int *stop, tern_cfilter **out);
/* 1 when st has no combined filter but probes TERN_CFILTER_MIN_WORKER to
 * TERN_CFILTER_MAX_SLOTS slots in turn (no I/O: the keys' bound and
 * residence are tern_cfilter_make's). */
int tern_state_cfilter_wanted(const tern_state *st);
/* Gives *cf (made by tern_cfilter_make, held by no state) to st when st
 * has none and *cf covers every slot st probes in turn: *cf is then NULL
 * and 1 returned; else (or no memory for st's map) 0 and *cf unchanged.
 * REQUIRES: st not yet installed. */
int tern_state_cfilter_adopt(tern_state *st, tern_cfilter **cf);
/* Frees a combined filter no state holds (tern_cfilter_make's). */
void tern_cfilter_discard(tern_cfilter *cf);
/* Bytes of cf's table (0: NULL). */
size_t tern_cfilter_memory(const tern_cfilter *cf);
/* Shares from's combined filter with st when it covers every slot st
 * probes in turn (st's range map built); 1 when it did.  REQUIRES:
 * idx->mu held (the filter's count), as tern_state_cfilter_put. */
int tern_state_cfilter_inherit(tern_state *st, const tern_state *from);
void tern_state_cfilter_put(tern_state *st);
#define TERN_CF_ORDER_TABLE 2u /* tern_state.cf_order from which the table is read first */
#define TERN_CF_ORDER_MAX 3u
#define TERN_CF_LEARN_EVERY 16u /* one get in this many (by its hash) moves cf_order */
/* 1 when a get reads st's combined filter's table before its Bloom
 * filter (tern_state.cf_order). */
static inline int tern_state_cf_table_first(const tern_state *st) {
  return atomic_load_explicit(&st->cf_order, memory_order_relaxed) >= TERN_CF_ORDER_TABLE;
}
/* The map entry the probe's key lies strictly inside of by heads, given
 * `at` (tern_state_ranges_at): then that entry's slot alone of the map's
 * can hold the key and no whole key needs comparing (as
 * tern_state_ranges_find finds it); else NULL. */
static inline const tern_range_entry *tern_state_map_inside(const tern_state *st,
                                                            tern_map_pos pos) {
  if (pos.at >= st->ndisjoint) return NULL;
  const tern_range_entry *m = &st->disjoint[pos.at];
  return m->lo < pos.head && pos.head < m->hi ? m : NULL;
}
/* Steps a learnt order (cf_order, map_order) up when a get found its
 * key (present: 1), else down, within [0, TERN_CF_ORDER_MAX]. */
void tern_state_order_step(const atomic_uchar *order, int present);
/* What a get the range map gave a candidate found (present: 1) steps
 * st's map_order: one get in TERN_CF_LEARN_EVERY (by its hash's low
 * bits), as cf_order. */
static inline void tern_state_map_learn(const tern_state *st, const tern_seg_probe *p,
                                        int present) {
  if (!(p->fk.hash & (TERN_CF_LEARN_EVERY - 1))) tern_state_order_step(&st->map_order, present);
}
/* A new state's map_order taken from the state it follows (from NULL:
 * none; it starts at 0, the lines first).  REQUIRES: st not yet
 * installed. */
void tern_state_map_inherit(tern_state *st, const tern_state *from);
/* Map entry m's filter line asked for the probe's key, as a get asks it:
 * tern_seg_filter_line_test's answer (-1: only the gate can tell),
 * counted as a filter check when the line answers; an "absent" teaches
 * the map's order. */
static inline int tern_state_map_line(const tern_state *st, const tern_range_entry *m,
                                      const tern_seg_probe *p) {
  int line = tern_seg_filter_line_test(&m->filter, &p->fk);
  if (line >= 0) TERN_COUNT_GET(filter_checks, 1);
  if (line == 0) tern_state_map_learn(st, p, 0);
  return line;
}
/* 1 when a get of st's range map skips its candidate's filter line and
 * searches the candidate's block at once (tern_state.map_order). */
static inline int tern_state_map_block_first(const tern_state *st) {
  if (TERN_UNLIKELY(tern_cfilter_test_tuning.order)) return tern_cfilter_test_tuning.order == 2;
  return atomic_load_explicit(&st->map_order, memory_order_relaxed) >= TERN_CF_ORDER_TABLE;
}
/* Slots probed in turn up to which, while a state's gets mostly find
 * their keys, their own filter lines are read instead of the combined
 * filter's table: the lines (10 bits a key) stay in the caches better
 * than the table (32), and a present key waits for one line either way
 * (docs/benchmarks/HISTORY.md, "segments": 3 segments 1.08-1.15x
 * compacted through their lines, 1.31-1.41x through the table).  Absent keys keep the
 * combined filter's one Bloom line. */
#define TERN_CF_LINES_MAX 3u
/* 1 when st has a combined filter (its Bloom filter at least; the table
 * too up to TERN_CFILTER_TABLE_KEYS keys). */
static inline int tern_state_has_cfilter(const tern_state *st) {
  return st->cf_view.bloom.blocks != NULL;
}
/* 1 when a get of st reads its slots' filter lines, not the combined
 * filter's table, though st has one (TERN_CF_LINES_MAX; or a combined
 * filter without a table, above TERN_CFILTER_TABLE_KEYS keys). */
static inline int tern_state_cf_lines_first(const tern_state *st) {
  size_t n = st->ndisjoint ? st->noverlap : st->nslots;
  return tern_state_has_cfilter(st) && !st->cf_view.router &&
         (n <= TERN_CF_LINES_MAX || !st->cf_view.buckets) && tern_state_cf_table_first(st);
}
/* Starts fetching the line of the combined filter a get reads first for
 * the probe's key (a hint; no combined filter, or its slots' lines read
 * instead: no load): the router's cells, else the table's bucket, while
 * gets mostly find their keys; else the Bloom filter's line. */
static inline void tern_state_cfilter_prefetch(const tern_state *st, const tern_seg_probe *p) {
  if (!tern_state_has_cfilter(st) || tern_state_cf_lines_first(st)) return;
  if (!tern_state_cf_table_first(st))
    tern_cfilter_prefetch(&st->cf_view, p->fk.hash);
  else if (st->cf_view.router)
    tern_router_prefetch(st->cf_view.router, p->fk.hash);
  else if (st->cf_view.buckets)
    __builtin_prefetch(tern_cfilter_bucket(&st->cf_view, p->fk.hash));
}
/* Installs, for idx->cur, a state that is the same with *cf as its
 * combined filter, when idx->cur has none and *cf covers it (*cf then
 * NULL; else left to the caller).  Gets read a state without a lock, so
 * the state is a new one, as an edit that changes nothing else makes.
 * With only_idle, not while this process's write transaction, flush or
 * compaction holds the write lock (idx->writing): a transaction that
 * spilled commits from the state it began on and must find it current
 * (the worker, which such a transaction waits for, need not ask); returns
 * 1 when that alone kept *cf out.
 * REQUIRES: install_mu held (no commit installs meanwhile). */
int tern_state_install_cfilter(tern_index *idx, tern_cfilter **cf, int only_idle);
/* ---- cfilter_builder.c: the handle's thread that builds the combined
 * filter of a state made from the catalog (fewer than TERN_CFILTER_MIN) */
typedef struct tern_cfbuilder tern_cfbuilder;
/* Asks the thread (started now if need be; none under TERN_FOREGROUND or
 * without memory: no filter, still right) to build idx->cur's filter.
 * REQUIRES: idx->mu held. */
void tern_cfbuilder_kick(tern_index *idx);
/* Waits until the thread has nothing to do (tests, tern_verify). */
void tern_cfbuilder_wait(tern_index *idx);
/* Stops a build in progress, joins the thread, frees it (tern_close). */
void tern_cfbuilder_free(tern_index *idx);

static inline int tern_slot_is_live(const tern_slot *s, uint32_t doc) {
  return !s->live || tern_livedocs_is_live(s->live->ld, doc);
}

/* ---- health.c: failures after a commit, segments merges skip */
/* The state's health record (an empty one when it has none). */
const tern_rec_health *tern_state_health(const tern_state *st);
/* A state's own copy of h (NULL: h is empty, or no memory: TERN_ENOMEM in *rc). */
tern_rec_health *tern_health_copy(const tern_rec_health *h, int *rc);
int tern_health_is_bad(const tern_state *st, uint64_t number);
/* Keeps `status` with tern_errmsg() as this index's last post-commit
 * failure (in memory, and in the catalog when it can be written, as an
 * edit), and bad_segment (0: none) as a segment merges skip.  Returns
 * status with the message unchanged.  REQUIRES: install_mu not held. */
int tern_health_note(tern_index *idx, int status, uint64_t bad_segment);
/* tern_health_note in two steps, for the worker (worker.c), which must
 * mark the failure as unreported between them: the message kept (not yet
 * shown by tern_stats_get), then the status shown and logged. */
void tern_health_keep_msg(tern_index *idx);
int tern_health_publish(tern_index *idx, int status, uint64_t bad_segment);
/* tern_health_note, then TERN_EPARTIAL naming the cause. */
int tern_post_commit_failed(tern_index *idx, int status);

/* ---- doc_terms.c: doc ids per window of tern_docs_each (0: the default,
 * 65536), for tests. */
void tern_docs_window_set(uint32_t docs);

/* ---- txn.c, for txn_read.c: the transaction's latest op on key (*op NULL:
 * none; op->doc NULL: deleted) and the commit it began on. */
int tern_txn_find_own(tern_txn *t, const void *key, size_t klen, const tern_mdoc **op,
                      const tern_state **st);

/* ---- writer.c: the write lock, taken without waiting (TERN_EBUSY) */
int tern_writer_try_lock(tern_index *idx);
/* busy_wait.c: tern_writer_try_lock, tried again until the handle's busy
 * timeout (tern_options.busy_timeout_ms) passes. */
int tern_writer_lock(tern_index *idx);
void tern_writer_unlock(tern_index *idx);
/* tern_writer_unlock, releasing st (a state the writer held; NULL: none)
 * in the same hold of idx->mu. */
void tern_writer_unlock_state(tern_index *idx, tern_state *st);
/* Frees the handle's spare transaction memory (at close: no transaction open). */
void tern_txn_spare_free(tern_index *idx);
/* One more (or one fewer) holder of the write lock in this process, which
 * must already hold it: the worker keeps it from the commit that gives it
 * a job to that job's install, so no other process commits meanwhile. */
void tern_write_lock_hold(tern_index *idx);
void tern_write_lock_release(tern_index *idx);
/* One more holder of the write lock, taken if no one holds it (the
 * worker's idle work, worker.c): 1 if held now (release it with
 * tern_write_lock_release), 0 if another process holds it. */
int tern_write_lock_try_hold(tern_index *idx);
/* The handle's part of write.lock (index/open.c): its owner page mapped
 * and its liveness byte locked; undone at close (before lock_fd closes). */
int tern_write_lock_open(tern_index *idx);
void tern_write_lock_close(tern_index *idx);
/* The owner word alone, for an open's cleanup of leftover files: 1 if
 * taken (no message when not). */
int tern_write_lock_try_quiet(tern_index *idx);
void tern_write_lock_give_quiet(tern_index *idx);

/* ---- index/open.c: reopening the catalog (catalog_compact.c, with env closed) */
int tern_index_reopen_env(tern_index *idx);
/* ---- catalog_compact.c: rewrites catalog.mdb without its free pages
 * when no one else has the index open (writer lock held); skips otherwise. */
int tern_catalog_compact(tern_index *idx);

/* ---- maintenance (flush.c, merge.c), run by the worker or by a caller
 * holding the write lock with the worker drained; each builds an edit and
 * installs it with tern_log_and_apply.  REQUIRES: the write lock held,
 * install_mu not. */
/* Writes the buffer as of now as a segment and installs it, carrying what
 * commits did meanwhile (flush.c).  TERN_WORKER_RETRY: start over. */
int tern_flush_locked(tern_index *idx);
/* TERN_WORKER_RETRY from tern_flush_locked: a commit changed the buffer
 * in a way the flush cannot follow; start over (not a failure). */
#define TERN_WORKER_RETRY 1
/* Version 4: removes up to a sweep's worth of the documents of the
 * buffer's older generations a flush left (*more: some are left). */
int tern_sweep_once(tern_index *idx, int *more);
/* Sweeps until none is left (the caller holds the write lock with the
 * worker drained: no commit waits meanwhile). */
int tern_sweep_all(tern_index *idx);
/* One merge the policy picks, if any (*merged 1). */
int tern_merge_once(tern_index *idx, int *merged);
int tern_merge_policy_run(tern_index *idx);
int tern_merge_everything(tern_index *idx);
/* Checks the whole-file checksums of every segment of the newest commit
 * (each reader once), writing nothing: TERN_ECORRUPT naming the file. */
int tern_merge_verify_all(tern_index *idx);
/* The number for a new segment: never one this process handed out before,
 * even when the write it was for failed.  REQUIRES: install_mu held. */
uint64_t tern_new_segment_number(tern_index *idx, const tern_rec_state *rec);
/* A commit registers segment `number`: the next number passes it.  Numbers
 * come from tern_new_segment_number, unique in this process, and a flush
 * or merge in flight may register a number lower than one a commit
 * registered meanwhile. */
static inline void tern_number_used(tern_rec_state *rec, uint64_t number) {
  if (rec->next_segment <= number) rec->next_segment = number + 1;
}
/* Removes the files of a new segment whose commit failed -- unless
 * mdb_txn_commit itself failed: that commit may yet be durable, so its
 * files stay for the next open, which removes them only when the
 * catalog's next segment number shows the commit did not land. */
void tern_discard_new_segment(tern_index *idx, const char *name);

/* ---- ordered access (cursor*.c, terms_enum.c, backup.c) */
struct tern_seg_run;
/* One source of a key cursor: a segment slot, or the buffer view (slot
 * NULL).  When valid it stands on a live document: key[0..klen) (pointing
 * into the source) and, for a segment, its entry e. */
typedef struct tern_src {
  const tern_slot *slot;
  const tern_memseg *buf;
  tern_seg_cursor *sc;
  struct tern_seg_run *run;
  tern_term_entry e;
  size_t pos; /* buffer: rank */
  int valid;
  const uint8_t *key;
  size_t klen;
  /* segment: the rank of the entry the last forward seek found (seek_ok),
   * from which the next seek counts the steps taken since, and the count
   * the seek before made (last_run, last_ok) (tern_seg_cursor_expect) */
  uint64_t seek_ord, last_run;
  int seek_ok, last_ok;
} tern_src;
int tern_src_init(tern_src *s, const tern_slot *slot, const tern_memseg *buf);
void tern_src_release(tern_src *s);
/* The first live key >= key (> key when strict); klen 0: the first. */
int tern_src_seek_ge(tern_src *s, const void *key, size_t klen, int strict);
/* The last live key <= key (< key when strict); key NULL: the last. */
int tern_src_seek_le(tern_src *s, const void *key, size_t klen, int strict);
/* The next live key in direction dir (+1 forward, -1 backward). */
int tern_src_step(tern_src *s, int dir);
int tern_src_value(tern_src *s, tern_slice *val);
/* postings.c: the snapshot an iterator reads. */
tern_snapshot *tern_postings_snapshot(const tern_postings *p);
/* postings.c: where tern_postings_each_by_key keeps the walk it resumes
 * (cursor_hits.c), freed by tern_postings_close through tern_by_key_free. */
struct tern_by_key;
struct tern_by_key **tern_postings_by_key(tern_postings *p);
/* postings.c, for cursor_hits.c: p's documents, drained, split by source:
 * run i is docs[start, start + n) of source ord (ascending), live ones
 * only, runs in source order; p is then past its last document.  A
 * one-term iterator not started takes its sources' postings a decoded
 * block at a time; any other, tern_postings_next. */
typedef struct tern_hit_run {
  uint32_t ord;
  size_t start, n;
} tern_hit_run;
int tern_postings_drain(tern_postings *p, uint32_t **docs, size_t *n, tern_hit_run **runs,
                        size_t *nruns);
void tern_by_key_free(struct tern_by_key *b);

#endif
