/* SPDX-License-Identifier: MIT */
/*
 * memseg.h — documents held in memory in key order, looked up like a
 * segment: the view of the write buffer a snapshot reads, and the
 * documents of a bulk transaction before they become a segment.
 *
 * Each document is its key and its record bytes (engine/format/catalog_schema.h); doc id =
 * rank of the key, as in the segments tern writes.  The inverted index of
 * the secondary terms (field -> term -> doc ids) is built on first need,
 * once, under a lock, and is immutable afterwards, so a memseg shared by
 * snapshots is safe for many threads.
 *
 * The buffer view is layered (memseg_runs.c): immutable sorted runs shared
 * with the views of earlier commits, looked up newest first; the flat
 * rank-ordered array (docs) is merged from them on first need, like the
 * inverted index.  Code that walks docs by rank calls tern_memseg_flat
 * first; tern_memseg_find and tern_memseg_value need no flat array.
 */
#ifndef TERN_ENGINE_MEMSEG_H
#define TERN_ENGINE_MEMSEG_H

#include "engine/util/arena.h"
#include "engine/buffer/keymap.h"
#include "engine/buffer/runbase.h"
#include "engine/util/sort.h"
#include "codec/bitstream.h"
#include "codec/filter.h"
#include "tern.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct tern_mdoc {
  tern_keyref key;    /* key.aux: length of the record */
  const uint8_t *doc; /* document record; NULL marks a deletion (transaction ops) */
} tern_mdoc;

typedef struct tern_mterm {
  tern_keyref term; /* term.aux: number of docs */
  const uint32_t *docs;
} tern_mterm;

typedef struct tern_mfield {
  const uint8_t *name;
  size_t len;
  size_t nterms;
  tern_mterm *terms; /* ascending */
} tern_mfield;

typedef struct tern_minv {
  size_t nfields;
  tern_mfield *fields; /* ascending by name */
  tern_mterm *term_pool;
  uint32_t *doc_pool;
} tern_minv;

/* A document of an indexed run where its index slot is (tern_mrun.at_slot):
 * what a get reads beside the slot, so that it never reads docs[], a
 * third dependent cache miss after the slot's and before the key's. */
typedef struct tern_mref {
  const uint8_t *key; /* its record follows it */
  uint32_t klen;
  uint32_t dlen; /* the record's length; TERN_MREF_LOST: a key the buffer lost */
} tern_mref;
#define TERN_MREF_LOST UINT32_MAX

/* One sorted run of a layered buffer view (memseg_runs.c): immutable once
 * built, shared by every view that holds it.  doc NULL marks a key the
 * buffer lost (it shadows older runs); the oldest run has none. */
typedef struct tern_mrun {
  atomic_uint refs;
  size_t n;
  /* Keys the run may hold, for a run without a filter: three bits of 256
   * a key (tern_mrun_sketch_may_hold), set by tern_mrun_push and OR'ed
   * by the commits' merges; all set when unknown (the worker's merges,
   * which index what they make).  A stream of one-document commits
   * leaves up to ~100 runs of ~21 documents between the worker's polls:
   * a get then skips ~99% of them here, in the run's first line, instead
   * of a binary search of each; those held through a base, by its bit
   * slices of their sketches without visiting them (runbase.h). */
  uint64_t sketch[4];
  tern_mdoc *docs; /* ascending, unique keys */
  tern_arena arena; /* the bytes they point to */
  tern_keymap index; /* key -> position, in runs of TERN_MRUN_INDEXED docs or more */
  tern_mref *at_slot; /* with the index, by its slot: that slot's document (NULL: none) */
  /* With the index: a filter of every key in the run (tombstones too), so
   * that a key the run lacks costs a line of this small filter, not a
   * probe of the index (memseg_runs.c); fview.blocks NULL: none. */
  tern_filter *filter;
  tern_filter_view fview;
} tern_mrun;
static inline int tern_mrun_sketch_may_hold(const uint64_t sketch[4], uint64_t hash) {
  for (int i = 0; i < 3; i++) {
    unsigned bit = tern_mrun_sketch_bit(hash, i);
    if (!(sketch[bit >> 6] >> (bit & 63) & 1)) return 0;
  }
  return 1;
}
/* Runs this large get a hash index: a get then costs one probe per run,
 * present or absent, instead of a binary search whose every step misses
 * the cache (smaller runs are searched in cache anyway). */
