/* SPDX-License-Identifier: MIT */
/*
 * faultfs.c — the fault layer of faultfs.h: a tern_io_vfs over the system
 * calls, and interposers over LMDB's writes to catalog.mdb.
 *
 * What power loss keeps (the model of SQLite's test6.c, simplified to
 * tern's patterns): a file's bytes up to its size at its last fsync; a
 * creation, rename or unlink once the directory was fsynced after it; a
 * write to catalog.mdb once catalog.mdb was fsynced after it (LMDB's meta
 * descriptor is O_DSYNC: each of its writes is durable when it returns).
 * To undo what was not kept, renames and unlinks first hard-link the file
 * they would lose to a stash, and catalog writes save the bytes they
 * overwrite.
 *
 * Strict POSIX (ff_strict): a directory entry is kept only once ITS
 * directory was fsynced after it (an fsync of another directory keeps
 * nothing), and the creations tern and LMDB make through libc are tracked
 * as well: interposers over open (O_CREAT), mkdir, rename and a
 * directory's fsync see catalog.mdb, its lock file, write.lock, the index
 * directory itself and backup's files.  Without strict, any directory
 * fsync keeps every earlier entry of the codec's files, as before.  The
 * codec VFS reaches the same libc calls: a thread-local flag keeps them
 * from being counted twice.
 */
#include "tests/engine/faultfs.h"

#include "codec/io.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

const char *const ff_kind_name[FF_NKINDS] = {"open",   "pread",    "write",     "fsync",
                                             "rename", "unlink",   "mmap",      "ftruncate",
                                             "catalog write", "catalog sync", "queued read"};

#define FF_PATH 512
#define FF_FDS 4096
#define FF_MAX 4096

typedef struct tracked {
  char path[FF_PATH];
  uint64_t synced; /* size at its last fsync */
  int alive;
} tracked;

enum ns_op { NS_CREATE, NS_RENAME, NS_UNLINK, NS_MKDIR };
typedef struct ns_entry {
  enum ns_op op;
  char a[FF_PATH], b[FF_PATH], stash[FF_PATH]; /* stash "": none */
  char dir[FF_PATH]; /* the directory whose fsync keeps it (real path) */
} ns_entry;

typedef struct undo {
  uint64_t off, old_size;
  size_t len;
  uint8_t *old;
} undo;

static struct {
  pthread_mutex_t mu;
  int installed;
  uint64_t count[FF_NKINDS], syncs;
  ff_kind fail_kind;
  uint64_t fail_n;
  int fail_err;
  uint64_t crash_n;
  int torn, crashed, fired, strict;
  uint64_t rng;
  int fd_file[FF_FDS]; /* index+1 into files, 0: none; -1: a directory */
  tracked files[FF_MAX];
  size_t nfiles;
  ns_entry ns[FF_MAX];
  size_t nns;
  undo log[FF_MAX];
  size_t nlog;
  char catalog[FF_PATH];
  uint64_t stashes;
  uint64_t short_n;
  int uring_err;
  uint64_t uring_inits; /* io_uring set-ups asked for, ever */
  char only[FF_PATH];      /* ff_only: "" or the path suffix faults are counted on */
  uint8_t fd_only[FF_FDS]; /* fd's path ends with `only` */
} F = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Whether a call on fd counts (ff_only). */
static int counts_fd(int fd) {
  return !F.only[0] || (fd >= 0 && fd < FF_FDS && F.fd_only[fd]);
}
static int path_only(const char *path) {
  size_t n = strlen(path), m = strlen(F.only);
  return !m || (n >= m && !strcmp(path + n - m, F.only));
}

void ff_only(const char *suffix) {
  pthread_mutex_lock(&F.mu);
  snprintf(F.only, sizeof F.only, "%s", suffix ? suffix : "");
  pthread_mutex_unlock(&F.mu);
}

