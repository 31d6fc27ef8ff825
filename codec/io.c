/* SPDX-License-Identifier: MIT */
/*
 * io.c — the counted file layer (see io.h).
 *
 * Why both mmap and pread: a warm lookup must not pay a system call (a
 * pread of 4 KiB costs about as much as the whole in-memory lookup), so
 * reads default to a mapping; but a page fault costs more than a pread of
 * the same cold page, so a mapped file reads a page's first touch (the read
 * that checks its checksum) with pread, and later reads through the
 * mapping (docs/ARCHITECTURE.md, "The open mode").  Plain pread remains
 * for callers that want copies.  Both count the same logical reads.  The
 * mapping is advised MADV_RANDOM and the file POSIX_FADV_RANDOM (when over
 * one page), so a cold read fetches one page instead of the device's
 * readahead window.
 */
#include "codec/io.h"
#include "codec/io_internal.h"

#include "codec/bytebuf.h"
#include "codec/coding.h"
#include "codec/status.h"

#include <assert.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

/* ------------------------------------------------------------- the VFS */

static int sys_open(const char *path, int flags, unsigned mode) { return open(path, flags, (mode_t)mode); }
static void *sys_mmap(size_t len, int fd) { return mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0); }
static int sys_fsync(int fd, int data) { return data ? fdatasync(fd) : fsync(fd); }

#ifdef TERN_HAVE_LIBURING
#include <liburing.h>
int tern_io_uring_init(unsigned entries, void *ring) {
  return io_uring_queue_init(entries, (struct io_uring *)ring, 0);
}
#else
int tern_io_uring_init(unsigned entries, void *ring) {
  (void)entries;
  (void)ring;
  return -ENOSYS;
}
#endif
static ssize_t sys_read_done(int fd, void *buf, size_t len, off_t off, ssize_t res) {
  (void)fd, (void)buf, (void)len, (void)off;
  return res;
}

static const tern_io_vfs system_vfs = {
    .open = sys_open,
    .close = close,
    .fstat = fstat,
    .pread = pread,
    .write = write,
    .fsync = sys_fsync,
    .rename = rename,
    .unlink = unlink,
    .mmap = sys_mmap,
    .munmap = munmap,
    .ftruncate = ftruncate,
    .uring_init = tern_io_uring_init,
    .read_done = sys_read_done,
};

static const tern_io_vfs *_Atomic vfs = &system_vfs;

const tern_io_vfs *tern_io_system_vfs(void) { return &system_vfs; }
void tern_io_set_vfs(const tern_io_vfs *v) { atomic_store(&vfs, v ? v : &system_vfs); }
static const tern_io_vfs *V(void) { return atomic_load_explicit(&vfs, memory_order_relaxed); }

/* The table with its read-queue calls filled in: a table written before
 * they existed (NULL there) gets the system's. */
static _Thread_local tern_io_vfs vfs_now;
const tern_io_vfs *tern_io_vfs_now(void) {
  const tern_io_vfs *v = V();
  if (v->uring_init && v->read_done) return v;
  vfs_now = *v;
  if (!vfs_now.uring_init) vfs_now.uring_init = tern_io_uring_init;
  if (!vfs_now.read_done) vfs_now.read_done = sys_read_done;
  return &vfs_now;
}

int tern_io_unlink(const char *path) {
  if (V()->unlink(path) == 0 || errno == ENOENT) return TERN_OK;
  return tern_fail_errno(path);
}

/* ------------------------------------------------------- page checksums */

static _Atomic int read_checks = 1;
void tern_io_set_read_checks(int on) { atomic_store(&read_checks, on != 0); }

/* Pages checked and reads that had to check a page first, process-wide:
 * both on the first-touch path only (rare), so one shared atomic each. */
static atomic_ulong pages_checked, first_touch_reads;
void tern_io_check_counts(uint64_t *checked, uint64_t *first_touch) {
  *checked = atomic_load_explicit(&pages_checked, memory_order_relaxed);
  *first_touch = atomic_load_explicit(&first_touch_reads, memory_order_relaxed);
}

/* Mapped files: the first read of a page (its check) by pread (1), or by
 * faulting it in through the mapping (0); see tern_rfile_read. */
static _Atomic int first_touch_pread = 1;
void tern_io_set_first_touch_pread(int on) { atomic_store(&first_touch_pread, on != 0); }

uint32_t tern_io_page_sum(const uint8_t *page, size_t len, uint64_t seed, uint64_t pageno) {
  return (uint32_t)XXH3_64bits_withSeed(page, len, seed + pageno);
}

