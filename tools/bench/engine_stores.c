/* SPDX-License-Identifier: MIT */
/*
 * engine_stores.c — a loaded store of `tern-bench engine`'s phases that
 * race tern against LMDB on the same keys (engine.h, estore): --docs keys
 * of KEY_LEN bytes, each its own 16-byte value; tern bulk-loaded and
 * compacted to one segment, LMDB one B+tree.
 */
#include "tools/bench/bench_common.h"
#include "tools/bench/engine.h"

#include <stdlib.h>
#include <string.h>

static int lmdb_open_loaded(estore *s, uint64_t docs) {
  char file[4096];
  bench_path(file, sizeof file, s->dir, "data.mdb");
  MDB_txn *t;
  if (mdb_env_create(&s->env) || mdb_env_set_mapsize(s->env, (size_t)8 << 30) ||
      mdb_env_open(s->env, file, MDB_NOSUBDIR, 0666) || mdb_txn_begin(s->env, NULL, 0, &t))
    return -1;
  int rc = mdb_dbi_open(t, NULL, 0, &s->dbi);
  uint8_t key[KEY_LEN];
  for (uint64_t i = 0; rc == 0 && i < docs; i++) {
    make_key(i, key);
    MDB_val k = {KEY_LEN, key}, v = {KEY_LEN, key}; /* the value engine_load gives */
    rc = mdb_put(t, s->dbi, &k, &v, 0);
  }
  if (rc) {
    mdb_txn_abort(t);
    return -1;
  }
  return mdb_txn_commit(t) ? -1 : 0;
}

int estore_open(estore *s, const eopts *o, int lmdb, const char *tag) {
  memset(s, 0, sizeof *s);
  char name[64];
  snprintf(name, sizeof name, "%s%s", tag, lmdb ? "-lmdb" : "");
  s->dir = bench_mkdtemp(o->parent, name);
  if (!s->dir) return -1;
  if (lmdb) return lmdb_open_loaded(s, o->docs);
  s->idx = fresh_index(s->dir);
  return !s->idx || engine_load(s->idx, 0, o->docs) ||
                 engine_check(tern_compact(s->idx), "compact")
             ? -1
             : 0;
}

void estore_close(estore *s) {
  if (s->idx) tern_close(s->idx);
  if (s->env) mdb_env_close(s->env);
  if (s->dir) bench_rmtree(s->dir);
  free(s->dir);
}
