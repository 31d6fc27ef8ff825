/* SPDX-License-Identifier: MIT */
/*
 * open.c — opening, creating and closing an index directory.
 *
 * DIR holds catalog.mdb (an LMDB environment in one file, MDB_NOSUBDIR,
 * its lock file catalog.mdb-lock beside it), write.lock (the writers'
 * owner word: writer.c) and the segment files.  A directory is only ever created into
 * when it holds nothing of tern's; one that holds other files and no
 * catalog is not an index (TERN_ENOTINDEX), one that holds segment files
 * and no sound catalog is damaged (TERN_ECORRUPT); both are left
 * untouched.  The catalog is checked (catalog_check.h) before LMDB maps
 * it and before anything is written into it; an open never re-creates a
 * table or a record: an existing catalog missing one is damaged.
 */
#include "engine/read/queue_spare.h"
#include "engine/format/catalog_check.h"
#include "engine/state/create.h"
#include "engine/util/errwrap.h"
#include "engine/state/index.h"
#include "engine/state/options.h"
#include "engine/util/vec.h"
#include "engine/maint/worker.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether name is a segment file tern writes ("s<digits>.<ext>"), and its number. */
static int segment_file_number(const char *filename, uint64_t *number) {
  char name[256];
  if (!tern_seg_file_segment(filename, name, sizeof name) || name[0] != 's' || !name[1]) return 0;
  uint64_t n = 0;
  for (const char *p = name + 1; *p; p++) {
    if (*p < '0' || *p > '9' || n > (UINT64_MAX - 9) / 10) return 0;
    n = n * 10 + (uint64_t)(*p - '0');
  }
  *number = n;
  return 1;
}

typedef struct dir_scan {
  int others;   /* entries other than tern's lock files */
  int segments; /* segment files */
} dir_scan;

static int scan_dir(const char *dir, dir_scan *out) {
  memset(out, 0, sizeof *out);
  DIR *d = opendir(dir);
  if (!d) return tern_fail_errno(dir);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    uint64_t n;
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
        !strcmp(e->d_name, TERN_CATALOG_FILE "-lock") || !strcmp(e->d_name, TERN_LOCK_FILE) ||
        !strcmp(e->d_name, TERN_CATALOG_FILE) || !strcmp(e->d_name, TERN_CATALOG_NEW_FILE))
      continue;
    out->others++;
    out->segments += segment_file_number(e->d_name, &n);
  }
  closedir(d);
  return TERN_OK;
}

/* No sound catalog: an index may be created only into a directory holding
 * nothing of tern's, so that damage is never mistaken for "no index". */
static int no_catalog(const char *dir, unsigned flags, const char *why, int *create) {
  dir_scan sc;
  TERN_TRY(scan_dir(dir, &sc));
  if (sc.segments)
    return tern_fail(TERN_ECORRUPT, "%s: holds segment files but %s; refusing to touch it", dir, why);
  if (sc.others) return tern_fail(TERN_ENOTINDEX, "%s: not a tern index (%s)", dir, why);
  if (!(flags & TERN_CREATE)) return tern_fail(TERN_ENOTINDEX, "%s: no index (%s)", dir, why);
  *create = 1;
  return TERN_OK;
}

/* Decides whether to create: checks the directory and the catalog file
 * without writing to either; the catalog through cat_fd when it is open
 * (prefetch_segments'), else by its path. */
