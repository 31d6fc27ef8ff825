/* SPDX-License-Identifier: MIT */
/*
 * catalog_compact.c — giving back the catalog's free pages.
 *
 * LMDB reuses the pages a commit frees but never shrinks its file, so after
 * a large buffered import that was flushed, catalog.mdb stays as large as
 * the buffer once was.  tern_compact ends here: LMDB's compacting copy
 * (mdb_env_copy2 with MDB_CP_COMPACT) writes the live pages to a new file,
 * which is synced and renamed over catalog.mdb, and the environment is
 * reopened on it.
 *
 * Replacing the file under another LMDB environment would lose that
 * environment's later commits, so it is done only when this handle holds
 * the directory alone: every open holds DIR shared (flock) from before LMDB
 * opens the catalog until close, and this takes it exclusive without
 * waiting.  In this process, no snapshot may be open on the handle (they
 * are counted) and the calls that use the environment outside idx->mu hold
 * env_rw.  When any of this fails the catalog is left as it is: compaction
 * of the segments is what tern_compact promises; this part is a bonus.
 */
#include "engine/state/index.h"

#include "codec/status.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/* Takes DIR exclusive without waiting; 1 when taken.  A failed conversion
 * may drop the shared lock (flock(2)), so it is taken again. */
static int dir_exclusive(tern_index *idx) {
  if (flock(idx->dir_fd, LOCK_EX | LOCK_NB) == 0) return 1;
  while (flock(idx->dir_fd, LOCK_SH) < 0 && errno == EINTR) {
  }
  return 0;
}

static void dir_shared(tern_index *idx) {
  while (flock(idx->dir_fd, LOCK_SH) < 0 && errno == EINTR) {
  }
}

static int sync_path(const char *path, int flags) {
  int fd = open(path, flags | O_CLOEXEC);
  if (fd < 0) return tern_fail_errno(path);
  int rc = fsync(fd) == 0 ? TERN_OK : tern_fail_errno(path);
  close(fd);
  return rc;
}

/* Sets the copy's state record (idx->env swapped to the copy's). */
static int rebase_copy(tern_index *idx, uint64_t seq) {
  MDB_txn *t;
  TERN_TRY(tern_mdb_status(mdb_txn_begin(idx->env, NULL, 0, &t), "begin"));
  tern_rec_state rec;
  MDB_dbi main_db; /* sets the copy's key order up; LMDB's main database is the same handle */
  int rc = tern_mdb_status(mdb_dbi_open(t, NULL, 0, &main_db), "the main database");
  assert(rc != TERN_OK || main_db == idx->dbi_state);
  if (rc == TERN_OK) rc = tern_catalog_get_state_writing(idx, t, &rec);
  rec.seq_base = seq + 1 - (uint64_t)mdb_txn_id(t);
  if (rc == TERN_OK) rc = tern_catalog_put_state(idx, t, &rec);
  if (rc != TERN_OK) {
    mdb_txn_abort(t);
    return rc;
  }
  return tern_mdb_status(mdb_txn_commit(t), "committing the copy's state");
}

/* Version 4 numbers commits by LMDB's transaction id, which the compacting
 * copy restarts: the copy's state record gets the base that numbers its
 * first commit one past the catalog's last, so the number never goes
 * back. */
static int carry_seq(tern_index *idx, const char *tmp) {
  if (!TERN_CATALOG_BUFFER_IN_MAIN(idx->catalog_version)) return TERN_OK;
  MDB_txn *t;
  tern_rec_state rec;
  MDB_envinfo info;
  TERN_TRY(tern_mdb_status(mdb_env_info(idx->env, &info), "reading the map size"));
  TERN_TRY(tern_mdb_status(mdb_txn_begin(idx->env, NULL, MDB_RDONLY, &t), "begin"));
  int rc = tern_catalog_get_state(idx, t, &rec);
  mdb_txn_abort(t);
  TERN_TRY(rc);
  MDB_env *env, *saved = idx->env;
  TERN_TRY(tern_mdb_status(mdb_env_create(&env), "creating the environment"));
  rc = mdb_env_set_maxdbs(env, 8);
  if (rc == 0) rc = mdb_env_set_mapsize(env, info.me_mapsize);
  if (rc == 0) rc = mdb_env_open(env, tmp, MDB_NOSUBDIR | MDB_NOTLS | MDB_NOLOCK, 0666);
  idx->env = env;
  rc = rc != 0 ? tern_mdb_status(rc, tmp) : rebase_copy(idx, rec.seq);
  idx->env = saved;
  mdb_env_close(env);
  return rc;
}

/* Writes the compacted copy to `tmp`, durably. */
static int write_copy(tern_index *idx, const char *tmp) {
  unlink(tmp); /* a crashed compaction's leftover */
  int rc = mdb_env_copy2(idx->env, tmp, MDB_CP_COMPACT);
  if (rc != 0) {
    unlink(tmp);
    return tern_mdb_status(rc, "compacting copy");
  }
  rc = carry_seq(idx, tmp);
  if (rc == TERN_OK) rc = sync_path(tmp, O_RDONLY);
  if (rc != TERN_OK) unlink(tmp);
  return rc;
}

/* Closes the environment, puts the copy in place, reopens.  A failure after
 * the rename leaves the index closed for writing (env NULL is reported by
 * every later call as an error); the files are consistent either way. */
static int swap_catalog(tern_index *idx, const char *tmp, const char *cat) {
  if (idx->rtxn) mdb_txn_abort(idx->rtxn);
  idx->rtxn = NULL;
  /* The copy restarts LMDB's transaction ids: an id kept from before
   * (writer.c's restore_current) could be met again after other commits.
   * cur_seq 0 too: the next acquire reads the new catalog once, and
   * letting the write lock go asks nothing of an environment whose reopen
   * may fail below (created, not opened: mdb_env_info would crash). */
  idx->kept_seq = idx->kept_txnid = 0;
  idx->logged_txnid = idx->logged_seq = 0;
  idx->cur_seq = 0;
  mdb_env_close(idx->env);
  idx->env = NULL;
  int rc = rename(tmp, cat) == 0 ? TERN_OK : tern_fail_errno(cat);
  if (rc != TERN_OK) unlink(tmp);
  if (rc == TERN_OK) rc = sync_path(idx->dir, O_RDONLY | O_DIRECTORY);
  int rc2 = tern_index_reopen_env(idx);
  return rc != TERN_OK ? rc : rc2;
}

int tern_catalog_compact(tern_index *idx) {
  if (pthread_rwlock_trywrlock(&idx->env_rw) != 0) return TERN_OK;
  int rc = TERN_OK;
  if (dir_exclusive(idx)) {
    tern_mu_lock(idx);
    if (idx->snapshots == 0) {
      size_t n = strlen(idx->dir) + sizeof "/" TERN_CATALOG_FILE ".compact";
      char *cat = malloc(n), *tmp = malloc(n);
      if (!cat || !tmp) {
        rc = tern_fail(TERN_ENOMEM, "out of memory");
      } else {
        snprintf(cat, n, "%s/%s", idx->dir, TERN_CATALOG_FILE);
        snprintf(tmp, n, "%s/%s.compact", idx->dir, TERN_CATALOG_FILE);
        rc = write_copy(idx, tmp);
        if (rc == TERN_OK) rc = swap_catalog(idx, tmp, cat);
      }
      free(cat);
      free(tmp);
    }
    tern_mu_unlock(idx);
    dir_shared(idx);
  }
  pthread_rwlock_unlock(&idx->env_rw);
  return rc;
}
