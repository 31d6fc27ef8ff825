/*
 * catalog.c — the engine's records in LMDB (docs/FORMAT.md):
 *
 *   DBI "meta"      "format" -> format record, "options" -> options,
 *                   "state" -> commit counter, next segment number, buffer totals
 *   DBI "segments"  segment number (u64 big-endian) -> segment record
 *   DBI "livedocs"  segment number (u64 big-endian) -> .liv bytes of its current generation
 *   DBI "buffer"    primary key -> document record (the write buffer)
 *
 * The bytes themselves are encoded and decoded by codec/record.c.
 */
#include "engine/index.h"

#include "codec/status.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

int tern_mdb_status(int rc, const char *what) {
  if (rc == 0) return TERN_OK;
  if (rc == MDB_NOTFOUND) return TERN_NOTFOUND;
  if (rc > 0) return tern_fail(-rc, "catalog: %s: %s", what, mdb_strerror(rc));
  switch (rc) {
  case MDB_MAP_FULL:
    return tern_fail(TERN_EFULL,
                     "catalog: %s: map full (reopen the index with a larger map_size, or "
                     "tern_flush the buffered writes)",
                     what);
  case MDB_MAP_RESIZED:
    return tern_fail(TERN_EFULL, "catalog: %s: another process grew the map; reopen the index",
                     what);
  case MDB_VERSION_MISMATCH:
    return tern_fail(TERN_EVERSION, "catalog: %s: %s", what, mdb_strerror(rc));
  case MDB_READERS_FULL:
  case MDB_BAD_RSLOT: return tern_fail(TERN_EBUSY, "catalog: %s: %s", what, mdb_strerror(rc));
  default: return tern_fail(TERN_ECORRUPT, "catalog: %s: %s", what, mdb_strerror(rc));
  }
}

static MDB_val val_of(const void *p, size_t n) {
  MDB_val v = {n, (void *)(uintptr_t)p};
  return v;
}

int tern_catalog_get_state(tern_index *idx, MDB_txn *t, tern_rec_state *out) {
  MDB_val k = val_of("state", 5), v;
  int rc = mdb_get(t, idx->dbi_meta, &k, &v);
  if (rc == MDB_NOTFOUND) return tern_fail(TERN_ECORRUPT, "catalog: no state record");
  TERN_TRY(tern_mdb_status(rc, "reading the state"));
  return tern_rec_state_decode(out, v.mv_data, v.mv_size);
}

int tern_catalog_put_state(tern_index *idx, MDB_txn *t, const tern_rec_state *s) {
  uint8_t buf[TERN_REC_STATE_MAX];
  MDB_val k = val_of("state", 5), v = val_of(buf, tern_rec_state_encode(buf, s));
  return tern_mdb_status(mdb_put(t, idx->dbi_meta, &k, &v, 0), "writing the state");
}

int tern_catalog_put_segment(tern_index *idx, MDB_txn *t, uint64_t number,
                             const tern_rec_segment *r) {
  uint8_t key[TERN_REC_SEGKEY_SIZE], buf[TERN_REC_SEGMENT_MAX];
  tern_rec_segkey_encode(key, number);
  MDB_val k = val_of(key, sizeof key), v = val_of(buf, tern_rec_segment_encode(buf, r));
  return tern_mdb_status(mdb_put(t, idx->dbi_segs, &k, &v, 0), "writing a segment record");
}

int tern_catalog_del_segment(tern_index *idx, MDB_txn *t, uint64_t number) {
  uint8_t key[TERN_REC_SEGKEY_SIZE];
  tern_rec_segkey_encode(key, number);
  MDB_val k = val_of(key, sizeof key);
  int rc = mdb_del(t, idx->dbi_segs, &k, NULL);
  if (rc != 0) return tern_mdb_status(rc, "removing a segment record");
  rc = mdb_del(t, idx->dbi_live, &k, NULL);
  if (rc == MDB_NOTFOUND) return TERN_OK;
  return tern_mdb_status(rc, "removing live docs");
}

int tern_catalog_put_livedocs(tern_index *idx, MDB_txn *t, uint64_t number, const tern_livedocs *ld,
                              const uint8_t *segid) {
  uint8_t key[TERN_REC_SEGKEY_SIZE], *bytes;
  size_t len;
  tern_rec_segkey_encode(key, number);
  TERN_TRY(tern_livedocs_write(ld, segid, &bytes, &len));
  MDB_val k = val_of(key, sizeof key), v = val_of(bytes, len);
  int rc = mdb_put(t, idx->dbi_live, &k, &v, 0);
  free(bytes);
  return tern_mdb_status(rc, "writing live docs");
}

int tern_catalog_get_livedocs(tern_index *idx, MDB_txn *t, uint64_t number, const uint8_t **buf,
                              size_t *len) {
  uint8_t key[TERN_REC_SEGKEY_SIZE];
  tern_rec_segkey_encode(key, number);
  MDB_val k = val_of(key, sizeof key), v;
  int rc = mdb_get(t, idx->dbi_live, &k, &v);
  if (rc == MDB_NOTFOUND)
    return tern_fail(TERN_ECORRUPT, "catalog: segment %" PRIu64 ": live docs missing", number);
  TERN_TRY(tern_mdb_status(rc, "reading live docs"));
  *buf = v.mv_data;
  *len = v.mv_size;
  return TERN_OK;
}

int tern_catalog_each_segment(tern_index *idx, MDB_txn *t, tern_catalog_seg_fn fn, void *ctx) {
  MDB_cursor *c;
  TERN_TRY(tern_mdb_status(mdb_cursor_open(t, idx->dbi_segs, &c), "opening a cursor"));
  MDB_val k, v;
  int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
  while (rc == 0) {
    uint64_t number;
    tern_rec_segment r;
    rc = tern_rec_segkey_decode(k.mv_data, k.mv_size, &number);
    if (rc == TERN_OK) rc = tern_rec_segment_decode(&r, v.mv_data, v.mv_size);
    if (rc == TERN_OK) rc = fn(ctx, number, &r);
    if (rc != TERN_OK) break;
    rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
  }
  mdb_cursor_close(c);
  if (rc == MDB_NOTFOUND) return TERN_OK;
  return rc < 0 && rc >= TERN_ELAST ? rc : tern_mdb_status(rc, "reading segment records");
}

void tern_segment_name(char out[TERN_SEGNAME_MAX], uint64_t number) {
  snprintf(out, TERN_SEGNAME_MAX, "s%012" PRIu64, number);
}

int tern_commit_catalog(tern_index *idx, tern_apply_fn apply, void *ctx, tern_rec_state *out) {
  MDB_txn *t;
  TERN_TRY(tern_mdb_status(mdb_txn_begin(idx->env, NULL, 0, &t), "beginning a write"));
  tern_rec_state rec;
  int rc = tern_catalog_get_state(idx, t, &rec);
  if (rc == TERN_OK) rc = apply(ctx, t, &rec);
  if (rc == TERN_OK) {
    rec.seq++;
    rc = tern_catalog_put_state(idx, t, &rec);
  }
  if (rc != TERN_OK) {
    mdb_txn_abort(t);
    return rc;
  }
  TERN_TRY(tern_mdb_status(mdb_txn_commit(t), "committing"));
  if (out) *out = rec;
  return TERN_OK;
}