static int prepare_dir(const char *dir, unsigned flags, int cat_fd, int *create) {
  struct stat st;
  *create = 0;
  /* With the catalog open, the directory and the catalog exist: neither
   * is looked up again. */
  if (cat_fd < 0 && stat(dir, &st) < 0) {
    if (errno != ENOENT) return tern_fail_errno(dir);
    if (!(flags & TERN_CREATE)) return tern_fail(TERN_ENOTINDEX, "%s: no such index", dir);
    TERN_TRY(tern_index_mkdir(dir));
    *create = 1;
    return TERN_OK;
  }
  if (cat_fd < 0 && !S_ISDIR(st.st_mode))
    return tern_fail(TERN_ENOTINDEX, "%s: not a directory", dir);
  char *cat = tern_path_join(dir, TERN_CATALOG_FILE), *lock = tern_path_join(dir, TERN_CATALOG_FILE "-lock");
  int rc = cat && lock ? TERN_OK : tern_fail(TERN_ENOMEM, "out of memory");
  if (rc == TERN_OK && lstat(lock, &st) == 0 && !S_ISREG(st.st_mode))
    rc = tern_fail(TERN_ECORRUPT, "%s: not a regular file", lock);
  int empty = 0;
  if (rc == TERN_OK && cat_fd < 0 && lstat(cat, &st) < 0) {
    rc = errno == ENOENT ? no_catalog(dir, flags, "no " TERN_CATALOG_FILE, create)
                         : tern_fail_errno(cat);
  } else if (rc == TERN_OK &&
             (rc = cat_fd >= 0 ? tern_catalog_precheck_fd(cat_fd, cat, &empty)
                               : tern_catalog_precheck(cat, &empty)) == TERN_OK &&
             empty) {
    /* A creation that crashed before LMDB wrote its first pages. */
    rc = no_catalog(dir, flags, "an empty " TERN_CATALOG_FILE, create);
    if (rc == TERN_OK && (flags & TERN_RDONLY))
      rc = tern_fail(TERN_ENOTINDEX, "%s: empty %s", dir, TERN_CATALOG_FILE);
  }
  free(cat);
  free(lock);
  return rc;
}

/* A reader that may not write the LMDB lock file (another user's index,
 * a read-only directory) reads without it: MDB_NOLOCK, and snapshots
 * check that no writer recycled the pages they read (state.c). */
static int lock_file_unwritable(const char *dir) {
  char *lock = tern_path_join(dir, TERN_CATALOG_FILE "-lock");
  if (!lock) return 0;
  int no = access(lock, W_OK) != 0 && (errno == EACCES || errno == EROFS || errno == EPERM ||
                                       (errno == ENOENT && access(dir, W_OK) != 0));
  free(lock);
  return no;
}

/* LMDB's failure to open an environment names neither file: on an errno,
 * names catalog.mdb, or its lock file when the catalog itself is
 * accessible and the lock file is what refuses (a permission error on
 * catalog.mdb-lock said catalog.mdb). */
static int env_open_failed(tern_index *idx, const char *cat, int rc, int rdonly) {
  if (rc <= 0 || !(rc == EACCES || rc == EPERM || rc == EROFS)) return tern_mdb_env_status(idx, rc, cat);
  int mode = rdonly ? R_OK : R_OK | W_OK;
  char lock[4096];
  snprintf(lock, sizeof lock, "%s-lock", cat);
  const char *file = cat;
  if (access(cat, mode) == 0 && !idx->nolock && access(lock, F_OK) == 0 && access(lock, R_OK | W_OK) != 0)
    file = lock;
  return tern_fail(-rc, "%s: %s", file, strerror(rc));
}

static int open_env(tern_index *idx, uint64_t map_size) {
  char *cat = tern_path_join(idx->dir, TERN_CATALOG_FILE);
  if (!cat) return tern_fail(TERN_ENOMEM, "out of memory");
  int rdonly = (idx->flags & TERN_RDONLY) != 0;
  idx->nolock = rdonly && lock_file_unwritable(idx->dir);
  int rc = mdb_env_create(&idx->env);
  if (rc == 0) rc = mdb_env_set_maxdbs(idx->env, 8);
  if (rc == 0 && map_size) rc = mdb_env_set_mapsize(idx->env, (size_t)map_size);
  if (rc == 0) {
    unsigned f = MDB_NOSUBDIR | MDB_NOTLS | (rdonly ? MDB_RDONLY : 0) | (idx->nolock ? MDB_NOLOCK : 0);
    rc = mdb_env_open(idx->env, cat, f, 0666);
    if (rc == MDB_INVALID)
      rc = tern_fail(TERN_ENOTINDEX, "%s: not an LMDB catalog", cat);
    else if (rc == MDB_VERSION_MISMATCH)
      rc = tern_fail(TERN_EVERSION, "%s: LMDB version mismatch", cat);
    else if (rc == ENOENT)
      rc = tern_fail(TERN_ENOTINDEX, "%s: no catalog", cat);
    else
      rc = env_open_failed(idx, cat, rc, rdonly);
  } else {
    rc = tern_mdb_status(rc, "creating the environment");
  }
  free(cat);
  return rc;
}

