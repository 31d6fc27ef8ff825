/* SPDX-License-Identifier: MIT */
/*
 * catalog.c — the engine's records in LMDB (docs/FORMAT.md):
 *
 *   main database   the tables below, and (catalog version 3 and 4)
 *                   "state" -> commit counter (v4: its base), next segment
 *                   number, buffer totals (v4: generation), segment count
 *                   and digest
 *   DBI "meta"      "format" -> format record, "options" -> options,
 *                   "state" (version 2 catalogs only) as above; "created"
 *                   -> written last by the creating transaction; "health"
 *                   -> the last post-commit failure and the segments
 *                   merges skip
 *   DBI "segments"  segment number (u64 big-endian) -> segment record
 *   DBI "livedocs"  segment number (u64 big-endian) -> .liv bytes of its current generation
 *   DBI "buffer"    primary key -> document record (the write buffer;
 *                   version 4: in the main database, under 0x00 and the
 *                   buffer's generation)
 *
 * Every value ends with a seal (record.h) checked on every read; a failed
 * check marks the catalog damaged, after which this process writes
 * nothing into it (tern_writer_lock refuses).  The bytes themselves are
 * encoded and decoded by codec/record.c.
 */
#include "engine/util/counters.h"
#include "engine/util/errwrap.h"
#include "engine/state/index.h"

#include "codec/coding.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

/* LMDB reports a short write (a full disk) as EIO: keep the true cause. */
static int short_write_cause(MDB_env *env, int err) {
  int fd;
  struct statvfs vs;
  if (err != EIO || !env || mdb_env_get_fd(env, &fd) != 0 || fstatvfs(fd, &vs) != 0) return err;
  return (uint64_t)vs.f_bavail * vs.f_frsize < (64u << 10) ? ENOSPC : err;
}

/* This thread's last LMDB failure was MDB_MAP_FULL (tern_catalog_map_full). */
static _Thread_local int t_map_full;

static int mdb_status_of(MDB_env *env, int rc, const char *what) {
  if (rc == 0) return TERN_OK;
  if (rc == MDB_MAP_FULL) t_map_full = 1;
  if (rc == MDB_NOTFOUND) return TERN_NOTFOUND;
  if (rc > 0) {
    rc = short_write_cause(env, rc);
    return tern_fail(-rc, "catalog: %s: %s", what, strerror(rc));
  }
  switch (rc) {
  case MDB_MAP_FULL:
    return tern_fail(TERN_EFULL,
                     "catalog: %s: map full and it could not grow (tern_flush the buffered "
                     "writes)",
                     what);
  case MDB_MAP_RESIZED:
    return tern_fail(TERN_EBUSY, "catalog: %s: another process grew the map; try again", what);
  case MDB_VERSION_MISMATCH:
    return tern_fail(TERN_EVERSION, "catalog: %s: %s", what, mdb_strerror(rc));
  case MDB_READERS_FULL:
  case MDB_BAD_RSLOT: return tern_fail(TERN_EBUSY, "catalog: %s: %s", what, mdb_strerror(rc));
  default: return tern_fail(TERN_ECORRUPT, "catalog: %s: %s", what, mdb_strerror(rc));
  }
}

int tern_mdb_status(int rc, const char *what) { return mdb_status_of(NULL, rc, what); }

int tern_mdb_env_status(tern_index *idx, int rc, const char *what) {
  return mdb_status_of(idx->env, rc, what);
}

int tern_catalog_damaged(tern_index *idx, int status) {
  if (status == TERN_ECORRUPT) atomic_store(&idx->catalog_bad, 1);
  return tern_fail_wrap(status, "%s/%s", idx->dir, TERN_CATALOG_FILE);
}

static MDB_val val_of(const void *p, size_t n) {
  MDB_val v = {n, (void *)(uintptr_t)p};
  return v;
}

/* Where a buffered document lives: version 4 in the main database under
 * its generation's prefix, older versions in table "buffer". */
static int buffer_in_main(const tern_index *idx) {
  return TERN_CATALOG_BUFFER_IN_MAIN(idx->catalog_version);
}