static uint64_t rnd(void) {
  uint64_t z = (F.rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* ------------------------------------------------------ the fault rules */

/* Counts a call of `kind`; returns the errno it must fail with, or 0. */
static int fault(ff_kind kind) {
  F.count[kind]++;
  if (F.crashed) return EIO;
  if (F.fail_n && kind == F.fail_kind && F.count[kind] == F.fail_n) {
    F.fired = 1;
    return F.fail_err;
  }
  return 0;
}

/* A sync point: 1 when the power is cut here. */
static int sync_point(void) {
  F.syncs++;
  if (F.crash_n && F.syncs == F.crash_n) {
    F.crashed = 1;
    F.fired = 1;
    return 1;
  }
  return 0;
}

static int failed(int err) {
  errno = err;
  return -1;
}

/* -------------------------------------------------------- the codec VFS */

static const tern_io_vfs *sys(void) { return tern_io_system_vfs(); }

/* Set while a VFS call runs: the libc interposers below then pass through. */
static _Thread_local int in_vfs;

/* The real path of path's parent directory into out ("" when unknown). */
static void parent_of(const char *path, char *out) {
  char tmp[FF_PATH];
  snprintf(tmp, sizeof tmp, "%s", path);
  size_t n = strlen(tmp);
  while (n > 1 && tmp[n - 1] == '/') tmp[--n] = '\0';
  char *slash = strrchr(tmp, '/');
  const char *dir = !slash ? "." : slash == tmp ? "/" : (*slash = '\0', tmp);
  char real[PATH_MAX];
  size_t len = realpath(dir, real) ? strlen(real) : FF_PATH;
  out[0] = '\0';
  if (len < FF_PATH) memcpy(out, real, len + 1);
}

/* The real path of a directory descriptor into out; 0 if fd is no directory. */
static int dir_of_fd(int fd, char *out) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, out, FF_PATH - 1);
  if (n <= 0) return 0;
  out[n] = '\0';
  return 1;
}

static tracked *file_of(int fd) {
  if (fd < 0 || fd >= FF_FDS || F.fd_file[fd] <= 0) return NULL;
  return &F.files[F.fd_file[fd] - 1];
}

static void ns_log(enum ns_op op, const char *a, const char *b, const char *stash) {
  if (F.nns >= FF_MAX) abort();
  ns_entry *e = &F.ns[F.nns++];
  e->op = op;
  snprintf(e->a, sizeof e->a, "%s", a);
  snprintf(e->b, sizeof e->b, "%s", b ? b : "");
  snprintf(e->stash, sizeof e->stash, "%s", stash ? stash : "");
  parent_of(op == NS_RENAME ? b : a, e->dir);
}

/* Hard-links `path` to a fresh stash name (into out); 0 if there is no file. */
static int stash(const char *path, char *out) {
  snprintf(out, FF_PATH, "%s.ffstash%llu", path, (unsigned long long)++F.stashes);
  return link(path, out) == 0;
}

static int ff_open(const char *path, int flags, unsigned mode) {
  in_vfs = 1;
  pthread_mutex_lock(&F.mu);
  int err = path_only(path) ? fault(FF_OPEN) : 0;
  int existed = access(path, F_OK) == 0;
  int fd = err ? failed(err) : sys()->open(path, flags, mode);
  if (fd >= 0 && fd < FF_FDS) {
    F.fd_file[fd] = 0;
    F.fd_only[fd] = F.only[0] && path_only(path);
    if (flags & O_DIRECTORY) F.fd_file[fd] = -1;
    if ((flags & O_CREAT) && !existed) ns_log(NS_CREATE, path, NULL, NULL);
    if ((flags & O_ACCMODE) != O_RDONLY && F.nfiles < FF_MAX) {
      tracked *t = &F.files[F.nfiles++];
      snprintf(t->path, sizeof t->path, "%s", path);
      struct stat st;
      t->synced = (flags & O_TRUNC) || fstat(fd, &st) != 0 ? 0 : (uint64_t)st.st_size;
      t->alive = 1;
      F.fd_file[fd] = (int)F.nfiles;
    }
  }
  pthread_mutex_unlock(&F.mu);
  in_vfs = 0;
  return fd;
}

static int ff_close(int fd) {
  pthread_mutex_lock(&F.mu);
  if (fd >= 0 && fd < FF_FDS) F.fd_file[fd] = 0;
  pthread_mutex_unlock(&F.mu);
  return sys()->close(fd);
}

static int ff_fstat(int fd, struct stat *st) { return sys()->fstat(fd, st); }

static ssize_t ff_pread(int fd, void *buf, size_t len, off_t off) {
  pthread_mutex_lock(&F.mu);
  int err = counts_fd(fd) ? fault(FF_PREAD) : 0;
  pthread_mutex_unlock(&F.mu);
  return err ? failed(err) : sys()->pread(fd, buf, len, off);
}

