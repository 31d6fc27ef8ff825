/* SPDX-License-Identifier: MIT */
/*
 * writer.c — one writer per index: an in-process flag (threads) and an
 * owner word shared through DIR/write.lock (processes).  Both are tried,
 * never waited for: a second writer gets TERN_EBUSY at once.
 *
 * The owner word is write.lock's first 8 bytes, mapped shared by every
 * writable handle: 0 when free, else (pid << 32 | token) of the handle
 * holding the lock.  Taking and letting go are one compare-and-swap each,
 * no system call: a one-document commit took and let go an flock(2) per
 * transaction, ~0.8-1.1 µs of its ~9 µs on the measured VM.
 *
 * A holder that dies cannot let go, so each handle also holds, from its
 * open to its close, an OFD lock (fcntl F_OFD_SETLK) on one byte of the
 * file named by its owner id (live_byte).  The kernel drops that lock
 * with the handle's open file description, at close or at the process's
 * death; a writer that finds the word taken asks whether its byte is
 * still locked (F_OFD_GETLK, only then a system call) and takes the word
 * over from a dead holder.  The byte names the pid and the token, so a
 * reused pid does not keep a dead holder alive, and two handles of one
 * process (two open file descriptions) exclude each other too.  As with
 * the flock before, a child made by fork() shares its parent's
 * descriptions: a parent that dies holding the lock leaves it held until
 * the child closes them or exits (O_CLOEXEC: an exec drops them).
 *
 * Older versions of tern took flock(LOCK_EX) on write.lock per
 * transaction.  So that the two protocols exclude each other, a handle
 * holds flock(LOCK_SH) from its first write lock to its close: an older
 * writer at work makes this one's TERN_EBUSY, and an older writer gets
 * TERN_EBUSY while a writable handle of this version that has written is
 * open.
 *
 * Letting the lock go keeps what idx->cur_seq said with LMDB's last
 * transaction id; taking it again with the id unmoved restores cur_seq, so
 * a transaction's state acquire reads no catalog (index.h: kept_seq).
 */
#include "engine/state/index.h"
#include "engine/util/bigmem.h"

#include "codec/status.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The owner word's page; liveness bytes lie past it, far from any data. */
enum { OWNER_PAGE = 4096, TOKENS = 1 << 16 };
#define LIVE_BASE ((off_t)1 << 32)

/* Who holds the word when it could not be taken. */
enum { HELD_HERE = 1, HELD_ELSEWHERE, HELD_BY_OLDER };

static off_t live_byte(uint64_t owner) {
  return LIVE_BASE + (off_t)(((owner >> 32) << 16) | (owner & (TOKENS - 1)));
}

static int live_lock(int fd, uint64_t owner, short type, int cmd) {
  struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = live_byte(owner), .l_len = 1};
  return fcntl(fd, cmd, &fl) < 0 ? -1 : fl.l_type;
}

/* Whether the handle named by owner is still open somewhere (its byte
 * locked by another open file description).  Unsure: yes (TERN_EBUSY,
 * never a lock taken from a live writer). */
static int owner_alive(const tern_index *idx, uint64_t owner) {
  int type = live_lock(idx->lock_fd, owner, F_WRLCK, F_OFD_GETLK);
  return type != F_UNLCK;
}

/* Tokens of this process's handles: any one whose byte is free. */
static atomic_uint g_next_token;

int tern_write_lock_open(tern_index *idx) {
  assert(idx->lock_fd >= 0 && !idx->lock_word);
  struct stat st;
  if (fstat(idx->lock_fd, &st) < 0) return tern_fail_errno("write.lock");
  if (st.st_size < OWNER_PAGE && ftruncate(idx->lock_fd, OWNER_PAGE) < 0)
    return tern_fail_errno("write.lock: sizing its owner page");
  void *p = mmap(NULL, OWNER_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, idx->lock_fd, 0);
  if (p == MAP_FAILED) return tern_fail_errno("write.lock: mapping its owner page");
  uint64_t pid = (uint64_t)getpid();
  for (unsigned tries = 0; tries < TOKENS; tries++) {
    uint64_t token = 1 + atomic_fetch_add(&g_next_token, 1) % (TOKENS - 1);
    uint64_t owner = pid << 32 | token;
    if (live_lock(idx->lock_fd, owner, F_WRLCK, F_OFD_SETLK) >= 0) {
      idx->lock_word = p;
      idx->lock_owner = owner;
      return TERN_OK;
    }
    if (errno != EAGAIN && errno != EACCES) break; /* not "taken by another handle" */
  }
  int err = errno;
  munmap(p, OWNER_PAGE);
  errno = err;
  return tern_fail_errno("write.lock: locking this handle's byte");
}

void tern_write_lock_close(tern_index *idx) {
  if (!idx->lock_word) return;
  uint64_t mine = idx->lock_owner;
  (void)atomic_compare_exchange_strong(idx->lock_word, &mine, 0); /* never left held */
  munmap((void *)idx->lock_word, OWNER_PAGE);
  idx->lock_word = NULL;
}

