/* SPDX-License-Identifier: MIT */
/*
 * create.c — creating an index durably, all or nothing.
 *
 * A directory holds a complete index exactly when it holds catalog.mdb:
 * the catalog is built aside, as catalog.mdb.new (LMDB without a lock
 * file: nobody else opens it), its creating transaction committed (tables,
 * format, options, state and last the creation record), the file fsynced,
 * and only then renamed to catalog.mdb and the directory fsynced.  A
 * creation cut short (power loss, EIO, ENOSPC, kill -9) leaves at most
 * catalog.mdb.new, which is not an index: every command says "no index",
 * and the next tern_open(TERN_CREATE) removes it and creates again.  A
 * directory tern made is fsynced into its parent before anything is
 * created in it, so that under strict POSIX (a directory entry is durable
 * once its directory was fsynced after it) an index whose open returned
 * survives a power cut with all its commits.
 *
 * Two processes creating at once take DIR's flock exclusive in turn (an
 * open index holds it shared: index/open.c, share_dir); the second finds
 * catalog.mdb and opens it.
 */
#include "engine/state/create.h"

#include "codec/io.h"
#include "engine/util/errwrap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int tern_index_mkdir(const char *dir) {
  if (mkdir(dir, 0777) < 0) return errno == EEXIST ? TERN_OK : tern_fail_errno(dir);
  char *copy = strdup(dir), *slash;
  if (!copy) return tern_fail(TERN_ENOMEM, "out of memory");
  size_t n = strlen(copy);
  while (n > 1 && copy[n - 1] == '/') copy[--n] = '\0'; /* "a/b/" is "a/b" */
  slash = strrchr(copy, '/');
  const char *parent = !slash ? "." : slash == copy ? "/" : (*slash = '\0', copy);
  int rc = tern_fsync_dir(parent);
  free(copy);
  return rc;
}

int tern_index_create_catalog(tern_index *idx, const tern_options *o) {
  MDB_txn *t;
  TERN_TRY(tern_mdb_env_status(idx, mdb_txn_begin(idx->env, NULL, 0, &t), "begin"));
  /* Version 4: no table "buffer" (its documents are in the main database). */
  static const char *const tables[3] = {"meta", "segments", "livedocs"};
  MDB_dbi *dbis[3] = {&idx->dbi_meta, &idx->dbi_segs, &idx->dbi_live};
  idx->dbi_buf = (MDB_dbi)-1; /* invalid: LMDB refuses it */
  int rc = TERN_OK;
  for (int i = 0; rc == TERN_OK && i < 3; i++)
    rc = tern_mdb_status(mdb_dbi_open(t, tables[i], MDB_CREATE, dbis[i]), tables[i]);
  uint8_t fmt[TERN_REC_FORMAT_SIZE], *ob = NULL;
  size_t olen = 0;
  tern_rec_format_encode(fmt);
  if (rc == TERN_OK) rc = tern_rec_options_encode(o, &ob, &olen);
  if (rc == TERN_OK) rc = tern_catalog_put_meta(idx, t, "format", fmt, sizeof fmt);
  if (rc == TERN_OK) rc = tern_catalog_put_meta(idx, t, "options", ob, olen);
  free(ob);
  tern_rec_state s = {.next_segment = 1, .seq_base = 0 - (uint64_t)mdb_txn_id(t)}; /* seq 0 */
  if (rc == TERN_OK) rc = tern_catalog_locate_state(idx, t, TERN_CATALOG_VERSION);
  if (rc == TERN_OK) rc = tern_catalog_put_state(idx, t, &s);
  if (rc == TERN_OK) rc = tern_catalog_put_meta(idx, t, "created", fmt, sizeof fmt);
  if (rc != TERN_OK) {
    mdb_txn_abort(t);
    return rc;
  }
  return tern_mdb_env_status(idx, mdb_txn_commit(t), "committing the catalog");
}

static int fsync_file(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return tern_fail_errno(path);
  int rc = fsync(fd) == 0 ? TERN_OK : tern_fail_errno(path);
  close(fd);
  return rc;
}

/* Builds the complete catalog in `tmp`, durably. */
static int build_aside(tern_index *idx, const char *tmp, const tern_options *o) {
  if (unlink(tmp) < 0 && errno != ENOENT) return tern_fail_errno(tmp); /* a cut-short creation's */
  MDB_env *env;
  int rc = tern_mdb_status(mdb_env_create(&env), "creating the environment");
  if (rc != TERN_OK) return rc;
  rc = mdb_env_set_maxdbs(env, 8);
  if (rc == 0 && o->map_size) rc = mdb_env_set_mapsize(env, (size_t)o->map_size);
  if (rc == 0) rc = mdb_env_open(env, tmp, MDB_NOSUBDIR | MDB_NOTLS | MDB_NOLOCK, 0666);
  MDB_env *saved = idx->env;
  idx->env = env;
  rc = rc != 0 ? tern_mdb_env_status(idx, rc, tmp) : tern_index_create_catalog(idx, o);
  idx->env = saved;
  mdb_env_close(env);
  if (rc == TERN_OK) rc = fsync_file(tmp);
  if (rc != TERN_OK) unlink(tmp);
  return rc;
}

/* Takes DIR's flock exclusive, waiting up to about 10 s for another
 * creator; *fd_out the locked descriptor. */
static int lock_dir(const char *dir, int *fd_out) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return tern_fail_errno(dir);
  for (int i = 0; i < 10000; i++) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
      *fd_out = fd;
      return TERN_OK;
    }
    if (errno != EWOULDBLOCK && errno != EINTR) break;
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  int rc = errno == EWOULDBLOCK ? tern_fail(TERN_EBUSY, "%s: another process holds it", dir)
                                : tern_fail_errno(dir);
  close(fd);
  return rc;
}

/* Whether path is a non-empty file (a catalog someone completed). */
static int nonempty(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0 && st.st_size > 0;
}

int tern_index_create(tern_index *idx, const tern_options *o) {
  char *cat = tern_path_join(idx->dir, TERN_CATALOG_FILE);
  char *tmp = tern_path_join(idx->dir, TERN_CATALOG_NEW_FILE);
  int rc = cat && tmp ? TERN_OK : tern_fail(TERN_ENOMEM, "out of memory"), fd = -1;
  if (rc == TERN_OK) rc = lock_dir(idx->dir, &fd);
  if (rc == TERN_OK && !nonempty(cat)) { /* else another process created it meanwhile */
    rc = build_aside(idx, tmp, o);
    if (rc == TERN_OK && rename(tmp, cat) < 0) {
      rc = tern_fail_errno(cat);
      unlink(tmp);
    }
    if (rc == TERN_OK) rc = tern_fsync_dir(idx->dir);
  }
  if (fd >= 0) close(fd); /* releases the flock */
  free(cat);
  free(tmp);
  return rc;
}