static ssize_t ff_write(int fd, const void *buf, size_t len) {
  pthread_mutex_lock(&F.mu);
  int err = fault(FF_WRITE);
  pthread_mutex_unlock(&F.mu);
  return err ? failed(err) : sys()->write(fd, buf, len);
}

/* The creations, renames and unlinks in `dir` (real path; NULL or not
 * strict: in every directory) are durable now. */
static void ns_durable(const char *dir) {
  size_t k = 0;
  for (size_t i = 0; i < F.nns; i++) {
    if (dir && F.strict && strcmp(F.ns[i].dir, dir) != 0) {
      F.ns[k++] = F.ns[i];
      continue;
    }
    if (F.ns[i].stash[0]) unlink(F.ns[i].stash);
  }
  F.nns = k;
}

/* A directory's fsync succeeded: what it holds is durable. */
static void dir_synced(int fd) {
  char dir[FF_PATH];
  if (dir_of_fd(fd, dir)) ns_durable(dir);
}

static int ff_fsync(int fd, int data_only) {
  in_vfs = 1;
  pthread_mutex_lock(&F.mu);
  int err = fault(FF_SYNC);
  if (!err && sync_point()) err = EIO;
  int rc = err ? failed(err) : sys()->fsync(fd, data_only);
  if (rc == 0) {
    tracked *t = file_of(fd);
    struct stat st;
    if (t && fstat(fd, &st) == 0) t->synced = (uint64_t)st.st_size;
    if (fd >= 0 && fd < FF_FDS && F.fd_file[fd] == -1) dir_synced(fd);
  }
  pthread_mutex_unlock(&F.mu);
  in_vfs = 0;
  return rc;
}

static void retarget(const char *from, const char *to) {
  for (size_t i = 0; i < F.nfiles; i++)
    if (F.files[i].alive && !strcmp(F.files[i].path, from))
      snprintf(F.files[i].path, FF_PATH, "%s", to);
}

static int ff_rename(const char *from, const char *to) {
  in_vfs = 1;
  pthread_mutex_lock(&F.mu);
  int err = fault(FF_RENAME);
  char st[FF_PATH] = "";
  if (!err && !stash(to, st)) st[0] = '\0';
  int rc = err ? failed(err) : sys()->rename(from, to);
  if (rc == 0) {
    ns_log(NS_RENAME, from, to, st);
    retarget(from, to);
  } else if (st[0]) {
    unlink(st);
  }
  pthread_mutex_unlock(&F.mu);
  in_vfs = 0;
  return rc;
}

static int ff_unlink(const char *path) {
  in_vfs = 1;
  pthread_mutex_lock(&F.mu);
  int err = fault(FF_UNLINK);
  char st[FF_PATH] = "";
  if (!err && !stash(path, st)) st[0] = '\0';
  int rc = err ? failed(err) : sys()->unlink(path);
  if (rc == 0 && st[0])
    ns_log(NS_UNLINK, path, NULL, st);
  else if (st[0])
    unlink(st);
  pthread_mutex_unlock(&F.mu);
  in_vfs = 0;
  return rc;
}

static void *ff_mmap(size_t len, int fd) {
  pthread_mutex_lock(&F.mu);
  int err = counts_fd(fd) ? fault(FF_MMAP) : 0;
  pthread_mutex_unlock(&F.mu);
  if (err) {
    errno = err;
    return (void *)-1; /* MAP_FAILED */
  }
  return sys()->mmap(len, fd);
}

static int ff_munmap(void *addr, size_t len) { return sys()->munmap(addr, len); }

static int ff_ftruncate(int fd, off_t len) {
  pthread_mutex_lock(&F.mu);
  int err = fault(FF_FTRUNCATE);
  pthread_mutex_unlock(&F.mu);
  return err ? failed(err) : sys()->ftruncate(fd, len);
}

static int ff_uring_init(unsigned entries, void *ring) {
  pthread_mutex_lock(&F.mu);
  F.uring_inits++;
  int err = F.uring_err;
  pthread_mutex_unlock(&F.mu);
  return err ? -err : sys()->uring_init(entries, ring);
}

static ssize_t ff_read_done(int fd, void *buf, size_t len, off_t off, ssize_t res) {
  pthread_mutex_lock(&F.mu);
  int err = fault(FF_AREAD);
  int shorten = F.short_n && F.count[FF_AREAD] == F.short_n;
  if (shorten) F.fired = 1;
  pthread_mutex_unlock(&F.mu);
  if (err) return -err;
  if (shorten && res > 0) return res / 2;
  return sys()->read_done(fd, buf, len, off, res);
}

