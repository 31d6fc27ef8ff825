/*
 * writer.c — one writer per index: an in-process flag (threads) and an
 * exclusive flock(2) on DIR/write.lock (processes).  Both are tried, never
 * waited for: a second writer gets TERN_EBUSY at once.
 */
#include "engine/index.h"

#include "codec/status.h"

#include <errno.h>
#include <sys/file.h>

int tern_writer_lock(tern_index *idx) {
  if (idx->flags & TERN_RDONLY)
    return tern_fail(TERN_EINVAL, "%s: index opened read-only", idx->dir);
  if (atomic_load(&idx->catalog_bad))
    return tern_fail(TERN_ECORRUPT, "%s/%s: catalog found damaged; nothing is written into it",
                     idx->dir, TERN_CATALOG_FILE);
  pthread_mutex_lock(&idx->mu);
  int busy = idx->writing;
  idx->writing = 1;
  pthread_mutex_unlock(&idx->mu);
  if (busy)
    return tern_fail(TERN_EBUSY, "%s: a write transaction is open in this process", idx->dir);
  int rc;
  while ((rc = flock(idx->lock_fd, LOCK_EX | LOCK_NB)) < 0 && errno == EINTR) {
  }
  if (rc == 0) return TERN_OK;
  int err = errno;
  pthread_mutex_lock(&idx->mu);
  idx->writing = 0;
  pthread_mutex_unlock(&idx->mu);
  if (err == EWOULDBLOCK)
    return tern_fail(TERN_EBUSY, "%s: another process holds the write lock", idx->dir);
  errno = err;
  return tern_fail_errno("flock write.lock");
}

void tern_writer_unlock(tern_index *idx) {
  pthread_mutex_lock(&idx->mu);
  idx->handed_seq = 0; /* before the lock goes: others may commit after */
  pthread_mutex_unlock(&idx->mu);
  flock(idx->lock_fd, LOCK_UN);
  pthread_mutex_lock(&idx->mu);
  idx->writing = 0;
  pthread_mutex_unlock(&idx->mu);
}