/* The payload of a sealed value; checks the seal. */
static int unseal(tern_index *idx, const MDB_val *k, const MDB_val *v, size_t *plen,
                  const char *what) {
  /* The common case checked first: the message's name is made only for a
   * failure (formatting it cost more than the check, on every read). */
  size_t n = v->mv_size - TERN_REC_SEAL_SIZE;
  if (v->mv_size >= TERN_REC_SEAL_SIZE &&
      tern_load64((const uint8_t *)v->mv_data + n) ==
          tern_rec_seal_of(k->mv_data, k->mv_size, v->mv_data, n)) {
    *plen = n;
    return TERN_OK;
  }
  char name[80];
  snprintf(name, sizeof name, "catalog %s", what);
  int rc = tern_rec_unseal(k->mv_data, k->mv_size, v->mv_data, v->mv_size, plen, name);
  return rc == TERN_OK ? rc : tern_catalog_damaged(idx, rc);
}

static int get_sealed(tern_index *idx, MDB_txn *t, MDB_dbi dbi, const MDB_val *k,
                      const uint8_t **p, size_t *n, const char *what) {
  *p = NULL; /* defined on every path: callers test the status, compilers cannot tell */
  *n = 0;
  MDB_val v;
  int rc = mdb_get(t, dbi, (MDB_val *)k, &v);
  if (rc == MDB_NOTFOUND) return TERN_NOTFOUND;
  if (rc != 0) return tern_mdb_status(rc, what);
  TERN_TRY(unseal(idx, k, &v, n, what));
  *p = v.mv_data;
  return TERN_OK;
}

/* Room for an n-byte payload and its seal under k, in *dst: the caller
 * writes the payload there, then seals it (tern_rec_seal). */
static int reserve_sealed(tern_index *idx, MDB_txn *t, MDB_dbi dbi, const MDB_val *k, size_t n,
                          const char *what, uint8_t **dst) {
  *dst = NULL; /* defined on failure too: compilers cannot see the status */
  MDB_val v = {n + TERN_REC_SEAL_SIZE, NULL};
  int rc = mdb_put(t, dbi, (MDB_val *)k, &v, MDB_RESERVE);
  if (rc != 0) return tern_mdb_env_status(idx, rc, what);
  *dst = v.mv_data;
  return TERN_OK;
}

static int put_sealed(tern_index *idx, MDB_txn *t, MDB_dbi dbi, const MDB_val *k,
                      const uint8_t *payload, size_t n, const char *what) {
  uint8_t *dst = NULL;
  TERN_TRY(reserve_sealed(idx, t, dbi, k, n, what, &dst));
  if (n) memcpy(dst, payload, n);
  tern_rec_seal(k->mv_data, k->mv_size, dst, n);
  return TERN_OK;
}

int tern_catalog_get_meta(tern_index *idx, MDB_txn *t, const char *name, const uint8_t **p,
                          size_t *n) {
  MDB_val k = val_of(name, strlen(name));
  return get_sealed(idx, t, idx->dbi_meta, &k, p, n, name);
}

int tern_catalog_put_meta(tern_index *idx, MDB_txn *t, const char *name, const uint8_t *p,
                          size_t n) {
  MDB_val k = val_of(name, strlen(name));
  return put_sealed(idx, t, idx->dbi_meta, &k, p, n, name);
}

int tern_catalog_get_format(tern_index *idx, MDB_txn *t, uint32_t *version) {
  /* Read whole: the version decides whether a seal follows. */
  MDB_val k = val_of("format", 6), v;
  int rc = mdb_get(t, idx->dbi_meta, &k, &v);
  if (rc == MDB_NOTFOUND) return TERN_NOTFOUND;
  if (rc != 0) return tern_mdb_status(rc, "format");
  rc = tern_rec_format_decode(v.mv_data, v.mv_size, version);
  return rc == TERN_OK ? rc : tern_catalog_damaged(idx, rc);
}

int tern_catalog_locate_state(tern_index *idx, MDB_txn *t, uint32_t version) {
  idx->catalog_version = version;
  idx->dbi_state = idx->dbi_meta;
  if (!TERN_CATALOG_STATE_IN_MAIN(version)) return TERN_OK;
  return tern_mdb_status(mdb_dbi_open(t, NULL, 0, &idx->dbi_state), "the main database");
}

