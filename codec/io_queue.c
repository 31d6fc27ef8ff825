/* SPDX-License-Identifier: MIT */
/*
 * io_queue.c — the read queue (io.h, "the read queue"): many reads in
 * flight at once.
 *
 * Why: a disk serves several reads at once (the reference machine's: 2,000
 * random 4 KiB reads take ~144 ms one at a time, ~31 ms with 32 in
 * flight), and a reader that waits for each read before asking the next
 * uses a fraction of it.  io_uring asks for all of them with one system
 * call.  Where io_uring is absent or refused (a kernel without it,
 * io_uring_disabled, seccomp in containers: ENOSYS or EPERM) a small pool
 * of threads calling pread gives the same overlap at a thread switch per
 * read; where threads cannot be made, the caller preads at submit time
 * (no overlap, same answers).
 *
 * Every backend's result passes through the table's read_done (so the
 * fault layer can fail or shorten any completion), then tern_rfile_finish:
 * a short read completed by pread, every page checked.  So an answer is
 * never built from bytes that were not read whole and checked.
 */
#include "codec/io.h"
#include "codec/io_internal.h"
#include "codec/status.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#ifdef TERN_HAVE_LIBURING
#include <liburing.h>
#endif

static _Atomic int queue_kind = TERN_RQ_AUTO;
void tern_io_set_queue_kind(tern_rq_kind kind) { atomic_store(&queue_kind, (int)kind); }

#define RQ_MAX_DEPTH 1024u
#define RQ_MAX_THREADS 16u /* a disk's parallelism is a few reads; more only switch */

typedef struct rq_slot {
  tern_rfile *f;
  uint64_t off, tag;
  size_t len;
  uint8_t *buf;
  ssize_t res;
  int busy;
} rq_slot;

/* A ring of slot numbers (at most depth of them at once). */
typedef struct rq_ring {
  unsigned *v, head, n, cap;
} rq_ring;

static void ring_push(rq_ring *r, unsigned x) { r->v[(r->head + r->n++) % r->cap] = x; }
static unsigned ring_pop(rq_ring *r) {
  unsigned x = r->v[r->head];
  r->head = (r->head + 1) % r->cap;
  r->n--;
  return x;
}

struct tern_rqueue {
  tern_rq_kind kind;
  tern_rq_kind asked;      /* the kind asked for at open (tern_io_set_queue_kind) */
  const tern_io_vfs *vfs;  /* the table in force at open */
  unsigned depth, inflight;
  rq_slot *slots;
  rq_ring done; /* threads and sync: finished slots, in completion order */
  /* threads: */
  rq_ring todo;
  pthread_t *threads;
  unsigned nthreads;
  int stop, locks; /* locks: mu, work and finished made */
  pthread_mutex_t mu;
  pthread_cond_t work, finished;
#ifdef TERN_HAVE_LIBURING
  struct io_uring ring;
  unsigned unsubmitted;
#endif
};

/* The pread a pool thread or the caller runs, EINTR retried. */
static ssize_t rq_pread(const rq_slot *s) {
  const uint8_t *mem = tern_rfile_borrowed(s->f);
  if (mem) {
    memcpy(s->buf, mem + s->off, s->len);
    return (ssize_t)s->len;
  }
  ssize_t n;
  do n = tern_io_vfs_now()->pread(tern_rfile_fd(s->f), s->buf, s->len, (off_t)s->off);
  while (n < 0 && errno == EINTR);
  return n < 0 ? -(errno ? errno : EIO) : n;
}

static void *rq_worker(void *arg) {
  tern_rqueue *q = arg;
  pthread_mutex_lock(&q->mu);
  for (;;) {
    while (!q->stop && q->todo.n == 0) pthread_cond_wait(&q->work, &q->mu);
    if (q->todo.n == 0) break; /* stopping, nothing left */
    unsigned i = ring_pop(&q->todo);
    pthread_mutex_unlock(&q->mu);
    ssize_t res = rq_pread(&q->slots[i]);
    pthread_mutex_lock(&q->mu);
    q->slots[i].res = res;
    ring_push(&q->done, i);
    pthread_cond_signal(&q->finished);
  }
  pthread_mutex_unlock(&q->mu);
  return NULL;
}

