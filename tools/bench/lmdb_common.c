/* SPDX-License-Identifier: MIT */
/*
 * lmdb_common.c — build and read the LMDB baseline (see lmdb_common.h).
 *
 * The load runs with MDB_NOSYNC and ends with mdb_env_sync(force), which is
 * one durable flush of the whole file, the same promise as a synced commit
 * but without LMDB's per-commit double fsync.  MDB_WRITEMAP is not used: it
 * would size the file to the whole map, and the file size is what the
 * benchmark reports as bytes on disk.
 */
#include "tools/bench/lmdb_common.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>

static int fail(int rc, const char *what, char *msg, size_t cap) {
  snprintf(msg, cap, "%s: %s", what, mdb_strerror(rc));
  return rc;
}

/* Leaf entries are key + 4-byte value + 8-byte node header + 2-byte slot;
 * append fills pages completely, so twice that plus slack is plenty. */
static size_t map_size_for(const bench_keys *k, size_t vbytes) {
  size_t per = 8 + 2 + vbytes + 4096; /* values past a page go to overflow pages */
  if (vbytes < 1024) per = 8 + 2 + vbytes;
  return ((size_t)k->off[k->n] * 2 + k->n * per * 2 + ((size_t)64 << 20) + 4095) & ~(size_t)4095;
}

int bench_lmdb_build(const char *dir, const bench_keys *k, char *msg, size_t cap) {
  return bench_lmdb_build_values(dir, k, 4, msg, cap);
}

int bench_lmdb_build_values(const char *dir, const bench_keys *k, size_t vbytes, char *msg,
                            size_t cap) {
  return bench_lmdb_build_fn(dir, k, vbytes, bench_value_fill, msg, cap);
}

int bench_lmdb_build_fn(const char *dir, const bench_keys *k, size_t vbytes,
                        void (*value)(uint8_t *out, uint32_t doc, size_t vbytes), char *msg,
                        size_t cap) {
  uint8_t *v = malloc(vbytes < 4 ? 4 : vbytes);
  if (!v) return fail(ENOMEM, "value buffer", msg, cap);
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) return fail(errno, dir, msg, cap);
  MDB_env *env = NULL;
  MDB_txn *txn = NULL;
  MDB_dbi dbi;
  int rc = mdb_env_create(&env);
  if (rc) return fail(rc, "mdb_env_create", msg, cap);
  if ((rc = mdb_env_set_mapsize(env, map_size_for(k, vbytes))) != 0) {
    fail(rc, "mdb_env_set_mapsize", msg, cap);
    goto out;
  }
  if ((rc = mdb_env_open(env, dir, MDB_NOSYNC, 0644)) != 0) {
    fail(rc, dir, msg, cap);
    goto out;
  }
  if ((rc = mdb_txn_begin(env, NULL, 0, &txn)) != 0 ||
      (rc = mdb_dbi_open(txn, NULL, 0, &dbi)) != 0) {
    fail(rc, "mdb_txn_begin", msg, cap);
    goto out;
  }
  for (size_t j = 0; j < k->n; j++) {
    uint32_t idx = k->order[j];
    value(v, idx, vbytes);
    MDB_val key = {bench_key_len(k, idx), (void *)bench_key_at(k, idx)}, val = {vbytes, v};
    if ((rc = mdb_put(txn, dbi, &key, &val, MDB_APPEND)) != 0) {
      fail(rc, "mdb_put(MDB_APPEND)", msg, cap);
      goto out;
    }
    if ((j & 0xFFFF) == 0) bench_progress("lmdb load", j, k->n);
  }
  bench_progress_done();
  rc = mdb_txn_commit(txn);
  txn = NULL;
  if (rc) {
    fail(rc, "mdb_txn_commit", msg, cap);
    goto out;
  }
  if ((rc = mdb_env_sync(env, 1)) != 0) fail(rc, "mdb_env_sync", msg, cap);
out:
  if (txn) mdb_txn_abort(txn);
  mdb_env_close(env);
  free(v);
  return rc;
}

int bench_lmdb_open(bench_lmdb *l, const char *dir, int nordahead, char *msg, size_t cap) {
  memset(l, 0, sizeof *l);
  int rc = mdb_env_create(&l->env);
  if (rc) return fail(rc, "mdb_env_create", msg, cap);
  unsigned flags = MDB_RDONLY | (nordahead ? MDB_NORDAHEAD : 0u);
  if ((rc = mdb_env_open(l->env, dir, flags, 0644)) != 0 ||
      (rc = mdb_txn_begin(l->env, NULL, MDB_RDONLY, &l->txn)) != 0 ||
      (rc = mdb_dbi_open(l->txn, NULL, 0, &l->dbi)) != 0) {
    fail(rc, dir, msg, cap);
    bench_lmdb_close(l);
  }
  return rc;
}

int bench_lmdb_get(bench_lmdb *l, const uint8_t *key, size_t len, uint32_t *doc) {
  MDB_val k = {len, (void *)key}, v;
  int rc = mdb_get(l->txn, l->dbi, &k, &v);
  if (rc) return rc;
  if (v.mv_size != 4) return MDB_CORRUPTED;
  const uint8_t *p = v.mv_data;
  *doc = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  return 0;
}

int bench_lmdb_get_value(bench_lmdb *l, const uint8_t *key, size_t len, uint32_t *doc,
                         const uint8_t **val, size_t *vlen) {
  MDB_val k = {len, (void *)key}, v;
  int rc = mdb_get(l->txn, l->dbi, &k, &v);
  if (rc) return rc;
  if (v.mv_size < 4) return MDB_CORRUPTED;
  *val = v.mv_data;
  *vlen = v.mv_size;
  const uint8_t *p = v.mv_data;
  *doc = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  return 0;
}

void bench_lmdb_close(bench_lmdb *l) {
  if (l->txn) mdb_txn_abort(l->txn);
  if (l->env) mdb_env_close(l->env);
  memset(l, 0, sizeof *l);
}

int bench_lmdb_pages(const char *dir, uint64_t *pages, uint32_t *psize, uint32_t *depth) {
  char msg[256];
  bench_lmdb l;
  int rc = bench_lmdb_open(&l, dir, 1, msg, sizeof msg);
  if (rc) return rc;
  MDB_envinfo info;
  MDB_stat st;
  mdb_env_info(l.env, &info);
  rc = mdb_stat(l.txn, l.dbi, &st);
  if (rc == 0) {
    *pages = (uint64_t)info.me_last_pgno + 1;
    *psize = st.ms_psize;
    *depth = st.ms_depth;
  }
  bench_lmdb_close(&l);
  return rc;
}
