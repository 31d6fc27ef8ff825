/*
 * io.c — the counted file layer (see io.h).
 *
 * Why both mmap and pread: a warm lookup must not pay a system call (a
 * pread of 4 KiB costs about as much as the whole in-memory lookup), so
 * reads default to a mapping; pread remains for callers that want copies
 * and as the reference the I/O-count tests compare with.  Both count the
 * same logical reads.  The mapping is advised MADV_RANDOM and the file
 * POSIX_FADV_RANDOM, so a cold read faults in one page instead of the
 * device's readahead window.
 */
#include "codec/io.h"

#include "codec/status.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

struct tern_rfile {
  int fd;
  tern_io_mode mode;
  uint64_t size;
  uint8_t *map; /* mmap mode, NULL for an empty file */
  _Atomic uint64_t reads, bytes;
  char path[];
};

static _Atomic uint64_t global_reads, global_bytes;

int tern_rfile_open(tern_rfile **out, const char *path, tern_io_mode mode) {
  *out = NULL;
  if (mode != TERN_IO_MMAP && mode != TERN_IO_PREAD) return tern_fail(TERN_EINVAL, "%s: bad io mode", path);
  size_t plen = strlen(path) + 1;
  tern_rfile *f = calloc(1, sizeof *f + plen);
  if (!f) return tern_fail(TERN_ENOMEM, "%s: out of memory", path);
  memcpy(f->path, path, plen);
  f->mode = mode;
  f->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (f->fd < 0) {
    int rc = tern_fail_errno(path);
    free(f);
    return rc;
  }
  struct stat st;
  if (fstat(f->fd, &st) != 0) goto fail;
  f->size = (uint64_t)st.st_size;
  (void)posix_fadvise(f->fd, 0, 0, POSIX_FADV_RANDOM);
  if (mode == TERN_IO_MMAP && f->size > 0) {
    void *m = mmap(NULL, (size_t)f->size, PROT_READ, MAP_SHARED, f->fd, 0);
    if (m == MAP_FAILED) goto fail;
    (void)madvise(m, (size_t)f->size, MADV_RANDOM);
    f->map = m;
  }
  *out = f;
  return TERN_OK;
fail:;
  int rc = tern_fail_errno(path);
  close(f->fd);
  free(f);
  return rc;
}

void tern_rfile_close(tern_rfile *f) {
  if (!f) return;
  if (f->map) munmap(f->map, (size_t)f->size);
  close(f->fd);
  free(f);
}

uint64_t tern_rfile_size(const tern_rfile *f) { return f->size; }
const char *tern_rfile_path(const tern_rfile *f) { return f->path; }
tern_io_mode tern_rfile_mode(const tern_rfile *f) { return f->mode; }

static void count_read(tern_rfile *f, size_t len) {
  atomic_fetch_add_explicit(&f->reads, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&f->bytes, len, memory_order_relaxed);
  atomic_fetch_add_explicit(&global_reads, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&global_bytes, len, memory_order_relaxed);
}

int tern_rfile_read(tern_rfile *f, uint64_t off, size_t len, void *scratch, const uint8_t **out) {
  if (off > f->size || len > f->size - off)
    return tern_fail(TERN_ECORRUPT, "%s: read of %zu bytes at %llu past the end (%llu bytes): truncated?",
                     f->path, len, (unsigned long long)off, (unsigned long long)f->size);
  count_read(f, len);
  if (f->mode == TERN_IO_MMAP) {
    *out = len ? f->map + off : (const uint8_t *)scratch;
    return TERN_OK;
  }
  uint8_t *dst = scratch;
  size_t done = 0;
  while (done < len) {
    ssize_t n = pread(f->fd, dst + done, len - done, (off_t)(off + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return tern_fail_errno(f->path);
    }
    if (n == 0)
      return tern_fail(TERN_ECORRUPT, "%s: file shrank while reading at %llu", f->path,
                       (unsigned long long)(off + done));
    done += (size_t)n;
  }
  *out = dst;
  return TERN_OK;
}

void tern_rfile_stats(const tern_rfile *f, tern_io_stats *out) {
  out->reads = atomic_load_explicit(&f->reads, memory_order_relaxed);
  out->bytes = atomic_load_explicit(&f->bytes, memory_order_relaxed);
}

void tern_rfile_reset_stats(tern_rfile *f) {
  atomic_store_explicit(&f->reads, 0, memory_order_relaxed);
  atomic_store_explicit(&f->bytes, 0, memory_order_relaxed);
}

void tern_io_global_stats(tern_io_stats *out) {
  out->reads = atomic_load_explicit(&global_reads, memory_order_relaxed);
  out->bytes = atomic_load_explicit(&global_bytes, memory_order_relaxed);
}

void tern_io_reset_global_stats(void) {
  atomic_store_explicit(&global_reads, 0, memory_order_relaxed);
  atomic_store_explicit(&global_bytes, 0, memory_order_relaxed);
}

int tern_rfile_evict(tern_rfile *f) {
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
  return TERN_OK;
}

int tern_io_evict_path(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return tern_fail_errno(path);
  int rc = TERN_OK;
  if (fdatasync(fd) != 0 && errno != EINVAL && errno != EROFS) rc = tern_fail_errno(path);
  int e = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  if (rc == TERN_OK && e != 0) {
    errno = e;
    rc = tern_fail_errno(path);
  }
  close(fd);
  return rc;
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
  w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w->fd < 0) {
    int rc = tern_fail_errno(w->tmp);
    tern_wfile_abort(w);
    return rc;
  }
  *out = w;
  return TERN_OK;
}