static int start_threads(tern_rqueue *q) {
  unsigned want = q->depth < RQ_MAX_THREADS ? q->depth : RQ_MAX_THREADS;
  q->threads = calloc(want, sizeof *q->threads);
  q->todo.v = calloc(q->depth, sizeof *q->todo.v);
  q->todo.cap = q->depth;
  if (!q->threads || !q->todo.v) return -1;
  if (pthread_mutex_init(&q->mu, NULL) != 0) return -1;
  if (pthread_cond_init(&q->work, NULL) != 0) {
    pthread_mutex_destroy(&q->mu);
    return -1;
  }
  if (pthread_cond_init(&q->finished, NULL) != 0) {
    pthread_cond_destroy(&q->work);
    pthread_mutex_destroy(&q->mu);
    return -1;
  }
  q->locks = 1;
  for (; q->nthreads < want; q->nthreads++)
    if (pthread_create(&q->threads[q->nthreads], NULL, rq_worker, q) != 0) break;
  return q->nthreads ? 0 : -1;
}

static void stop_threads(tern_rqueue *q) {
  if (!q->nthreads) return;
  pthread_mutex_lock(&q->mu);
  q->stop = 1;
  pthread_cond_broadcast(&q->work);
  pthread_mutex_unlock(&q->mu);
  for (unsigned i = 0; i < q->nthreads; i++) pthread_join(q->threads[i], NULL);
  q->nthreads = 0;
}

static void rq_free(tern_rqueue *q) {
  stop_threads(q);
  if (q->locks) {
    pthread_cond_destroy(&q->work);
    pthread_cond_destroy(&q->finished);
    pthread_mutex_destroy(&q->mu);
  }
#ifdef TERN_HAVE_LIBURING
  if (q->kind == TERN_RQ_URING) io_uring_queue_exit(&q->ring);
#endif
  free(q->threads);
  free(q->todo.v);
  free(q->done.v);
  free(q->slots);
  free(q);
}

/* The backends from `want` down: io_uring, threads, sync. */
static void pick_backend(tern_rqueue *q, tern_rq_kind want) {
  if (want == TERN_RQ_AUTO || want == TERN_RQ_URING) {
#ifdef TERN_HAVE_LIBURING
    if (tern_io_vfs_now()->uring_init(q->depth, &q->ring) == 0) {
      q->kind = TERN_RQ_URING;
      return;
    }
#endif
    want = TERN_RQ_THREADS;
  }
  if (want == TERN_RQ_THREADS) {
    if (start_threads(q) == 0) {
      q->kind = TERN_RQ_THREADS;
      return;
    }
    stop_threads(q);
  }
  q->kind = TERN_RQ_SYNC;
}

int tern_rqueue_open(tern_rqueue **out, unsigned depth) {
  *out = NULL;
  if (depth < 1 || depth > RQ_MAX_DEPTH) return tern_fail(TERN_EINVAL, "read queue: depth %u (1 to %u)", depth, RQ_MAX_DEPTH);
  tern_rqueue *q = calloc(1, sizeof *q);
  if (!q) return tern_fail(TERN_ENOMEM, "read queue: out of memory");
  q->depth = depth;
  q->kind = TERN_RQ_SYNC;
  q->slots = calloc(depth, sizeof *q->slots);
  q->done.v = calloc(depth, sizeof *q->done.v);
  q->done.cap = depth;
  if (!q->slots || !q->done.v) {
    rq_free(q);
    return tern_fail(TERN_ENOMEM, "read queue: out of memory");
  }
  q->asked = (tern_rq_kind)atomic_load(&queue_kind);
  q->vfs = tern_io_vfs_now();
  pick_backend(q, q->asked);
  *out = q;
  return TERN_OK;
}

tern_rq_kind tern_rqueue_kind(const tern_rqueue *q) { return q->kind; }