static int open_dbi(MDB_txn *t, const char *name, unsigned flags, MDB_dbi *out) {
  int rc = mdb_dbi_open(t, name, flags, out);
  if (rc == MDB_NOTFOUND) return TERN_NOTFOUND;
  return tern_mdb_status(rc, name);
}

int tern_index_reopen_env(tern_index *idx) {
  TERN_TRY(open_env(idx, idx->opts.map_size));
  MDB_txn *t;
  TERN_TRY(tern_mdb_status(mdb_txn_begin(idx->env, NULL, MDB_RDONLY, &t), "begin"));
  int rc = open_dbi(t, "meta", 0, &idx->dbi_meta);
  if (rc == TERN_OK) rc = open_dbi(t, "segments", 0, &idx->dbi_segs);
  if (rc == TERN_OK) rc = open_dbi(t, "livedocs", 0, &idx->dbi_live);
  if (rc == TERN_OK && !TERN_CATALOG_BUFFER_IN_MAIN(idx->catalog_version))
    rc = open_dbi(t, "buffer", 0, &idx->dbi_buf);
  if (rc == TERN_NOTFOUND) rc = tern_fail(TERN_ECORRUPT, "%s: catalog misses a table", idx->dir);
  if (rc == TERN_OK) rc = tern_catalog_locate_state(idx, t, idx->catalog_version);
  if (rc == TERN_OK) return tern_mdb_status(mdb_txn_commit(t), "reopening the catalog");
  mdb_txn_abort(t);
  return rc;
}

/* Holds the directory shared for as long as the index is open, taken before
 * LMDB opens the catalog: tern_compact replaces catalog.mdb only while it
 * holds the directory alone (no other handle, in any process). */