/* The state record as transaction t finds it: in a version 4 catalog the
 * commit number is the last committed transaction's id (a write
 * transaction's own id is one past it) plus seq_base; the buffered totals
 * are counted apart (tern_catalog_count_buffer), only for a state made. */
static int get_state(tern_index *idx, MDB_txn *t, int writing, tern_rec_state *out) {
  const uint8_t *p;
  size_t n;
  MDB_val k = val_of("state", 5);
  int rc = get_sealed(idx, t, idx->dbi_state, &k, &p, &n, "state");
  if (rc == TERN_NOTFOUND) rc = tern_fail(TERN_ECORRUPT, "catalog: no state record");
  if (rc == TERN_OK && !buffer_in_main(idx)) rc = tern_rec_state_decode(out, p, n);
  if (rc == TERN_OK && buffer_in_main(idx)) {
    rc = tern_rec_state4_decode(out, p, n);
    out->seq = (uint64_t)mdb_txn_id(t) - (writing ? 1u : 0u) + out->seq_base;
  }
  return rc == TERN_OK || rc != TERN_ECORRUPT ? rc : tern_catalog_damaged(idx, rc);
}

int tern_catalog_get_state(tern_index *idx, MDB_txn *t, tern_rec_state *out) {
  return get_state(idx, t, 0, out);
}

int tern_catalog_get_state_writing(tern_index *idx, MDB_txn *t, tern_rec_state *out) {
  return get_state(idx, t, 1, out);
}

int tern_health_read(tern_index *idx, MDB_txn *t, tern_rec_health *out) {
  const uint8_t *p;
  size_t n;
  int rc = tern_catalog_get_meta(idx, t, "health", &p, &n);
  if (rc == TERN_NOTFOUND) {
    memset(out, 0, sizeof *out);
    return TERN_OK;
  }
  if (rc == TERN_OK) rc = tern_rec_health_decode(out, p, n);
  return rc == TERN_ECORRUPT ? tern_catalog_damaged(idx, rc) : rc;
}

int tern_catalog_put_state(tern_index *idx, MDB_txn *t, const tern_rec_state *s) {
  uint8_t buf[TERN_REC_STATE_MAX];
  MDB_val k = val_of("state", 5);
  size_t n = buffer_in_main(idx) ? tern_rec_state4_encode(buf, s) : tern_rec_state_encode(buf, s);
  return put_sealed(idx, t, idx->dbi_state, &k, buf, n, "state");
}

int tern_catalog_put_segment(tern_index *idx, MDB_txn *t, uint64_t number,
                             const tern_rec_segment *r) {
  uint8_t key[TERN_REC_SEGKEY_SIZE], buf[TERN_REC_SEGMENT_MAX];
  tern_rec_segkey_encode(key, number);
  MDB_val k = val_of(key, sizeof key);
  return put_sealed(idx, t, idx->dbi_segs, &k, buf, tern_rec_segment_encode(buf, r),
                    "writing a segment record");
}

int tern_catalog_del_segment(tern_index *idx, MDB_txn *t, uint64_t number) {
  uint8_t key[TERN_REC_SEGKEY_SIZE];
  tern_rec_segkey_encode(key, number);
  MDB_val k = val_of(key, sizeof key);
  int rc = mdb_del(t, idx->dbi_segs, &k, NULL);
  if (rc != 0) return tern_mdb_env_status(idx, rc, "removing a segment record");
  rc = mdb_del(t, idx->dbi_live, &k, NULL);
  if (rc == MDB_NOTFOUND) return TERN_OK;
  return tern_mdb_env_status(idx, rc, "removing live docs");
}

int tern_catalog_put_livedocs(tern_index *idx, MDB_txn *t, uint64_t number, const tern_livedocs *ld,
                              const uint8_t *segid) {
  uint8_t key[TERN_REC_SEGKEY_SIZE], *dst = NULL;
  tern_rec_segkey_encode(key, number);
  MDB_val k = val_of(key, sizeof key);
  /* Encoded straight into the reserved value: a record of tens of KB is
   * not built elsewhere and copied (a failure aborts the transaction). */
  size_t len = tern_livedocs_encoded_len(ld);
  TERN_TRY(reserve_sealed(idx, t, idx->dbi_live, &k, len, "writing live docs", &dst));
  TERN_TRY(tern_livedocs_encode(ld, segid, dst, len));
  tern_rec_seal(k.mv_data, k.mv_size, dst, len);
  return TERN_OK;
}