int tern_rqueue_reusable(const tern_rqueue *q, unsigned depth) {
  return q->inflight == 0 && q->depth >= depth &&
         q->asked == (tern_rq_kind)atomic_load(&queue_kind) && q->vfs == tern_io_vfs_now();
}
unsigned tern_rqueue_depth(const tern_rqueue *q) { return q->depth; }
unsigned tern_rqueue_inflight(const tern_rqueue *q) { return q->inflight; }

static unsigned free_slot(const tern_rqueue *q) {
  for (unsigned i = 0; i < q->depth; i++)
    if (!q->slots[i].busy) return i;
  return q->depth;
}

int tern_rqueue_submit(tern_rqueue *q, tern_rfile *f, uint64_t off, size_t len, void *buf,
                       uint64_t tag) {
  uint64_t size = tern_rfile_size(f);
  if (off % TERN_IO_PAGE || len == 0 || (len % TERN_IO_PAGE && off + len != size))
    return tern_fail(TERN_EINVAL, "%s: queued read of %zu bytes at %llu: not whole pages",
                     tern_rfile_path(f), len, (unsigned long long)off);
  if (off > size || len > size - off)
    return tern_fail(TERN_ECORRUPT, "%s: read of %zu bytes at %llu past the end (%llu bytes): truncated?",
                     tern_rfile_path(f), len, (unsigned long long)off, (unsigned long long)size);
  if (q->inflight == q->depth) return tern_fail(TERN_EBUSY, "read queue full (%u reads)", q->depth);
  unsigned i = free_slot(q);
  rq_slot *s = &q->slots[i];
  *s = (rq_slot){.f = f, .off = off, .tag = tag, .len = len, .buf = buf, .busy = 1};
  tern_rfile_count(f, len);
  q->inflight++;
#ifdef TERN_HAVE_LIBURING
  if (q->kind == TERN_RQ_URING && !tern_rfile_borrowed(f)) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);
    if (!sqe) { /* never with depth entries; answered by pread if it were */
      s->res = rq_pread(s);
      ring_push(&q->done, i);
      return TERN_OK;
    }
    io_uring_prep_read(sqe, tern_rfile_fd(f), buf, (unsigned)len, off);
    io_uring_sqe_set_data64(sqe, i);
    q->unsubmitted++;
    return TERN_OK;
  }
#endif
  if (q->kind == TERN_RQ_THREADS && !tern_rfile_borrowed(f)) {
    pthread_mutex_lock(&q->mu);
    ring_push(&q->todo, i);
    pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->mu);
    return TERN_OK;
  }
  s->res = rq_pread(s);
  if (q->kind == TERN_RQ_THREADS) pthread_mutex_lock(&q->mu);
  ring_push(&q->done, i);
  if (q->kind == TERN_RQ_THREADS) pthread_mutex_unlock(&q->mu);
  return TERN_OK;
}

void tern_rqueue_flush(tern_rqueue *q) {
#ifdef TERN_HAVE_LIBURING
  if (q->kind == TERN_RQ_URING && q->unsubmitted) {
    int rc = io_uring_submit(&q->ring);
    if (rc >= 0) q->unsubmitted = (unsigned)rc >= q->unsubmitted ? 0 : q->unsubmitted - (unsigned)rc;
  }
#else
  (void)q;
#endif
}

/* The next finished slot, waiting for one: its number, or -errno. */
static long next_done(tern_rqueue *q) {
  if (q->kind == TERN_RQ_THREADS) {
    pthread_mutex_lock(&q->mu);
    while (q->done.n == 0) pthread_cond_wait(&q->finished, &q->mu);
    unsigned i = ring_pop(&q->done);
    pthread_mutex_unlock(&q->mu);
    return i;
  }
  if (q->done.n) return ring_pop(&q->done);
#ifdef TERN_HAVE_LIBURING
  if (q->kind == TERN_RQ_URING) {
    struct io_uring_cqe *cqe = NULL;
    for (;;) {
      int rc = q->unsubmitted ? io_uring_submit_and_wait(&q->ring, 1) : io_uring_wait_cqe(&q->ring, &cqe);
      if (rc >= 0 && q->unsubmitted) {
        q->unsubmitted = 0;
        rc = io_uring_peek_cqe(&q->ring, &cqe);
        if (rc == -EAGAIN) continue;
      }
      if (rc == -EINTR || rc == -EAGAIN) continue;
      if (rc < 0) return rc;
      break;
    }
    /* Every completion in the ring taken now, the one waited for first
     * (the ring is shared memory: no system call): the next waits pop
     * the others, and the reads submitted meanwhile go in together with
     * the next wait's io_uring_enter instead of one each (a cold batch
     * made one enter a read, ~15 us each on a virtual machine). */
    while (io_uring_peek_cqe(&q->ring, &cqe) == 0) {
      unsigned j = (unsigned)io_uring_cqe_get_data64(cqe);
      q->slots[j].res = cqe->res;
      io_uring_cqe_seen(&q->ring, cqe);
      ring_push(&q->done, j);
    }
    return ring_pop(&q->done);
  }
#endif
  return -EIO; /* unreachable: a sync queue's reads are all done */
}