uint64_t tern_io_npages(uint64_t size) { return (size + TERN_IO_PAGE - 1) / TERN_IO_PAGE; }

/* A file's read counters, striped: each thread adds to its own stripe (by
 * a number it takes once), each stripe on its own cache line, so threads
 * reading one file do not pass a counter's line between them on every
 * read, and the line the reads' fields sit in (fd, map, size, checks) is
 * never written.  A count is the sum of the stripes: exact, as every add
 * is atomic. */
#define IO_STRIPES 8
typedef struct io_stripe {
  _Alignas(64) _Atomic uint64_t reads;
  _Atomic uint64_t bytes;
} io_stripe;

/* This thread's stripe, taken round robin on its first read (TERN_TLS_IE:
 * a read pays no __tls_get_addr call). */
static _Thread_local unsigned my_stripe TERN_TLS_IE;
static _Atomic unsigned next_stripe;

static inline io_stripe *stripe_of(io_stripe *s) {
  unsigned i = my_stripe;
  if (TERN_UNLIKELY(i == 0)) {
    i = 1 + atomic_fetch_add_explicit(&next_stripe, 1, memory_order_relaxed) % IO_STRIPES;
    my_stripe = i;
  }
  return &s[i - 1];
}

struct tern_rfile {
  int fd;
  tern_io_mode mode;
  uint64_t size;
  uint8_t *map; /* mmap mode, NULL for an empty file */
  io_stripe count[IO_STRIPES];
  /* The process-wide totals (tern_io_global_stats) are not counted apart:
   * they are the sum over open files of (reads - gbase_reads) plus what
   * closed files counted, so a read pays the file's two atomic adds and no
   * more.  Under stats_mu: */
  uint64_t gbase_reads, gbase_bytes; /* counted before the last global reset */
  struct tern_rfile *prev, *next;    /* the open files */
  /* page checksums: checked is NULL when there are none */
  const uint8_t *sums; /* npages u32 LE, owned by the caller; NULL: in the pages' trailers */
  uint64_t seed;
  _Atomic uint64_t *checked; /* bit p: page p verified by this process */
  _Atomic uint64_t checked_any; /* nonzero once a bit of `checked` was set (0 again: dropped) */
  int borrowed;              /* tern_rfile_open_memory: map is the caller's */
  char path[];
};

/* The open files and what closed ones counted since the last global
 * reset (see the fields above).  Taken by open, close and the stats
 * functions, never by a read. */
static pthread_mutex_t stats_mu = PTHREAD_MUTEX_INITIALIZER;
static tern_rfile *open_files;
static uint64_t closed_reads, closed_bytes;

/* A zeroed reader named `path`, aligned for its counter stripes. */
static tern_rfile *rfile_alloc(const char *path) {
  size_t plen = strlen(path) + 1, size = (sizeof(tern_rfile) + plen + 63) / 64 * 64;
  tern_rfile *f = aligned_alloc(_Alignof(tern_rfile), size);
  if (!f) return NULL;
  memset(f, 0, size);
  memcpy(f->path, path, plen);
  return f;
}

/* The file's counts: the sums of its stripes. */
static void file_counts(const tern_rfile *f, uint64_t *reads, uint64_t *bytes) {
  uint64_t r = 0, b = 0;
  for (int i = 0; i < IO_STRIPES; i++) {
    r += atomic_load_explicit(&f->count[i].reads, memory_order_relaxed);
    b += atomic_load_explicit(&f->count[i].bytes, memory_order_relaxed);
  }
  *reads = r;
  *bytes = b;
}

static void stats_join(tern_rfile *f) {
  pthread_mutex_lock(&stats_mu);
  f->next = open_files;
  if (open_files) open_files->prev = f;
  open_files = f;
  pthread_mutex_unlock(&stats_mu);
}

/* Takes f's counts out of the files list into the closed totals. */
static void stats_leave(tern_rfile *f) {
  pthread_mutex_lock(&stats_mu);
  uint64_t r, b;
  file_counts(f, &r, &b);
  closed_reads += r - f->gbase_reads;
  closed_bytes += b - f->gbase_bytes;
  if (f->prev) f->prev->next = f->next;
  else open_files = f->next;
  if (f->next) f->next->prev = f->prev;
  pthread_mutex_unlock(&stats_mu);
}

/* `random`: advised MADV_RANDOM (where there is more than a page), so
 * that a fault reads its page alone. */
