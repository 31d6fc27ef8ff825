/* SPDX-License-Identifier: MIT */
/*
 * rawcatalog.h — the catalog as plain LMDB, for tests that damage or
 * rewrite it behind tern's back (dropped tables, foreign files, records of
 * another version).  Asserts on every LMDB failure.
 */
#ifndef TERN_RAWCATALOG_H
#define TERN_RAWCATALOG_H

#include "tests/common/testutil.h"

#include <lmdb.h>

/* Opens catalog file `cat` (created when absent) and begins a write
 * transaction; end it with rc_commit. */
static inline MDB_txn *rc_begin(const char *cat, MDB_env **env) {
  MDB_txn *t;
  assert_int_equal(mdb_env_create(env), 0);
  assert_int_equal(mdb_env_set_maxdbs(*env, 8), 0);
  assert_int_equal(mdb_env_set_mapsize(*env, (size_t)64 << 30), 0);
  assert_int_equal(mdb_env_open(*env, cat, MDB_NOSUBDIR, 0666), 0);
  assert_int_equal(mdb_txn_begin(*env, NULL, 0, &t), 0);
  return t;
}

static inline void rc_commit(MDB_env *env, MDB_txn *t) {
  assert_int_equal(mdb_txn_commit(t), 0);
  mdb_env_close(env);
}

/* Empties (del 0) or deletes (del 1) table `table` of catalog file `cat`. */
static inline void rc_drop(const char *cat, const char *table, int del) {
  MDB_env *env;
  MDB_txn *t = rc_begin(cat, &env);
  MDB_dbi dbi;
  assert_int_equal(mdb_dbi_open(t, table, 0, &dbi), 0);
  assert_int_equal(mdb_drop(t, dbi, del), 0);
  rc_commit(env, t);
}

#endif