int tern_rqueue_wait(tern_rqueue *q, uint64_t *tag) {
  if (q->inflight == 0) return TERN_NOTFOUND;
  long i = next_done(q);
  if (i < 0) {
    errno = (int)-i;
    return tern_fail_errno("read queue");
  }
  rq_slot *s = &q->slots[i];
  ssize_t res = tern_io_vfs_now()->read_done(tern_rfile_fd(s->f), s->buf, s->len, (off_t)s->off, s->res);
  int rc = tern_rfile_finish(s->f, s->off, s->len, s->buf, res);
  *tag = s->tag;
  s->busy = 0;
  q->inflight--;
  return rc;
}

void tern_rqueue_close(tern_rqueue *q) {
  if (!q) return;
  while (q->inflight) {
    long i = next_done(q);
    if (i < 0) break; /* the ring goes with its reads below */
    q->slots[i].busy = 0;
    q->inflight--;
  }
  rq_free(q);
}

/* ------------------------------------------------ a whole file, in order */

/* The next range of unchecked pages from page *p on, at most
 * TERN_RQ_LOAD_MAX bytes (checked pages inside it are read again: one
 * long read costs less than two); 0 when none is left. */
static size_t next_unchecked(const tern_rfile *f, uint64_t *p, uint64_t npages) {
  while (*p < npages && tern_rfile_page_checked(f, *p * TERN_IO_PAGE)) (*p)++;
  if (*p >= npages) return 0;
  uint64_t size = tern_rfile_size(f), off = *p * TERN_IO_PAGE;
  uint64_t len = size - off < TERN_RQ_LOAD_MAX ? size - off : TERN_RQ_LOAD_MAX;
  return (size_t)len;
}

int tern_rfile_load(tern_rfile *f, unsigned depth) {
  uint64_t npages = tern_io_npages(tern_rfile_size(f)), p = 0;
  tern_rqueue *q;
  TERN_TRY(tern_rqueue_open(&q, depth));
  uint8_t *bufs = malloc((size_t)depth * TERN_RQ_LOAD_MAX);
  unsigned *free_bufs = malloc(depth * sizeof *free_bufs), nfree = depth;
  int rc = bufs && free_bufs ? TERN_OK : tern_fail(TERN_ENOMEM, "%s: out of memory", tern_rfile_path(f));
  for (unsigned i = 0; free_bufs && i < depth; i++) free_bufs[i] = i;
  while (rc == TERN_OK) {
    size_t len;
    while (rc == TERN_OK && nfree && (len = next_unchecked(f, &p, npages)) != 0) {
      unsigned b = free_bufs[--nfree];
      rc = tern_rqueue_submit(q, f, p * TERN_IO_PAGE, len, bufs + (size_t)b * TERN_RQ_LOAD_MAX, b);
      p += len / TERN_IO_PAGE + (len % TERN_IO_PAGE != 0);
    }
    uint64_t tag;
    if (rc != TERN_OK || (rc = tern_rqueue_wait(q, &tag)) == TERN_NOTFOUND) break;
    free_bufs[nfree++] = (unsigned)tag;
  }
  tern_rqueue_close(q); /* waits for the reads in flight: then their buffers go */
  free(bufs);
  free(free_bufs);
  return rc == TERN_NOTFOUND ? TERN_OK : rc;
}