/* Takes the owner word: TERN_OK, TERN_EBUSY with *who, or an flock error. */
static int owner_take(tern_index *idx, int *who) {
  if (!idx->lock_shared) {
    int rc;
    while ((rc = flock(idx->lock_fd, LOCK_SH | LOCK_NB)) < 0 && errno == EINTR) {
    }
    if (rc < 0 && errno == EWOULDBLOCK) {
      *who = HELD_BY_OLDER;
      return TERN_EBUSY;
    }
    if (rc < 0) return tern_fail_errno("flock write.lock");
    idx->lock_shared = 1;
  }
  for (int tries = 0; tries < 8; tries++) {
    uint64_t cur = 0;
    if (atomic_compare_exchange_strong(idx->lock_word, &cur, idx->lock_owner)) return TERN_OK;
    if (cur != idx->lock_owner && owner_alive(idx, cur)) {
      *who = cur >> 32 == idx->lock_owner >> 32 ? HELD_HERE : HELD_ELSEWHERE;
      return TERN_EBUSY;
    }
    /* Its holder is gone (or left this handle's own id: a process that
     * had this pid and token died holding it): taken over. */
    if (atomic_compare_exchange_strong(idx->lock_word, &cur, idx->lock_owner)) return TERN_OK;
  }
  *who = HELD_ELSEWHERE; /* changing hands under us all along */
  return TERN_EBUSY;
}

static void owner_give(tern_index *idx) {
  uint64_t mine = idx->lock_owner;
  int was_mine = atomic_compare_exchange_strong(idx->lock_word, &mine, 0);
  assert(was_mine); /* nobody takes a live handle's word */
  (void)was_mine;
}

int tern_write_lock_try_quiet(tern_index *idx) {
  int who;
  if (owner_take(idx, &who) == TERN_OK) return 1;
  tern_clear_error();
  return 0;
}

void tern_write_lock_give_quiet(tern_index *idx) { owner_give(idx); }

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

static int busy(const tern_index *idx, int who) {
  switch (who) {
  case HELD_HERE:
    return tern_fail(TERN_EBUSY,
                     "%s: another handle of this index in this process holds the write lock "
                     "(open an index once per process)",
                     idx->dir);
  case HELD_BY_OLDER:
    return tern_fail(TERN_EBUSY, "%s: another process (an older tern) holds the write lock",
                     idx->dir);
  default: return tern_fail(TERN_EBUSY, "%s: another process holds the write lock", idx->dir);
  }
}

/* One more holder of the write lock, taking the owner word when this
 * process holds it not yet (TERN_EBUSY with *who, or an flock error).
 * REQUIRES: mu held (the worker's last release lets the word go under mu
 * too). */
static int hold_locked(tern_index *idx, int *who) {
  assert(tern_mu_held(idx));
  if (!idx->write_holds) TERN_TRY(owner_take(idx, who));
  if (!idx->write_holds++) restore_current(idx);
  return TERN_OK;
}

int tern_writer_try_lock(tern_index *idx) {
  if (idx->flags & TERN_RDONLY)
    return tern_fail(TERN_EINVAL, "%s: index opened read-only", idx->dir);
  if (atomic_load(&idx->catalog_bad))
    return tern_fail(TERN_ECORRUPT, "%s/%s: catalog found damaged; nothing is written into it",
                     idx->dir, TERN_CATALOG_FILE);
  tern_mu_lock(idx);
  int was_writing = idx->writing;
  idx->writing = 1;
  int rc = TERN_OK, who = 0;
  if (!was_writing) rc = hold_locked(idx, &who);
  if (!was_writing && rc != TERN_OK) idx->writing = 0;
  tern_mu_unlock(idx);
  if (was_writing)
    return tern_fail(TERN_EBUSY, "%s: a write transaction is open in this process", idx->dir);
  return rc == TERN_EBUSY ? busy(idx, who) : rc;
}

void tern_write_lock_hold(tern_index *idx) {
  tern_mu_lock(idx);
  assert(idx->write_holds > 0); /* held already: one more holder */
  idx->write_holds++;
  tern_mu_unlock(idx);
}

int tern_write_lock_try_hold(tern_index *idx) {
  int who;
  tern_mu_lock(idx);
  int held = hold_locked(idx, &who) == TERN_OK;
  tern_mu_unlock(idx);
  if (!held) tern_clear_error(); /* busy elsewhere, or flock refused: not now */
  return held;
}

/* REQUIRES: mu held. */
static void write_lock_release_locked(tern_index *idx) {
  assert(tern_mu_held(idx));
  assert(idx->write_holds > 0);
  if (--idx->write_holds == 0) {
    keep_current(idx);
    idx->cur_seq = 0; /* before the lock goes: others may commit after */
    owner_give(idx);
  }
}

void tern_write_lock_release(tern_index *idx) {
  tern_mu_lock(idx);
  write_lock_release_locked(idx);
  tern_mu_unlock(idx);
}

void tern_txn_spare_free(tern_index *idx) {
  tern_txn_spare *s = &idx->txn_spare;
  free(s->txn);
  tern_arena_free(&s->arena);
  tern_big_free(s->ops, s->cap * sizeof *s->ops);
  memset(s, 0, sizeof *s);
}

void tern_writer_unlock_state(tern_index *idx, tern_state *st) {
  tern_mu_lock(idx); /* once: every transaction ends here */
  if (st) tern_state_put_locked(idx, st);
  write_lock_release_locked(idx);
  idx->writing = 0;
  tern_mu_unlock(idx);
}

void tern_writer_unlock(tern_index *idx) { tern_writer_unlock_state(idx, NULL); }