int tern_catalog_get_livedocs(tern_index *idx, MDB_txn *t, uint64_t number, const uint8_t **buf,
                              size_t *len) {
  uint8_t key[TERN_REC_SEGKEY_SIZE];
  tern_rec_segkey_encode(key, number);
  MDB_val k = val_of(key, sizeof key);
  int rc = get_sealed(idx, t, idx->dbi_live, &k, buf, len, "live docs");
  if (rc == TERN_NOTFOUND)
    return tern_catalog_damaged(
        idx, tern_fail(TERN_ECORRUPT, "segment %" PRIu64 ": live docs missing", number));
  return rc;
}

/* ------------------------------------------------------------ buffer */

static MDB_dbi doc_dbi(const tern_index *idx) {
  return buffer_in_main(idx) ? idx->dbi_state : idx->dbi_buf;
}

static MDB_val doc_key(const tern_index *idx, uint8_t lk[TERN_REC_MAINBUFKEY_MAX], uint64_t gen,
                       const void *key, size_t klen) {
  size_t n = buffer_in_main(idx) ? tern_rec_mainbufkey(lk, gen, key, klen)
                                 : tern_rec_bufkey(lk, key, klen);
  return val_of(lk, n);
}

size_t tern_catalog_doc_bytes(const tern_index *idx, const MDB_val *k, const MDB_val *v) {
  size_t prefix = buffer_in_main(idx) ? TERN_REC_GENKEY_PREFIX : 0;
  return k->mv_size - prefix + v->mv_size;
}

/* Fills a reserved value: the rest of the key, the document, the seal. */
static void fill_doc(const tern_index *idx, const MDB_val *k, MDB_val *v, const void *key,
                     size_t klen, const uint8_t *doc, size_t dlen, size_t plen, size_t *stored) {
  tern_rec_bufval_encode(v->mv_data, key, klen, doc, dlen);
  tern_rec_seal(k->mv_data, k->mv_size, v->mv_data, plen);
  *stored = tern_catalog_doc_bytes(idx, k, v);
}

int tern_catalog_put_doc(tern_index *idx, MDB_txn *t, uint64_t gen, const void *key, size_t klen,
                         const uint8_t *doc, size_t dlen, size_t *stored) {
  uint8_t lk[TERN_REC_MAINBUFKEY_MAX];
  MDB_val k = doc_key(idx, lk, gen, key, klen);
  size_t plen = tern_rec_bufval_size(klen, dlen);
  MDB_val v = {plen + TERN_REC_SEAL_SIZE, NULL};
  int rc = mdb_put(t, doc_dbi(idx), &k, &v, MDB_RESERVE);
  if (rc != 0) return tern_mdb_env_status(idx, rc, "writing the buffer");
  fill_doc(idx, &k, &v, key, klen, doc, dlen, plen, stored);
  return TERN_OK;
}

int tern_catalog_replace_doc(tern_index *idx, MDB_txn *t, uint64_t gen, const void *key,
                             size_t klen, const uint8_t *doc, size_t dlen, size_t *stored,
                             size_t *was) {
  uint8_t lk[TERN_REC_MAINBUFKEY_MAX];
  MDB_val k = doc_key(idx, lk, gen, key, klen);
  size_t plen = tern_rec_bufval_size(klen, dlen);
  MDB_val v = {plen + TERN_REC_SEAL_SIZE, NULL};
  *was = 0;
  /* A new key (the common case) costs one descent of the tree; an existing
   * one a second put, which replaces it (LMDB gives the old value first). */
  int rc = mdb_put(t, doc_dbi(idx), &k, &v, MDB_RESERVE | MDB_NOOVERWRITE);
  if (rc == MDB_KEYEXIST) {
    *was = tern_catalog_doc_bytes(idx, &k, &v);
    v = (MDB_val){plen + TERN_REC_SEAL_SIZE, NULL};
    rc = mdb_put(t, doc_dbi(idx), &k, &v, MDB_RESERVE);
  }
  if (rc != 0) return tern_mdb_env_status(idx, rc, "writing the buffer");
  fill_doc(idx, &k, &v, key, klen, doc, dlen, plen, stored);
  return TERN_OK;
}