static const tern_io_vfs fault_vfs = {
    .open = ff_open,
    .close = ff_close,
    .fstat = ff_fstat,
    .pread = ff_pread,
    .write = ff_write,
    .fsync = ff_fsync,
    .rename = ff_rename,
    .unlink = ff_unlink,
    .mmap = ff_mmap,
    .munmap = ff_munmap,
    .ftruncate = ff_ftruncate,
    .uring_init = ff_uring_init,
    .read_done = ff_read_done,
};

/* ------------------------------------------- LMDB's calls on catalog.mdb */

/* The path of fd when it is a catalog.mdb, into out; else 0. */
static int is_catalog(int fd, char *out) {
  if (!F.installed) return 0;
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, out, FF_PATH - 1);
  if (n <= 0) return 0;
  out[n] = '\0';
  static const char *const suffixes[2] = {"/catalog.mdb", "/catalog.mdb.new"};
  for (int i = 0; i < 2; i++) {
    size_t sl = strlen(suffixes[i]);
    if ((size_t)n >= sl && !strcmp(out + n - sl, suffixes[i])) return 1;
  }
  return 0;
}

static int dsync_fd(int fd) { return (fcntl(fd, F_GETFL) & O_DSYNC) == O_DSYNC; }

/* Saves what a write of len bytes at off will overwrite. */
static void save_preimage(int fd, const char *path, uint64_t off, size_t len) {
  if (F.nlog >= FF_MAX) abort();
  struct stat st;
  if (fstat(fd, &st) != 0) abort();
  uint64_t size = (uint64_t)st.st_size;
  undo *u = &F.log[F.nlog++];
  u->off = off;
  u->old_size = size;
  u->len = off >= size ? 0 : (size_t)(size - off < len ? size - off : len);
  u->old = malloc(u->len ? u->len : 1);
  if (!u->old || syscall(SYS_pread64, fd, u->old, u->len, (off_t)off) != (long)u->len) abort();
  snprintf(F.catalog, sizeof F.catalog, "%s", path);
}

/* Before LMDB writes len bytes at off: 0 to go on, else the errno; *land:
 * the write is to be made although it fails (a torn crash at a durable
 * write may or may not have written it). */
static int catalog_write(int fd, const char *path, uint64_t off, size_t len, int *land) {
  pthread_mutex_lock(&F.mu);
  int err;
  *land = 0;
  if (dsync_fd(fd)) { /* a durable write: a sync point of its own */
    err = fault(FF_CAT_SYNC);
    if (!err && sync_point()) {
      err = EIO;
      *land = F.torn && rnd() % 2;
    }
  } else {
    err = fault(FF_CAT_WRITE);
    if (!err) save_preimage(fd, path, off, len);
  }
  pthread_mutex_unlock(&F.mu);
  return err;
}

static size_t iov_len(const struct iovec *iov, int n) {
  size_t len = 0;
  for (int i = 0; i < n; i++) len += iov[i].iov_len;
  return len;
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off) {
  char path[FF_PATH];
  if (is_catalog(fd, path)) {
    int land, err = catalog_write(fd, path, (uint64_t)off, len, &land);
    if (land) (void)!syscall(SYS_pwrite64, fd, buf, len, off);
    if (err) return failed(err);
  }
  return syscall(SYS_pwrite64, fd, buf, len, off);
}

ssize_t write(int fd, const void *buf, size_t len) {
  char path[FF_PATH];
  if (is_catalog(fd, path)) {
    int land, err = catalog_write(fd, path, (uint64_t)lseek(fd, 0, SEEK_CUR), len, &land);
    if (land) (void)!syscall(SYS_write, fd, buf, len);
    if (err) return failed(err);
  }
  return syscall(SYS_write, fd, buf, len);
}

ssize_t writev(int fd, const struct iovec *iov, int n) {
  char path[FF_PATH];
  if (is_catalog(fd, path)) {
    int land, err = catalog_write(fd, path, (uint64_t)lseek(fd, 0, SEEK_CUR), iov_len(iov, n), &land);
    if (land) (void)!syscall(SYS_writev, fd, iov, n);
    if (err) return failed(err);
  }
  return syscall(SYS_writev, fd, iov, n);
}