static int map_file(tern_rfile *f, int random) {
  void *m = V()->mmap((size_t)f->size, f->fd);
  if (m == MAP_FAILED) return tern_fail_errno(f->path);
  if (random && f->size > TERN_IO_PAGE) (void)madvise(m, (size_t)f->size, MADV_RANDOM);
  f->map = m;
  return TERN_OK;
}

/* `advise`: read-ahead advice (random reads) where the file has more than
 * one page to read ahead; none for a file read whole, once. */
static int rfile_open(tern_rfile **out, const char *path, tern_io_mode mode, int advise) {
  *out = NULL;
  if (mode != TERN_IO_MMAP && mode != TERN_IO_PREAD) return tern_fail(TERN_EINVAL, "%s: bad io mode", path);
  tern_rfile *f = rfile_alloc(path);
  if (!f) return tern_fail(TERN_ENOMEM, "%s: out of memory", path);
  f->mode = mode;
  /* O_NONBLOCK: a FIFO in a file's place must not hang the open. */
  f->fd = V()->open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0);
  if (f->fd < 0) {
    int rc = tern_fail_errno(path);
    free(f);
    return rc;
  }
  struct stat st;
  if (V()->fstat(f->fd, &st) != 0) goto fail;
  if (!S_ISREG(st.st_mode)) {
    V()->close(f->fd);
    free(f);
    return tern_fail(TERN_ECORRUPT, "%s: not a regular file", path);
  }
  f->size = (uint64_t)st.st_size;
  /* Read-ahead advice only where there is more than one page to read
   * ahead: a fresh open skips two system calls per small file. */
  if (advise && f->size > TERN_IO_PAGE) (void)posix_fadvise(f->fd, 0, 0, POSIX_FADV_RANDOM);
  if (mode == TERN_IO_MMAP && f->size > 0) {
    int rc = map_file(f, advise);
    if (rc != TERN_OK) {
      V()->close(f->fd);
      free(f);
      return rc;
    }
  }
  stats_join(f);
  *out = f;
  return TERN_OK;
fail:;
  int rc = tern_fail_errno(path);
  V()->close(f->fd);
  free(f);
  return rc;
}

int tern_rfile_open(tern_rfile **out, const char *path, tern_io_mode mode) {
  return rfile_open(out, path, mode, 1);
}

int tern_rfile_open_whole(tern_rfile **out, const char *path) {
  return rfile_open(out, path, TERN_IO_PREAD, 0);
}

int tern_rfile_open_whole_mapped(tern_rfile **out, const char *path) {
  TERN_TRY(rfile_open(out, path, TERN_IO_MMAP, 0));
  tern_rfile *f = *out;
  if (f->map) { /* the mapping outlives the descriptor: none held for it */
    V()->close(f->fd);
    f->fd = -1;
  }
  return TERN_OK;
}

int tern_rfile_map_now(tern_rfile *f) {
  assert(f->mode == TERN_IO_PREAD && !f->map && !f->borrowed);
  if (f->size > 0) TERN_TRY(map_file(f, 1));
  f->mode = TERN_IO_MMAP;
  return TERN_OK;
}

int tern_rfile_open_memory(tern_rfile **out, const uint8_t *buf, size_t len, const char *name) {
  tern_rfile *f = rfile_alloc(name);
  if (!f) return tern_fail(TERN_ENOMEM, "%s: out of memory", name);
  f->fd = -1;
  f->mode = TERN_IO_MMAP;
  f->size = len;
  f->map = (uint8_t *)(uintptr_t)buf; /* never written through */
  f->borrowed = 1;
  stats_join(f);
  *out = f;
  return TERN_OK;
}

void tern_rfile_close(tern_rfile *f) {
  if (!f) return;
  stats_leave(f);
  if (f->borrowed) {
    free(f->checked);
    free(f);
    return;
  }
  if (f->map) V()->munmap(f->map, (size_t)f->size);
  if (f->fd >= 0) V()->close(f->fd);
  free(f->checked);
  free(f);
}

/* Turns the checks on, with the sums in `sums` or (NULL) in the trailers. */
static int set_checks(tern_rfile *f, const uint8_t *sums, uint64_t seed) {
  uint64_t words = (tern_io_npages(f->size) + 63) / 64;
  _Atomic uint64_t *bits = calloc(words ? words : 1, sizeof *bits);
  if (!bits) return tern_fail(TERN_ENOMEM, "%s: out of memory", f->path);
  free(f->checked);
  f->checked = bits;
  f->sums = sums;
  f->seed = seed;
  return TERN_OK;
}