#define TERN_MRUN_INDEXED 64u

typedef struct tern_memseg {
  size_t n;              /* documents (layered: live keys over all runs) */
  tern_mdoc *docs;       /* ascending, unique keys, no deletions; layered: built by
                            tern_memseg_flat on first need */
  tern_arena arena;      /* bytes the docs point to, when the memseg owns them */
  uint64_t stored_bytes; /* buffer view: LMDB bytes (keys + values) it mirrors */
  size_t nruns;          /* 0: flat (docs set at creation) */
  tern_mrun **runs;      /* layered: oldest first, newest shadows older */
  tern_runbase *base;    /* holds runs[0, nbase) for this view (NULL: none) */
  size_t nbase;          /* the rest, runs[nbase, nruns), each referenced by the view */
  int docs_alias;        /* docs is runs[0]->docs (one run): not freed here */
  atomic_int flat;       /* docs is valid */
  pthread_mutex_t mu;
  _Atomic(tern_minv *) inv;
} tern_memseg;

/* An empty memseg; the caller sets docs (malloc'd, owned) and n. */
int tern_memseg_new(tern_memseg **out);
/* An empty layered memseg with room for `runs` run pointers in the same
 * allocation (m->runs set, nruns 0): the caller fills them. */
int tern_memseg_new_layered(size_t runs, tern_memseg **out);
void tern_memseg_free(tern_memseg *m);
/* A handle of `key` for tern_memseg_value, or -1: its rank in a flat
 * memseg; in a layered one a position in a run (TERN_MEMSEG_HANDLE set),
 * found without building the flat array. */
ptrdiff_t tern_memseg_find(const tern_memseg *m, const void *key, size_t klen);
/* The same, given the key's filter probe (tern_seg_probe's fk): a layered
 * view's runs rule the key out by their filters first (a get). */
ptrdiff_t tern_memseg_find_key(const tern_memseg *m, const void *key, size_t klen,
                               const tern_filter_key *fk);
/* A get's probe of the buffer: the record of `key` (1), or 0 when the
 * view has none (absent, or lost by a newer run); fk as for
 * tern_memseg_find_key.  An indexed run answers from its slot and the
 * slot's tern_mref, fetched together, then the key's bytes: two rounds
 * of cache misses, not three. */
int tern_memseg_get_record(const tern_memseg *m, const void *key, size_t klen,
                           const tern_filter_key *fk, const uint8_t **rec, size_t *rlen);
/* Binary search of docs[0..n), ascending unique keys: the index, or -1. */
ptrdiff_t tern_mdocs_find(const tern_mdoc *docs, size_t n, const void *key, size_t klen);
#define TERN_MEMSEG_HANDLE ((size_t)1 << 62)
/* The document of rank i, or of a handle from tern_memseg_find. */
static inline const tern_mdoc *tern_memseg_doc(const tern_memseg *m, size_t i) {
  if (i & TERN_MEMSEG_HANDLE) return &m->runs[(i & ~TERN_MEMSEG_HANDLE) >> 32]->docs[i & UINT32_MAX];
  return &m->docs[i];
}
/* The value of doc i (a rank) or of a handle from tern_memseg_find. */
int tern_memseg_value(const tern_memseg *m, size_t i, tern_slice *val);

/* ---- memseg_runs.c: layered buffer views, handed from commit to commit */
/* An empty run with room for cap docs and, in its own allocation, for
 * `bytes` of their keys and records when that is small (0: none; what
 * does not fit goes to its arena's chunks); tern_mrun_push appends a copy
 * of one (in key order; the caller keeps r->n <= cap). */
int tern_mrun_new(size_t cap, size_t bytes, tern_mrun **out);
int tern_mrun_push(tern_mrun *r, const tern_mdoc *d);
void tern_mrun_put(tern_mrun *r);
/* The view `prev` with `run` on top (consumed, may be NULL: prev's runs
 * only; prev NULL: run alone, which then marks no lost keys); n and
 * stored_bytes are the new totals.  The newest runs are merged while one
 * is at most twice the next newer and the merge holds at most merge_max
 * documents: a commit's share of the merging, bounded so that no commit
 * pays O(n) (the worker merges larger runs: tern_mruns_merge). */
