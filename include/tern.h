/*
 * tern.h — the one public header of tern, an embedded primary-key index.
 *
 * tern stores documents: a primary key (1 to TERN_KEY_MAX bytes, any bytes),
 * a value (0 to TERN_VALUE_MAX bytes), and secondary terms (field, term)
 * pairs that postings queries find the document by.
 *
 * Design in one paragraph.  Small and mutable state (the catalog of segments,
 * their deletion counts, the options and the most recent writes) lives in an
 * LMDB environment inside the index directory, so a small commit is one LMDB
 * transaction.  Large and immutable state lives in segments written by tern's
 * own codec: a prefix-compressed terms dictionary in 4 KiB blocks with a
 * resident terms index, where a key's value and doc id are inlined in its
 * dictionary entry ("pulsing"), so a lookup on a cold cache reads one page.
 * Deletions are recorded per segment as live docs; segments are merged in
 * the background of writes by a tiered policy.  See docs/ARCHITECTURE.md.
 *
 * Conventions.
 *  - Every call returns an int status: TERN_OK (0) or a negative code.
 *    Codes in the TERN_E... band are tern's own; an I/O failure returns the
 *    negated errno (-ENOENT, -EACCES, -ENOSPC, ...).  tern_strerror() turns
 *    either into text; tern_errmsg() gives the calling thread's detailed
 *    message for its last failure (which file, which line, which check).
 *  - Handles are opaque and allocated by tern; out-parameters come first.
 *  - Byte strings are (pointer, length) pairs; keys and terms may hold NUL.
 *  - Threads: a tern_index may be shared by threads.  One write transaction
 *    exists at a time per index, across processes too.  A tern_snapshot may
 *    be used by many threads at once; a tern_postings by one thread at a time.
 */