int tern_rfile_set_page_sums(tern_rfile *f, const uint8_t *sums, uint64_t seed) {
  if (!sums) return tern_fail(TERN_EINVAL, "%s: no page checksums", f->path);
  return set_checks(f, sums, seed);
}

int tern_rfile_set_page_trailers(tern_rfile *f, uint64_t seed) { return set_checks(f, NULL, seed); }

static int page_checked(const tern_rfile *f, uint64_t p) {
  return (atomic_load_explicit(&f->checked[p / 64], memory_order_acquire) >> (p % 64)) & 1;
}

static size_t page_len(const tern_rfile *f, uint64_t p) {
  uint64_t start = p * TERN_IO_PAGE;
  return (size_t)(f->size - start < TERN_IO_PAGE ? f->size - start : TERN_IO_PAGE);
}

/* Checks page p, whose bytes are at `bytes`, and remembers it when sound.
 * A short last page of a file whose pages carry trailers has none: only
 * the frame footer, which verify checks with the whole file's XXH3. */
static int check_page(tern_rfile *f, uint64_t p, const uint8_t *bytes) {
  size_t len = page_len(f, p);
  uint32_t want = 0, got = 0;
  if (f->sums) {
    want = tern_load32(f->sums + 4 * p);
    got = tern_io_page_sum(bytes, len, f->seed, p);
  } else if (len == TERN_IO_PAGE) {
    want = tern_load32(bytes + TERN_IO_PAGE_DATA);
    got = tern_io_page_sum(bytes, TERN_IO_PAGE_DATA, f->seed, p);
  }
  if (got != want)
    return tern_fail(TERN_ECORRUPT,
                     "%s: checksum mismatch in the page at offset %llu (stored %08x, computed %08x)",
                     f->path, (unsigned long long)(p * TERN_IO_PAGE), want, got);
  atomic_fetch_or_explicit(&f->checked[p / 64], 1ull << (p % 64), memory_order_release);
  if (!atomic_load_explicit(&f->checked_any, memory_order_relaxed))
    atomic_store_explicit(&f->checked_any, 1, memory_order_release);
  atomic_fetch_add_explicit(&pages_checked, 1, memory_order_relaxed);
  return TERN_OK;
}

/* Pages [first, last] of a read; 0 when nothing is to be checked. */
static inline int read_pages(const tern_rfile *f, uint64_t off, size_t len, uint64_t *first,
                             uint64_t *last) {
  if (!f->checked || len == 0 || !atomic_load_explicit(&read_checks, memory_order_relaxed))
    return 0;
  *first = off / TERN_IO_PAGE;
  *last = (off + len - 1) / TERN_IO_PAGE;
  for (uint64_t p = *first; p <= *last; p++)
    if (!page_checked(f, p)) return 1;
  return 0;
}

static int check_mapped(tern_rfile *f, uint64_t first, uint64_t last) {
  for (uint64_t p = first; p <= last; p++)
    if (!page_checked(f, p)) TERN_TRY(check_page(f, p, f->map + p * TERN_IO_PAGE));
  return TERN_OK;
}

uint64_t tern_rfile_size(const tern_rfile *f) { return f->size; }
const uint8_t *tern_rfile_map(const tern_rfile *f) { return f->map; }

int tern_rfile_page_checked(const tern_rfile *f, uint64_t off) {
  return f->checked && off < f->size && page_checked(f, off / TERN_IO_PAGE);
}

const _Atomic uint64_t *tern_rfile_checked_any(const tern_rfile *f) { return &f->checked_any; }

const _Atomic uint64_t *tern_rfile_checked_bits(const tern_rfile *f, uint64_t *npages) {
  *npages = f->checked ? tern_io_npages(f->size) : 0;
  return f->checked;
}

static int resident(const tern_rfile *f, uint64_t p) {
  unsigned char v = 0;
  if (mincore(f->map + p * TERN_IO_PAGE, 1, &v) != 0) return 0; /* unknown: as if not */
  return v & 1;
}

int tern_rfile_check_cached(tern_rfile *f, uint64_t off) {
  if (!f->map || !f->checked || off >= f->size) return 0;
  uint64_t p = off / TERN_IO_PAGE;
  if (page_checked(f, p)) return 1;
  if (!resident(f, p)) return 0;
  TERN_TRY(check_page(f, p, f->map + p * TERN_IO_PAGE));
  return 1;
}