int tern_catalog_take_doc(tern_index *idx, MDB_txn *t, uint64_t gen, const void *key, size_t klen,
                          size_t *was) {
  uint8_t lk[TERN_REC_MAINBUFKEY_MAX];
  MDB_val k = doc_key(idx, lk, gen, key, klen), v;
  *was = 0;
  int rc = mdb_get(t, doc_dbi(idx), &k, &v);
  if (rc == MDB_NOTFOUND) return TERN_OK;
  if (rc == 0) {
    *was = tern_catalog_doc_bytes(idx, &k, &v);
    rc = mdb_del(t, doc_dbi(idx), &k, NULL);
  }
  return rc == 0 ? TERN_OK : tern_mdb_env_status(idx, rc, "writing the buffer");
}

int tern_catalog_get_doc(tern_index *idx, MDB_txn *t, uint64_t gen, const void *key, size_t klen,
                         MDB_val *k_out, MDB_val *v_out) {
  uint8_t lk[TERN_REC_MAINBUFKEY_MAX];
  MDB_val k = doc_key(idx, lk, gen, key, klen);
  int rc = mdb_get(t, doc_dbi(idx), &k, v_out);
  if (rc != 0) return tern_mdb_status(rc, "reading the buffer"); /* TERN_NOTFOUND too */
  memcpy(k_out->mv_data, lk, k.mv_size); /* the caller's TERN_REC_MAINBUFKEY_MAX bytes */
  k_out->mv_size = k.mv_size;
  return TERN_OK;
}

/* Puts a cursor of the main database at the first document of generation
 * gen or later (k, v: that entry); an LMDB status. */
static int seek_gen(MDB_cursor *c, uint64_t gen, MDB_val *k, MDB_val *v) {
  uint8_t first[TERN_REC_GENKEY_PREFIX];
  tern_rec_genkey(first, gen);
  *k = val_of(first, sizeof first);
  return mdb_cursor_get(c, k, v, MDB_SET_RANGE);
}

/* Whether cursor key k is a document of generation gen (always, before
 * version 4: the table holds nothing else). */
static int of_gen(const tern_index *idx, const MDB_val *k, uint64_t gen) {
  uint64_t g;
  return !buffer_in_main(idx) || (tern_rec_genkey_decode(k->mv_data, k->mv_size, &g) && g == gen);
}

int tern_catalog_buffer_first(tern_index *idx, MDB_txn *t, uint64_t gen, MDB_cursor **c, MDB_val *k,
                              MDB_val *v) {
  TERN_TRY(tern_mdb_status(mdb_cursor_open(t, doc_dbi(idx), c), "opening a cursor"));
  int rc = buffer_in_main(idx) ? seek_gen(*c, gen, k, v) : mdb_cursor_get(*c, k, v, MDB_FIRST);
  if (rc == 0 && !of_gen(idx, k, gen)) rc = MDB_NOTFOUND;
  return rc == MDB_NOTFOUND ? TERN_NOTFOUND : tern_mdb_status(rc, "reading the buffer");
}

int tern_catalog_buffer_next(tern_index *idx, MDB_cursor *c, uint64_t gen, MDB_val *k, MDB_val *v) {
  int rc = mdb_cursor_get(c, k, v, MDB_NEXT);
  if (rc == 0 && !of_gen(idx, k, gen)) rc = MDB_NOTFOUND;
  return rc == MDB_NOTFOUND ? TERN_NOTFOUND : tern_mdb_status(rc, "reading the buffer");
}

int tern_catalog_buffer_empty(tern_index *idx, MDB_txn *t) {
  assert(!buffer_in_main(idx));
  return tern_mdb_status(mdb_drop(t, idx->dbi_buf, 0), "emptying the buffer");
}

/* Counts one buffered document found by count_buffer's walk. */
static int count_doc(tern_index *idx, const MDB_val *k, const MDB_val *v, tern_rec_state *rec,
                     uint64_t *older) {
  uint64_t g;
  if (!tern_rec_genkey_decode(k->mv_data, k->mv_size, &g)) return TERN_NOTFOUND; /* past them */
  if (g > rec->buffer_gen)
    return tern_catalog_damaged(
        idx, tern_fail(TERN_ECORRUPT,
                       "catalog: a buffered document of generation %" PRIu64 " past the "
                       "buffer's %" PRIu64,
                       g, rec->buffer_gen));
  if (g < rec->buffer_gen) {
    ++*older;
    return TERN_OK;
  }
  rec->buffered_docs++;
  rec->buffered_bytes += tern_catalog_doc_bytes(idx, k, v);
  return TERN_OK;
}