#ifndef TERN_H
#define TERN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup version Versions
 *  The library version; the on-disk formats carry their own (docs/FORMAT.md).
 *  @{ */
#define TERN_VERSION_MAJOR 0
#define TERN_VERSION_MINOR 1
#define TERN_VERSION_PATCH 0
/** Returns "MAJOR.MINOR.PATCH" of the library linked in. */
const char *tern_version(void);
/** @} */

/** @defgroup errors Status codes
 *  Values are pinned: they never change between releases.
 *  @{ */
#define TERN_OK 0
#define TERN_NOTFOUND (-30700)  /**< key or term absent; not a failure */
#define TERN_EINVAL (-30701)    /**< invalid argument */
#define TERN_ECORRUPT (-30702)  /**< a file is corrupt, truncated or foreign */
#define TERN_EVERSION (-30703)  /**< a file of a newer format than this library reads */
#define TERN_EBUSY (-30704)     /**< another write transaction is open */
#define TERN_ENOMEM (-30705)    /**< out of memory */
#define TERN_ERANGE (-30706)    /**< caller's buffer too small; the needed size is reported */
#define TERN_ENOTINDEX (-30707) /**< the directory is not a tern index */
#define TERN_EFULL (-30708)     /**< the catalog's map is full (raise map_size) */
#define TERN_ELAST TERN_EFULL

/** Text for a status: tern's own codes, or a negated errno. Never NULL. */
const char *tern_strerror(int status);
/** The calling thread's message for its last failed call, naming the file or
 *  input that failed when there was one; "" when none.  Valid until the
 *  thread's next tern call. */
const char *tern_errmsg(void);
/** @} */

/** @defgroup limits Limits
 *  @{ */
#define TERN_KEY_MAX 1024u            /**< longest key and longest term, bytes */
#define TERN_FIELD_MAX 255u           /**< longest field name, bytes */
#define TERN_VALUE_MAX (16u << 20)    /**< largest value, bytes */
#define TERN_THRESHOLD_MAX 64u        /**< largest pulsing threshold */
#define TERN_INLINE_MAX 1024u         /**< largest inline value limit */
/** Doc id past the last one of an iterator. */
#define TERN_NO_MORE_DOCS UINT64_MAX
/** @} */

/** @defgroup types Handles and plain types
 *  @{ */
typedef struct tern_index tern_index;       /**< an open index directory */
typedef struct tern_txn tern_txn;           /**< the write transaction */
typedef struct tern_snapshot tern_snapshot; /**< a read view of one commit */
typedef struct tern_postings tern_postings; /**< documents having terms */

/** A byte string. */
typedef struct tern_slice {
  const void *data;
  size_t len;
} tern_slice;

/** A secondary term of a document: field name (NUL-terminated, 1 to
 *  TERN_FIELD_MAX bytes, no NUL inside) and the term's bytes (1 to
 *  TERN_KEY_MAX, any bytes). */
typedef struct tern_term {
  const char *field;
  const void *term;
  size_t len;
} tern_term;

/** A per-field pulsing threshold: terms of `field` whose document frequency
 *  is at most `threshold` have their doc ids inlined in the dictionary. */
typedef struct tern_field_option {
  const char *field;
  uint32_t threshold;
} tern_field_option;
/** @} */

/** @defgroup options Index options
 *  Fixed when an index is created and kept in its catalog; reopening reads
 *  them back and ignores what the caller passes.
 *  @{ */
#define TERN_OPTIONS_VERSION 1
typedef struct tern_options {
  int version;                  /**< TERN_OPTIONS_VERSION */
  uint32_t pulsing_threshold;   /**< default threshold of every field (1; 0 = never inline) */
  uint32_t inline_value_max;    /**< values up to this size sit in the key's entry (64) */
  uint32_t bloom_bits_per_key;  /**< membership filter size per key (10; 0 = no filter) */
  uint64_t write_buffer_bytes;  /**< buffered writes past this become a segment (8 MiB) */
  uint64_t map_size;            /**< LMDB map size, the catalog's ceiling (64 GiB) */
  const tern_field_option *fields; /**< per-field thresholds overriding the default */
  size_t nfields;
} tern_options;
/** Fills `opts` with the defaults above. */
int tern_options_init(tern_options *opts);
/** @} */

/** @defgroup index Opening and closing
 *  @{ */
#define TERN_CREATE 0x1u   /**< create the index when the directory holds none */
#define TERN_RDONLY 0x2u   /**< open for reading only: no writes, no merges, no cleanup */
#define TERN_PREAD 0x4u    /**< read segments with pread(2) instead of a mapping: a cold
                                lookup costs a system call instead of a page fault (cheaper
                                on some virtual machines), a warm one costs a system call
                                too (much dearer); see docs/ARCHITECTURE.md */

/** Opens the index in `dir`.  With TERN_CREATE, creates `dir` and the index
 *  when absent, with `opts` (NULL for the defaults).  Removes files that a
 *  crashed writer left uncommitted.
 *  Errors: TERN_ENOTINDEX (no index and no TERN_CREATE, or a foreign
 *  directory), TERN_EVERSION, TERN_ECORRUPT, TERN_EINVAL (bad options),
 *  -errno. */
int tern_open(tern_index **out, const char *dir, unsigned flags, const tern_options *opts);
/** Closes the index.  Snapshots and the write transaction must be closed
 *  first (TERN_EBUSY otherwise, and nothing is closed). */
int tern_close(tern_index *idx);
/** The options the index was created with.  `out->fields` points into the
 *  index and is valid until tern_close(). */
int tern_get_options(const tern_index *idx, tern_options *out);
/** @} */

/** @defgroup write Write transactions
 *  One at a time per index, across threads and processes.  Nothing a
 *  transaction does is visible to snapshots until tern_commit() returns;
 *  after it returns, a crash loses none of it.
 *  @{ */
#define TERN_TXN_BULK 0x1u /**< buffer the whole transaction in memory and write
                                it as new segments at commit (imports) */

/** Begins the write transaction.  Errors: TERN_EBUSY if another is open
 *  (in this process or another), TERN_EINVAL on a read-only index. */
int tern_txn_begin(tern_txn **out, tern_index *idx, unsigned flags);
/** Inserts the document with primary key `key`, or replaces the one the
 *  key has.  Errors: TERN_EINVAL (empty or too long key, value, field or
 *  term). */
int tern_put(tern_txn *txn, const void *key, size_t klen, const void *val, size_t vlen,
             const tern_term *terms, size_t nterms);
/** Deletes the document with primary key `key`.  TERN_NOTFOUND when the
 *  transaction sees no such document (nothing changes). */
int tern_delete(tern_txn *txn, const void *key, size_t klen);
/** Makes the transaction durable and visible, and frees it (even on error:
 *  a failed commit changes nothing). */
int tern_commit(tern_txn *txn);
/** Drops the transaction's writes and frees it. */
int tern_abort(tern_txn *txn);
/** @} */

/** @defgroup read Snapshots and lookups
 *  A snapshot sees exactly the last commit made before it was opened, for as
 *  long as it is held, through later commits and merges.
 *  @{ */
int tern_snapshot_open(tern_snapshot **out, tern_index *idx);
int tern_snapshot_close(tern_snapshot *snap);

/** Looks up `key`.  On TERN_OK the value's length is in *vlen and, when it
 *  fits in `cap` bytes, its bytes are in `buf`; when it does not fit,
 *  TERN_ERANGE with *vlen set (call again with a larger buffer).
 *  TERN_NOTFOUND when absent. */
int tern_get(tern_snapshot *snap, const void *key, size_t klen, void *buf, size_t cap,
             size_t *vlen);

/** Called once per key of tern_get_batch(), in input order.  `status` is
 *  TERN_OK (val, vlen set, valid during the call only) or TERN_NOTFOUND.
 *  A non-zero return stops the batch, and tern_get_batch() returns it. */
typedef int (*tern_batch_fn)(void *payload, size_t i, int status, const void *val,
                             size_t vlen);
/** Looks up `n` keys, visiting each segment's blocks in key order so that a
 *  cold batch reads each block once and in file order.  When the keys come
 *  sorted, or every segment is mapped and in the page cache, they are looked
 *  up in the order given instead (sorting would save no read); then an
 *  error may stop the batch after some keys were answered. */
int tern_get_batch(tern_snapshot *snap, const tern_slice *keys, size_t n, tern_batch_fn fn,
                   void *payload);

/** Opens an iterator over the live documents having all `n` terms (n >= 1),
 *  in doc-id order, advancing the cheapest first.  A term no document has
 *  gives an empty iterator (cost 0), not an error. */
int tern_postings_open(tern_postings **out, tern_snapshot *snap, const tern_term *terms,
                       size_t n);
/** Moves to the next document; *doc is its id, or TERN_NO_MORE_DOCS. */
int tern_postings_next(tern_postings *p, uint64_t *doc);
/** Moves to the first document whose id is >= target (never backwards). */
int tern_postings_advance(tern_postings *p, uint64_t target, uint64_t *doc);
/** An upper bound of the number of documents left to visit. */
uint64_t tern_postings_cost(const tern_postings *p);
/** The current document's key and value; pointers are valid until the
 *  iterator moves or closes. */
int tern_postings_doc(tern_postings *p, tern_slice *key, tern_slice *val);
int tern_postings_close(tern_postings *p);
/** @} */

/** @defgroup maint Maintenance and statistics
 *  @{ */
/** Writes the buffered writes as a segment (a commit of its own). */
int tern_flush(tern_index *idx);
/** Merges every segment and the buffer into one segment without deleted
 *  documents. */
int tern_compact(tern_index *idx);
/** Checks every checksum and structural invariant of the last commit.
 *  TERN_ECORRUPT with tern_errmsg() naming the file when unsound. */
int tern_verify(tern_index *idx);

typedef struct tern_segment_stats {
  uint64_t id;              /**< segment number, also in its file names */
  uint64_t max_doc;         /**< documents written, deleted included */
  uint64_t deleted;         /**< documents deleted since */
  const char *livedocs_form;/**< "none", "sparse", "dense" or "mixed" */
  uint64_t livedocs_bytes;  /**< bytes the live docs hold in memory */
  uint64_t terms;           /**< terms over all fields, primary key included */
  uint64_t pulsed_terms;    /**< terms whose postings are inlined */
  uint64_t bytes_terms;     /**< terms dictionary blocks */
  uint64_t bytes_index;     /**< terms index and field table */
  uint64_t bytes_postings;  /**< postings of non-pulsed terms */
  uint64_t bytes_filter;    /**< membership filter */
  uint64_t bytes_values;    /**< values too large to inline */
  uint64_t bytes;           /**< all of the segment's files */
} tern_segment_stats;

typedef struct tern_stats {
  uint64_t docs;      /**< live documents */
  uint64_t deleted;   /**< deleted documents still held in segments */
  uint64_t buffered;  /**< documents written since the last segment */
  size_t nsegments;
  tern_segment_stats *segments; /**< oldest first */
} tern_stats;

/** Statistics of the last commit; free with tern_stats_free(). */
int tern_stats_get(tern_stats **out, tern_index *idx);
int tern_stats_free(tern_stats *stats);
/** @} */

#ifdef __cplusplus
}
#endif
#endif /* TERN_H */