void tern_rfile_will_need(const tern_rfile *f, uint64_t off) {
  if (!f->map || off >= f->size) return;
  uint64_t start = off / TERN_IO_PAGE * TERN_IO_PAGE;
  (void)madvise(f->map + start, page_len(f, start / TERN_IO_PAGE), MADV_WILLNEED);
}
void tern_rfile_prefetch(const tern_rfile *f, uint64_t off, uint64_t len) {
  if (f->borrowed || off >= f->size) return;
  if (len > f->size - off) len = f->size - off;
  (void)posix_fadvise(f->fd, (off_t)off, (off_t)len, POSIX_FADV_WILLNEED);
}

const char *tern_rfile_path(const tern_rfile *f) { return f->path; }
tern_io_mode tern_rfile_mode(const tern_rfile *f) { return f->mode; }

static inline void count_read(tern_rfile *f, size_t len) {
  io_stripe *s = stripe_of(f->count);
  atomic_fetch_add_explicit(&s->reads, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&s->bytes, len, memory_order_relaxed);
}

static int pread_all(tern_rfile *f, uint8_t *dst, size_t len, uint64_t off) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = V()->pread(f->fd, dst + done, len - done, (off_t)(off + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return tern_fail_errno(f->path);
    }
    if (n == 0)
      return tern_fail(TERN_ECORRUPT, "%s: file shrank while reading at %llu", f->path,
                       (unsigned long long)(off + done));
    done += (size_t)n;
  }
  return TERN_OK;
}

/* pread mode, a read touching pages not yet checked: one pread of the whole
 * pages, checked, then the asked bytes copied out. */
static int pread_checked(tern_rfile *f, uint64_t off, size_t len, uint8_t *dst, uint64_t first,
                         uint64_t last) {
  uint64_t start = first * TERN_IO_PAGE, end = last * TERN_IO_PAGE + page_len(f, last);
  /* Whole pages asked (a terms block): read them in place. */
  int exact = off == start && len == end - start;
  uint8_t *buf = exact ? dst : malloc((size_t)(end - start));
  if (!buf) return tern_fail(TERN_ENOMEM, "%s: out of memory", f->path);
  int rc = pread_all(f, buf, (size_t)(end - start), start);
  for (uint64_t p = first; rc == TERN_OK && p <= last; p++)
    if (!page_checked(f, p)) rc = check_page(f, p, buf + (p - first) * TERN_IO_PAGE);
  if (!exact) {
    if (rc == TERN_OK) memcpy(dst, buf + (off - start), len);
    free(buf);
  }
  return rc;
}

static int past_end(const tern_rfile *f, uint64_t off, size_t len) {
  return tern_fail(TERN_ECORRUPT, "%s: read of %zu bytes at %llu past the end (%llu bytes): truncated?",
                   f->path, len, (unsigned long long)off, (unsigned long long)f->size);
}

int tern_rfile_read_mapped(tern_rfile *f, uint64_t off, size_t len, const uint8_t **out) {
  if (off > f->size || len > f->size - off) return past_end(f, off, len);
  uint64_t first, last;
  if (!f->map || read_pages(f, off, len, &first, &last)) return 1;
  count_read(f, len);
  *out = f->map + off;
  return TERN_OK;
}

int tern_rfile_read(tern_rfile *f, uint64_t off, size_t len, void *scratch, const uint8_t **out) {
  if (off > f->size || len > f->size - off) return past_end(f, off, len);
  count_read(f, len);
  uint64_t first, last;
  int check = read_pages(f, off, len, &first, &last);
  if (TERN_UNLIKELY(check)) atomic_fetch_add_explicit(&first_touch_reads, 1, memory_order_relaxed);
  if (f->mode == TERN_IO_MMAP) {
    if (TERN_UNLIKELY(check)) {
      /* First touch: a pread costs less than the page fault that would
       * bring the page in (docs/ARCHITECTURE.md, "The open mode"); the
       * page is in the page cache afterwards, so the next read through
       * the mapping costs a minor fault once, then nothing. */
      if (scratch && atomic_load_explicit(&first_touch_pread, memory_order_relaxed)) {
        TERN_TRY(pread_checked(f, off, len, scratch, first, last));
        *out = scratch;
        return TERN_OK;
      }
      TERN_TRY(check_mapped(f, first, last));
    }
    *out = len ? f->map + off : (const uint8_t *)scratch;
    return TERN_OK;
  }
  if (TERN_UNLIKELY(check)) TERN_TRY(pread_checked(f, off, len, scratch, first, last));
  else TERN_TRY(pread_all(f, scratch, len, off));
  *out = scratch;
  return TERN_OK;
}