int tern_catalog_count_buffer(tern_index *idx, MDB_txn *t, tern_rec_state *rec) {
  if (!buffer_in_main(idx)) return TERN_OK;
  rec->buffered_docs = rec->buffered_bytes = 0;
  MDB_cursor *c;
  MDB_val k, v;
  TERN_TRY(tern_mdb_status(mdb_cursor_open(t, idx->dbi_state, &c), "opening a cursor"));
  uint64_t older = 0;
  int rc = seek_gen(c, 0, &k, &v);
  while (rc == 0) {
    rc = count_doc(idx, &k, &v, rec, &older);
    if (rc == TERN_OK) rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
  }
  mdb_cursor_close(c);
  if (rc == MDB_NOTFOUND || rc == TERN_NOTFOUND) rc = TERN_OK;
  if (rc > 0 || rc < TERN_ELAST) rc = tern_mdb_status(rc, "reading the buffer");
  if (rc == TERN_OK && older != rec->old_docs)
    rc = tern_catalog_damaged(
        idx, tern_fail(TERN_ECORRUPT,
                       "catalog: %" PRIu64 " documents of older buffer generations where the "
                       "state record counts %" PRIu64,
                       older, rec->old_docs));
  return rc;
}

int tern_catalog_sweep(tern_index *idx, MDB_txn *t, uint64_t gen, size_t max, size_t *removed) {
  assert(buffer_in_main(idx));
  MDB_cursor *c;
  MDB_val k, v;
  *removed = 0;
  TERN_TRY(tern_mdb_status(mdb_cursor_open(t, idx->dbi_state, &c), "opening a cursor"));
  int rc = seek_gen(c, 0, &k, &v);
  uint64_t g;
  while (rc == 0 && *removed < max && tern_rec_genkey_decode(k.mv_data, k.mv_size, &g) && g < gen) {
    rc = mdb_cursor_del(c, 0);
    if (rc == 0) ++*removed;
    if (rc == 0) rc = mdb_cursor_get(c, &k, &v, MDB_NEXT); /* after a delete: the one after it */
  }
  mdb_cursor_close(c);
  return rc == 0 || rc == MDB_NOTFOUND ? TERN_OK
                                       : tern_mdb_env_status(idx, rc, "sweeping the buffer");
}

int tern_catalog_decode_doc(tern_index *idx, const MDB_val *k, const MDB_val *v, uint8_t *key,
                            size_t *klen, const uint8_t **doc, size_t *dlen) {
  size_t plen;
  TERN_TRY(unseal(idx, k, v, &plen, "buffer entry"));
  size_t skip = buffer_in_main(idx) ? TERN_REC_GENKEY_PREFIX : 0;
  int rc = k->mv_size > skip
               ? tern_rec_bufval_decode((const uint8_t *)k->mv_data + skip, k->mv_size - skip,
                                        v->mv_data, plen, key, klen, doc, dlen)
               : tern_fail(TERN_ECORRUPT, "catalog buffer entry: bad key");
  return rc == TERN_OK ? rc : tern_catalog_damaged(idx, rc);
}

/* XOR of the seals of the segment records: with their count in the state
 * record, it shows a record lost, added or left from another commit. */
static uint64_t seal_of_value(const MDB_val *v) {
  return tern_rec_stored_seal(v->mv_data, v->mv_size);
}