static int share_dir(tern_index *idx) {
  if (idx->dir_fd < 0) idx->dir_fd = open(idx->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (idx->dir_fd < 0) return tern_fail_errno(idx->dir);
  int rc;
  while ((rc = flock(idx->dir_fd, LOCK_SH)) < 0 && errno == EINTR) {
  }
  return rc == 0 ? TERN_OK : tern_fail_errno(idx->dir);
}

/* The page walk, in a read transaction that pins the pages it reads. */
static int walk_catalog(tern_index *idx, tern_catalog_walk_info *info) {
  char *cat = tern_path_join(idx->dir, TERN_CATALOG_FILE);
  if (!cat) return tern_fail(TERN_ENOMEM, "out of memory");
  int rc = TERN_EBUSY;
  for (int attempt = 0; rc == TERN_EBUSY && attempt < 8; attempt++) {
    MDB_txn *t;
    rc = tern_mdb_status(mdb_txn_begin(idx->env, NULL, MDB_RDONLY, &t), "begin");
    if (rc != TERN_OK) break;
    uint64_t txnid = (uint64_t)mdb_txn_id(t);
    mdb_filehandle_t fd; /* the file LMDB maps, whatever the path names now */
    rc = mdb_env_get_fd(idx->env, &fd) == 0 ? tern_catalog_walk_fd(fd, cat, txnid, info)
                                             : tern_catalog_walk(cat, txnid, info);
    mdb_txn_abort(t);
    MDB_envinfo ei;
    /* Unregistered (no lock file), the walk may have met pages a writer
     * recycled meanwhile: only a walk no second commit overtook counts. */
    if (rc == TERN_ECORRUPT && idx->nolock && mdb_env_info(idx->env, &ei) == 0 &&
        ei.me_last_txnid > txnid + 1)
      rc = TERN_EBUSY;
  }
  if (rc == TERN_EBUSY)
    rc = tern_fail(TERN_ECORRUPT, "%s: no meta page holds the transaction LMDB reads", cat);
  free(cat);
  return rc;
}

static const char *const k_tables[4] = {"meta", "segments", "livedocs", "buffer"};

/* Checks a walked catalog is tern's and whole: ENOTINDEX for another
 * program's file, ECORRUPT for a table or a record missing. */
static int judge_tables(tern_index *idx, const tern_catalog_walk_info *w, int *fresh) {
  *fresh = 0;
  if (w->foreign)
    return tern_fail(TERN_ENOTINDEX, "%s/%s: an LMDB file of another program", idx->dir,
                     TERN_CATALOG_FILE);
  if (w->tables == 0) { /* LMDB initialised it; the creating transaction never landed */
    *fresh = 1;
    return TERN_OK;
  }
  for (int i = 0; i < 3; i++) /* "buffer": version 2 and 3 only (load_catalog) */
    if (!(w->tables & (1u << i)))
      return tern_catalog_damaged(
          idx, tern_fail(TERN_ECORRUPT, "the catalog's table \"%s\" is missing", k_tables[i]));
  return TERN_OK;
}

static int read_meta_records(tern_index *idx, MDB_txn *t) {
  const uint8_t *p;
  size_t n;
  uint32_t version;
  int rc = tern_catalog_get_format(idx, t, &version);
  if (rc == TERN_OK) rc = tern_catalog_locate_state(idx, t, version);
  if (rc == TERN_OK) rc = tern_catalog_get_meta(idx, t, "created", &p, &n);
  if (rc == TERN_NOTFOUND)
    rc = tern_fail(TERN_ECORRUPT, "no format or creation record (table \"meta\" damaged)");
  if (rc == TERN_OK) rc = tern_catalog_get_meta(idx, t, "options", &p, &n);
  if (rc == TERN_NOTFOUND) rc = tern_fail(TERN_ECORRUPT, "no options record");
  tern_rec_options ro;
  if (rc == TERN_OK && (rc = tern_rec_options_decode(&ro, p, n)) == TERN_OK) {
    rc = tern_options_adopt(idx, &ro);
    tern_rec_options_free(&ro);
  }
  tern_rec_state s;
  if (rc == TERN_OK) rc = tern_catalog_get_state(idx, t, &s);
  if (rc == TERN_OK) rc = tern_catalog_each_segment(idx, t, &s, NULL, NULL);
  if (rc == TERN_ECORRUPT || rc == TERN_EVERSION) {
    if (rc == TERN_ECORRUPT) atomic_store(&idx->catalog_bad, 1);
    if (!strstr(tern_errmsg(), TERN_CATALOG_FILE)) rc = tern_catalog_damaged(idx, rc);
  }
  return rc;
}

/* Opens the existing tables (never creating one) and reads format,
 * creation, options and state; creates the catalog when it is fresh and
 * creating was asked for. */
static int load_catalog(tern_index *idx, const tern_options *copts) {
  tern_catalog_walk_info w;
  int fresh;
  TERN_TRY(walk_catalog(idx, &w));
  TERN_TRY(judge_tables(idx, &w, &fresh));
  if (fresh) {
    int create = 0;
    TERN_TRY(no_catalog(idx->dir, idx->flags, "a catalog without tables", &create));
    if (idx->flags & TERN_RDONLY)
      return tern_fail(TERN_ENOTINDEX, "%s: catalog without tables", idx->dir);
    TERN_TRY(tern_index_create_catalog(idx, copts)); /* an older tern's cut-short creation */
  }
  MDB_txn *t;
  TERN_TRY(tern_mdb_status(mdb_txn_begin(idx->env, NULL, MDB_RDONLY, &t), "begin"));
  int rc = TERN_OK;
  MDB_dbi *dbis[4] = {&idx->dbi_meta, &idx->dbi_segs, &idx->dbi_live, &idx->dbi_buf};
  for (int i = 0; rc == TERN_OK && i < 4; i++) {
    rc = open_dbi(t, k_tables[i], 0, dbis[i]);
    if (rc == TERN_NOTFOUND && i == 3) { /* version 4 has none (checked below) */
      idx->dbi_buf = (MDB_dbi)-1;        /* invalid: LMDB refuses it */
      rc = TERN_OK;
    }
    if (rc == TERN_NOTFOUND) rc = tern_fail(TERN_ECORRUPT, "%s/%s: table \"%s\" missing",
                                            idx->dir, TERN_CATALOG_FILE, k_tables[i]);
  }
  if (rc == TERN_OK) rc = read_meta_records(idx, t);
  if (rc == TERN_OK && idx->dbi_buf == (MDB_dbi)-1 &&
      !TERN_CATALOG_BUFFER_IN_MAIN(idx->catalog_version))
    rc = tern_catalog_damaged(idx, tern_fail(TERN_ECORRUPT, "table \"buffer\" missing"));
  if (rc != TERN_OK) {
    mdb_txn_abort(t);
    return rc;
  }
  /* DBI handles opened in a read transaction stay valid after its commit. */
  return tern_mdb_status(mdb_txn_commit(t), "opening the catalog");
}

/* Raises the map to `want` bytes and records it as the index's map_size:
 * the one option that may change after creation, so that TERN_EFULL has a
 * remedy.  The map grows first, with no transaction active: a full map
 * leaves no room for the options record. */
static int grow_map_size(tern_index *idx, uint64_t want) {
  TERN_TRY(tern_mdb_status(mdb_env_set_mapsize(idx->env, (size_t)want), "map size"));
  tern_options o = idx->opts;
  o.map_size = want;
  uint8_t *ob;
  size_t olen;
  TERN_TRY(tern_rec_options_encode(&o, &ob, &olen));
  MDB_txn *t = NULL;
  int rc = tern_mdb_env_status(idx, mdb_txn_begin(idx->env, NULL, 0, &t), "begin");
  if (rc == TERN_OK) rc = tern_catalog_put_meta(idx, t, "options", ob, olen);
  if (rc == TERN_OK)
    rc = tern_mdb_env_status(idx, mdb_txn_commit(t), "committing options");
  else if (t)
    mdb_txn_abort(t);
  free(ob);
  if (rc == TERN_OK) idx->opts.map_size = want;
  return rc;
}

static int collect_known(void *ctx, uint64_t number, const tern_rec_segment *r) {
  (void)r;
  return tern_u64vec_push(ctx, number);
}

/* Whether a segment file not in the catalog may go: its number is at or
 * above the next number (a write no commit took: a leftover), or below
 * it (handed out by a commit, so a later commit dropped it).  The
 * catalog's segment list was checked whole (count and digest) first. */
static int listed(const tern_u64vec *k, uint64_t number) {
  for (size_t i = 0; i < k->n; i++)
    if (k->v[i] == number) return 1;
  return 0;
}
static int removable(const tern_u64vec *k, uint64_t number) { return !listed(k, number); }

/* The segment numbers of the files in the directory open as dfd (at most
 * PREFETCH_MAX), read with getdents64 on that descriptor: tern_open keeps
 * it for the directory's flock (share_dir) instead of opening it again. */
#define PREFETCH_MAX 256
static void list_segments(int dfd, tern_u64vec *seen) {
  _Alignas(struct dirent64) char buf[4096];
  ssize_t n;
  while (seen->n < PREFETCH_MAX && (n = getdents64(dfd, buf, sizeof buf)) > 0) {
    for (ssize_t off = 0; off < n && seen->n < PREFETCH_MAX;) {
      const struct dirent64 *e = (const struct dirent64 *)(buf + off);
      uint64_t number;
      if (segment_file_number(e->d_name, &number) && !listed(seen, number) &&
          tern_u64vec_push(seen, number) != TERN_OK)
        return;
      off += e->d_reclen;
    }
  }
}

/* Asks for the catalog, its LMDB lock file and every segment's index
 * file now (one hint per file, at most PREFETCH_MAX segments), before
 * anything waits for a read, so that the reads the first snapshot makes
 * run beside the catalog's instead of after them: a fresh process's
 * `tern get` waits for all of them (docs/ARCHITECTURE.md, "A fresh
 * process's open").  Leftovers of a crash are asked for too; they are few.
 * The catalog stays open for its check (prepare_dir), which reads it next. */
static int prefetch_segments(const char *dir, unsigned flags, int *dir_fd) {
  /* The catalog is read first (its check reads both meta pages, then
   * walks every page): asked for first, whole, in one request instead of
   * a cold read per page, the first two one after the other.  LMDB reads
   * its lock file next (mdb_env_open maps it and reads its header, even
   * read-only): asked for too, it comes in beside the catalog instead of
   * after it (~130 µs less at a cold open, docs/benchmarks/HISTORY.md, "2026-12-02, evening").
   * O_NONBLOCK: a FIFO in the catalog's place must not hang the open. */
  char *cat = tern_path_join(dir, TERN_CATALOG_FILE);
  int cat_fd = cat ? open(cat, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;
  if (cat_fd >= 0) (void)posix_fadvise(cat_fd, 0, 0, POSIX_FADV_WILLNEED);
  free(cat);
  char *lock = tern_path_join(dir, TERN_CATALOG_FILE "-lock");
  int lock_fd = lock ? open(lock, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;
  if (lock_fd >= 0) {
    (void)posix_fadvise(lock_fd, 0, 0, POSIX_FADV_WILLNEED);
    close(lock_fd);
  }
  free(lock);
  *dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (*dir_fd < 0) return cat_fd; /* the open that follows reports it */
  tern_u64vec seen = {0};
  list_segments(*dir_fd, &seen);
  /* Every index file asked for first, then, in pread mode, the buffers
   * their reads will fill readied (codec/spare_buf.h): a fresh process's
   * page faults on them are taken while the device reads, not after it.
   * Mapped (the default), a segment uses its index file in place: no
   * buffer. */
  uint64_t *sizes = seen.n ? calloc(seen.n, sizeof *sizes) : NULL;
  for (size_t i = 0; i < seen.n; i++) {
    char name[TERN_SEGNAME_MAX];
    tern_segment_name(name, seen.v[i]);
    uint64_t size = tern_seg_prefetch(dir, name);
    if (sizes) sizes[i] = size;
  }
  for (size_t i = 0; sizes && (flags & TERN_PREAD) && i < seen.n; i++) {
    char name[TERN_SEGNAME_MAX];
    tern_segment_name(name, seen.v[i]);
    tern_seg_ready_index_buffer(dir, name, sizes[i]);
  }
  free(sizes);
  free(seen.v);
  return cat_fd;
}

/* Counts (*found), and with `remove` removes, the segment files that the
 * catalog does not reference. */
static int unreferenced(tern_index *idx, int remove, size_t *found) {
  *found = 0;
  tern_u64vec k = {0};
  MDB_txn *t;
  tern_rec_state s;
  TERN_TRY(tern_mdb_status(mdb_txn_begin(idx->env, NULL, MDB_RDONLY, &t), "begin"));
  int rc = tern_catalog_get_state(idx, t, &s);
  if (rc == TERN_OK) rc = tern_catalog_each_segment(idx, t, &s, collect_known, &k);
  mdb_txn_abort(t);
  DIR *d = rc == TERN_OK ? opendir(idx->dir) : NULL;
  if (rc == TERN_OK && !d) rc = tern_fail_errno(idx->dir);
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    uint64_t number;
    if (!segment_file_number(e->d_name, &number) || !removable(&k, number)) continue;
    ++*found;
    if (!remove) continue;
    char name[TERN_SEGNAME_MAX];
    tern_segment_name(name, number);
    tern_seg_remove(idx->dir, name);
  }
  if (d) closedir(d);
  free(k.v);
  return rc;
}

/* Looks first without the write lock, so that an open with nothing to
 * clean never holds it: a writer in another process would get TERN_EBUSY
 * for the length of this open.  Removes under the lock only, after looking
 * again (the catalog may have moved meanwhile). */
static int cleanup_leftovers(tern_index *idx) {
  size_t found;
  TERN_TRY(unreferenced(idx, 0, &found));
  if (!found) return TERN_OK;
  if (!tern_write_lock_try_quiet(idx)) return TERN_OK; /* a writer is at work */
  int rc = unreferenced(idx, 1, &found);
  tern_write_lock_give_quiet(idx);
  return rc;
}

/* DIR/write.lock, refusing anything but a regular file (a FIFO would hang). */
static int open_lock_file(tern_index *idx) {
  char *lp = tern_path_join(idx->dir, TERN_LOCK_FILE);
  if (!lp) return tern_fail(TERN_ENOMEM, "out of memory");
  int rc = TERN_OK;
  struct stat st;
  int existed = lstat(lp, &st) == 0;
  if (existed && !S_ISREG(st.st_mode)) {
    rc = tern_fail(TERN_ECORRUPT, "%s: not a regular file", lp);
  } else {
    idx->lock_fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW, 0666);
    if (idx->lock_fd < 0 || fstat(idx->lock_fd, &st) < 0)
      rc = tern_fail_errno(lp);
    else if (!S_ISREG(st.st_mode))
      rc = tern_fail(TERN_ECORRUPT, "%s: not a regular file", lp);
    if (rc == TERN_OK) rc = tern_write_lock_open(idx);
    if (rc == TERN_OK && !existed) /* created: durable before a commit relies on it */
      rc = tern_fsync_dir(idx->dir);
  }
  free(lp);
  return rc;
}

static void index_free(tern_index *idx) {
  if (!idx) return;
  tern_worker_free(idx);
  tern_cfbuilder_free(idx); /* after the worker: its reloads kick the builder */
  tern_queue_spare_close(idx);
  tern_states_close(idx);
  tern_txn_spare_free(idx);
  if (idx->env) mdb_env_close(idx->env);
  tern_write_lock_close(idx);
  if (idx->lock_fd >= 0) close(idx->lock_fd);
  if (idx->dir_fd >= 0) close(idx->dir_fd);
  pthread_rwlock_destroy(&idx->env_rw);
  tern_options_release(&idx->opts);
  pthread_mutex_destroy(&idx->mu);
  pthread_mutex_destroy(&idx->install_mu);
  free(idx->flight.runs);
  free(idx->dir);
  free(idx);
}

int tern_open(tern_index **out, const char *dir, unsigned flags, const tern_options *opts) {
  tern_clear_error();
  if (out) *out = NULL;
  if (!out || !dir || !*dir || (flags & ~(TERN_CREATE | TERN_RDONLY | TERN_PREAD | TERN_FOREGROUND)))
    return tern_fail(TERN_EINVAL, "tern_open: bad arguments");
  if ((flags & TERN_CREATE) && (flags & TERN_RDONLY))
    return tern_fail(TERN_EINVAL, "tern_open: TERN_CREATE with TERN_RDONLY");
  tern_options defaults;
  tern_options_init(&defaults);
  int given = opts != NULL; /* a map_size the caller gave grows an existing index's map */
  if (!opts) opts = &defaults;
  if (flags & TERN_CREATE) TERN_TRY(tern_options_check(opts));
  int create, dir_fd = -1;
  int cat_fd = prefetch_segments(dir, flags, &dir_fd);
  int prc = prepare_dir(dir, flags, cat_fd, &create);
  if (cat_fd >= 0) close(cat_fd);
  tern_index *idx = prc == TERN_OK ? calloc(1, sizeof *idx) : NULL;
  if (!idx) {
    if (dir_fd >= 0) close(dir_fd);
    return prc != TERN_OK ? prc : tern_fail(TERN_ENOMEM, "out of memory");
  }
  idx->lock_fd = -1;
  idx->dir_fd = dir_fd; /* share_dir's, when the directory was there to list */
  idx->flags = flags;
  pthread_mutex_init(&idx->mu, NULL);
  pthread_mutex_init(&idx->install_mu, NULL);
  pthread_rwlock_init(&idx->env_rw, NULL);
  idx->dir = strdup(dir);
  int rc = idx->dir ? TERN_OK : tern_fail(TERN_ENOMEM, "out of memory");
  if (rc == TERN_OK && create) rc = tern_index_create(idx, opts);
  if (rc == TERN_OK) rc = share_dir(idx);
  if (rc == TERN_OK) rc = open_env(idx, (flags & TERN_CREATE) ? opts->map_size : 0);
  if (rc == TERN_OK) {
    int dead; /* reader slots of processes that died (kill -9) */
    if (!idx->nolock) mdb_reader_check(idx->env, &dead);
    rc = load_catalog(idx, opts);
  }
  /* Not stored: this open's (version 1 options have none: the default). */
  uint32_t depth = opts->version >= 2 ? opts->read_depth : TERN_READ_DEPTH_DEFAULT;
  if (rc == TERN_OK && depth > TERN_READ_DEPTH_MAX)
    rc = tern_fail(TERN_EINVAL, "read_depth %u > %u", depth, TERN_READ_DEPTH_MAX);
  if (rc == TERN_OK) idx->opts.read_depth = depth;
  uint32_t factor = opts->version >= 3 ? opts->merge_factor : TERN_MERGE_FACTOR_DEFAULT;
  if (rc == TERN_OK) rc = tern_options_check_merge_factor(factor);
  if (rc == TERN_OK) idx->opts.merge_factor = factor;
  if (rc == TERN_OK && given && !(flags & TERN_RDONLY) && opts->map_size > idx->opts.map_size) {
    if (opts->map_size < (1u << 20)) rc = tern_fail(TERN_EINVAL, "map_size below 1 MiB");
    if (rc == TERN_OK) rc = grow_map_size(idx, opts->map_size);
  }
  if (rc == TERN_OK && idx->opts.map_size > 0) {
    MDB_envinfo info;
    mdb_env_info(idx->env, &info);
    if (info.me_mapsize < idx->opts.map_size)
      rc = tern_mdb_status(mdb_env_set_mapsize(idx->env, (size_t)idx->opts.map_size), "map size");
  }
  if (rc == TERN_OK && !(flags & TERN_RDONLY)) {
    rc = open_lock_file(idx);
    if (rc == TERN_OK) rc = cleanup_leftovers(idx);
    if (rc == TERN_OK) rc = tern_worker_new(idx);
  }
  if (rc != TERN_OK) {
    index_free(idx);
    return rc;
  }
  /* Not stored: a property of this handle (version 1 options have none). */
  idx->busy_timeout_ms = given && opts->version >= 2 ? opts->busy_timeout_ms : 0;
  *out = idx;
  return TERN_OK;
}

int tern_close(tern_index *idx) {
  tern_clear_error();
  if (!idx) return TERN_OK;
  tern_mu_lock(idx);
  int busy = idx->snapshots > 0 || idx->writing;
  tern_mu_unlock(idx);
  if (busy)
    return tern_fail(TERN_EBUSY, "%s: snapshots or a write transaction still open", idx->dir);
  index_free(idx);
  return TERN_OK;
}

int tern_get_options(const tern_index *idx, tern_options *out) {
  tern_clear_error();
  if (!idx || !out) return tern_fail(TERN_EINVAL, "tern_get_options: NULL argument");
  *out = idx->opts;
  out->version = TERN_OPTIONS_VERSION;
  out->busy_timeout_ms = idx->busy_timeout_ms;
  return TERN_OK;
}