static void log_free(void) {
  for (size_t i = 0; i < F.nlog; i++) free(F.log[i].old);
  F.nlog = 0;
}

static int catalog_sync(int fd, long nr) {
  char path[FF_PATH];
  if (is_catalog(fd, path)) {
    pthread_mutex_lock(&F.mu);
    int err = fault(FF_CAT_SYNC);
    if (!err && sync_point()) err = EIO;
    long rc = err ? failed(err) : syscall(nr, fd);
    if (rc == 0) log_free();
    pthread_mutex_unlock(&F.mu);
    return (int)rc;
  }
  return (int)syscall(nr, fd);
}

/* Strict: a directory's fsync through libc (engine/, not the codec VFS) is
 * a sync point that keeps that directory's entries. */
static int strict_dir_sync(int fd, int *rc) {
  char dir[FF_PATH];
  if (!F.installed || !F.strict || in_vfs || !dir_of_fd(fd, dir)) return 0;
  pthread_mutex_lock(&F.mu);
  int err = fault(FF_SYNC);
  if (!err && sync_point()) err = EIO;
  *rc = err ? failed(err) : (int)syscall(SYS_fsync, fd);
  if (*rc == 0) ns_durable(dir);
  pthread_mutex_unlock(&F.mu);
  return 1;
}

int fsync(int fd) {
  int rc;
  return strict_dir_sync(fd, &rc) ? rc : catalog_sync(fd, SYS_fsync);
}
int fdatasync(int fd) { return catalog_sync(fd, SYS_fdatasync); }

/* ------------------------------- strict: libc's creations, renames, mkdir */

static int tracking(void) { return F.installed && F.strict && !in_vfs; }

int open(const char *path, int flags, ...) {
  unsigned mode = 0;
  if (flags & (O_CREAT | O_TMPFILE)) {
    va_list ap;
    va_start(ap, flags);
    mode = va_arg(ap, unsigned);
    va_end(ap);
  }
  if (!tracking() || !(flags & O_CREAT)) return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
  pthread_mutex_lock(&F.mu);
  int existed = access(path, F_OK) == 0, err = fault(FF_OPEN);
  int fd = err ? failed(err) : (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
  if (fd >= 0 && !existed) ns_log(NS_CREATE, path, NULL, NULL);
  pthread_mutex_unlock(&F.mu);
  return fd;
}

int mkdir(const char *path, mode_t mode) {
  if (!tracking()) return (int)syscall(SYS_mkdirat, AT_FDCWD, path, mode);
  pthread_mutex_lock(&F.mu);
  int rc = (int)syscall(SYS_mkdirat, AT_FDCWD, path, mode);
  if (rc == 0) ns_log(NS_MKDIR, path, NULL, NULL);
  pthread_mutex_unlock(&F.mu);
  return rc;
}

static int sys_rename(const char *from, const char *to) {
#ifdef SYS_renameat2
  return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 0);
#else
  return (int)syscall(SYS_renameat, AT_FDCWD, from, AT_FDCWD, to);
#endif
}

int rename(const char *from, const char *to) {
  if (!tracking()) return sys_rename(from, to);
  pthread_mutex_lock(&F.mu);
  int err = fault(FF_RENAME);
  char st[FF_PATH] = "";
  if (!err && !stash(to, st)) st[0] = '\0';
  int rc = err ? failed(err) : sys_rename(from, to);
  if (rc == 0)
    ns_log(NS_RENAME, from, to, st);
  else if (st[0])
    unlink(st);
  pthread_mutex_unlock(&F.mu);
  return rc;
}

/* ------------------------------------------------------------ control */

void ff_reset(void) {
  pthread_mutex_lock(&F.mu);
  memset(F.count, 0, sizeof F.count);
  F.syncs = 0;
  F.fail_n = 0;
  F.short_n = 0;
  F.uring_err = 0;
  F.crash_n = 0;
  F.crashed = F.fired = F.torn = 0;
  F.nfiles = 0;
  memset(F.fd_file, 0, sizeof F.fd_file);
  ns_durable(NULL);
  log_free();
  pthread_mutex_unlock(&F.mu);
}

void ff_install(void) {
  ff_reset();
  F.installed = 1;
  tern_io_set_vfs(&fault_vfs);
}

void ff_uninstall(void) {
  tern_io_set_vfs(NULL);
  F.installed = 0;
  ff_reset();
}