/* ------------------------------------------------- for the read queue */

int tern_rfile_fd(const tern_rfile *f) { return f->fd; }
const uint8_t *tern_rfile_borrowed(const tern_rfile *f) { return f->borrowed ? f->map : NULL; }
void tern_rfile_count(tern_rfile *f, size_t len) { count_read(f, len); }

int tern_rfile_finish(tern_rfile *f, uint64_t off, size_t len, uint8_t *buf, ssize_t got) {
  if (got < 0) {
    errno = (int)-got;
    return tern_fail_errno(f->path);
  }
  if ((size_t)got > len) got = (ssize_t)len;
  /* A short completion (a signal, the kernel's choice, or a fault): the
   * rest by pread, which also tells a file that shrank. */
  if ((size_t)got < len) TERN_TRY(pread_all(f, buf + got, len - (size_t)got, off + (uint64_t)got));
  if (!f->checked || len == 0 || !atomic_load_explicit(&read_checks, memory_order_relaxed))
    return TERN_OK;
  uint64_t first = off / TERN_IO_PAGE, last = (off + len - 1) / TERN_IO_PAGE;
  for (uint64_t p = first; p <= last; p++)
    if (!page_checked(f, p)) TERN_TRY(check_page(f, p, buf + (p - first) * TERN_IO_PAGE));
  return TERN_OK;
}

int tern_rfile_check_pages(tern_rfile *f) {
  if (!f->checked) return TERN_OK;
  enum { CHUNK = 64 };
  uint8_t *buf = malloc(CHUNK * TERN_IO_PAGE);
  if (!buf) return tern_fail(TERN_ENOMEM, "%s: out of memory", f->path);
  int rc = TERN_OK;
  uint64_t n = tern_io_npages(f->size);
  for (uint64_t p = 0; rc == TERN_OK && p < n; p += CHUNK) {
    uint64_t k = n - p < CHUNK ? n - p : CHUNK;
    uint64_t start = p * TERN_IO_PAGE;
    size_t len = (size_t)((p + k - 1) * TERN_IO_PAGE + page_len(f, p + k - 1) - start);
    if (f->mode == TERN_IO_MMAP) {
      memcpy(buf, f->map + start, len);
    } else {
      rc = pread_all(f, buf, len, start);
    }
    for (uint64_t i = 0; rc == TERN_OK && i < k; i++) rc = check_page(f, p + i, buf + i * TERN_IO_PAGE);
  }
  free(buf);
  return rc;
}

void tern_rfile_stats(const tern_rfile *f, tern_io_stats *out) {
  file_counts(f, &out->reads, &out->bytes);
}

/* The file's counts since the last global reset move to the closed totals
 * as its counters restart from 0; a read counted meanwhile lands on the new
 * count (the exchange), so neither total loses or doubles it. */
void tern_rfile_reset_stats(tern_rfile *f) {
  pthread_mutex_lock(&stats_mu);
  uint64_t r = 0, b = 0;
  for (int i = 0; i < IO_STRIPES; i++) {
    r += atomic_exchange_explicit(&f->count[i].reads, 0, memory_order_relaxed);
    b += atomic_exchange_explicit(&f->count[i].bytes, 0, memory_order_relaxed);
  }
  closed_reads += r - f->gbase_reads;
  closed_bytes += b - f->gbase_bytes;
  f->gbase_reads = f->gbase_bytes = 0;
  pthread_mutex_unlock(&stats_mu);
}

void tern_io_global_stats(tern_io_stats *out) {
  pthread_mutex_lock(&stats_mu);
  uint64_t r = closed_reads, b = closed_bytes;
  for (const tern_rfile *f = open_files; f; f = f->next) {
    uint64_t fr, fb;
    file_counts(f, &fr, &fb);
    r += fr - f->gbase_reads;
    b += fb - f->gbase_bytes;
  }
  pthread_mutex_unlock(&stats_mu);
  out->reads = r;
  out->bytes = b;
}

void tern_io_reset_global_stats(void) {
  pthread_mutex_lock(&stats_mu);
  closed_reads = closed_bytes = 0;
  for (tern_rfile *f = open_files; f; f = f->next) file_counts(f, &f->gbase_reads, &f->gbase_bytes);
  pthread_mutex_unlock(&stats_mu);
}