int tern_catalog_each_segment(tern_index *idx, MDB_txn *t, const tern_rec_state *expect,
                              tern_catalog_seg_fn fn, void *ctx) {
  MDB_cursor *c;
  TERN_TRY(tern_mdb_status(mdb_cursor_open(t, idx->dbi_segs, &c), "opening a cursor"));
  MDB_val k, v;
  uint64_t count = 0, digest = 0;
  int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
  while (rc == 0) {
    uint64_t number;
    tern_rec_segment r;
    size_t plen;
    rc = unseal(idx, &k, &v, &plen, "segment");
    if (rc == TERN_OK) rc = tern_rec_segkey_decode(k.mv_data, k.mv_size, &number);
    if (rc == TERN_OK) rc = tern_rec_segment_decode(&r, v.mv_data, plen);
    if (rc == TERN_ECORRUPT) rc = tern_catalog_damaged(idx, rc);
    if (rc == TERN_OK && fn) rc = fn(ctx, number, &r);
    if (rc != TERN_OK) break;
    count++;
    digest ^= seal_of_value(&v);
    rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
  }
  mdb_cursor_close(c);
  if (rc == MDB_NOTFOUND) rc = TERN_OK;
  if (rc > 0 || rc < TERN_ELAST) rc = tern_mdb_status(rc, "reading segment records");
  if (rc == TERN_OK && expect && (count != expect->nsegments || digest != expect->seg_digest))
    rc = tern_catalog_damaged(
        idx, tern_fail(TERN_ECORRUPT,
                       "catalog: %" PRIu64 " segment records disagree with the state record's %" PRIu64
                       " (count or digest)",
                       count, expect->nsegments));
  return rc;
}

void tern_segment_name(char out[TERN_SEGNAME_MAX], uint64_t number) {
  snprintf(out, TERN_SEGNAME_MAX, "s%012" PRIu64, number);
}

uint64_t tern_new_segment_number(tern_index *idx, const tern_rec_state *rec) {
  assert(tern_install_held(idx));
  uint64_t n = rec->next_segment > idx->number_floor ? rec->next_segment : idx->number_floor;
  idx->number_floor = n + 1;
  return n;
}

int tern_catalog_map_full(void) {
  int full = t_map_full;
  t_map_full = 0;
  return full;
}

/* Sets the map to `size` bytes (0: the size another process gave the
 * file) with no LMDB transaction of this process open: env_rw keeps out
 * verify and stats, mu the state readers (and parks the reused read txn). */
static int set_mapsize(tern_index *idx, size_t size) {
  assert(!tern_mu_held(idx)); /* LOCKS: env_rw before mu */
  /* Adopting may be asked under a read hold of this very thread (verify):
   * only tried, then; growing waits for verify and stats to finish. */
  if (size == 0 && pthread_rwlock_trywrlock(&idx->env_rw) != 0)
    return tern_fail(TERN_EBUSY, "%s: another process grew the catalog's map; try again",
                     idx->dir);
  if (size) pthread_rwlock_wrlock(&idx->env_rw);
  tern_mu_lock(idx);
  if (idx->rtxn) mdb_txn_abort(idx->rtxn);
  idx->rtxn = NULL;
  int rc = mdb_env_set_mapsize(idx->env, size);
  tern_mu_unlock(idx);
  pthread_rwlock_unlock(&idx->env_rw);
  return tern_mdb_status(rc, "growing the map");
}

int tern_catalog_grow(tern_index *idx) {
  assert(tern_install_held(idx));
  MDB_envinfo info;
  TERN_TRY(tern_mdb_status(mdb_env_info(idx->env, &info), "reading the map size"));
  size_t size = info.me_mapsize;
  if (size > SIZE_MAX / 2) return tern_fail(TERN_EFULL, "%s: catalog map at its limit", idx->dir);
  TERN_COUNT(map_grows);
  return set_mapsize(idx, size * 2);
}

int tern_catalog_adopt_size(tern_index *idx) {
  TERN_COUNT(map_adopts);
  return set_mapsize(idx, 0);
}

int tern_catalog_begin(tern_index *idx, unsigned flags, MDB_txn **t) {
  assert(flags == MDB_RDONLY || tern_install_held(idx));
  int rc = mdb_txn_begin(idx->env, NULL, flags, t);
  if (rc == MDB_MAP_RESIZED) { /* another process grew the map: adopt its size */
    TERN_TRY(tern_catalog_adopt_size(idx));
    rc = mdb_txn_begin(idx->env, NULL, flags, t);
  }
  return flags == MDB_RDONLY ? tern_mdb_status(rc, "beginning a read")
                             : tern_mdb_env_status(idx, rc, "beginning a write");
}

void tern_discard_new_segment(tern_index *idx, const char *name) {
  if (!idx->commit_uncertain) tern_seg_remove(idx->dir, name);
}