void ff_strict(int on) {
  pthread_mutex_lock(&F.mu);
  F.strict = on;
  pthread_mutex_unlock(&F.mu);
}

void ff_fail_nth(ff_kind kind, uint64_t n, int err) {
  pthread_mutex_lock(&F.mu);
  F.fail_kind = kind;
  F.fail_n = n;
  F.fail_err = err;
  pthread_mutex_unlock(&F.mu);
}

void ff_short_nth(uint64_t n) {
  pthread_mutex_lock(&F.mu);
  F.short_n = n;
  pthread_mutex_unlock(&F.mu);
}

uint64_t ff_uring_inits(void) {
  pthread_mutex_lock(&F.mu);
  uint64_t n = F.uring_inits;
  pthread_mutex_unlock(&F.mu);
  return n;
}

void ff_refuse_uring(int err) {
  pthread_mutex_lock(&F.mu);
  F.uring_err = err;
  pthread_mutex_unlock(&F.mu);
}

void ff_crash_at_sync(uint64_t n, int torn, uint64_t seed) {
  pthread_mutex_lock(&F.mu);
  F.crash_n = n;
  F.torn = torn;
  F.rng = seed;
  pthread_mutex_unlock(&F.mu);
}

uint64_t ff_count(ff_kind kind) { return F.count[kind]; }
uint64_t ff_syncs(void) { return F.syncs; }
int ff_fired(void) { return F.fired; }

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)ftw;
  return (flag == FTW_DP ? rmdir(path) : unlink(path)), 0;
}

static void undo_namespace(void) {
  for (size_t i = F.nns; i-- > 0;) {
    ns_entry *e = &F.ns[i];
    switch (e->op) {
    case NS_CREATE:
      unlink(e->a);
      for (size_t k = 0; k < F.nfiles; k++)
        if (!strcmp(F.files[k].path, e->a)) F.files[k].alive = 0;
      break;
    case NS_RENAME:
      (void)rename(e->b, e->a);
      retarget(e->b, e->a);
      if (e->stash[0]) (void)rename(e->stash, e->b);
      break;
    case NS_UNLINK:
      (void)rename(e->stash, e->a);
      break;
    case NS_MKDIR: /* the directory and all in it */
      (void)nftw(e->a, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
      break;
    }
  }
  F.nns = 0;
}

/* A tracked file keeps its synced bytes; torn: some unsynced pages too. */
static void lose_data(const tracked *t) {
  struct stat st;
  if (!t->alive || stat(t->path, &st) != 0 || (uint64_t)st.st_size <= t->synced) return;
  uint64_t size = (uint64_t)st.st_size, keep = t->synced;
  int fd = open(t->path, O_WRONLY);
  if (fd < 0) return;
  if (F.torn) {
    keep = t->synced + rnd() % (size - t->synced + 1);
    static const uint8_t zeros[4096];
    for (uint64_t off = t->synced - t->synced % 4096; off < keep; off += 4096)
      if (off >= t->synced && rnd() % 2) /* this page's write was lost */
        (void)!syscall(SYS_pwrite64, fd, zeros, (size_t)(keep - off < 4096 ? keep - off : 4096),
                       (off_t)off);
  }
  (void)!ftruncate(fd, (off_t)keep);
  close(fd);
}

static void undo_catalog(void) {
  if (!F.nlog) return;
  int fd = open(F.catalog, O_WRONLY);
  if (fd < 0) { /* its creation was undone */
    log_free();
    return;
  }
  uint64_t size = F.log[0].old_size;
  for (size_t i = F.nlog; i-- > 0;) {
    const undo *u = &F.log[i];
    if (F.torn && rnd() % 2) continue; /* this write made it to the disk */
    if (u->len && syscall(SYS_pwrite64, fd, u->old, u->len, (off_t)u->off) != (long)u->len)
      abort();
  }
  if (!F.torn) (void)!ftruncate(fd, (off_t)size);
  close(fd);
  log_free();
}

void ff_power_loss(void) {
  in_vfs = 1; /* its own renames and opens are not the index's */
  pthread_mutex_lock(&F.mu);
  undo_namespace();
  for (size_t i = 0; i < F.nfiles; i++) lose_data(&F.files[i]);
  undo_catalog();
  pthread_mutex_unlock(&F.mu);
  in_vfs = 0;
  ff_reset();
}