int tern_memseg_layer(const tern_memseg *prev, tern_mrun *run, size_t n, uint64_t stored_bytes,
                      size_t merge_max, tern_memseg **out);
/* merge_max of a commit when a background worker merges the larger runs:
 * half TERN_MRUN_INDEXED, so that no commit builds a run's hash index and
 * filter.  One commit in 64 merged 64 documents and indexed them (a few
 * µs: exactly a commit's p99); at 32, p99 of one-document commits went
 * from 1.53x to 1.42x bare LMDB (medians of 13 and 14 runs,
 * docs/BENCHMARKS.md, "latency"), where 16 left the worker so many runs
 * to merge that it gained less (1.50x).  One of 1,024 cost 100 µs. */
#define TERN_MRUN_MERGE_MAX 32
/* merge_max of a commit that runs the worker's work itself
 * (TERN_FOREGROUND, or no thread to be had): commits keep more runs
 * merged, so that the worker's merges (inside commits too) are rare. */
#define TERN_MRUN_MERGE_MAX_FOREGROUND 1024
/* The live docs of m's runs [from, to) as one run (newest wins); lost
 * keys stay marked unless from is 0 (the result is the bottom run). */
int tern_mruns_merge(const tern_memseg *m, size_t from, size_t to, tern_mrun **out);
/* The view m with its runs [from, to) replaced by `merged` (consumed),
 * the same documents. */
int tern_memseg_remerged(const tern_memseg *m, size_t from, size_t to, tern_mrun *merged,
                         tern_memseg **out);
/* The runs of view m the worker merges into one, [*from, returned) (0:
 * none), given the commits' merge_max.  Their top is the newest run past
 * half merge_max below the newest two: commits merge neither those nor,
 * but rarely, anything under them, so the worker's install finds them in
 * place.  From there the group grows to older runs while the next older
 * holds at most twice the group's documents: run sizes grow geometrically,
 * O(log n) runs, each document copied O(log n) times, as in a commit's
 * own merges. */
size_t tern_memseg_merge_window(const tern_memseg *m, size_t merge_max, size_t *from);
/* A one-run layered view made of a flat memseg (consumed, also on failure). */
int tern_memseg_layered(tern_memseg *flat, tern_memseg **out);
/* Makes docs valid (ranks) in a layered memseg; thread-safe, once. */
int tern_memseg_flat(const tern_memseg *m);
/* The key in m's runs, newest first; fk (may be NULL: not used) the key's
 * filter probe, which the runs' filters test before their indexes. */
ptrdiff_t tern_memseg_runs_find(const tern_memseg *m, const void *key, size_t klen, uint64_t hash,
                                const tern_filter_key *fk);
/* The inverted index, built on first call. */
int tern_memseg_inv(tern_memseg *m, const tern_minv **out);
const tern_mfield *tern_minv_field(const tern_minv *inv, const void *name, size_t len);
const tern_mterm *tern_minv_term(const tern_mfield *f, const void *term, size_t len);

/* Writes the secondary fields of the documents to an open segment writer
 * (after its unique field). */
struct tern_segw;
int tern_memseg_write_fields(tern_memseg *m, struct tern_segw *w, const tern_options *o);
/* Writes the documents as segment `name` in `dir` with the index options;
 * segid receives the new segment's id. */
int tern_memseg_write(tern_memseg *m, const char *dir, const char *name, const tern_options *o,
                      uint8_t *segid);

/* The pulsing threshold of field `name` under options `o`. */
uint32_t tern_options_threshold(const tern_options *o, const uint8_t *name, size_t len);

/* Byte order of two keys (shorter first on a common prefix).  Most keys
 * a merge compares differ in their first 8 bytes: those are compared as
 * one big-endian number, inline, before memcmp is called for the rest. */
static inline int tern_key_cmp(const void *a, size_t alen, const void *b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  if (n >= 8) {
    uint64_t x = __builtin_bswap64(tern_bits_le64(a)), y = __builtin_bswap64(tern_bits_le64(b));
    if (x != y) return x < y ? -1 : 1;
  }
  int c = n ? memcmp(a, b, n) : 0;
  if (c) return c;
  return (alen > blen) - (alen < blen);
}

#endif
