/* SPDX-License-Identifier: MIT */
/*
 * tern.h — the one public header of tern, an embedded primary-key index, and
 * its manual.
 *
 * tern stores documents: a primary key (1 to TERN_KEY_MAX bytes, any bytes),
 * a value (0 to TERN_VALUE_MAX bytes), and secondary terms (field, term)
 * pairs that postings queries find the document by.
 *
 * DESIGN.  Small and mutable state (the catalog of segments, their live
 * docs, the options and the most recent writes, "the buffer") lives in an
 * LMDB environment, DIR/catalog.mdb, so a small commit is one LMDB
 * transaction.  Large and immutable state lives in segments written by
 * tern's own codec (DIR/sNNNNNNNNNNNN.*): a prefix-compressed terms
 * dictionary in 4 KiB blocks with a resident terms index, where a key's value
 * and doc id are inlined in its dictionary entry ("pulsing"), so a lookup on
 * a cold cache reads one page.  Deletions are recorded per segment as live
 * docs in the catalog; segments are merged by a size-tiered policy when commits
 * add segments.  docs/ARCHITECTURE.md has the whole design, docs/FORMAT.md
 * every byte.
 *
 * CONVENTIONS.
 *  - Every call returns an int status: TERN_OK (0) or a negative code (the
 *    one exception, tern_postings_cost(), returns a count).  Codes in the
 *    TERN_E... band are tern's own; an I/O failure returns the negated errno
 *    (-ENOENT, -EACCES, -ENOSPC, -EIO, ...).  Every call can return
 *    TERN_EINVAL for NULL handles or out-parameters and TERN_ENOMEM; the
 *    lists below name the others.  tern_strerror() turns a status into
 *    text; tern_errmsg() gives the calling thread's detailed message (which
 *    file, which line, which check) of its last failed call and is "" after
 *    a call that succeeded or returned TERN_NOTFOUND: every call clears it
 *    first, except tern_version, tern_strerror and tern_errmsg, which read
 *    nothing tern keeps per call (so `tern_strerror(rc), tern_errmsg()` in
 *    one printf is safe).  tests/engine/test_conventions.c checks these
 *    rules on every call.
 *  - Handles are opaque and allocated by tern; out-parameters come first.
 *    On failure an out-handle is set to NULL.
 *  - Byte strings are (pointer, length) pairs; keys and terms may hold NUL.
 *    tern copies what it keeps: the caller's buffers may be reused as soon
 *    as a call returns.  Pointers tern returns (values of tern_postings_doc,
 *    of a tern_batch_fn, options' field names, stats) point into memory tern
 *    owns, valid for the lifetime each call states; never free them.
 *
 * HANDLES AND LIFETIMES.  tern_index (an open directory) outlives
 * everything opened from it: tern_close() fails with TERN_EBUSY while a
 * snapshot or the write transaction is open.  A tern_snapshot is one commit,
 * frozen: it sees nothing later, and the segment files it reads stay on disk
 * (even after a merge dropped them) until the last snapshot holding them is
 * closed, so a snapshot held for hours holds disk space.  A tern_postings
 * belongs to the snapshot it was opened on and must be closed before it;
 * doc ids are numbers inside that snapshot only (they change with merges).
 * A tern_txn is begun and ended (tern_commit / tern_abort) on its index.
 *
 * THREADS.  A tern_index may be used by any number of threads at once.  A
 * tern_snapshot too: tern_get, tern_get_batch and tern_postings_open on one
 * snapshot from many threads need no locking and take none (a snapshot holds
 * no LMDB transaction).  A tern_postings and a tern_txn are used by one
 * thread at a time (they may move between threads).  One write transaction
 * exists at a time per index, across threads and processes: a second
 * tern_txn_begin, tern_flush or tern_compact gets TERN_EBUSY at once, or
 * waits up to tern_options.busy_timeout_ms for it.  tern_errmsg() is per
 * thread.
 *
 * PROCESSES.  Any number of processes may open one index; each sees the
 * commits of the others from its next snapshot on, and they share the one
 * writer (TERN_EBUSY across processes).  Within one process, open a
 * directory once and share the handle between threads: LMDB allows one
 * environment per file per process, so a second tern_index on the same
 * directory gets TERN_EBUSY when it tries to write while the first writes
 * ("another handle ... in this process"), and it keeps tern_compact from
 * shrinking the catalog.  Across fork(): the child must not use, or close,
 * handles of the parent (LMDB's environments do not survive fork); it opens
 * the index anew (or execs).  A process killed at any moment loses no
 * commit that returned, and leaves no visible half commit: the next open
 * removes the files an unfinished commit wrote.
 *
 * COSTS.  tern_get of a key: in the buffer, a binary search in memory; then
 * per segment, newest first, a range check and a filter probe in memory
 * (absent keys stop here ~99% of the time once the filter's pages are in
 * memory; before, the block answers: a cold absent key is one read, and
 * opening reads no filter), one 4 KiB block read for the dictionary (the
 * first touch of a page by pread, later ones mapped), one more read of the
 * postings when the key is not pulsed (threshold 0) and one of .val when
 * its value exceeds inline_value_max.  A present key on a cold cache costs
 * one read with the defaults.  tern_get_batch costs the same reads at most,
 * fewer when keys share blocks, with many in flight at once.  A commit
 * without TERN_TXN_BULK is one LMDB write transaction (two fsyncs)
 * holding the documents in the buffer; one that deletes or replaces a
 * document held in a segment also writes that segment's live docs to the
 * catalog whole (their size: that of its set of deleted documents, tens
 * of KB once some thousands are deleted, until a merge drops them), which
 * makes it several times a commit of new keys (docs/BENCHMARKS.md,
 * "erase").  When the buffer passes write_buffer_bytes, or segments changed, the commit
 * hands the work to the index's background worker (one thread, started by
 * the first commit that needs it) and returns: the worker writes the
 * buffer out as a segment and runs the merge policy, one flush or merge at
 * a time, while commits and snapshots go on; it installs each result in
 * one LMDB transaction of its own, during which a commit waits (that
 * transaction, never the segment's writing).  A commit waits for the
 * worker only when the buffer passes 4 x write_buffer_bytes (commits
 * outrunning flushes).  Once 50 ms pass without a commit, the worker
 * merges the buffer's runs into one before it sleeps, so gets test one
 * run, as after a reopen; the first commit after that wakes it to do the
 * same after the next pause (before the worker's first work, commits
 * leave their runs, at most 13).  While the worker has work, this
 * process holds the write lock, so another process's tern_txn_begin gets
 * TERN_EBUSY (the merge after a pause takes the lock only if it is free).
 * TERN_FOREGROUND (tern_open) runs that work inside the commit instead.  A
 * TERN_TXN_BULK commit sorts the documents, writes them as one segment
 * (fsync of each file and the directory), then commits the catalog; it
 * takes memory for all its documents until then, unless bounded by
 * tern_txn_set_memory (then it writes a segment each time it reaches it).  A transaction without
 * TERN_TXN_BULK whose documents exceed write_buffer_bytes commits the same
 * way (they would only pass through the buffer to be flushed at once), so
 * its peak memory is about that of a bulk one.  docs/BENCHMARKS.md has
 * the measured figures.
 *
 * SPACE.  The catalog's map starts at map_size (64 GiB by default) and
 * grows by itself: a write that finds it full doubles it and is tried
 * again (other processes adopt the new size at their next read).
 * TERN_EFULL means the map could not grow (the address space, or the disk
 * for the pages the write needed); tern_flush moves buffered writes into
 * a segment.  LMDB reuses the catalog's free pages but
 * never shrinks its file; tern_compact does (see there).
 *
 * BACKUP.  tern_backup(snap, dest) writes a consistent, verified, openable
 * copy of exactly one snapshot's commit while writers go on: segment files
 * are hard-linked (copied across file systems), a fresh catalog holds that
 * commit alone, and the copy is verified before it is renamed into place.
 * The snapshot pins its segment files against merges of this process only:
 * when another process merges meanwhile, a file may be gone before it is
 * linked, and the backup fails with -ENOENT (nothing half-made is left;
 * take it again).  The CLI's `tern backup DIR DEST` is the same call.
 */