int tern_rfile_evict(tern_rfile *f) {
  if (f->borrowed) return TERN_OK;
  /* Our own mapping keeps pages referenced: MADV_DONTNEED drops them from
   * it first (the mapping stays; later reads fault the pages in again),
   * then POSIX_FADV_DONTNEED can free them from the page cache. */
  if (f->map) {
    if (madvise(f->map, (size_t)f->size, MADV_DONTNEED) != 0) return tern_fail_errno(f->path);
  }
  int rc = posix_fadvise(f->fd, 0, 0, POSIX_FADV_DONTNEED);
  if (rc != 0) {
    errno = rc;
    return tern_fail_errno(f->path);
  }
  (void)posix_fadvise(f->fd, 0, 0, POSIX_FADV_RANDOM);
  /* A cold process has verified nothing yet: neither have we, now. */
  if (f->checked) {
    uint64_t words = (tern_io_npages(f->size) + 63) / 64;
    for (uint64_t i = 0; i < words; i++) atomic_store(&f->checked[i], 0);
    atomic_store(&f->checked_any, 0);
  }
  return TERN_OK;
}

int tern_io_evict_path(const char *path) {
  int fd = V()->open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0);
  if (fd < 0) return tern_fail_errno(path);
  int rc = TERN_OK;
  if (V()->fsync(fd, 1) != 0 && errno != EINVAL && errno != EROFS) rc = tern_fail_errno(path);
  int e = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  if (rc == TERN_OK && e != 0) {
    errno = e;
    rc = tern_fail_errno(path);
  }
  V()->close(fd);
  return rc;
}

uint64_t tern_io_prefetch_path(const char *path) {
  int fd = V()->open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK, 0);
  if (fd < 0) return 0; /* a hint: the read that needs the file will say */
  struct stat st;
  uint64_t size = 0;
  if (posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED) == 0 && V()->fstat(fd, &st) == 0 &&
      S_ISREG(st.st_mode))
    size = (uint64_t)st.st_size;
  V()->close(fd);
  return size;
}

/* ------------------------------------------------------------------ writes */

#define WBUF_SIZE (256u << 10)

struct tern_wfile {
  int fd;
  uint64_t offset; /* bytes appended, buffered ones included */
  size_t used;
  XXH3_state_t *hash;
  uint8_t *buf;
  char *path, *tmp;
  /* page checksums (tern_wfile_track_pages): */
  uint8_t *page; /* the page being filled, NULL: not tracked */
  size_t page_used;
  uint64_t page_seed;
  tern_bytebuf sums; /* u32 LE per full page */
};

int tern_wfile_create(tern_wfile **out, const char *path) {
  *out = NULL;
  tern_wfile *w = calloc(1, sizeof *w);
  if (!w) return tern_fail(TERN_ENOMEM, "%s: out of memory", path);
  size_t plen = strlen(path);
  w->path = strdup(path);
  w->tmp = malloc(plen + 5);
  w->buf = malloc(WBUF_SIZE);
  w->hash = XXH3_createState();
  w->fd = -1;
  if (!w->path || !w->tmp || !w->buf || !w->hash) {
    tern_wfile_abort(w);
    return tern_fail(TERN_ENOMEM, "%s: out of memory", path);
  }
  memcpy(w->tmp, path, plen);
  memcpy(w->tmp + plen, ".tmp", 5);
  XXH3_64bits_reset(w->hash);
  /* O_NONBLOCK: a FIFO in the way fails (ENXIO) instead of waiting for a reader. */
  w->fd = V()->open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0644);
  struct stat st;
  int rc = TERN_OK;
  if (w->fd < 0 || V()->fstat(w->fd, &st) != 0)
    rc = tern_fail_errno(w->tmp);
  else if (!S_ISREG(st.st_mode))
    rc = tern_fail(TERN_ECORRUPT, "%s: not a regular file", w->tmp);
  if (rc != TERN_OK) {
    tern_wfile_abort(w);
    return rc;
  }
  *out = w;
  return TERN_OK;
}

int tern_wfile_track_pages(tern_wfile *w, uint64_t seed) {
  if (w->offset != 0) return tern_fail(TERN_EINVAL, "%s: page checksums must start at 0", w->tmp);
  if (!w->page && !(w->page = malloc(TERN_IO_PAGE)))
    return tern_fail(TERN_ENOMEM, "%s: out of memory", w->tmp);
  w->page_seed = seed;
  return TERN_OK;
}

static int sum_page(tern_wfile *w) {
  uint8_t le[4];
  uint64_t pageno = w->sums.len / 4;
  tern_store32(le, tern_io_page_sum(w->page, w->page_used, w->page_seed, pageno));
  w->page_used = 0;
  return tern_bytebuf_put(&w->sums, le, sizeof le);
}