static int write_all(int fd, const uint8_t *p, size_t len, const char *path) {
  while (len > 0) {
    ssize_t n = write(fd, p, len);
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
  w->offset += len;
  if (w->used + len > WBUF_SIZE) {
    TERN_TRY(wfile_flush(w));
    if (len >= WBUF_SIZE) return write_all(w->fd, p, len, w->tmp);
  }
  memcpy(w->buf + w->used, p, len);
  w->used += len;
  return TERN_OK;
}

int tern_wfile_pad(tern_wfile *w, uint64_t align) {
  static const uint8_t zeros[4096];
  if (align == 0) return TERN_OK;
  uint64_t want = (align - w->offset % align) % align;
  while (want > 0) {
    size_t n = want > sizeof zeros ? sizeof zeros : (size_t)want;
    TERN_TRY(tern_wfile_append(w, zeros, n));
    want -= n;
  }
  return TERN_OK;
}

uint64_t tern_wfile_offset(const tern_wfile *w) { return w->offset; }
uint64_t tern_wfile_digest(const tern_wfile *w) { return XXH3_64bits_digest(w->hash); }

static void wfile_free(tern_wfile *w) {
  if (w->hash) XXH3_freeState(w->hash);
  free(w->buf);
  free(w->path);
  free(w->tmp);
  free(w);
}

int tern_wfile_commit(tern_wfile *w) {
  int rc = wfile_flush(w);
  if (rc == TERN_OK && fsync(w->fd) != 0) rc = tern_fail_errno(w->tmp);
  if (close(w->fd) != 0 && rc == TERN_OK) rc = tern_fail_errno(w->tmp);
  w->fd = -1;
  if (rc == TERN_OK && rename(w->tmp, w->path) != 0) rc = tern_fail_errno(w->path);
  if (rc != TERN_OK) unlink(w->tmp);
  wfile_free(w);
  return rc;
}

void tern_wfile_abort(tern_wfile *w) {
  if (!w) return;
  if (w->fd >= 0) {
    close(w->fd);
    unlink(w->tmp);
  }
  wfile_free(w);
}

int tern_fsync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return tern_fail_errno(dir);
  int rc = fsync(fd) == 0 ? TERN_OK : tern_fail_errno(dir);
  close(fd);
  return rc;
}

static int parent_dir(const char *path, char *out, size_t cap) {
  const char *slash = strrchr(path, '/');
  if (!slash) return snprintf(out, cap, ".") < (int)cap ? TERN_OK : TERN_EINVAL;
  size_t n = (size_t)(slash - path);
  if (n == 0) n = 1;
  if (n >= cap) return tern_fail(TERN_EINVAL, "%s: path too long", path);
  memcpy(out, path, n);
  out[n] = '\0';
  return TERN_OK;
}

int tern_write_file_atomic(const char *path, const void *buf, size_t len) {
  char dir[4096];
  TERN_TRY(parent_dir(path, dir, sizeof dir));
  tern_wfile *w;
  TERN_TRY(tern_wfile_create(&w, path));
  int rc = tern_wfile_append(w, buf, len);
  if (rc != TERN_OK) {
    tern_wfile_abort(w);
    return rc;
  }
  TERN_TRY(tern_wfile_commit(w));
  return tern_fsync_dir(dir);
}