#ifndef TERN_H
#define TERN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* libtern.so is built with -fvisibility=hidden: the functions declared
 * between this push and its pop are all it exports. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/** @defgroup version Versions
 *  The library version; the on-disk formats carry their own (docs/FORMAT.md).
 *  @{ */
#define TERN_VERSION_MAJOR 0
#define TERN_VERSION_MINOR 1
#define TERN_VERSION_PATCH 0
/** Returns "MAJOR.MINOR.PATCH" of the library linked in (a static string;
 *  any thread).  Errors: none (never fails; tern_errmsg() is left as it
 *  is).  The soname's number is TERN_VERSION_MAJOR. */
const char *tern_version(void);
/** @} */

/** @defgroup errors Status codes
 *  Values are pinned: they never change between releases.
 *  @{ */
#define TERN_OK 0
#define TERN_NOTFOUND (-30700)  /**< key or term absent; not a failure */
#define TERN_EINVAL (-30701)    /**< invalid argument */
#define TERN_ECORRUPT (-30702)  /**< a file is corrupt, truncated or foreign */
#define TERN_EVERSION (-30703)  /**< a file of a format version this library does not read */
#define TERN_EBUSY (-30704)     /**< another write transaction is open */
#define TERN_ENOMEM (-30705)    /**< out of memory */
#define TERN_ERANGE (-30706)    /**< caller's buffer too small; the needed size is reported */
#define TERN_ENOTINDEX (-30707) /**< the directory is not a tern index */
#define TERN_EFULL (-30708)     /**< the catalog's map is full and could not grow
                                     (see SPACE above) */
/** The commit (or flush) is durable and visible, but work run after it
 *  (flushing the buffer, merging) failed: tern_errmsg() gives the cause,
 *  tern_stats_get() keeps it (last_error). Nothing is lost; the next
 *  writer tries the work again, except merges of a segment found damaged,
 *  which are skipped until it leaves the index. */
#define TERN_EPARTIAL (-30709)
/** A callback (tern_batch_fn, tern_doc_fn, tern_term_fn) returned non-zero,
 *  and the call stopped there: not a failure of tern's (tern_errmsg() says
 *  which value the callback returned).  The callback's own value never comes
 *  back as the status, so it cannot be mistaken for one of tern's: a
 *  callback that wants to say why it stopped keeps that in its payload. */
#define TERN_ESTOPPED (-30710)
/** tern_put with TERN_NOOVERWRITE of a key the transaction sees: nothing
 *  changed, the transaction stays usable. */
#define TERN_EEXIST (-30711)
#define TERN_ELAST TERN_EEXIST

/** Text for a status: tern's own codes, or a negated errno.  A static
 *  string, never NULL ("unknown status" for other values); any thread.
 *  Errors: none (never fails; tern_errmsg() is left as it is). */