static int track(tern_wfile *w, const uint8_t *p, size_t len) {
  while (len > 0) {
    size_t n = TERN_IO_PAGE - w->page_used;
    if (n > len) n = len;
    memcpy(w->page + w->page_used, p, n);
    w->page_used += n;
    p += n;
    len -= n;
    if (w->page_used == TERN_IO_PAGE) TERN_TRY(sum_page(w));
  }
  return TERN_OK;
}

int tern_wfile_page_sums(tern_wfile *w, const uint8_t **sums, size_t *len) {
  if (!w->page) return tern_fail(TERN_EINVAL, "%s: pages not tracked", w->tmp);
  if (w->page_used) TERN_TRY(sum_page(w));
  *sums = w->sums.p;
  *len = w->sums.len;
  return TERN_OK;
}

static int write_all(int fd, const uint8_t *p, size_t len, const char *path) {
  while (len > 0) {
    ssize_t n = V()->write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return tern_fail_errno(path);
    }
    p += n;
    len -= (size_t)n;
  }
  return TERN_OK;
}

static int wfile_flush(tern_wfile *w) {
  int rc = write_all(w->fd, w->buf, w->used, w->tmp);
  w->used = 0;
  return rc;
}

int tern_wfile_append(tern_wfile *w, const void *buf, size_t len) {
  const uint8_t *p = buf;
  if (len == 0) return TERN_OK;
  XXH3_64bits_update(w->hash, p, len);
  if (w->page) TERN_TRY(track(w, p, len));
  w->offset += len;
  if (w->used + len > WBUF_SIZE) {
    TERN_TRY(wfile_flush(w));
    if (len >= WBUF_SIZE) return write_all(w->fd, p, len, w->tmp);
  }
  memcpy(w->buf + w->used, p, len);
  w->used += len;
  return TERN_OK;
}

int tern_wfile_append_page(tern_wfile *w, uint8_t page[TERN_IO_PAGE], uint64_t seed) {
  if (w->offset % TERN_IO_PAGE)
    return tern_fail(TERN_EINVAL, "%s: a page appended at %llu, not a page boundary", w->tmp,
                     (unsigned long long)w->offset);
  uint64_t pageno = w->offset / TERN_IO_PAGE;
  tern_store32(page + TERN_IO_PAGE_DATA, tern_io_page_sum(page, TERN_IO_PAGE_DATA, seed, pageno));
  return tern_wfile_append(w, page, TERN_IO_PAGE);
}

uint64_t tern_wfile_offset(const tern_wfile *w) { return w->offset; }
uint64_t tern_wfile_digest(const tern_wfile *w) { return XXH3_64bits_digest(w->hash); }

static void wfile_free(tern_wfile *w) {
  if (w->hash) XXH3_freeState(w->hash);
  free(w->buf);
  free(w->page);
  tern_bytebuf_free(&w->sums);
  free(w->path);
  free(w->tmp);
  free(w);
}

int tern_wfile_commit(tern_wfile *w) {
  int rc = wfile_flush(w);
  if (rc == TERN_OK && V()->fsync(w->fd, 0) != 0) rc = tern_fail_errno(w->tmp);
  if (V()->close(w->fd) != 0 && rc == TERN_OK) rc = tern_fail_errno(w->tmp);
  w->fd = -1;
  if (rc == TERN_OK && V()->rename(w->tmp, w->path) != 0) rc = tern_fail_errno(w->path);
  if (rc != TERN_OK) V()->unlink(w->tmp);
  wfile_free(w);
  return rc;
}

void tern_wfile_abort(tern_wfile *w) {
  if (!w) return;
  if (w->fd >= 0) {
    V()->close(w->fd);
    V()->unlink(w->tmp);
  }
  wfile_free(w);
}

/* "DIR: what: strerror", so that a failure of the directory itself is not
 * taken for one of a file in it. */
static int fail_dir(const char *dir, const char *what) {
  int err = errno ? errno : EIO;
  return tern_fail(-err, "%s: %s: %s", dir, what, strerror(err));
}

int tern_fsync_dir(const char *dir) {
  int fd = V()->open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (fd < 0) return fail_dir(dir, "opening the directory to fsync it");
  int rc = V()->fsync(fd, 0) == 0 ? TERN_OK : fail_dir(dir, "fsync of the directory");
  V()->close(fd);
  return rc;
}
