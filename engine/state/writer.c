/* SPDX-License-Identifier: MIT */
/*
 * writer.c — one writer per index: an in-process flag (threads) and an
 * exclusive flock(2) on DIR/write.lock (processes).  Both are tried, never
 * waited for: a second writer gets TERN_EBUSY at once.
 *
 * flock conflicts between two open files of write.lock even in one process,
 * so a second tern_index on the same directory in this process gets
 * TERN_EBUSY too; the held locks are listed (by device and inode) so that its
 * message says so instead of blaming another process.
 *
 * Letting the flock go keeps what idx->cur_seq said with LMDB's last
 * transaction id; taking it again with the id unmoved restores cur_seq, so
 * a transaction's state acquire reads no catalog (index.h: kept_seq).
 */
#include "engine/state/index.h"

#include "codec/status.h"

#include <assert.h>
#include <errno.h>
#include <sys/file.h>
#include <unistd.h>

enum { HELD_MAX = 64 };
static struct held {
  uint64_t dev, ino;
  pid_t pid; /* a forked child inherits the list, not the locks' ownership */
} g_held[HELD_MAX];
static size_t g_nheld;
static pthread_mutex_t g_held_mu = PTHREAD_MUTEX_INITIALIZER;

/* This process's id, asked of the kernel once per process rather than
 * twice a transaction: a fork's child forgets it (pthread_atfork), so it
 * asks again.  REQUIRES: g_held_mu held. */
static pid_t g_pid;
static pthread_once_t g_pid_once = PTHREAD_ONCE_INIT;
static void pid_forget(void) { g_pid = 0; }
static void pid_watch_forks(void) { (void)pthread_atfork(NULL, NULL, pid_forget); }
static pid_t held_pid(void) {
  if (!g_pid) {
    pthread_once(&g_pid_once, pid_watch_forks);
    g_pid = getpid();
  }
  return g_pid;
}

/* Adds (on = 1) or removes (on = 0) idx's write.lock from the list: the
 * file's identity taken at open, so a transaction pays no fstat(2). */
static void held_mark(const tern_index *idx, int on) {
  pthread_mutex_lock(&g_held_mu);
  pid_t pid = held_pid();
  for (size_t i = 0; i < g_nheld; i++)
    if (g_held[i].dev == idx->lock_dev && g_held[i].ino == idx->lock_ino && g_held[i].pid == pid) {
      if (!on) g_held[i] = g_held[--g_nheld];
      on = 0;
      break;
    }
  if (on && g_nheld < HELD_MAX) g_held[g_nheld++] = (struct held){idx->lock_dev, idx->lock_ino, pid};
  pthread_mutex_unlock(&g_held_mu);
}

/* Whether another tern_index of this process holds idx's write.lock. */
static int held_here(const tern_index *idx) {
  int found = 0;
  pthread_mutex_lock(&g_held_mu);
  pid_t pid = held_pid();
  for (size_t i = 0; i < g_nheld && !found; i++)
    found = g_held[i].dev == idx->lock_dev && g_held[i].ino == idx->lock_ino && g_held[i].pid == pid;
  pthread_mutex_unlock(&g_held_mu);
  return found;
}

/* LMDB's newest committed transaction id (0: unknown), read from the meta
 * pages without a read transaction.  REQUIRES: mu held (the environment
 * is swapped under mu: catalog_compact.c). */
static uint64_t last_txnid(const tern_index *idx) {
  assert(tern_mu_held(idx));
  MDB_envinfo info;
  if (!idx->env || mdb_env_info(idx->env, &info) != 0) return 0;
  return (uint64_t)info.me_last_txnid;
}

/* At the write lock's release: what cur_seq said, and LMDB's id then. */
static void keep_current(tern_index *idx) {
  idx->kept_seq = idx->cur_seq && idx->cur && idx->cur->rec.seq == idx->cur_seq ? idx->cur_seq : 0;
  idx->kept_txnid = idx->kept_seq ? last_txnid(idx) : 0;
  if (!idx->kept_txnid) idx->kept_seq = 0;
}

/* At taking the write lock: no transaction committed since it was let
 * go (LMDB's id unmoved; every commit, of any process, moves it), so idx->cur
 * is still the newest commit and the next acquire needs no catalog read
 * (a one-document commit's begin: a read transaction and the state
 * record, ~1.3k instructions).  Otherwise cur_seq stays 0. */
static void restore_current(tern_index *idx) {
  assert(!idx->cur_seq);
  if (idx->kept_seq && idx->cur && idx->cur->rec.seq == idx->kept_seq &&
      last_txnid(idx) == idx->kept_txnid)
    idx->cur_seq = idx->kept_seq;
  idx->kept_seq = idx->kept_txnid = 0;
}

int tern_writer_try_lock(tern_index *idx) {
  if (idx->flags & TERN_RDONLY)
    return tern_fail(TERN_EINVAL, "%s: index opened read-only", idx->dir);
  if (atomic_load(&idx->catalog_bad))
    return tern_fail(TERN_ECORRUPT, "%s/%s: catalog found damaged; nothing is written into it",
                     idx->dir, TERN_CATALOG_FILE);
  tern_mu_lock(idx);
  int busy = idx->writing;
  idx->writing = 1;
  tern_mu_unlock(idx);
  if (busy)
    return tern_fail(TERN_EBUSY, "%s: a write transaction is open in this process", idx->dir);
  /* Under mu: the worker's last release unlocks the flock under mu too. */
  tern_mu_lock(idx);
  int rc = 0;
  if (!idx->flock_holds)
    while ((rc = flock(idx->lock_fd, LOCK_EX | LOCK_NB)) < 0 && errno == EINTR) {
    }
  int err = rc ? errno : 0;
  if (rc == 0 && !idx->flock_holds++) {
    held_mark(idx, 1);
    restore_current(idx);
  }
  tern_mu_unlock(idx);
  if (rc == 0) return TERN_OK;
  tern_mu_lock(idx);
  idx->writing = 0;
  tern_mu_unlock(idx);
  if (err == EWOULDBLOCK && held_here(idx))
    return tern_fail(TERN_EBUSY,
                     "%s: another handle of this index in this process holds the write lock "
                     "(open an index once per process)",
                     idx->dir);
  if (err == EWOULDBLOCK)
    return tern_fail(TERN_EBUSY, "%s: another process holds the write lock", idx->dir);
  errno = err;
  return tern_fail_errno("flock write.lock");
}

void tern_flock_hold(tern_index *idx) {
  tern_mu_lock(idx);
  idx->flock_holds++;
  tern_mu_unlock(idx);
}

void tern_flock_release(tern_index *idx) {
  tern_mu_lock(idx);
  if (--idx->flock_holds == 0) {
    keep_current(idx);
    idx->cur_seq = 0; /* before the lock goes: others may commit after */
    held_mark(idx, 0);
    flock(idx->lock_fd, LOCK_UN);
  }
  tern_mu_unlock(idx);
}

void tern_writer_unlock(tern_index *idx) {
  tern_flock_release(idx);
  tern_mu_lock(idx);
  idx->writing = 0;
  tern_mu_unlock(idx);
}