const char *tern_strerror(int status);
/** The calling thread's message for its last failed call, naming the file or
 *  input that failed when there was one; "" when none and after every call
 *  that succeeded or returned TERN_NOTFOUND (each call clears it first).
 *  Thread-local storage owned by tern: valid until the thread's next tern
 *  call (closing a handle included: report a failure before closing the
 *  handles around it); copy it to keep it.  Errors: none (never fails). */
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
typedef struct tern_index tern_index;       /**< an open index directory; outlives the rest */
typedef struct tern_txn tern_txn;           /**< the write transaction: one thread at a time */
typedef struct tern_snapshot tern_snapshot; /**< a read view of one commit: any threads */
typedef struct tern_postings tern_postings; /**< documents having terms; closed before its
                                                 snapshot, one thread at a time */

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
 *  them back and ignores what the caller passes, except map_size: a larger
 *  map_size given to tern_open (not read-only) grows the map and is stored;
 *  a smaller one is ignored (the map never shrinks).
 *  @{ */
#define TERN_OPTIONS_VERSION 3
typedef struct tern_options {
  int version;                  /**< TERN_OPTIONS_VERSION */
  uint32_t pulsing_threshold;   /**< default threshold of every field (1; 0 = never inline) */
  uint32_t inline_value_max;    /**< values up to this size sit in the key's entry (128) */
  uint32_t bloom_bits_per_key;  /**< membership filter size per key (10; 0 = no filter) */
  uint64_t write_buffer_bytes;  /**< buffered writes past this become a segment (8 MiB);
                                     counts the keys' and values' bytes: in memory the
                                     buffer takes ~60-65 bytes a document more (8 MiB of
                                     16-byte keys and 8-byte values: ~29 MB) */
  uint64_t map_size;            /**< LMDB map size, the catalog's ceiling (64 GiB; at least
                                     1 MiB); address space, not disk: the file grows
                                     as it fills */
  const tern_field_option *fields; /**< per-field thresholds overriding the default */
  size_t nfields;
  /** Since version 2.  How long tern_txn_begin, tern_flush and tern_compact
   *  wait for the write lock held by another thread or process (0, the
   *  default: not at all, TERN_EBUSY at once).  Not stored: each tern_open
   *  gives its handle its own (version 1 options mean 0).  The wait polls
   *  the lock with a backoff from 1 ms up to 50 ms, so a waiter may start up
   *  to 50 ms after the lock is free; it is not first come, first served.
   *  A thread that itself holds the transaction waits the whole timeout. */
  uint32_t busy_timeout_ms;
  uint32_t read_depth;          /**< since version 2: reads a cold tern_get_batch keeps in
                                     flight at once (32, see docs/ARCHITECTURE.md "Cold batches"; 0 =
                                     one read at a time; at most 1024).  Not stored: taken
                                     from the options given to each tern_open (the default
                                     when NULL or version 1) */
  uint32_t merge_factor;        /**< since version 3: segments of similar size (each within
                                     1.5x their group's mean; all of up to 1,000 documents
                                     together) merged into one once this many exist (4; 2 to
                                     32; 0 = never merged together in the background, only
                                     by tern_compact).  Not stored: each tern_open's (the
                                     default when NULL or version 1 or 2); see
                                     docs/ARCHITECTURE.md "Merges" */
} tern_options;
/** Fills `opts` with the defaults above (fields NULL, nfields 0).
 *  Errors: TERN_EINVAL (opts NULL).  Any thread. */
int tern_options_init(tern_options *opts);
/** @} */

/** @defgroup index Opening and closing
 *  @{ */
#define TERN_CREATE 0x1u   /**< create the index when the directory holds none */
#define TERN_RDONLY 0x2u   /**< open for reading only: no writes, no merges, no cleanup */
#define TERN_PREAD 0x4u    /**< read segments with pread(2) only: the default already
                                reads a page's first touch by pread and later ones through
                                a mapping, and uses each segment's index file in place
                                through one; this makes warm reads system calls too (much
                                dearer) and copies index files; see docs/ARCHITECTURE.md */
#define TERN_FOREGROUND 0x8u /**< run flushes and merges inside the tern_commit that makes
                                  them due, in the committing thread, instead of in the
                                  background worker (see COSTS): slower commits, but each
                                  commit returns with its work done (deterministic tests) */

/** Opens the index in `dir` (copied; the caller's string may go).  With
 *  TERN_CREATE, creates `dir` and the index when `dir` is absent or empty,
 *  with `opts` (NULL for the defaults; copied, field names included).
 *  Creation is durable and all or nothing: the catalog is built aside and
 *  renamed into place, `dir` and its parent fsynced, before this returns;
 *  a creation cut short (crash, I/O error) leaves no index, and the next
 *  TERN_CREATE open replaces what it left.  An
 *  existing index keeps its stored options (but see map_size above).
 *  Unless TERN_RDONLY, and when no writer is at work, removes the files a
 *  crashed writer left uncommitted.  Costs a few small reads of the
 *  catalog and a directory scan; segment files are opened by the first
 *  snapshot.  Open a directory once per process (PROCESSES above).
 *  Errors: TERN_ENOTINDEX (no index and no TERN_CREATE, a directory holding
 *  other files, not a directory, or another program's LMDB file as the catalog), TERN_EVERSION (catalog of another
 *  format), TERN_ECORRUPT (a damaged, truncated or non-regular catalog, a
 *  table or record missing, or segment files without a sound catalog:
 *  nothing is written or removed; the catalog is checked before anything
 *  reads or writes it, and an open never re-creates or resets an index),
 *  TERN_EINVAL (bad flags or options, TERN_CREATE with TERN_RDONLY),
 *  TERN_EFULL (growing map_size failed), TERN_EBUSY (LMDB's reader table
 *  full), -errno (-EACCES, -ENOENT of a parent, -ENOSPC when creating). */
int tern_open(tern_index **out, const char *dir, unsigned flags, const tern_options *opts);
/** Closes the index and frees it; NULL is a no-op.  Snapshots (and their
 *  postings) and the write transaction must be closed first: TERN_EBUSY
 *  otherwise, and nothing is closed.  Waits for the background worker's
 *  flush or merge in flight to finish (see COSTS), and starts no other: a
 *  buffer past write_buffer_bytes stays in the catalog for the next
 *  writer.  Not concurrently with other calls on the same handle.
 *  Errors: TERN_EBUSY (a snapshot or the transaction open), -errno (of
 *  closing the catalog's environment; the handle is freed all the same). */
int tern_close(tern_index *idx);
/** The options the index was created with (map_size: the current one;
 *  busy_timeout_ms, read_depth and merge_factor: this handle's).
 *  `out->fields` points into the index, valid until tern_close(); do not
 *  free it.  Errors: TERN_EINVAL.  No I/O; any thread. */
int tern_get_options(const tern_index *idx, tern_options *out);
/** @} */

/** @defgroup write Write transactions
 *  One at a time per index, across threads and processes (TERN_EBUSY, or
 *  waited for up to tern_options.busy_timeout_ms).  A transaction reads
 *  the commit it began on: its own writes are not visible to snapshots
 *  (they see commits only), but tern_txn_get, tern_delete and
 *  tern_put_flags see its earlier puts and deletes.  Nothing it does is visible to
 *  snapshots until tern_commit() returns TERN_OK; after that a crash loses
 *  none of it.  Writes are held in memory (copied) until the commit.
 *  @{ */
#define TERN_TXN_BULK 0x1u /**< buffer the whole transaction in memory and write
                                it as new segments at commit (imports) */

/** Begins the write transaction; the caller must end it with tern_commit
 *  or tern_abort (which free it).  Takes the index's write lock (an owner
 *  word shared through DIR/write.lock), waiting for it up to the busy_timeout_ms the handle
 *  was opened with (0: not at all).  Errors: TERN_EBUSY if a transaction,
 *  flush or compaction is open (this handle, another handle in this process,
 *  or another process: tern_errmsg() says which) and stays open past the
 *  timeout, TERN_EINVAL on a read-only index or bad flags, -errno. */
int tern_txn_begin(tern_txn **out, tern_index *idx, unsigned flags);
/** Inserts the document with primary key `key`, or replaces the one the
 *  key has (value and all its terms).  Key, value and terms are copied.
 *  `terms` may be NULL when nterms is 0.
 *  Costs memory only (no I/O) until the commit.
 *  Errors: TERN_EINVAL (empty or too long key, value over TERN_VALUE_MAX,
 *  bad field or term; the transaction stays usable), TERN_ENOMEM. */
int tern_put(tern_txn *txn, const void *key, size_t klen, const void *val, size_t vlen,
             const tern_term *terms, size_t nterms);
#define TERN_NOOVERWRITE 0x1u /**< tern_put_flags: refuse a key the transaction sees */
/** tern_put with flags.  TERN_NOOVERWRITE: when the transaction sees a
 *  document with this key (as tern_txn_get would find it), nothing changes
 *  and TERN_EEXIST is returned (the transaction stays usable); costs that
 *  lookup.  flags 0 is tern_put.  Errors: as tern_put, TERN_EEXIST,
 *  TERN_EINVAL (unknown flags), TERN_ECORRUPT and -errno from the lookup. */
int tern_put_flags(tern_txn *txn, unsigned flags, const void *key, size_t klen, const void *val,
                   size_t vlen, const tern_term *terms, size_t nterms);
/** Looks up `key` as the transaction sees it: its own puts and deletes
 *  first (a key it deleted is TERN_NOTFOUND, one it put has the value it
 *  put last), else the commit it began on (not later commits: there are
 *  none while it holds the write lock).  Value out as tern_get: copied to
 *  `buf`, TERN_ERANGE with *vlen set when it does not fit.  Cost: a hash
 *  lookup in the transaction, then as tern_get.  Errors: TERN_EINVAL (bad
 *  key, txn or vlen NULL), TERN_ERANGE, TERN_ECORRUPT, -errno. */
int tern_txn_get(tern_txn *txn, const void *key, size_t klen, void *buf, size_t cap,
                 size_t *vlen);
/** Deletes the document with primary key `key`.  TERN_NOTFOUND when the
 *  transaction sees no such document (nothing changes; not a failure).
 *  Costs a lookup of the key in the commit the transaction began on (as
 *  tern_get) unless the transaction itself put the key.
 *  Errors: TERN_EINVAL (bad key), TERN_ECORRUPT and -errno from that
 *  lookup. */
int tern_delete(tern_txn *txn, const void *key, size_t klen);
/** Deletes every document whose key k has from <= k < to (from NULL: from
 *  the first key; to NULL: to the last; from >= to: nothing), as of the
 *  commit: segments wholly inside the range are dropped, the others'
 *  documents in it marked deleted (one pass over that part of each
 *  segment's dictionary, no per-key write), and buffered documents in it
 *  taken out of the buffer.  The transaction's earlier puts of keys in the
 *  range are deleted with them; later ones stand.  Bounds are copied.
 *  Costs memory only until the commit.  Errors: TERN_EINVAL (txn NULL, a
 *  bound of 0 or more than TERN_KEY_MAX bytes), TERN_ENOMEM. */
int tern_delete_range(tern_txn *txn, const tern_slice *from, const tern_slice *to);
/** Makes the transaction durable and visible, and frees it (even on error:
 *  a failed commit changes nothing, and a crash during it leaves the index
 *  at the previous commit).  A transaction with nothing in it costs
 *  nothing.  Cost: see COSTS above; snapshots keep reading meanwhile.
 *  TERN_EPARTIAL: the commit is durable and visible, but a flush or merge
 *  failed since the last commit returned: in the background worker (run
 *  after an earlier commit) or, with TERN_FOREGROUND, after this one.  Each
 *  such failure is returned once, by the next tern_commit, tern_flush or
 *  tern_compact, whichever comes first (the cause in
 *  tern_errmsg(); tern_stats_get() shows it from the moment it happened);
 *  the worker tries again after 1, 2, 4, ... up to 1024 further commits,
 *  and tern_flush tries at once.  Nothing committed is lost by it: the
 *  buffer stays in the catalog until a flush installs it.
 *  Errors: TERN_EFULL (the catalog's map is full: SPACE above),
 *  TERN_ECORRUPT (a segment it must read is damaged), TERN_EBUSY (the
 *  catalog changed under the writer: another process broke the lock
 *  protocol), -errno (-ENOSPC, -EIO while writing a segment or the
 *  catalog), TERN_ENOMEM. */
int tern_commit(tern_txn *txn);
/** Ingest flags: */
#define TERN_INGEST_BEHIND 0x1u     /**< keys the index already has keep their document; the
                                         ingested one is marked deleted */
#define TERN_INGEST_LATER_WINS 0x2u /**< a key in two ingested segments: the later path's
                                         document wins (else TERN_EINVAL) */
/** Adds segments built outside the index (each paths[i] a directory holding
 *  exactly one segment's files, named as tern names them: NAME.tim, .tix,
 *  .doc, .flt, .val) in one commit: all or nothing, durable on return,
 *  visible to snapshots opened after it, never to open ones.  Every
 *  segment is verified whole first (every file's checksums); its files are
 *  then hard-linked into the index directory under fresh names (copied and
 *  fsynced on another file system; the sources are left as they are).  A
 *  key the index already has (in a segment or the write buffer): the
 *  ingested document wins and the older is marked deleted in the same
 *  commit, or with TERN_INGEST_BEHIND the other way round.  Only where an
 *  ingested segment's key range overlaps a segment's or the buffer's are
 *  keys looked up: disjoint ranges cost no per-key work.  A crash at any
 *  point leaves the index as before or after; files of an ingest that did
 *  not commit are removed at the next writable open.  Takes the write lock
 *  as tern_txn_begin (not with a transaction open).  n 0, or only empty
 *  directories (builds of no document): nothing, no commit.
 *  Errors: TERN_EINVAL (bad arguments or flags; a path that is not one
 *  segment's directory; not an index segment; a key in two ingested
 *  segments without TERN_INGEST_LATER_WINS, naming it), TERN_ECORRUPT (a
 *  segment does not verify, naming the file), TERN_EVERSION (a segment
 *  format this library does not read), TERN_EBUSY (as tern_txn_begin),
 *  TERN_EFULL, TERN_EPARTIAL (ingested; background work failed, as
 *  tern_commit), TERN_ENOMEM, -errno (a missing or unreadable file,
 *  naming it).  The index is unchanged on every error but TERN_EPARTIAL. */
int tern_ingest(tern_index *idx, const char *const *paths, size_t n, unsigned flags);
/** Drops the transaction's writes, releases the write lock and frees it;
 *  NULL is a no-op.  Errors: none (never fails). */
int tern_abort(tern_txn *txn);
/** tern_commit, also giving the commit's sequence number in *seq (NULL:
 *  not wanted): the index's commit counter as this commit left it.  The
 *  counter grows with every change of the index's catalog, by any process
 *  (commits, flushes, merges, failure records; by one or more, so numbers
 *  may be skipped) and never goes back, so a
 *  snapshot sees this commit exactly when tern_snapshot_seq() gives a
 *  number >= *seq.  A transaction with nothing in it gives the number of
 *  the commit it began on.  *seq is set on TERN_OK and on TERN_EPARTIAL
 *  (the commit is durable) and is 0 after any other error.  Frees the
 *  transaction as tern_commit does.  Errors: those of tern_commit,
 *  TERN_EINVAL (txn NULL). */
int tern_commit_seq(tern_txn *txn, uint64_t *seq);

/** Bounds the memory of a TERN_TXN_BULK transaction to about `bytes`
 *  (0, the default: no bound, everything is held until the commit).  When
 *  holding the next tern_put's document would take the transaction's
 *  documents, its operations and what its commit adds to them (8 bytes an
 *  operation, 24 a term, 2 MiB of buffers) past `bytes`, that tern_put
 *  first "spills": it resolves and writes the operations so far as a
 *  segment (sorting, writing, fsyncing: a bulk commit's cost, without the
 *  catalog) and frees their memory.  The transaction goes on as before:
 *  later puts and deletes of a spilled key win over it, tern_txn_get and
 *  tern_delete see it, and the commit installs every spilled segment
 *  together with the rest in one catalog transaction, all or nothing: until
 *  then no snapshot sees them, tern_abort and a failed commit remove their
 *  files, and after a crash the next writable open does.  Each spill adds
 *  a segment (the merge policy merges them later, in the background
 *  worker); the first waits for the worker's work in flight.  Memory not
 *  counted: one segment writer's (a few MiB) and, after tern_delete or
 *  tern_txn_get, the transaction's key map (16 bytes an operation).
 *  tern_put's errors then include those of tern_commit (-ENOSPC, -EIO,
 *  TERN_ECORRUPT of a segment it resolves keys against), and the
 *  transaction stays as it was before that put.  Errors: TERN_EINVAL (txn
 *  NULL; bytes non-zero and txn not begun with TERN_TXN_BULK). */
int tern_txn_set_memory(tern_txn *txn, uint64_t bytes);

/** Told by tern_commit() how far it is, on the committing thread: `phase` is
 *  "sort", "resolve", "write", "terms", "sync", "commit" and "merge" (the
 *  flush or merges the commit may trigger, often nothing: handed to the
 *  background worker, or run then with TERN_FOREGROUND), in this order (a
 *  transaction without TERN_TXN_BULK has no "write", "terms" and "sync",
 *  unless its documents exceed write_buffer_bytes: see COSTS),
 *  and `done` of `total` units: documents for "sort" and "write", else 0 of 1
 *  at the start of the phase and 1 of 1 at its end.  Each phase reports its
 *  start and its end at least; "write" also every 4096 documents.  The
 *  callback must not call tern functions on this index. */
typedef void (*tern_progress_fn)(void *payload, const char *phase, uint64_t done, uint64_t total);
/** Sets the progress callback of `txn` (fn NULL: none, the default).
 *  Errors: TERN_EINVAL (txn NULL). */
int tern_txn_set_progress(tern_txn *txn, tern_progress_fn fn, void *payload);
/** @} */

/** @defgroup read Snapshots and lookups
 *  A snapshot sees exactly the last commit made before it was opened (by
 *  any process), for as long as it is held, through later commits and
 *  merges.  Open one per batch of reads: opening is cheap when nothing was
 *  committed since the last one (a catalog read), dearer after a commit
 *  (new segments' files are opened and mapped, the buffer is copied).
 *  @{ */
/** Opens a snapshot of the last commit.  Errors: TERN_ECORRUPT (a segment
 *  or live docs of that commit are damaged, naming the file), TERN_EBUSY
 *  (LMDB's reader table is full), -errno (opening a segment file). */
int tern_snapshot_open(tern_snapshot **out, tern_index *idx);
/** Closes the snapshot.  Segment files that later merges dropped are
 *  unlinked when no snapshot holds them any more.  NULL is a no-op.
 *  Errors: TERN_EBUSY (and nothing is closed) while any handle opened on
 *  it is open: a postings iterator, a cursor, a terms enumeration or a
 *  deleted-docs iterator (one rule for all; close them first). */
int tern_snapshot_close(tern_snapshot *snap);

/** Looks up `key` in the snapshot.  On TERN_OK the value's length is in
 *  *vlen and its bytes are copied to `buf` (which may be NULL when cap is
 *  0); when it does not fit in `cap` bytes, TERN_ERANGE with *vlen set
 *  (call again with a larger buffer).  TERN_NOTFOUND when absent (not a
 *  failure).  Cost: COSTS above (one read of one page, cold, with the
 *  defaults).  Errors: TERN_EINVAL (bad key), TERN_ECORRUPT (naming the
 *  file; never a wrong value), -errno (-EIO of a pread; with a mapping, a
 *  file truncated by someone else under it raises SIGBUS, which TERN_PREAD
 *  avoids). */
int tern_get(tern_snapshot *snap, const void *key, size_t klen, void *buf, size_t cap,
             size_t *vlen);

/** Called once per key of tern_get_batch(), in input order, on the
 *  caller's thread, after every key was looked up.  `status` is TERN_OK
 *  (val, vlen set; the bytes are valid during the call only) or
 *  TERN_NOTFOUND.  A non-zero return stops the batch: tern_get_batch()
 *  returns TERN_ESTOPPED (never the callback's value). */
typedef int (*tern_batch_fn)(void *payload, size_t i, int status, const void *val,
                             size_t vlen);
/** Looks up `n` keys (any order, duplicates allowed; n 0 does nothing),
 *  visiting each segment's blocks in key order so that a cold batch reads
 *  each block once and in file order: the blocks this process has not read
 *  yet are read with up to tern_options.read_depth reads in flight (io_uring
 *  where the kernel allows it, else a few threads, else one at a time),
 *  blocks close together in one read, and each key answered as its block
 *  arrives (docs/ARCHITECTURE.md, "Cold batches").  When every segment is
 *  mapped and in the page cache, or the keys come sorted and either
 *  read_depth is 0 or there are fewer keys than one per 64 pages of a
 *  segment's terms, they are looked up in the order given instead (with
 *  mapped segments several at once, their cache misses overlapping, or
 *  one after the other, whichever the index measured cheaper, a chunk
 *  of up to 4,096 keys at a time: docs/ARCHITECTURE.md, "Warm
 *  batches"); so too when every segment is mapped and the batch has at
 *  least one key per block of all the segments' terms (and per page of
 *  their values) and the files fit in a quarter of the memory: the files
 *  not read yet are then first read whole, in order, in reads of 512 KiB
 *  with up to 4 in flight (sequential when cheaper: such a batch needs
 *  most of the blocks).  In order, an error may stop the batch after
 *  some keys were answered.  Memory: O(n) plus the found values (copied
 *  until the callbacks ran) plus up to read_depth reads of at most 512
 *  KiB in flight; split very large batches.  Uses up to 16 short-lived
 *  threads when io_uring is refused.  Nothing is called back when a
 *  lookup fails.  Errors: TERN_EINVAL (a bad key: none is looked up; fn
 *  NULL), TERN_ECORRUPT, -errno, TERN_ENOMEM,
 *  TERN_ESTOPPED (fn returned non-zero). */
int tern_get_batch(tern_snapshot *snap, const tern_slice *keys, size_t n, tern_batch_fn fn,
                   void *payload);

/** Opens an iterator over the snapshot's live documents having all `n`
 *  terms (n >= 1; `terms` copied), in doc-id order, advancing the cheapest
 *  first (leapfrog).  A term no document has gives an empty iterator (cost
 *  0), not an error.  Cost: one dictionary lookup per term and segment.
 *  The iterator belongs to `snap`: close it before the snapshot.
 *  Errors: TERN_EINVAL (n 0, bad field or term), TERN_ECORRUPT, -errno. */
int tern_postings_open(tern_postings **out, tern_snapshot *snap, const tern_term *terms,
                       size_t n);
/** Moves to the next document; *doc is its id (valid in this snapshot
 *  only), or TERN_NO_MORE_DOCS at the end (and on every call after).
 *  Cost: postings reads of the terms, block by block.
 *  Errors: TERN_ECORRUPT (naming the file), -errno. */
int tern_postings_next(tern_postings *p, uint64_t *doc);
/** Moves to the first document whose id is >= target (never backwards: a
 *  target at or before the current document leaves it there).  Skips whole
 *  postings blocks.  Errors: as tern_postings_next. */
int tern_postings_advance(tern_postings *p, uint64_t target, uint64_t *doc);
/** An upper bound of the number of documents left to visit (0 when
 *  exhausted, or p NULL); no I/O.  Errors: none (a count, never a status;
 *  clears tern_errmsg()). */
uint64_t tern_postings_cost(const tern_postings *p);
/** The current document's key and value; the pointers are into tern's
 *  memory, valid until the iterator moves or closes.  Cost: the document's
 *  key entry (one block read on a cold cache) and its value.
 *  Errors: TERN_EINVAL (no current document: before the first next or at
 *  the end), TERN_ECORRUPT, -errno. */
int tern_postings_doc(tern_postings *p, tern_slice *key, tern_slice *val);
/** Frees the iterator; NULL is a no-op.  Errors: none (never fails). */
int tern_postings_close(tern_postings *p);
/** @} */

/** @defgroup ordered Ordered access, term enumeration, deleted documents, backup
 *  Everything here reads one snapshot: what commits meanwhile never shows.
 *  The snapshot must outlive the handles opened on it: tern_snapshot_close
 *  returns TERN_EBUSY while a cursor, terms enumeration or deleted-docs
 *  iterator of it is open.  Every handle here is used by one thread at a
 *  time.  "TERN_ECORRUPT" below always names the damaged file in
 *  tern_errmsg(); "-errno" is an I/O failure reading a segment (-EIO).
 *  @{ */
typedef struct tern_cursor tern_cursor;       /**< live keys in byte order */
typedef struct tern_terms tern_terms;         /**< one field's terms in byte order */
typedef struct tern_deleted tern_deleted;     /**< deleted doc ids of one segment */

/** Bounds of a cursor: keys k with from <= k < to that start with prefix.
 *  A NULL `data` (or, for prefix, a zero length) means no such bound. */
typedef struct tern_bounds {
  tern_slice from;   /**< inclusive lower bound */
  tern_slice to;     /**< exclusive upper bound */
  tern_slice prefix; /**< every key starts with these bytes */
} tern_bounds;

/** Opens an unpositioned cursor over the snapshot's live documents, the
 *  write buffer and every segment merged, within `bounds` (NULL: all keys).
 *  Positioning reads one terms block per segment; each step decodes the
 *  next entry of each segment it passes.  Use by one thread at a time.
 *  Errors: TERN_EINVAL (out or snap NULL, a bound longer than
 *  TERN_KEY_MAX, a prefix of non-zero length and NULL data), TERN_ENOMEM;
 *  *out is NULL on failure. */
int tern_cursor_open(tern_cursor **out, tern_snapshot *snap, const tern_bounds *bounds);
/** Positions on the first key in bounds; TERN_NOTFOUND (unpositioned) when
 *  there is none.  Errors: TERN_EINVAL (c NULL; seeks: key NULL with a
 *  non-zero length, or longer than TERN_KEY_MAX), TERN_ECORRUPT, -errno;
 *  the cursor is left unpositioned (so for every positioning call below). */
int tern_cursor_first(tern_cursor *c);
/** Positions on the last key in bounds; TERN_NOTFOUND when none.
 *  Errors: as tern_cursor_first. */
int tern_cursor_last(tern_cursor *c);
/** Positions on the first key >= `key` in bounds; TERN_NOTFOUND when none.
 *  Errors: as tern_cursor_first. */
int tern_cursor_seek(tern_cursor *c, const void *key, size_t klen);
/** Positions on the last key <= `key` in bounds; TERN_NOTFOUND when none.
 *  Errors: as tern_cursor_first. */
int tern_cursor_seek_for_prev(tern_cursor *c, const void *key, size_t klen);
/** Moves to the next (prev: previous) key in bounds; TERN_NOTFOUND past the
 *  end, leaving the cursor unpositioned.  On an unpositioned cursor, next
 *  is first and prev is last.  Changing direction re-seeks every source.
 *  Errors: as tern_cursor_first. */
int tern_cursor_next(tern_cursor *c);
int tern_cursor_prev(tern_cursor *c);
/** The current key; valid until the cursor moves or closes.  No I/O.
 *  Errors: TERN_EINVAL (c or key NULL, or the cursor unpositioned). */
int tern_cursor_key(tern_cursor *c, tern_slice *key);
/** The current value, read now (values are not read while stepping); valid
 *  until the cursor moves or closes.  Errors: TERN_EINVAL (c or val NULL,
 *  or the cursor unpositioned), TERN_ECORRUPT, -errno (reading .val). */
int tern_cursor_value(tern_cursor *c, tern_slice *val);
/** Frees the cursor; NULL is a no-op.  Errors: none (never fails). */
int tern_cursor_close(tern_cursor *c);

/** Opens an unpositioned enumeration of the terms of `field` (not the
 *  primary key: that is the cursor above) having at least one live
 *  document, merged over the buffer and every segment.  Errors: TERN_EINVAL
 *  (out or snap NULL, field empty or longer than TERN_FIELD_MAX),
 *  TERN_ECORRUPT, -errno, TERN_ENOMEM; *out is NULL on failure. */
int tern_terms_open(tern_terms **out, tern_snapshot *snap, const char *field);
/** Positions on the first term >= `term` (Lucene's seekCeil).  TERN_OK and
 *  *exact 1 when the term itself is there, 0 when positioned on the next
 *  term; TERN_NOTFOUND (unpositioned) when no term follows.  exact may be
 *  NULL.  Errors: TERN_EINVAL (te NULL, term NULL with a non-zero length,
 *  or longer than TERN_KEY_MAX), TERN_ECORRUPT, -errno (counting a term's
 *  live documents reads its postings in segments with deletions); the
 *  enumeration is left unpositioned (so for tern_terms_next). */
int tern_terms_seek_ceil(tern_terms *te, const void *term, size_t len, int *exact);
/** The next term (the first when unpositioned); TERN_NOTFOUND after the last.
 *  Errors: as tern_terms_seek_ceil. */
int tern_terms_next(tern_terms *te);
/** The current term; valid until the enumeration moves or closes.  No I/O.
 *  Errors: TERN_EINVAL (te or term NULL, or unpositioned). */
int tern_terms_term(tern_terms *te, tern_slice *term);
/** The number of live documents having the current term, exact (deleted
 *  documents not yet merged away are not counted).  No I/O (counted when
 *  positioned).  Errors: TERN_EINVAL (te or df NULL, or unpositioned). */
int tern_terms_docfreq(tern_terms *te, uint64_t *df);
/** Opens the postings of the current term (as tern_postings_open would).
 *  Errors: TERN_EINVAL (te or out NULL, or unpositioned), and those of
 *  tern_postings_open; *out is NULL on failure. */
int tern_terms_postings(tern_terms *te, tern_postings **out);
/** Frees the enumeration; NULL is a no-op.  Errors: none (never fails). */
int tern_terms_close(tern_terms *te);

/** The sequence number of the commit the snapshot sees (tern_commit_seq);
 *  no I/O.  Errors: TERN_EINVAL (snap or seq NULL). */
int tern_snapshot_seq(const tern_snapshot *snap, uint64_t *seq);
/** Whether a snapshot opened now would see the same commit as `snap`:
 *  *current is 1 when nothing changed the index's catalog since `snap` was
 *  opened (no commit, flush, merge or ingest, by any process), else 0.
 *  Cheap (tens of nanoseconds): no LMDB transaction, no I/O — it compares
 *  LMDB's last transaction id, read from the catalog's meta page under the
 *  handle's mutex, with the one `snap` was read at (or, while this process
 *  holds the write lock, the sequence numbers).  It may say 0 when the
 *  commit is in fact the same (a catalog change that left the sequence
 *  number, a snapshot opened while this process held the write lock), never
 *  1 when a snapshot opened now would see a later commit: a cache of one
 *  snapshot, re-opened when this says 0, reads the last commit as a
 *  snapshot per read would.  Any thread.  Errors: TERN_EINVAL (snap or
 *  current NULL; *current is then 0). */
int tern_snapshot_current(const tern_snapshot *snap, int *current);
/** Live documents of the snapshot (no I/O).  Errors: TERN_EINVAL (snap or
 *  live NULL). */
int tern_snapshot_count(tern_snapshot *snap, uint64_t *live);
/** Segments of the snapshot, oldest first (0 for snap NULL).  Errors: none
 *  (a count, never a status; clears tern_errmsg()). */
size_t tern_snapshot_nsegments(tern_snapshot *snap);
/** An iterator over the deleted doc ids (segment-local, ascending) of
 *  segment `i` of the snapshot; costs O(deleted), not O(documents).
 *  Errors: TERN_EINVAL (out or snap NULL, i >= tern_snapshot_nsegments),
 *  TERN_ENOMEM; *out is NULL on failure. */
int tern_deleted_open(tern_deleted **out, tern_snapshot *snap, size_t i);
/** The next deleted doc id, or TERN_NO_MORE_DOCS (and on every call after).
 *  No I/O.  Errors: TERN_EINVAL (d or doc NULL). */
int tern_deleted_next(tern_deleted *d, uint64_t *doc);
/** The number of doc ids the iterator returns in all (0 for d NULL).
 *  Errors: none (a count, never a status; clears tern_errmsg()). */
uint64_t tern_deleted_cost(const tern_deleted *d);
/** Frees the iterator; NULL is a no-op.  Errors: none (never fails). */
int tern_deleted_close(tern_deleted *d);

/** Called by tern_postings_each_by_key per document, on the caller's
 *  thread; key and val are valid during the call only.  0 goes on; any
 *  other value stops the walk (TERN_ESTOPPED). */
typedef int (*tern_doc_fn)(void *payload, tern_slice key, tern_slice val);
/** Visits the documents left in `p` in key byte order (not doc-id order),
 *  resolving their keys by walking each segment's primary-key blocks
 *  forward; with want_values, the values too (else val is empty).  The
 *  first call takes every document left in p (tern_postings_next then
 *  returns TERN_NO_MORE_DOCS) and keeps the walk in p.  A non-zero return
 *  of fn stops the walk after that document: TERN_ESTOPPED; calling again
 *  resumes at the next document (want_values may change), and after a walk
 *  that ended (TERN_OK) a call visits nothing.  A walk stopped by an error
 *  resumes the same way, at the document the error stopped it on.
 *  Memory: 4 bytes per document of p, and 20 KiB per segment holding some
 *  (the keys of a terms block's hits at a time).  Errors: TERN_EINVAL (p or fn NULL),
 *  TERN_ESTOPPED, TERN_ECORRUPT, -errno, TERN_ENOMEM. */
int tern_postings_each_by_key(tern_postings *p, int want_values, tern_doc_fn fn, void *payload);

/** Called per document by tern_docs_each and tern_doc_terms, on the
 *  caller's thread, with the document's key, value and every one of its
 *  terms (each (field, term) pair once, however often it was put: fields
 *  in byte order, a field's terms in byte order, wherever the document is,
 *  so a dump does not change when the buffer is flushed; terms may be NULL
 *  when nterms is 0).
 *  Everything is valid during the call only.  0
 *  goes on; any other value stops (TERN_ESTOPPED). */
typedef int (*tern_doc_terms_fn)(void *payload, tern_slice key, tern_slice val,
                                 const tern_term *terms, size_t nterms);
/** Visits the snapshot's live documents within `bounds` (NULL: all; as
 *  tern_cursor_open's) in key byte order, each with its value and all its
 *  terms: what a lossless dump writes (`tern dump`).  Segments keep no
 *  terms per document, so a segment's are recovered by inverting its
 *  postings 65,536 doc ids at a time.  Cost: per such window of a segment,
 *  one pass over its terms dictionary and the window's postings; memory:
 *  the window's terms.  Errors: TERN_EINVAL (snap or fn NULL, a bound
 *  longer than TERN_KEY_MAX), TERN_ESTOPPED, TERN_ECORRUPT, -errno,
 *  TERN_ENOMEM. */
int tern_docs_each(tern_snapshot *snap, const tern_bounds *bounds, tern_doc_terms_fn fn,
                   void *payload);
/** Calls fn once with the live document `key` and all its terms, or
 *  returns TERN_NOTFOUND.  Cost: one pass over the terms dictionary of the
 *  segment holding it (a whole dump: tern_docs_each).  Errors: TERN_EINVAL
 *  (bad key, snap or fn NULL), TERN_ESTOPPED, TERN_ECORRUPT, -errno,
 *  TERN_ENOMEM. */
int tern_doc_terms(tern_snapshot *snap, const void *key, size_t klen, tern_doc_terms_fn fn,
                   void *payload);

/** Writes a copy of exactly the snapshot's commit into directory `dest`
 *  (absent or empty) while writers go on: segment files hard-linked where
 *  the file system allows, else copied; a fresh catalog holding that commit
 *  only; the copy opened and verified, fsynced, then renamed into place
 *  from dest.tmp.  Errors: TERN_EINVAL (dest not empty, not a directory,
 *  or inside the index's directory), TERN_ECORRUPT (the copy failed
 *  verification: the message names the source's damaged file), -errno
 *  (-ENOENT: dest's parent is missing, or another process's merge dropped a
 *  file; the message names the path). */
int tern_backup(tern_snapshot *snap, const char *dest);
/** @} */

/** @defgroup maint Maintenance and statistics
 *  @{ */
/** Writes the buffered writes as a segment (a commit of its own, taking the
 *  write lock; cost as a bulk commit of the buffer), then runs the merge
 *  policy, in the calling thread, after waiting for the background
 *  worker's work in flight (a barrier: when it returns TERN_OK, every
 *  flush and merge due is done).  Nothing to do on an empty buffer.
 *  TERN_EPARTIAL when the segment is committed but the merges after it
 *  failed, or when it succeeded but the background worker's work after
 *  an earlier commit had failed and no call reported it yet (see
 *  tern_commit; the cause in tern_errmsg()).
 *  Errors: TERN_EBUSY (a writer is at work past busy_timeout_ms), TERN_EINVAL (read-only),
 *  TERN_EFULL, TERN_ECORRUPT, -errno. */
int tern_flush(tern_index *idx);
/** Merges every segment and the buffer into one segment without deleted
 *  documents (reads and writes the whole index: cost proportional to its
 *  size; snapshots keep reading the old segments until closed), after
 *  waiting for the background worker as tern_flush does.  Verifies
 *  every input's checksums first, before flushing the buffer:
 *  TERN_ECORRUPT naming the damaged segment, and nothing is written (no
 *  segment, no note in the catalog: every file stays as it was).
 *  TERN_EPARTIAL: done, but the background worker's work after an earlier
 *  commit had failed and no call reported it yet (as tern_flush).  Then, when this
 *  handle holds the directory alone (no other handle open on it in any
 *  process, no snapshot open on this one), rewrites catalog.mdb without
 *  its free pages (LMDB's compacting copy, renamed over it); otherwise the
 *  catalog is left as it is (also while another thread of this process
 *  runs tern_verify or tern_stats_get on the handle; those started during
 *  the swap wait for it).  Errors: TERN_EBUSY (a writer is at work past busy_timeout_ms),
 *  TERN_EINVAL (read-only), TERN_EFULL, TERN_ECORRUPT, -errno (-ENOSPC: it
 *  needs room for a second copy of the index). */
int tern_compact(tern_index *idx);
/** Checks every checksum and structural invariant of the last commit:
 *  reads every file of it (cost: a full read of the index), after waiting
 *  for this handle's background worker to finish its work in flight.
 *  Errors: TERN_ECORRUPT with tern_errmsg() naming the file when unsound
 *  (a file of the commit missing included); TERN_EBUSY when other
 *  processes kept committing during 8 attempts; -errno. */
int tern_verify(tern_index *idx);

typedef struct tern_segment_stats {
  uint64_t id;              /**< segment number, also in its file names */
  uint64_t max_doc;         /**< documents written, deleted included */
  uint64_t deleted;         /**< documents deleted since */
  const char *livedocs_form;/**< "none", "sparse", "dense", "runs" or "mixed" */
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

/** What this process did, for a service to export: totals since tern was
 *  loaded, over every index the process opened (not per index; counted
 *  with relaxed atomics, so a total read while other threads work may miss
 *  their last few).  Never reset. */
typedef struct tern_counters {
  uint64_t gets;          /**< keys looked up: tern_get, each key of tern_get_batch,
                               tern_txn_get */
  uint64_t commits;       /**< tern_commit calls that committed (TERN_OK or TERN_EPARTIAL) */
  uint64_t flushes;       /**< buffers written out and installed as segments (background
                               worker, tern_flush, TERN_FOREGROUND commits, tern_compact) */
  uint64_t merges;        /**< merges installed */
  uint64_t reads;         /**< reads of segment files (one per block, postings run or
                               value read; through the mapping or by pread) */
  uint64_t bytes_read;    /**< bytes those reads asked for */
  uint64_t pages_checked; /**< 4 KiB pages whose checksum was verified: a page's first
                               read in this process, and every page tern_verify reads */
  uint64_t cache_hits;    /**< reads whose every page this process had already read and
                               checked (served through the mapping, no check); the
                               others are first touches */
} tern_counters;

typedef struct tern_stats {
  uint64_t docs;      /**< live documents */
  uint64_t deleted;   /**< deleted documents still held in segments */
  uint64_t buffered;  /**< documents written since the last segment */
  size_t nsegments;
  tern_segment_stats *segments; /**< oldest first */
  /** The last failure of work run after a commit (flush, merge; see
   *  TERN_EPARTIAL): its status (0: none), message ("" when none; valid
   *  until tern_stats_free) and the commit counter it followed (0 when
   *  only this process knows it: the catalog could not take the note). */
  int last_error;
  const char *last_error_msg;
  uint64_t last_error_commit;
  size_t nskipped; /**< segments merges skip: they failed verification as merge input */
  uint64_t catalog_bytes; /**< size of the catalog file (catalog.mdb), free pages included */
  tern_counters counters; /**< this process's totals (see tern_counters) */
  /** Bytes of memory this handle keeps for the combined filter over the
   *  last commit's overlapping segments (docs/ARCHITECTURE.md, "The
   *  combined filter"): 0 when there is none, or none yet (it is made in
   *  the background, the gets right without it meanwhile); up to about 6
   *  bytes a key at 2M keys, 1.25 above 4M. */
  uint64_t filter_bytes;
} tern_stats;

/** Statistics of the last commit, from memory and the catalog (no segment
 *  reads), and the process's counters; *out is tern's, valid until
 *  tern_stats_free() (its strings are static).  Errors: TERN_ECORRUPT,
 *  -errno (as tern_snapshot_open). */
int tern_stats_get(tern_stats **out, tern_index *idx);
/** Frees statistics; NULL is a no-op.  Errors: none (never fails). */
int tern_stats_free(tern_stats *stats);
/** @} */

/** @defgroup build Building segments outside an index, splitting, exporting
 *  A segment can be built without an index, on any machine, and brought
 *  into one later (see tern_ingest where available): this is the bulk-load
 *  path of a host that partitions the key space (RocksDB's SstFileWriter).
 *
 *  A BUILT SEGMENT is a directory holding exactly one segment's files,
 *  named as an index names them (s000000000001.tim .tix .doc .flt .val;
 *  the number means nothing outside an index, which renames them), every
 *  file checksummed and carrying the segment's 16-byte id: the directory
 *  may be copied anywhere and checked on its own (tern_builder_verify).
 *  Doc ids are the keys' ranks, as in the segments an index writes.
 *  @{ */
typedef struct tern_builder tern_builder; /**< one segment being built; one thread at a time */

/** What tern_builder_finish built. */
typedef struct tern_build_info {
  uint64_t documents;                /**< documents in the segment (0: none, no segment) */
  uint8_t first_key[TERN_KEY_MAX];   /**< its smallest key (first_len bytes) */
  size_t first_len;
  uint8_t last_key[TERN_KEY_MAX];    /**< its largest key (last_len bytes) */
  size_t last_len;
  uint64_t bytes;                    /**< bytes of its files */
  char name[32];                     /**< the segment's name in the directory ("s000000000001") */
} tern_build_info;

/** Starts building a segment into directory `path` (copied), which must be
 *  absent or an empty directory; its parent must exist.  Files are written
 *  under `path`.tmp (a leftover of an interrupted build there is removed
 *  first; one builder per path at a time), and renamed to `path` by
 *  tern_builder_finish, so a crash or abort never leaves a finished-looking
 *  `path`.  `opts` (NULL: tern_options_init's defaults) gives the pulsing
 *  thresholds, inline_value_max and bloom_bits_per_key, as for an index
 *  that is to take the segment in (write_buffer_bytes and map_size are not
 *  used).  Memory: the builder streams keys and values to disk; it keeps
 *  the secondary terms (every (field, term, doc) of the segment) in memory
 *  until finish, plus about 8 bytes per key for the filter.
 *  Errors: TERN_EINVAL (path NULL or empty, `path` exists and is not an
 *  empty directory, bad options, `path`.tmp holding foreign files),
 *  -errno (creating `path`.tmp). */
int tern_builder_open(tern_builder **out, const char *path, const tern_options *opts);
/** Adds a document.  Keys must be strictly increasing in byte order
 *  (shorter first on a common prefix): a key not greater than the one
 *  before is TERN_EINVAL with tern_errmsg() naming both keys (escaped as
 *  the CLI does: \\, \t, \n, \r, \xHH), and the builder stays usable.
 *  Arguments as tern_put (keys 1 to TERN_KEY_MAX bytes, values to
 *  TERN_VALUE_MAX, terms as tern_term; a term repeated in one document
 *  counts once).  At most 2^32 - 1 documents per segment.
 *  Errors: TERN_EINVAL (bad or out-of-order argument; the builder is
 *  unchanged), -errno (a write failed: the builder is then failed, and
 *  only tern_builder_abort is left to call). */
int tern_builder_add(tern_builder *b, const void *key, size_t klen, const void *val, size_t vlen,
                     const tern_term *terms, size_t nterms);
/** Writes the secondary terms, the terms index and the filter, fsyncs
 *  every file and `path`.tmp, renames `path`.tmp to `path` and fsyncs the
 *  parent directory: when it returns TERN_OK the segment is durable.  A
 *  builder given no document makes `path` an empty directory (info
 *  documents 0).  Frees b whatever the outcome; on failure `path`.tmp is
 *  removed and `path` holds no segment (an empty `path` directory given
 *  to open may be gone).
 *  info may be NULL.  Errors: -errno, TERN_ENOMEM, or the failure that
 *  failed the builder. */
int tern_builder_finish(tern_builder *b, tern_build_info *info);
/** Drops what was built (removes `path`.tmp) and frees b.  NULL is a
 *  no-op.  Errors: none (always TERN_OK; a leftover `path`.tmp is removed
 *  by the next build of `path`). */
int tern_builder_abort(tern_builder *b);
/** Checks a built segment directory on its own: exactly one segment's five
 *  files and nothing else, every checksum and structural invariant (as
 *  tern_verify does for an index's segments: reads every byte), doc ids
 *  being key ranks.  info (may be NULL) receives its documents, key range
 *  and bytes.  Errors: TERN_ECORRUPT naming the file (damaged, truncated,
 *  foreign or missing file, a stray file, not a segment), TERN_EVERSION
 *  (a segment format version this library does not read), -errno
 *  (-ENOENT: no such directory). */
int tern_builder_verify(const char *path, tern_build_info *info);

/** Returns in keys_out[0..n-1) the n-1 boundary keys that split the
 *  snapshot's live keys into n parts about equal in size: part i holds
 *  the keys k with keys_out[i-1] <= k < keys_out[i] (the first from the
 *  smallest key, the last to the largest).  Boundaries ascend strictly;
 *  when there are fewer distinct split points than n-1 (few keys), the
 *  rest are left empty (len 0) and the call still succeeds.  Cost: no scan
 *  of the keys: each segment's resident terms index (one entry and one
 *  key count per 4 KiB block) and the buffer's keys give a weighted sample
 *  of the key space; live counts are scaled per segment by its live
 *  fraction (deletions are assumed spread evenly), and keys present in
 *  several segments (shadowed, deleted) are counted once per live copy
 *  only.  The parts are within about one block's keys of equal (±10% for
 *  parts of more than ~50 blocks).  keys_out[i].data is malloc'd; free
 *  each with free().  Any thread, as the snapshot's other reads.  Errors:
 *  TERN_EINVAL (n < 1), TERN_ECORRUPT, TERN_ENOMEM. */
int tern_split_keys(tern_snapshot *snap, size_t n, tern_slice *keys_out);
/** Adds the snapshot's live documents with from <= key < to (from NULL or
 *  empty: from the first; to NULL or to->data NULL: to the last; an empty
 *  non-NULL `to`: nothing), in key order, with their
 *  values and secondary terms, to builder b (which must be empty or hold
 *  smaller keys).  Cost: a key-order walk of the range, plus, per segment
 *  overlapping it, one pass over its secondary fields' terms and postings
 *  (terms are kept by term, not per document), holding the range's terms
 *  in memory.  The builder is left open: finish or abort it (after a
 *  failure it may hold part of the range).  Any thread, with the builder
 *  used by no other.  Errors: those of tern_builder_add (TERN_EINVAL when
 *  the builder's last key is not below the range's first), TERN_ECORRUPT,
 *  -errno. */
int tern_export(tern_snapshot *snap, const tern_slice *from, const tern_slice *to,
                tern_builder *b);
/** @} */

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* TERN_H */
